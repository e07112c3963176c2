package discovery

import "testing"

// On Windows a server's whole process tree is in its job object, which
// ends when the server is stopped. The tests do not look into jobs: these
// helpers run targets as they are and check nothing of what is left
// (the Unix ones, in main_unix_test.go, do).

// withGroupCheck returns target as it is and a check that does nothing.
func withGroupCheck(_ *testing.T, target Target) (Target, func()) {
	return target, func() {}
}

// groupGoneAtEnd returns target as it is.
func groupGoneAtEnd(_ *testing.T, target Target) Target { return target }

// assertNoChildren fails the test: Windows tells no child processes
// apart here, so a test that looks for them needs a Unix system.
func assertNoChildren(t *testing.T) {
	t.Helper()
	t.Fatal("assertNoChildren: looking for child processes left needs a Unix system")
}
