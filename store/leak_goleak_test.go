//go:build goleak

package store

import (
	"testing"

	"go.uber.org/goleak"
)

// verifyTestMain runs the tests and fails the run if any goroutine leaks.
//
// go.uber.org/goleak is not in go.mod yet, so this file is behind the
// "goleak" build tag. Once the module is required, delete the tag and
// leak_nogoleak_test.go.
func verifyTestMain(m *testing.M) { goleak.VerifyTestMain(m) }
