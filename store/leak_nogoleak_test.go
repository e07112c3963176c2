//go:build !goleak

package store

import (
	"os"
	"testing"
)

// verifyTestMain runs the tests without a leak check; see
// leak_goleak_test.go.
func verifyTestMain(m *testing.M) { os.Exit(m.Run()) }
