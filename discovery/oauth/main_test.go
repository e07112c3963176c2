package oauth

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: every request
// of the client closes its idle connections once done.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
