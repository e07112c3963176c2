//go:build unix

// On Unix the launcher execs the server in place (launcher_unix.go); a
// failed exec reports its errno.

package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startForTest starts command through startProcess with the allow-listed
// environment and stops it when the test ends.
func startForTest(t *testing.T, command string, args ...string) (*process, error) {
	t.Helper()
	p, err := startProcess(processConfig{Command: command, Args: args, Env: childEnv(os.Getenv, nil),
		StderrCap: 4096, Grace: 200 * time.Millisecond})
	if err == nil {
		t.Cleanup(func() { p.stop(200 * time.Millisecond) })
	}
	return p, err
}

// A command the launcher cannot exec fails at start with the errno, as a
// direct start would (so it is classified the same), and leaves no
// process.
func TestLaunchExecError(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "not-a-program")
	if err := os.WriteFile(garbage, []byte("\x00\x01\x02 not a program"), 0o700); err != nil {
		t.Fatal(err)
	}
	before := len(LiveProcesses(func(ppid, _ int) bool { return ppid == os.Getpid() }))
	_, err := startForTest(t, garbage)
	if !errors.Is(err, syscall.ENOEXEC) {
		t.Fatalf("start of a file that is no program = %v; want ENOEXEC", err)
	}
	if !strings.Contains(err.Error(), garbage) {
		t.Errorf("error %q does not name the file", err)
	}
	if after := len(LiveProcesses(func(ppid, _ int) bool { return ppid == os.Getpid() })); after > before {
		t.Errorf("%d children after the failed start; want %d", after, before)
	}
}
