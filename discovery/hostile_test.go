//go:build linux

package discovery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"
)

// The tests in this file walk the catalogue of hostile and broken servers
// (hostile-servers.md), one table per section, each row a mode of
// cmd/mcp-fixture. Every row checks what Verify made of it, that no
// goroutine outlived it and, for stdio, that no process of the server's
// group is left. Each logs a greppable line:
//
//	hostile #4 trickle: timeout/initializing in 512ms

// hostileCase is one server of the catalogue and what Verify must make of
// it.
type hostileCase struct {
	num  int    // the case's number in hostile-servers.md
	name string // the fixture's -mode, unless target is set
	args []string
	env  map[string]string
	// target replaces the stdio fixture; it may start a server, which the
	// leak check then ignores.
	target func(t *testing.T) Target
	// unwrapped runs the target as is, without the wrapper that records
	// the child's pid (which would turn a spawn error into sh's).
	unwrapped bool
	limits    Limits
	// cancelAfter, if set, cancels the verification after that long.
	cancelAfter time.Duration

	// class and phase are the wanted error; an empty class wants success.
	class, phase string
	// message fragments must be in the error's message, or in one of the
	// warnings on success.
	message []string
	min     time.Duration
	max     time.Duration
	// maxAlloc, if set, bounds the bytes this process allocates during
	// Verify, to show that what the server sends is not buffered.
	maxAlloc uint64
	check    func(t *testing.T, res *Result, e *Error)
}

// fixtureTarget runs the stdio fixture in a mode.
func fixtureTarget(mode string, args ...string) Target {
	return Target{Transport: TransportStdio, Command: fixture, Args: append([]string{"-mode", mode}, args...)}
}

// remoteTarget starts the fixture on a remote transport and targets it.
func remoteTarget(transport string, args ...string) func(t *testing.T) Target {
	return func(t *testing.T) Target {
		return Target{Transport: transport, URL: startRemoteFixture(t, transport, args...)}
	}
}

// runHostile verifies one case and checks the outcome.
func runHostile(t *testing.T, c hostileCase) {
	t.Helper()
	target := fixtureTarget(c.name, c.args...)
	if c.target != nil {
		target = c.target(t)
	}
	if c.env != nil {
		target.Env = c.env
	}
	pidfile := ""
	if target.Transport == TransportStdio && !c.unwrapped {
		target, pidfile = withPidfile(t, target)
	}
	ignore := goleak.IgnoreCurrent()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if c.cancelAfter > 0 {
		stop := time.AfterFunc(c.cancelAfter, cancel)
		defer stop.Stop()
	}
	var before, after runtime.MemStats
	if c.maxAlloc > 0 {
		runtime.GC()
		runtime.ReadMemStats(&before)
	}
	start := time.Now()
	res, err := NewVerifier(c.limits, nil).Verify(ctx, target, 0, nil)
	d := time.Since(start)
	if c.maxAlloc > 0 {
		runtime.ReadMemStats(&after)
	}

	if pidfile != "" {
		assertGroupGone(t, readPid(t, pidfile))
	}
	if c.unwrapped {
		if left := children(); len(left) > 0 {
			t.Errorf("child processes %v left", left)
		}
	}
	goleak.VerifyNone(t, ignore)

	var e *Error
	if err != nil && !errors.As(err, &e) {
		t.Fatalf("Verify error is %T (%v), want *Error", err, err)
	}
	var outcome, detail string
	if e != nil {
		outcome, detail = e.Class+"/"+e.Phase, "message "+strconv.Quote(e.Message)
	} else {
		outcome, detail = "success", fmt.Sprintf("warnings %q", res.Warnings)
	}
	t.Logf("hostile #%d %s: %s in %v", c.num, c.name, outcome, d.Round(time.Millisecond))
	t.Logf("%.300s", detail)

	if c.class == "" {
		if e != nil {
			t.Fatalf("Verify = %v (stderr %q), want success", e, e.StderrTail)
		}
		for _, m := range c.message {
			if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, m) }) {
				t.Errorf("no warning contains %q: %q", m, res.Warnings)
			}
		}
		for _, w := range res.Warnings {
			checkDisplayable(t, "warning", w)
		}
	} else {
		wantClass(t, e, c.class, c.phase)
		for _, m := range c.message {
			if !strings.Contains(e.Message, m) {
				t.Errorf("Message = %q, want it to contain %q", e.Message, m)
			}
		}
		checkDisplayable(t, "Message", e.Message)
	}
	if d < c.min || (c.max > 0 && d > c.max) {
		t.Errorf("Verify took %v, want %v to %v", d, c.min, c.max)
	}
	if c.maxAlloc > 0 {
		if got := after.TotalAlloc - before.TotalAlloc; got > c.maxAlloc {
			t.Errorf("Verify allocated %d bytes, want at most %d", got, c.maxAlloc)
		} else {
			t.Logf("allocated %.1f MiB", float64(got)/(1<<20))
		}
	}
	if c.check != nil {
		c.check(t, res, e)
	}
}

// checkDisplayable checks that text from a server reaches a person
// escaped: valid UTF-8 without control or format characters.
func checkDisplayable(t *testing.T, what, s string) {
	t.Helper()
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f || r == '\u202e' }) {
		t.Errorf("%s %q holds invalid UTF-8 or control characters", what, s)
	}
}

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
	want := "left background processes: pid " + strconv.Itoa(pid) + " (outside the server's process group, and they could not be killed)"
	if !slices.Contains(res.Warnings, want) {
		t.Errorf("warnings %q, want %q", res.Warnings, want)
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

// TestHostileVerifyRepeated is #13: Verify clicked over and over while
// one runs joins that one. The rest of #13 is covered elsewhere: the
// global limit by TestRunnerConcurrencyLimit, a changed configuration
// getting a job of its own by TestRunnerSingleFlight, and the result of
// a verification whose configuration changed being discarded by the store
// (store.TestConfigChangedWhileVerifying, ErrConfigChanged).
func TestHostileVerifyRepeated(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := newRunLog()
	r := NewRunner(NewVerifier(Limits{}, nil), l.config(2))
	defer r.Close()
	pids := filepath.Join(t.TempDir(), "pids")
	target := Target{Transport: TransportStdio, Command: "sh",
		Args: []string{"-c", `echo $$ >> "$0"; exec "$@"`, pids, fixture, "-startup-delay", "300ms", "-tools", "2"}}
	req := Request{ServerID: "clicked", ConfigHash: "h", Target: target}

	const clicks = 20
	start := time.Now()
	var wg sync.WaitGroup
	jobs := make([]Job, clicks)
	joined := make([]bool, clicks)
	for i := range clicks {
		wg.Go(func() {
			var err error
			jobs[i], joined[i], err = r.Submit(req)
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range clicks {
		if jobs[i].ID != jobs[0].ID {
			t.Fatalf("click %d got job %s, click 0 got %s", i, jobs[i].ID, jobs[0].ID)
		}
	}
	if n := clicks - countTrue(joined); n != 1 {
		t.Errorf("%d clicks started a job, want 1", n)
	}
	final := l.waitDone(t, jobs[0].ID)
	d := time.Since(start)
	if final.Status != JobSuccess || final.ToolCount != 2 {
		t.Fatalf("job %+v", final)
	}
	r.Close() // the server is stopped
	data, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	started := strings.Fields(string(data))
	if len(started) != 1 {
		t.Fatalf("%d servers started for %d clicks: %v", len(started), clicks, started)
	}
	pid, _ := strconv.Atoi(started[0])
	assertGroupGone(t, pid)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started[final.ID] != 1 || len(l.finishes[final.ID]) != 1 {
		t.Errorf("Started %d times, Finish %d times, want 1 and 1", l.started[final.ID], len(l.finishes[final.ID]))
	}
	t.Logf("hostile #13 verify clicked %d times: 1 job, 1 server, %s in %v", clicks, final.Status, d.Round(time.Millisecond))
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func TestHostileFraming(t *testing.T) {
	const secret = "hunter2-fixture-secret"
	grace := 200 * time.Millisecond
	oneMiB := 1 << 20
	for _, c := range []hostileCase{
		{num: 14, name: "banner", args: []string{"-tools", "2"}, env: map[string]string{"FIXTURE_SECRET": secret},
			message: []string{`\x1b[1;32m>> mcp-fixture\x1b[0m starting, banner line 3 of 3\a token=[redacted]`}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				if len(res.Tools) != 2 || len(res.Warnings) != 3 {
					t.Errorf("%d tools, warnings %q: want 2 tools and a warning per banner line", len(res.Tools), res.Warnings)
				}
			}},
		{num: 14, name: "banner", args: []string{"-banner-lines", "25"}, env: map[string]string{"FIXTURE_SECRET": secret},
			class: ClassProtocol, phase: PhaseInitializing, max: 2 * time.Second,
			message: []string{"more than 20 lines", `"\x1b[1;32m>> mcp-fixture\x1b[0m starting, banner line 21 of 25\a token=[redacted]"`}},
		{num: 15, name: "huge-line", limits: Limits{MessageBytes: oneMiB, Grace: grace},
			class: ClassTooLarge, phase: PhaseInitializing, message: []string{"larger than 1048576 bytes"}, max: 2 * time.Second, maxAlloc: 4 << 20},
		{num: 15, name: "endless-line", limits: Limits{MessageBytes: oneMiB, Grace: grace},
			class: ClassTooLarge, phase: PhaseInitializing, message: []string{"larger than 1048576 bytes"}, max: 2 * time.Second, maxAlloc: 4 << 20},
		{num: 16, name: "notify-flood", limits: Limits{TotalBytes: int64(oneMiB), Grace: grace},
			class: ClassTooLarge, phase: PhaseInitializing, message: []string{"more than 1048576 bytes in one verification"}, max: 2 * time.Second},
		// Kept for review, flagged invalid, shown repaired, pinned as
		// received; the others are sound.
		{num: 17, name: "invalid-utf8", args: []string{"-tools", "2"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				bad := flagged(t, res, 2, "bad_utf8", ToolInvalid, "invalid UTF-8")
				sent := "{\"name\":\"bad_utf8\",\"description\":\"Reads files \xff\xfe named in Latin-1 \xe9t\xe9.\",\"inputSchema\":{\"type\":\"object\"}}"
				if sum := sha256.Sum256([]byte(sent)); bad.Pin != hex.EncodeToString(sum[:]) {
					t.Errorf("Pin = %s, want the SHA-256 of the bytes received", bad.Pin)
				}
				if bad.Description != "Reads files \ufffd\ufffd named in Latin-1 \ufffdt\ufffd." || !utf8.Valid(bad.Raw) {
					t.Errorf("Description %q, Raw %q: want U+FFFD for each invalid byte", bad.Description, bad.Raw)
				}
			}},
		// Rejected at once, not after the listing deadline.
		{num: 18, name: "deep-json", args: []string{"-tools", "2"}, limits: Limits{ListTimeout: 20 * time.Second},
			class: ClassProtocol, phase: PhaseListing, message: []string{"not valid JSON", "exceeded max depth"}, max: 2 * time.Second},
		{num: 19, name: "duplicate-keys", args: []string{"-tools", "2"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				flagged(t, res, 2, "dup_keys", ToolInvalid, `duplicate key: "description"`)
			}},
		// The server/discover probe times out, then initialize does.
		{num: 20, name: "wrong-ids", limits: Limits{InitTimeout: time.Second, Grace: grace},
			class: ClassTimeout, phase: PhaseInitializing, min: time.Second, max: 2 * time.Second},
		// The fixture withholds its answers until the client refused
		// sampling, elicitation and roots and answered ping, and fails
		// tools/list if it did anything else.
		{num: 21, name: "client-requests", args: []string{"-tools", "3"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) { checkTools(t, res.Tools, 3) }},
		{num: 22, name: "bad-version", class: ClassProtocol, phase: PhaseInitializing,
			message: []string{`server speaks protocol version "1999-01-01", supported: `, "2025-06-18"}, max: 2 * time.Second},
		{num: 23, name: "no-tools", message: []string{"no tools capability"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				if len(res.Tools) != 0 || res.Pages != 0 {
					t.Errorf("%d tools on %d pages, want none", len(res.Tools), res.Pages)
				}
			}},
		{num: 24, name: "list-error", env: map[string]string{"FIXTURE_SECRET": secret},
			class: ClassProtocol, phase: PhaseListing, max: 2 * time.Second,
			message: []string{`backend \x1b[31mdown\x1b[0m <b>retry</b> \u202egnp.exe (token [redacted] rejected)`},
			check: func(t *testing.T, _ *Result, e *Error) {
				if strings.Contains(e.Message, secret) {
					t.Errorf("Message %q holds the secret", e.Message)
				}
			}},
		// Default limits: the probe costs DiscoverTimeout (500 ms), not
		// mcp-go's 5 s.
		{num: 25, name: "legacy-silent", args: []string{"-tools", "2"}, max: 1500 * time.Millisecond,
			check: func(t *testing.T, res *Result, _ *Error) {
				if res.ProtocolVersion != "2025-06-18" || len(res.Tools) != 2 {
					t.Errorf("protocol %q, %d tools", res.ProtocolVersion, len(res.Tools))
				}
			}},
	} {
		t.Run(fmt.Sprintf("%02d %s", c.num, c.name), func(t *testing.T) { runHostile(t, c) })
	}
}

// flagged checks a result of generated sound tools (tool_000, ...) plus
// the tool named name, which must be in state with a problem containing
// problem; it returns that tool.
func flagged(t *testing.T, res *Result, generated int, name, state, problem string) Tool {
	t.Helper()
	var sound []Tool
	var found *Tool
	for i, tool := range res.Tools {
		switch {
		case tool.Name == name:
			found = &res.Tools[i]
		case tool.State == "":
			sound = append(sound, tool)
		}
	}
	checkTools(t, sound[:min(generated, len(sound))], generated)
	if found == nil {
		t.Fatalf("no tool %.40q in %d tools", name, len(res.Tools))
	}
	if found.State != state || !slices.ContainsFunc(found.Problems, func(p string) bool { return strings.Contains(p, problem) }) {
		t.Errorf("tool %.40q: State %q, Problems %q; want %q with %q", name, found.State, found.Problems, state, problem)
	}
	for _, p := range found.Problems {
		checkDisplayable(t, "problem", p)
	}
	return *found
}

func TestHostileToolData(t *testing.T) {
	// #29: a schema's $ref to a URL is text; anything fetching it would
	// show up here.
	var fetched atomic.Int32
	refServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetched.Add(1)
		w.Write([]byte(`{"type":"string"}`))
	}))
	defer refServer.Close()
	refURL := refServer.URL + "/schema.json"
	big := Limits{MessageBytes: 16 << 20, TotalBytes: 32 << 20}
	for _, c := range []hostileCase{
		{num: 26, name: "10 000 tools", target: func(*testing.T) Target {
			return fixtureTarget("normal", "-tools", "10000", "-page-size", "100")
		}, class: ClassTooLarge, phase: PhaseListing, message: []string{"more than 1000 tools"}, max: 10 * time.Second},
		{num: 26, name: "endless-cursor", message: []string{"stopped after 100 pages of tools/list (page limit)"}, max: 5 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				if len(res.Tools) != 100 || res.Pages != 100 {
					t.Errorf("%d tools on %d pages, want 100 on 100", len(res.Tools), res.Pages)
				}
			}},
		{num: 26, name: "repeat-cursor", message: []string{`tools/list repeated cursor "page-1" on page 2; stopped the walk`}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				if len(res.Tools) != 2 || res.Pages != 2 {
					t.Errorf("%d tools on %d pages, want 2 on 2", len(res.Tools), res.Pages)
				}
			}},
		// A 10 MB schema needs larger message limits even to arrive;
		// with the defaults the page itself is too large. The race
		// detector makes decoding it slow (≈5 s; 1.3 s without).
		// 200 000 tiny entries on one page (2.7 MB): refused before any
		// is decoded; and, with the tool limit raised to let them in,
		// decoded with one warning for each kind of odd entry, not one
		// for each entry.
		{num: 26, name: "many-tiny-tools", args: []string{"-tools", "2"}, max: 10 * time.Second,
			class: ClassTooLarge, phase: PhaseListing, message: []string{"server offers more than 1000 tools (page 1 lists 200002)"}},
		{num: 26, name: "many-tiny-tools", args: []string{"-tools", "2"}, limits: Limits{MaxTools: 250_000}, max: 60 * time.Second,
			message: []string{
				"skipped 80000 tools without a name",
				"skipped 40000 entries of tools/list that are not tool objects, e.g. on page 1: a JSON number",
				`100 tools are listed more than once, with identical definitions (39900 extra entries), e.g. "t0"`,
			},
			check: func(t *testing.T, res *Result, _ *Error) {
				if len(res.Warnings) != 3 {
					t.Errorf("%d warnings, want one for each of the 3 kinds of odd entries: %q", len(res.Warnings), res.Warnings)
				}
				d := flagged(t, res, 2, "d", ToolInvalid, "different definitions under this name")
				// d's definitions also lack the inputSchema MCP requires.
				if len(res.Tools) != 103 || len(d.Problems) != 2 || d.Problems[0] != "it has no inputSchema (MCP requires one)" {
					t.Errorf("%d tools, d has problems %q; want tool_000, tool_001, t0 to t99 and d, with two problems", len(res.Tools), d.Problems)
				}
			}},
		{num: 27, name: "huge-schema", args: []string{"-tools", "2"}, limits: big, max: 30 * time.Second, maxAlloc: 200 << 20,
			check: func(t *testing.T, res *Result, _ *Error) {
				huge := flagged(t, res, 2, "huge_schema", ToolOversized, "its input schema is 10485")
				if huge.InputSchema != nil || huge.Raw != nil || huge.Description != "Its input schema is huge." {
					t.Errorf("oversized tool keeps InputSchema %.40q, Raw %.40q; want neither", huge.InputSchema, huge.Raw)
				}
			}},
		{num: 27, name: "huge-schema", args: []string{"-tools", "2", "-schema-bytes", "100000"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				flagged(t, res, 2, "huge_schema", ToolOversized, "(limit 65536); not kept")
			}},
		{num: 27, name: "huge-schema", args: []string{"-tools", "2"}, max: 2 * time.Second,
			class: ClassTooLarge, phase: PhaseListing, message: []string{"larger than 4194304 bytes"}},
		{num: 28, name: "deep-schema", args: []string{"-tools", "2"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				deep := flagged(t, res, 2, "deep_schema", ToolOversized, "its input schema nests 2001 levels (limit 32)")
				if deep.InputSchema != nil {
					t.Errorf("InputSchema kept: %.40q", deep.InputSchema)
				}
			}},
		{num: 28, name: "deep-schema within the limit", target: func(*testing.T) Target {
			return fixtureTarget("deep-schema", "-tools", "2", "-depth", "15")
		}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				if tool := res.Tools[2]; tool.Name != "deep_schema" || tool.State != "" || tool.InputSchema == nil {
					t.Errorf("tool %q: State %q, Problems %q; want sound with its schema", tool.Name, tool.State, tool.Problems)
				}
			}},
		{num: 29, name: "schema-refs", args: []string{"-tools", "2", "-ref-url", refURL}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				checkTools(t, res.Tools[:2], 2)
				if len(res.Tools) != 4 || res.Tools[2].State != "" || res.Tools[3].State != "" {
					t.Fatalf("tools %+v: want 4, all sound", res.Tools)
				}
				if !strings.Contains(string(res.Tools[2].InputSchema), `"$ref":"`+refURL+`"`) {
					t.Errorf("net_ref InputSchema %s does not hold the URL as text", res.Tools[2].InputSchema)
				}
				if n := fetched.Load(); n != 0 {
					t.Errorf("the $ref URL was fetched %d times", n)
				}
			}},
		{num: 31, name: "injection", args: []string{"-tools", "2"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				checkTools(t, res.Tools[:2], 2)
				add := res.Tools[2]
				for _, hidden := range []string{strings.Repeat(" ", 500), "<IMPORTANT>", "\U000E0069\U000E0067", "\u202e"} {
					if !strings.Contains(add.Description, hidden) {
						t.Errorf("description %q lost %q", add.Description, hidden)
					}
				}
				if add.State != "" {
					t.Errorf("State %q, Problems %q: a description within the limit is kept in full", add.State, add.Problems)
				}
			}},
		{num: 31, name: "injection", args: []string{"-tools", "2", "-description-bytes", "20000"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				add := flagged(t, res, 2, "add", ToolOversized, "its description is 20000 bytes; the first 16384 are kept")
				if len(add.Description) != 16384 || !strings.Contains(add.Description, "<IMPORTANT>") {
					t.Errorf("Description of %d bytes, want the first 16384", len(add.Description))
				}
			}},
		{num: 32, name: "duplicate-names", args: []string{"-tools", "2"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				files := flagged(t, res, 2, "files", ToolInvalid, "different definitions under this name")
				if len(res.Tools) != 3 || files.Description != "Lists the files in a folder." {
					t.Errorf("%d tools; files says %q: want 3, the first definition shown", len(res.Tools), files.Description)
				}
				for _, desc := range []string{"Lists the files in a folder.", "Deletes the files in a folder."} {
					one, err := decodeTool(json.RawMessage(`{"description":"`+desc+`","inputSchema":{"type":"object"},"name":"files"}`), DefaultLimits)
					if err != nil || one.Pin == files.Pin {
						t.Errorf("Pin %s is that of one definition (%q, %v)", files.Pin, desc, err)
					}
				}
			}},
		{num: 33, name: "hostile-names", args: []string{"-tools", "2"}, message: []string{"tool without a name"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				checkTools(t, res.Tools[:2], 2)
				want := map[string]string{
					`<script>alert(1)</script>`: ToolInvalid, `say "hi" it's`: ToolInvalid, "two\nlines": ToolInvalid,
					"../../etc/passwd": ToolInvalid, strings.Repeat("x", 10_000): ToolInvalid, "r\u0435ad_file": ToolInvalid,
					"good.name_1-ok": "",
				}
				for _, tool := range res.Tools[2:] {
					state, ok := want[tool.Name]
					if !ok || tool.State != state {
						t.Errorf("tool %.40q: State %q, Problems %q; want %q", tool.Name, tool.State, tool.Problems, state)
					}
					delete(want, tool.Name)
				}
				for name := range want {
					t.Errorf("tool %.40q missing", name)
				}
			}},
	} {
		t.Run(fmt.Sprintf("%02d %s", c.num, c.name), func(t *testing.T) { runHostile(t, c) })
	}
}

func TestJSONDepth(t *testing.T) {
	for in, want := range map[string]int{
		`1`: 0, `{}`: 1, `{"a":[1,{"b":2}]}`: 3, `["[[[", "{{"]`: 1, `{"a\"[":[]}`: 2,
		strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000): 50_000,
	} {
		if got := jsonDepth([]byte(in)); got != want {
			t.Errorf("jsonDepth(%.30q) = %d; want %d", in, got, want)
		}
	}
}

func TestHostileRemote(t *testing.T) {
	refused := func(transport, path string) func(*testing.T) Target {
		return func(t *testing.T) Target { return Target{Transport: transport, URL: "http://" + freePort(t) + path} }
	}
	fixed := func(transport, url string) func(*testing.T) Target {
		return func(*testing.T) Target { return Target{Transport: transport, URL: url} }
	}
	short := Limits{InitTimeout: 2 * time.Second}
	oneMiB := int64(1 << 20)
	for _, c := range []hostileCase{
		{num: 35, name: "refused http", target: refused(TransportHTTP, "/mcp"), limits: short,
			class: ClassNetwork, phase: PhaseInitializing, message: []string{"connection refused"}, max: time.Second},
		{num: 35, name: "refused sse", target: refused(TransportSSE, "/sse"), limits: short,
			class: ClassNetwork, phase: PhaseStarting, message: []string{"connection refused"}, max: time.Second},
		{num: 35, name: "dns failure", target: fixed(TransportHTTP, "http://switchboard-hostile-test.invalid/mcp"), limits: short,
			class: ClassNetwork, phase: PhaseInitializing, message: []string{"no such host"}, max: 2 * time.Second},
		{num: 36, name: "http-status 401 http", target: remoteTarget(TransportHTTP, "-mode", "http-status", "-status", "401"), limits: short,
			class: ClassHTTPStatus, phase: PhaseInitializing, message: []string{"401", "check credentials"}, max: time.Second},
		{num: 36, name: "http-status 403 http", target: remoteTarget(TransportHTTP, "-mode", "http-status", "-status", "403"), limits: short,
			class: ClassHTTPStatus, phase: PhaseInitializing, message: []string{"403", "check credentials"}, max: time.Second},
		{num: 36, name: "http-status 401 sse", target: remoteTarget(TransportSSE, "-mode", "http-status", "-status", "401"), limits: short,
			class: ClassHTTPStatus, phase: PhaseStarting, message: []string{"401", "check credentials"}, max: time.Second},
		{num: 36, name: "http-status 403 sse", target: remoteTarget(TransportSSE, "-mode", "http-status", "-status", "403"), limits: short,
			class: ClassHTTPStatus, phase: PhaseStarting, message: []string{"403", "check credentials"}, max: time.Second},
		{num: 37, name: "html http", target: remoteTarget(TransportHTTP, "-mode", "html"), limits: short,
			class: ClassProtocol, phase: PhaseInitializing, max: time.Second,
			message: []string{"HTML page instead of MCP", `"<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n<body>\x1b[31m<script>`}},
		{num: 37, name: "html sse", target: remoteTarget(TransportSSE, "-mode", "html"), limits: short,
			class: ClassProtocol, phase: PhaseStarting, message: []string{"HTML page instead of MCP", `\x1b[31m<script>`}, max: time.Second},
		{num: 38, name: "redirect http", target: remoteTarget(TransportHTTP, "-mode", "redirect"), limits: short,
			class: ClassNetwork, phase: PhaseInitializing, message: []string{"169.254.169.254", "link-local", "never connects"}, max: time.Second},
		{num: 38, name: "redirect sse", target: remoteTarget(TransportSSE, "-mode", "redirect", "-redirect-to", "http://[fe80::1]:8080/sse"), limits: short,
			class: ClassNetwork, phase: PhaseStarting, message: []string{"[fe80::1]:8080", "link-local"}, max: time.Second},
		{num: 39, name: "sse-no-endpoint", target: remoteTarget(TransportSSE, "-mode", "sse-no-endpoint", "-interval", "50ms"),
			limits: Limits{InitTimeout: time.Second}, class: ClassTimeout, phase: PhaseStarting, min: time.Second, max: 2 * time.Second},
		{num: 40, name: "endless-body http", target: remoteTarget(TransportHTTP, "-mode", "endless-body", "-interval", "0"),
			limits: Limits{TotalBytes: oneMiB}, class: ClassTooLarge, phase: PhaseInitializing,
			message: []string{"more than 1048576 bytes"}, max: 2 * time.Second, maxAlloc: 8 << 20},
		{num: 40, name: "endless-body sse", target: remoteTarget(TransportSSE, "-mode", "endless-body", "-interval", "0"),
			limits: Limits{TotalBytes: oneMiB}, class: ClassTooLarge, phase: PhaseStarting,
			message: []string{"more than 1048576 bytes"}, max: 3 * time.Second, maxAlloc: 8 << 20},
		// A body that never ends slowly: the deadline ends it.
		{num: 40, name: "endless-body slow", target: remoteTarget(TransportHTTP, "-mode", "endless-body", "-interval", "20ms"),
			limits: Limits{InitTimeout: time.Second}, class: ClassTimeout, phase: PhaseInitializing, min: time.Second, max: 2 * time.Second},
	} {
		t.Run(fmt.Sprintf("%02d %s", c.num, c.name), func(t *testing.T) { runHostile(t, c) })
	}
}

func TestResponseID(t *testing.T) {
	deep := strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000)
	for _, c := range []struct {
		line string
		want string // RequestId.String(), "" for none
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, "int64:7"},
		{`{"jsonrpc":"2.0","result":{"x":` + deep + `},"id":"abc"}`, "string:abc"},
		{`{"result":{"id":1},"note":"\"id\":2", "id" : 3}`, "int64:3"},
		{`{"result":["id",{"id":4}]}`, ""},
		{`{"id":null,"error":{}}`, ""},
		{`{"id":`, ""},
		{`{"a":"unterminated`, ""},
		{`not json`, ""},
	} {
		id, ok := responseID([]byte(c.line))
		got := ""
		if ok {
			got = id.String()
		}
		if got != c.want {
			t.Errorf("responseID(%.60q) = %q, %v; want %q", c.line, got, ok, c.want)
		}
	}
}

func TestDisplayable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode and 日本語":  "plain text, ünïcode and 日本語",
		"\x1b[31mred\x1b[0m\r\nnext\t": `\x1b[31mred\x1b[0m\r\nnext\t`,
		"bidi \u202eexe.txt":           `bidi \u202eexe.txt`,
		"zero\u200bwidth \U000E0041":   `zero\u200bwidth \U000e0041`,
		"bad \xff\xfe bytes":           `bad \xff\xfe bytes`,
		`already "quoted" \x1b`:        `already "quoted" \x1b`,
	} {
		if got := displayable(in); got != want {
			t.Errorf("displayable(%q) = %q; want %q", in, got, want)
		}
	}
	long := strings.Repeat("x", maxMessageBytes+500)
	if got := displayable(long); !strings.HasPrefix(got, strings.Repeat("x", maxMessageBytes)) || !strings.HasSuffix(got, "… (500 more bytes)") {
		t.Errorf("displayable of %d bytes = %.40q…%q", len(long), got, got[len(got)-30:])
	}
}
