// These need Linux: #9's double-forked process is found only by its run
// marker, read from /proc (TestHostileProcess,
// TestEscapeeThatCannotBeKilled), and the memory cap is RLIMIT_DATA, which
// macOS enforces loosely (TestSandboxLimits).

package discovery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// reportedPid returns the pid the fixture reported on stderr after what.
func reportedPid(t *testing.T, stderr, what string) int {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(what) + ` (\d+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("stderr %q does not report %q", stderr, what)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// killAtEnd makes sure pid is dead when the test ends, in case Verify let
// it escape.
func killAtEnd(t *testing.T, pid int) {
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
}

// escapeeCheck checks a case whose server leaves a process in a new
// session: Verify killed it and said so.
func escapeeCheck(t *testing.T, res *Result, _ *Error) {
	t.Helper()
	pid := reportedPid(t, res.StderrTail, "background process pid")
	killAtEnd(t, pid)
	assertDead(t, pid, "the process that left the group")
	if !slices.ContainsFunc(res.Warnings, func(w string) bool {
		return strings.Contains(w, "left its process group") && strings.Contains(w, strconv.Itoa(pid)) && strings.Contains(w, "killed")
	}) {
		t.Errorf("no warning names pid %d as killed: %q", pid, res.Warnings)
	}
	if len(res.Tools) != 2 {
		t.Errorf("%d tools, want 2", len(res.Tools))
	}
}

func TestHostileProcess(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.sh")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spawn := func(tg Target) func(*testing.T) Target {
		tg.Transport = TransportStdio
		return func(*testing.T) Target { return tg }
	}
	const secret = "hunter2-fixture-secret"
	grace := 200 * time.Millisecond
	for _, c := range []hostileCase{
		{num: 1, name: "missing command", target: spawn(Target{Command: "switchboard-no-such-command-xyz"}), unwrapped: true,
			class: ClassNotFound, phase: PhaseStarting, message: []string{"not found"}, max: time.Second},
		{num: 1, name: "missing path", target: spawn(Target{Command: filepath.Join(dir, "nope")}), unwrapped: true,
			class: ClassNotFound, phase: PhaseStarting, max: time.Second},
		{num: 1, name: "not executable", target: spawn(Target{Command: plain}), unwrapped: true,
			class: ClassPermission, phase: PhaseStarting, message: []string{"not executable"}, max: time.Second},
		{num: 1, name: "directory", target: spawn(Target{Command: dir}), unwrapped: true,
			class: ClassPermission, phase: PhaseStarting, message: []string{"is a directory"}, max: time.Second},
		{num: 1, name: "missing cwd", target: spawn(Target{Command: fixture, Cwd: filepath.Join(dir, "no-such-dir")}), unwrapped: true,
			class: ClassNotFound, phase: PhaseStarting, max: time.Second},
		{num: 1, name: "cwd is a file", target: spawn(Target{Command: fixture, Cwd: plain}), unwrapped: true,
			class: ClassNotFound, phase: PhaseStarting, max: time.Second},
		{num: 1, name: "missing from the server's PATH", target: spawn(Target{Command: "sh", Env: map[string]string{"PATH": dir}}), unwrapped: true,
			class: ClassNotFound, phase: PhaseStarting, max: time.Second},
		{num: 2, name: "crash", args: []string{"-exit-code", "1"}, env: map[string]string{"FIXTURE_SECRET": secret},
			class: ClassExited, phase: PhaseInitializing, message: []string{"code 1"}, max: 2 * time.Second,
			check: func(t *testing.T, _ *Result, e *Error) {
				if e.ExitCode != 1 || !strings.Contains(e.StderrTail, "simulated crash: database unreachable") ||
					!strings.Contains(e.StderrTail, "postgres://app:[redacted]@db") || strings.Contains(e.StderrTail, secret) {
					t.Errorf("ExitCode %d, StderrTail %q: want 1 and the crash lines, redacted", e.ExitCode, e.StderrTail)
				}
			}},
		{num: 3, name: "hang-init", limits: Limits{InitTimeout: 500 * time.Millisecond, Grace: grace},
			class: ClassTimeout, phase: PhaseInitializing, min: 500 * time.Millisecond, max: 1500 * time.Millisecond},
		// Forty bytes arrive before the deadline, and more after it: none
		// of them moves it.
		{num: 4, name: "trickle", args: []string{"-interval", "10ms"}, limits: Limits{InitTimeout: 500 * time.Millisecond, Grace: grace},
			class: ClassTimeout, phase: PhaseInitializing, min: 500 * time.Millisecond, max: 1500 * time.Millisecond},
		{num: 5, name: "progress-forever", args: []string{"-interval", "10ms"}, limits: Limits{InitTimeout: 700 * time.Millisecond, Grace: grace},
			class: ClassTimeout, phase: PhaseInitializing, min: 700 * time.Millisecond, max: 1700 * time.Millisecond},
		// Keeps running after stdin closes: SIGTERM after one grace period.
		{num: 6, name: "close-stdout", limits: Limits{Grace: grace},
			class: ClassExited, phase: PhaseInitializing, message: []string{"closed stdout before answering", "kept running"}, max: 1500 * time.Millisecond},
		{num: 7, name: "exit-after-init", args: []string{"-exit-code", "5"},
			class: ClassExited, phase: PhaseListing, message: []string{"code 5 during listing"}, max: 2 * time.Second,
			check: func(t *testing.T, _ *Result, e *Error) {
				if e.ExitCode != 5 || !strings.Contains(e.StderrTail, "exiting with status 5 after initialize") {
					t.Errorf("ExitCode %d, StderrTail %q", e.ExitCode, e.StderrTail)
				}
			}},
		// The child holds stdout and stderr after the server exits; Wait
		// returns after WaitDelay and the group kill takes the child.
		{num: 8, name: "fork-child", args: []string{"-tools", "2"}, max: 3 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				pid := reportedPid(t, res.StderrTail, "started child pid")
				killAtEnd(t, pid)
				assertDead(t, pid, "the child holding the pipes")
				if len(res.Tools) != 2 {
					t.Errorf("%d tools, want 2", len(res.Tools))
				}
			}},
		// The background process's parent, the server, still runs when
		// stop looks for it.
		{num: 9, name: "setsid-child", args: []string{"-tools", "2"}, max: 3 * time.Second, check: escapeeCheck},
		// Double fork: the background process is an orphan by the time the
		// server is stopped; only its run marker ties it to the server.
		{num: 9, name: "daemonize", args: []string{"-tools", "2"}, max: 3 * time.Second, check: escapeeCheck},
		{num: 10, name: "ignore-sigterm", limits: Limits{InitTimeout: 300 * time.Millisecond, Grace: grace},
			class: ClassTimeout, phase: PhaseInitializing, min: 300*time.Millisecond + 2*grace, max: 2 * time.Second},
		{num: 11, name: "flood-stderr", args: []string{"-flood-bytes", "200000000", "-tools", "2"}, max: 15 * time.Second, maxAlloc: 16 << 20,
			check: func(t *testing.T, res *Result, _ *Error) {
				if len(res.Tools) != 2 || len(res.StderrTail) > DefaultLimits.StderrBytes || !strings.Contains(res.StderrTail, "flooding stderr") {
					t.Errorf("%d tools, StderrTail of %d bytes (limit %d)", len(res.Tools), len(res.StderrTail), DefaultLimits.StderrBytes)
				}
			}},
		// Its pings' answers fill the stdin pipe; the initialize request
		// then cannot be written before the deadline.
		{num: 12, name: "no-read", limits: Limits{InitTimeout: time.Second, Grace: grace},
			class: ClassTimeout, phase: PhaseInitializing, message: []string{"stopped reading its stdin"}, min: time.Second, max: 2500 * time.Millisecond},
		// A blocked write does not hold up a cancellation either.
		{num: 12, name: "no-read", limits: Limits{InitTimeout: 20 * time.Second, Grace: grace}, cancelAfter: 700 * time.Millisecond,
			class: ClassCancelled, phase: PhaseInitializing, min: 700 * time.Millisecond, max: 2 * time.Second},
	} {
		t.Run(fmt.Sprintf("%02d %s", c.num, c.name), func(t *testing.T) { runHostile(t, c) })
	}
}

// TestEscapeeThatCannotBeKilled is #9 where the kernel refuses the kill
// (a process of another user, say): Verify still returns, and says which
// processes were left behind. The refusal is simulated; the test kills
// the process itself afterwards.
func TestEscapeeThatCannotBeKilled(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	target, pidfile := withPidfile(t, fixtureTarget("daemonize", "-tools", "2"))
	v := NewVerifier(Limits{}, nil)
	v.killEscapee = func(int, syscall.Signal) error { return syscall.EPERM }
	start := time.Now()
	res, err := v.Verify(context.Background(), target, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	assertGroupGone(t, readPid(t, pidfile))
	pid := reportedPid(t, res.StderrTail, "background process pid")
	killAtEnd(t, pid)
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("pid %d is gone: the refusal was not simulated", pid)
	}
	// The server ran twice (the plain listing and the one declaring
	// every feature, see features.go), each leaving a process behind;
	// pidfile names the one that wrote last.
	left := regexp.MustCompile(`^left background processes: pid (\d+), (\d+) \(outside the server's process group, and they could not be killed\)$`)
	var m []string
	for _, w := range res.Warnings {
		if m = left.FindStringSubmatch(w); m != nil {
			break
		}
	}
	if m == nil || m[1] != strconv.Itoa(pid) && m[2] != strconv.Itoa(pid) {
		t.Errorf("warnings %q, want one naming pid %d and the other run's", res.Warnings, pid)
	} else {
		for _, p := range m[1:] {
			other, _ := strconv.Atoi(p)
			killAtEnd(t, other)
		}
	}
	if len(res.Tools) != 2 || d > 3*time.Second {
		t.Errorf("%d tools in %v; want 2, within the stop's bound", len(res.Tools), d)
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

// TestSandboxLimits checks the resource limits a stdio server runs
// under: never core dumps, and the optional memory cap, which a server
// that needs more than it allows runs into. The test process's own core
// limit is raised first, so a child that merely inherited it would not
// show 0.
func TestSandboxLimits(t *testing.T) {
	var core syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_CORE, &core); err != nil {
		t.Fatal(err)
	}
	raised := syscall.Rlimit{Cur: 1 << 20, Max: max(core.Max, 1<<20)}
	if err := syscall.Setrlimit(syscall.RLIMIT_CORE, &raised); err != nil {
		t.Fatalf("raise own core limit to show it is not inherited: %v", err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_CORE, &core)

	const capMiB = 200 // a Go program needs most of that to start
	capped := func(args ...string) func(*testing.T) Target {
		return func(*testing.T) Target {
			tg := fixtureTarget("alloc", args...)
			tg.MemoryBytes = capMiB << 20
			return tg
		}
	}
	cappedSh := func(script string) func(*testing.T) Target {
		return func(t *testing.T) Target {
			tg, _ := shTarget(t, script)
			tg.MemoryBytes = capMiB << 20
			return tg
		}
	}
	noCapNote := func(t *testing.T, _ *Result, e *Error) {
		if strings.Contains(e.Message, "memory cap") {
			t.Errorf("Message = %q; want no note on the memory cap", e.Message)
		}
	}
	limits := func(core, data string) func(*testing.T, *Result, *Error) {
		return func(t *testing.T, res *Result, _ *Error) {
			if want := "limits core=" + core + " data=" + data; !strings.Contains(res.StderrTail, want) {
				t.Errorf("stderr %q does not say %q", res.StderrTail, want)
			}
		}
	}
	for _, c := range []hostileCase{
		{name: "alloc", args: []string{"-tools", "1", "-alloc-bytes", "314572800"}, max: 5 * time.Second,
			check: limits("0", "-1")},
		{name: "alloc capped", target: capped("-tools", "1"), max: 5 * time.Second,
			check: limits("0", strconv.Itoa(capMiB<<20))},
		{name: "alloc over the cap", target: capped("-tools", "1", "-alloc-bytes", "314572800"), max: 5 * time.Second,
			class: ClassExited, phase: PhaseInitializing, message: []string{"server exited with code 2", "memory cap of 200 MiB"}},
		// The note on the cap comes only with an exit that looks like
		// memory ran out (see likelyOutOfMemory).
		{name: "exit 1 under a cap", target: cappedSh("echo 'config missing' >&2; exit 1"), max: 5 * time.Second,
			class: ClassExited, phase: PhaseInitializing, message: []string{"server exited with code 1"}, check: noCapNote},
		{name: "exit 137 under a cap", target: cappedSh("exit 137"), max: 5 * time.Second,
			class: ClassExited, phase: PhaseInitializing, message: []string{"server exited with code 137", "memory cap of 200 MiB"}},
		{name: "killed under a cap", target: cappedSh("kill -KILL $$"), max: 5 * time.Second,
			class: ClassExited, phase: PhaseInitializing, message: []string{"killed by a signal", "memory cap of 200 MiB"}},
	} {
		t.Run(c.name, func(t *testing.T) { runHostile(t, c) })
	}
}
