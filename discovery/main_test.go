//go:build linux

package discovery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// fixture is the path of the mcp-fixture binary built by TestMain.
var fixture string

// everythingEntry is @modelcontextprotocol/server-everything's entry point,
// installed by `npm ci --prefix e2e`, relative to this package.
const everythingEntry = "../e2e/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

func TestMain(m *testing.M) {
	RunLauncherIfAsked()
	runConformanceClientIfAsked()
	if mode := os.Getenv(testServerEnv); mode == modernOnly {
		os.Exit(serveModernOnly())
	} else if mode != "" {
		os.Exit(serveTestServer(mode))
	}
	dir, err := os.MkdirTemp("", "discovery-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "discovery tests:", err)
		os.Exit(1)
	}
	fixture = filepath.Join(dir, "mcp-fixture")
	build := exec.Command("go", "build", "-o", fixture, "github.com/switchboard-dev/switchboard/cmd/mcp-fixture")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "discovery tests: building mcp-fixture: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// No ignores: every goroutine a verification or a runner starts must
	// be gone once it returns.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// ---- processes ----

// procState returns the state letter of pid from /proc ("" if gone).
func procState(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

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

// readPid waits briefly for a pid file written by a wrapper script.
func readPid(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		data, err := os.ReadFile(file)
		if err == nil && strings.HasSuffix(string(data), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil || pid <= 1 {
				t.Fatalf("pid file %s holds %q", file, data)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid file %s was not written: %v", file, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
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

// verify runs one verification with the limits and a background context.
// A stdio target runs through withPidfile, and once Verify has returned
// no process of the child's group may be left.
func verify(t *testing.T, limits Limits, target Target, progress func(Progress)) (*Result, *Error, time.Duration) {
	t.Helper()
	pidfile := ""
	if target.Transport == TransportStdio {
		target, pidfile = withPidfile(t, target)
	}
	res, e, d := verifyRaw(t, limits, target, progress)
	if pidfile != "" {
		assertGroupGone(t, readPid(t, pidfile))
	}
	return res, e, d
}

// verifyRaw runs one verification of the target as is.
func verifyRaw(t *testing.T, limits Limits, target Target, progress func(Progress)) (*Result, *Error, time.Duration) {
	t.Helper()
	v := NewVerifier(limits, nil)
	start := time.Now()
	res, err := v.Verify(context.Background(), target, 0, progress)
	d := time.Since(start)
	if err == nil {
		return res, nil, d
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Verify error is %T (%v), want *Error", err, err)
	}
	if res != nil {
		t.Errorf("Verify returned both a result and an error")
	}
	return nil, e, d
}

// children returns the live child processes of this test process.
func children() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if f := strings.Fields(s[i+1:]); len(f) >= 2 && f[1] == self && f[0] != "Z" {
			pid, _ := strconv.Atoi(e.Name())
			out = append(out, pid)
		}
	}
	return out
}

func wantClass(t *testing.T, e *Error, class, phase string) {
	t.Helper()
	if e == nil {
		t.Fatalf("Verify succeeded, want class %q", class)
	}
	if e.Class != class || (phase != "" && e.Phase != phase) {
		t.Fatalf("error class %q phase %q, want %q %q: %v (stderr %q)", e.Class, e.Phase, class, phase, e, e.StderrTail)
	}
	if e.Suggestion == "" || e.Suggestion != Suggestion(class) {
		t.Errorf("suggestion %q, want the one of %q", e.Suggestion, class)
	}
	if class != ClassExited && e.ExitCode != -1 {
		t.Errorf("ExitCode = %d for class %q, want -1", e.ExitCode, class)
	}
}

func TestGroupMembersSeesOwnGroup(t *testing.T) {
	// Guards the process checks of every other test: if /proc could not be
	// read, GroupMembers would return nothing and they would pass vacuously.
	if m := GroupMembers(syscall.Getpgrp()); !slices.Contains(m, os.Getpid()) {
		t.Fatalf("GroupMembers(%d) = %v, does not include this process %d", syscall.Getpgrp(), m, os.Getpid())
	}
	if !alive(os.Getpid()) {
		t.Fatal("alive(self) = false")
	}
}

// readPidNoWait reads a pid file that may not exist.
func readPidNoWait(file string) (int, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}
