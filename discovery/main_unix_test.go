//go:build unix

package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid is a live process (not gone, not a zombie).
// A zombie counts as dead: it has exited, and its new parent (init here)
// may be slow to reap it.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	st := procState(pid)
	return st != "" && st != "Z" && st != "X"
}

// assertGroupGone checks, right after Verify returned, that the child
// (whose pid is its process group id) and every process of its group are
// gone. It does not wait: Verify promises this on return.
func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	if m := GroupMembers(pgid); len(m) > 0 {
		t.Errorf("process group %d still has live members %v after Verify returned", pgid, m)
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	if err := syscall.Kill(pgid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("child %d still exists (kill 0: %v, state %q): not reaped", pgid, err, procState(pgid))
	}
}

// assertDead checks that pid (e.g. a grandchild) is not alive.
func assertDead(t *testing.T, pid int, what string) {
	t.Helper()
	if alive(pid) {
		t.Errorf("%s (pid %d) is still alive, state %q", what, pid, procState(pid))
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// assertNoChildren checks that this test process has no live child left.
func assertNoChildren(t *testing.T) {
	t.Helper()
	if c := children(); len(c) > 0 {
		t.Errorf("child processes %v left", c)
	}
}

// pidWrapped returns a stdio target that runs argv through sh, which
// writes its pid (the child's, hence the group id) to a file, then execs
// argv.
func pidWrapped(t *testing.T, argv ...string) (Target, string) {
	t.Helper()
	pidfile := filepath.Join(t.TempDir(), "pid")
	return Target{
		Transport: TransportStdio,
		Command:   "sh",
		Args:      append([]string{"-c", pidPrefix + `exec "$@"`, pidfile}, argv...),
	}, pidfile
}

// shTarget returns a stdio target running script with sh; script finds the
// pid file path in $0 and may use "$@" for extra arguments.
func shTarget(t *testing.T, script string, args ...string) (Target, string) {
	t.Helper()
	pidfile := filepath.Join(t.TempDir(), "pid")
	return Target{
		Transport: TransportStdio,
		Command:   "sh",
		Args:      append([]string{"-c", pidPrefix + script, pidfile}, args...),
	}, pidfile
}

// pidPrefix starts every wrapper script: it writes sh's pid, which is the
// child's and so its process group id, to the file named by $0.
const pidPrefix = `echo $$ > "$0"; `

// withPidfile returns target run through a wrapper that records the
// child's pid, and the pid file. Targets already wrapped are kept.
func withPidfile(t *testing.T, target Target) (Target, string) {
	t.Helper()
	if target.Command == "sh" && len(target.Args) >= 3 && target.Args[0] == "-c" && strings.HasPrefix(target.Args[1], pidPrefix) {
		return target, target.Args[2]
	}
	pidfile := filepath.Join(t.TempDir(), "pid")
	wrapped := target
	wrapped.Command = "sh"
	wrapped.Args = append([]string{"-c", pidPrefix + `exec "$@"`, pidfile, target.Command}, target.Args...)
	return wrapped, pidfile
}

// withGroupCheck returns target run through withPidfile, and a check for
// the moment what ran it (Verify, a watch, a pool) has returned: that the
// child and every process of its group are gone. The check does not wait.
func withGroupCheck(t *testing.T, target Target) (Target, func()) {
	t.Helper()
	target, pidfile := withPidfile(t, target)
	return target, func() {
		t.Helper()
		assertGroupGone(t, readPid(t, pidfile))
	}
}

// groupGoneAtEnd returns target run through withPidfile; when the test
// ends, if the child was started, no process of its group may be left. A
// runner reports a success before it stops the server, so the check
// allows the stop (a few milliseconds for the fixture) a bounded time.
func groupGoneAtEnd(t *testing.T, target Target) Target {
	t.Helper()
	target, pidfile := withPidfile(t, target)
	t.Cleanup(func() {
		if pid, err := readPidNoWait(pidfile); err == nil {
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
					break
				}
			}
			assertGroupGone(t, pid)
		}
	})
	return target
}

func TestGroupMembersSeesOwnGroup(t *testing.T) {
	// Guards the process checks of every other test: if the processes
	// could not be listed, GroupMembers would return nothing and they
	// would pass vacuously.
	if m := GroupMembers(syscall.Getpgrp()); !slices.Contains(m, os.Getpid()) {
		t.Fatalf("GroupMembers(%d) = %v, does not include this process %d", syscall.Getpgrp(), m, os.Getpid())
	}
	if !alive(os.Getpid()) {
		t.Fatal("alive(self) = false")
	}
}
