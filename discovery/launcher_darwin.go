package discovery

import (
	"fmt"
	"os"
	"syscall"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
)

// wall sets the limits on the launcher and, unless the walls are off,
// has the server exec'd by sandbox-exec with the plan's Seatbelt profile.
func wall(plan *sandbox.Plan, _ *os.File, path string, argv []string) (sandbox.Tier, string, []string, error) {
	t := sandbox.Tier{Limits: true, Off: plan.Off}
	if err := syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{}); err != nil {
		return t, "", nil, fmt.Errorf("disable core dumps: %w", err)
	}
	if plan.MemoryBytes > 0 {
		m := uint64(plan.MemoryBytes)
		if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: m, Max: m}); err != nil {
			return t, "", nil, fmt.Errorf("cap the memory: %w", err)
		}
	}
	if plan.Off {
		return t, path, argv, nil
	}
	if err := sandbox.CheckSeatbeltPaths(plan); err != nil {
		return t, "", nil, err
	}
	args := sandbox.SeatbeltArgv(plan, path, argv)
	t.Seatbelt = true
	return t, args[0], args, nil
}
