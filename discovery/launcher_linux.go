package discovery

import (
	"os"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
)

// wall builds the plan's walls around the launcher (see sandbox.Enforce);
// the server is then exec'd as it is.
func wall(plan *sandbox.Plan, ctl *os.File, path string, argv []string) (sandbox.Tier, string, []string, error) {
	tier, err := sandbox.Enforce(plan, ctl)
	return tier, path, argv, err
}
