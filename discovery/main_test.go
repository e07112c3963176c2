package discovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fixture is the path of the mcp-fixture binary built by TestMain.
var fixture string

// everythingEntry is @modelcontextprotocol/server-everything's entry point,
// installed by `npm ci --prefix e2e`, relative to this package.
const everythingEntry = "../e2e/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "discovery-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "discovery tests:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	fixture = filepath.Join(dir, "mcp-fixture")
	build := exec.Command("go", "build", "-o", fixture, "github.com/switchboard-dev/switchboard/cmd/mcp-fixture")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "discovery tests: building mcp-fixture: %v\n%s", err, out)
		return 1
	}
	code := m.Run()
	if code != 0 {
		return code
	}
	// The same check as goleak.VerifyTestMain, with no ignores beyond
	// goleak's defaults (testing, os/signal and cgo goroutines).
	if leaks := waitForLeaks(nil, 5*time.Second); len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "discovery tests: found unexpected goroutines after all tests:\n\n%s\n", strings.Join(leaks, "\n\n"))
		return 1
	}
	return 0
}

// goroutine is one entry of runtime.Stack(all=true).
type goroutine struct {
	id    int
	state string
	funcs []string // innermost first
	text  string
}

func allGoroutines() []goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for _, block := range strings.Split(strings.TrimSpace(string(buf)), "\n\n") {
		lines := strings.Split(block, "\n")
		// goroutine 12 [chan receive, 2 minutes]:
		header, ok := strings.CutPrefix(lines[0], "goroutine ")
		if !ok {
			continue
		}
		idStr, rest, _ := strings.Cut(header, " ")
		id, _ := strconv.Atoi(idStr)
		state := strings.TrimSuffix(strings.TrimPrefix(rest, "["), "]:")
		g := goroutine{id: id, state: state, text: block}
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "created by ") {
				continue
			}
			if i := strings.LastIndex(l, "("); i > 0 {
				l = l[:i]
			}
			g.funcs = append(g.funcs, l)
		}
		out = append(out, g)
	}
	return out
}

func currentGoroutineID() int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := bytes.Fields(buf)
	id, _ := strconv.Atoi(string(f[1]))
	return id
}

// benign mirrors goleak's default filters.
func benign(g goroutine) bool {
	if len(g.funcs) == 0 {
		return true
	}
	switch g.funcs[0] {
	case "testing.RunTests", "testing.(*T).Run", "testing.(*T).Parallel", "testing.runFuzzing", "testing.runFuzzTests":
		return strings.HasPrefix(g.state, "chan receive")
	case "os/signal.signal_recv", "os/signal.loop":
		return true
	}
	if slices.Contains(g.funcs, "runtime.ensureSigM") {
		return true
	}
	return strings.HasPrefix(g.state, "syscall") && slices.Contains(g.funcs, "runtime.goexit")
}

// leaks returns the goroutines that are neither benign, the caller, nor in
// ignore.
func leaks(ignore map[int]bool) []string {
	self := currentGoroutineID()
	var out []string
	for _, g := range allGoroutines() {
		if g.id == self || ignore[g.id] || benign(g) {
			continue
		}
		out = append(out, g.text)
	}
	return out
}

// waitForLeaks retries for up to d, since goroutines that are ending need a
// moment to be gone.
func waitForLeaks(ignore map[int]bool, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for sleep := time.Millisecond; ; sleep = min(2*sleep, 100*time.Millisecond) {
		l := leaks(ignore)
		if len(l) == 0 || time.Now().After(deadline) {
			return l
		}
		time.Sleep(sleep)
	}
}

// noLeaksSince records the goroutines alive now and returns a check that
// fails t if any other goroutine is still alive when it runs.
func noLeaksSince(t *testing.T) func() {
	t.Helper()
	ignore := map[int]bool{}
	for _, g := range allGoroutines() {
		ignore[g.id] = true
	}
	return func() {
		t.Helper()
		if l := waitForLeaks(ignore, 5*time.Second); len(l) > 0 {
			t.Errorf("goroutines leaked:\n\n%s", strings.Join(l, "\n\n"))
		}
	}
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
		Args:      append([]string{"-c", `echo $$ > "$0"; exec "$@"`, pidfile}, argv...),
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
		Args:      append([]string{"-c", `echo $$ > "$0"; ` + script, pidfile}, args...),
	}, pidfile
}

// verify runs one verification with the limits and a background context.
func verify(t *testing.T, limits Limits, target Target, progress func(Progress)) (*Result, *Error, time.Duration) {
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
