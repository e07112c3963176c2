//go:build linux

package discovery

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// grandchildTarget runs script in sh after starting a background
// grandchild (sleep 300) that holds stdin, stdout and stderr, the way
// npx's child or a daemonising server does. (sh gives a background job
// /dev/null as stdin unless told otherwise, hence fd 3.) It returns the target and the
// files holding the child's and the grandchild's pids.
func grandchildTarget(t *testing.T, script string, args ...string) (Target, string, string) {
	t.Helper()
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	return Target{
		Transport: TransportStdio,
		Command:   "sh",
		Args: append([]string{"-c",
			pidPrefix + `exec 3<&0; sleep 300 <&3 3<&- & echo $! > "$0.gc"; exec 3<&-; ` + script, pidfile}, args...),
	}, pidfile, pidfile + ".gc"
}

func TestProcessGroupGrandchildren(t *testing.T) {
	// Default limits: returning promptly must not depend on a short init
	// timeout.
	t.Run("server works", func(t *testing.T) {
		target, _, gcfile := grandchildTarget(t, `exec "$@"`, fixture, "-tools", "3")
		res, e, d := verify(t, Limits{}, target, nil)
		if e != nil {
			t.Fatal(e)
		}
		if len(res.Tools) != 3 {
			t.Errorf("%d tools", len(res.Tools))
		}
		assertDead(t, readPid(t, gcfile), "grandchild")
		if d > 5*time.Second {
			t.Errorf("Verify took %v", d)
		}
		t.Logf("with a grandchild holding the pipes: %v", d)
	})
	t.Run("server crashes", func(t *testing.T) {
		target, _, gcfile := grandchildTarget(t, `exec "$@"`, fixture, "-mode", "crash")
		_, e, d := verify(t, Limits{}, target, nil)
		wantClass(t, e, ClassExited, "")
		assertDead(t, readPid(t, gcfile), "grandchild")
		if e.ExitCode != 3 || !strings.Contains(e.StderrTail, "simulated crash") {
			t.Errorf("ExitCode %d, StderrTail %q", e.ExitCode, e.StderrTail)
		}
		if d > 5*time.Second {
			t.Errorf("Verify took %v: the exit of the server went unnoticed while a grandchild held stdout", d)
		}
		t.Logf("crash with a grandchild holding the pipes: %v", d)
	})
	t.Run("server exits before reading", func(t *testing.T) {
		target, _, gcfile := grandchildTarget(t, `echo "cannot start" >&2; exit 4`)
		_, e, d := verify(t, Limits{}, target, nil)
		wantClass(t, e, ClassExited, "")
		assertDead(t, readPid(t, gcfile), "grandchild")
		if e.ExitCode != 4 || !strings.Contains(e.StderrTail, "cannot start") {
			t.Errorf("ExitCode %d, StderrTail %q", e.ExitCode, e.StderrTail)
		}
		if d > 5*time.Second {
			t.Errorf("Verify took %v", d)
		}
	})
	t.Run("grandchild ignores SIGTERM", func(t *testing.T) {
		dir := t.TempDir()
		pidfile, gcfile := filepath.Join(dir, "pid"), filepath.Join(dir, "gc")
		target := Target{Transport: TransportStdio, Command: "sh", Args: []string{"-c",
			pidPrefix + `(trap '' TERM; exec sleep 300) & echo $! > "$1"; shift; exec "$@"`,
			pidfile, gcfile, fixture, "-tools", "1"}}
		_, e, d := verify(t, Limits{Grace: 200 * time.Millisecond}, target, nil)
		if e != nil {
			t.Fatal(e)
		}
		assertDead(t, readPid(t, gcfile), "grandchild")
		if d > 5*time.Second {
			t.Errorf("Verify took %v", d)
		}
	})
}

func TestProcessIgnoresSIGTERM(t *testing.T) {
	grace := 200 * time.Millisecond
	t.Run("hung server", func(t *testing.T) {
		// Never answers, never exits on stdin close, ignores SIGTERM: only
		// SIGKILL after two grace periods ends it.
		target, _ := shTarget(t, `trap '' TERM; exec sleep 300`)
		limits := Limits{InitTimeout: 300 * time.Millisecond, Grace: grace}
		_, e, d := verify(t, limits, target, nil)
		wantClass(t, e, ClassTimeout, PhaseInitializing)
		if min := limits.InitTimeout + 2*grace; d < min {
			t.Errorf("Verify took %v, less than init timeout + 2 graces (%v): was it killed before the grace periods?", d, min)
		}
		if d > 3*time.Second {
			t.Errorf("Verify took %v", d)
		}
		t.Logf("SIGTERM-ignoring hung server: %v", d)
	})
	t.Run("working server that lingers", func(t *testing.T) {
		// Answers, then ignores both stdin close and SIGTERM.
		target, _ := shTarget(t, `trap '' TERM; "$@"; exec sleep 300`, fixture, "-tools", "2")
		res, e, d := verify(t, Limits{Grace: grace}, target, nil)
		if e != nil {
			t.Fatal(e)
		}
		if len(res.Tools) != 2 {
			t.Errorf("%d tools", len(res.Tools))
		}
		if d < 2*grace || d > 3*time.Second {
			t.Errorf("Verify took %v, want between %v and 3s", d, 2*grace)
		}
	})
	t.Run("server exits on SIGTERM", func(t *testing.T) {
		// Ignores stdin close only: one grace period, then SIGTERM ends it.
		target, _ := shTarget(t, `"$@"; exec sleep 300`, fixture, "-tools", "2")
		_, e, d := verify(t, Limits{Grace: grace}, target, nil)
		if e != nil {
			t.Fatal(e)
		}
		if d < grace || d > 3*time.Second {
			t.Errorf("Verify took %v", d)
		}
	})
}

func TestStartProcessStop(t *testing.T) {
	// The process layer alone: a child that exits on stdin close is
	// reaped within the first grace period and its stdout reaches EOF.
	p, err := startProcess(processConfig{Command: "cat", Env: childEnv(os.Getenv, nil), StderrCap: 1024, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pgid := p.pgid()
	if m := GroupMembers(pgid); !slices.Contains(m, pgid) {
		t.Fatalf("GroupMembers(%d) = %v while cat runs", pgid, m)
	}
	if ok, _ := p.exited(); ok {
		t.Fatal("exited before stop")
	}
	if _, err := io.WriteString(p.stdin, "hello\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.stdout).ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	start := time.Now()
	p.stop(time.Second)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("stop took %v for a child that exits on stdin close", d)
	}
	if ok, code := p.exited(); !ok || code != 0 {
		t.Errorf("exited() = %v, %d after stop", ok, code)
	}
	assertGroupGone(t, pgid)
	p.stop(time.Second) // idempotent
}

func TestStartProcessArgv0AndDir(t *testing.T) {
	dir := t.TempDir()
	p, err := startProcess(processConfig{Command: "sh", Args: []string{"-c", `echo "$0 $(pwd)" >&2`}, Env: childEnv(os.Getenv, nil), Dir: dir, StderrCap: 1024, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p.waitExit(5 * time.Second)
	p.stop(time.Second)
	assertGroupGone(t, p.pgid())
	want := "sh " + dir + "\n"
	if got := p.stderr.String(); got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}

// TestTailRedacted: a tail that starts in the middle of a line may start
// in the middle of a secret; the end of it is redacted too.
func TestTailRedacted(t *testing.T) {
	const secret = "topsecret-0123456789"
	secrets := []string{secret, "other-secret"}
	tl := newTail(35)
	fmt.Fprint(tl, "xxxxxx"+secret+" and "+secret) // 51 bytes; the kept 35 start with "0123456789 and "
	if got, want := tl.redacted(secrets), "[redacted] and [redacted]"; got != want {
		t.Errorf("redacted() = %q; want %q", got, want)
	}
	// From a line boundary, or without anything dropped, the start is
	// the start of what was written.
	tl = newTail(40)
	fmt.Fprint(tl, "6789 first\n6789 second "+secret)
	if got, want := tl.redacted(secrets), "6789 second [redacted]"; got != want {
		t.Errorf("redacted() = %q; want %q", got, want)
	}
	tl = newTail(40)
	fmt.Fprint(tl, "6789 is not a secret")
	if got, want := tl.redacted(secrets), "6789 is not a secret"; got != want {
		t.Errorf("redacted() = %q; want %q", got, want)
	}
}

func TestCapWarnings(t *testing.T) {
	var ws []string
	for i := range 60 {
		ws = append(ws, fmt.Sprint("warning ", i))
	}
	got := capWarnings(slices.Clone(ws), 48)
	if len(got) != 48 || !slices.Equal(got[:47], ws[:47]) || got[47] != "… and 13 more warnings" {
		t.Errorf("capWarnings(60 warnings, 48) = %d warnings ending %q", len(got), got[len(got)-1])
	}
	if got := capWarnings(ws[:48], 48); !slices.Equal(got, ws[:48]) {
		t.Errorf("capWarnings(48 warnings, 48) changed them: %q", got)
	}
}

func TestTail(t *testing.T) {
	tl := newTail(10)
	fmt.Fprint(tl, "abc\n")
	if got := tl.String(); got != "abc\n" {
		t.Errorf("%q", got)
	}
	fmt.Fprint(tl, "defgh\nij")
	// 12 bytes written, 10 kept: "c\ndefgh\nij" → from the first line break.
	if got := tl.String(); got != "defgh\nij" {
		t.Errorf("after overflow: %q", got)
	}
	n, err := tl.Write([]byte("0123456789ABCDEF\nxyz"))
	if n != 20 || err != nil {
		t.Errorf("Write = %d, %v", n, err)
	}
	if got := tl.String(); got != "xyz" {
		t.Errorf("after a big write: %q", got)
	}
	// A kept part without a line break is shown as is.
	tl = newTail(4)
	fmt.Fprint(tl, "abcdefgh")
	if got := tl.String(); got != "efgh" {
		t.Errorf("no newline: %q", got)
	}
}

func TestChildEnv(t *testing.T) {
	env := childEnv(func(k string) string {
		return map[string]string{"PATH": "/bin", "HOME": "/h", "SWITCHBOARD_TOKEN": "x"}[k]
	}, map[string]string{"A": "1", "HOME": "/own"})
	want := []string{"A=1", "HOME=/own", "PATH=/bin"}
	if !slices.Equal(env, want) {
		t.Errorf("childEnv = %q, want %q", env, want)
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "srv")
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "plain"), []byte(""), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	env := []string{"PATH=" + dir}
	if p, err := lookPath("srv", env); err != nil || p != exe {
		t.Errorf("lookPath(srv) = %q, %v", p, err)
	}
	for _, name := range []string{"plain", "sub", "sh"} {
		if _, err := lookPath(name, env); !errors.Is(err, exec.ErrNotFound) {
			t.Errorf("lookPath(%s) in %s: %v, want not found", name, dir, err)
		}
	}
	// Resolved against the child's PATH, not Switchboard's.
	if _, err := lookPath("sh", []string{"PATH=/nonexistent"}); err == nil {
		t.Error("sh found in /nonexistent")
	}
}

func TestReadLine(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("0123456789\n01234567890\nlast"), 16)
	if l, err := readLine(r, 10); err != nil || string(l) != "0123456789" {
		t.Errorf("line at the limit: %q, %v", l, err)
	}
	var tooLarge errTooLarge
	if _, err := readLine(r, 10); !errors.As(err, &tooLarge) {
		t.Errorf("line over the limit: %v", err)
	}
	// Lines longer than the reader's buffer are assembled.
	r = bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 100)+"\nend"), 16)
	if l, err := readLine(r, 100); err != nil || len(l) != 100 {
		t.Errorf("long line: %d bytes, %v", len(l), err)
	}
	if l, err := readLine(r, 100); err != nil || string(l) != "end" {
		t.Errorf("last line without newline: %q, %v", l, err)
	}
	if _, err := readLine(r, 100); !errors.Is(err, io.EOF) {
		t.Errorf("at EOF: %v", err)
	}
	// A last line without a newline has the same limit, whether it fits
	// the reader's buffer or not.
	for _, size := range []int{16, 4096} {
		r = bufio.NewReaderSize(strings.NewReader("0123456789"), size)
		if l, err := readLine(r, 10); err != nil || string(l) != "0123456789" {
			t.Errorf("buffer %d: last line at the limit: %q, %v", size, l, err)
		}
		r = bufio.NewReaderSize(strings.NewReader("0123456789X"), size)
		if l, err := readLine(r, 10); !errors.As(err, &tooLarge) {
			t.Errorf("buffer %d: last line of 11 bytes with limit 10 = %q, %v; want too large", size, l, err)
		}
	}
}

func TestSample(t *testing.T) {
	ascii := strings.Repeat("a", sampleBytes-1)
	for _, c := range []struct {
		name, in, want string
		secrets        []string
	}{
		{"short", "hello", "hello", nil},
		{"cut", strings.Repeat("b", 200), strings.Repeat("b", sampleBytes), nil},
		// "é" takes bytes 119 and 120: the cut falls before it, not in it.
		{"rune at the end", ascii + "é and more", ascii, nil},
		{"not UTF-8", "\xff\xfe ok", "\uFFFD ok", nil},
		{"continuation bytes at the end", ascii + "\x80\x80\x80\x80", ascii + "\uFFFD", nil},
		// Redacted before the cut: nothing of the secret is left.
		{"secret at the end", ascii[:111] + "topsecret-0123456789", ascii[:111] + "[redacted", []string{"topsecret-0123456789"}},
		{"3-byte rune at the end", ascii[:118] + "日本", ascii[:118], nil},
		{"4-byte rune before the end", ascii[:116] + "😀日", ascii[:116] + "😀", nil},
		{"secret with a quote", `say "x"` + `pw"q\ü!` + " ok", `say "x"[redacted] ok`, []string{`pw"q\ü!`}},
	} {
		if got := sample([]byte(c.in), c.secrets); got != c.want {
			t.Errorf("%s: sample(%q) = %q; want %q", c.name, c.in, got, c.want)
		}
	}
	if got := quote(`id "pw"q\ü!" end`, []string{`pw"q\ü!`}); got != `"id \"[redacted]\" end"` {
		t.Errorf("quote = %s", got)
	}
}

// TestWriteStopsAfterPartialWrite: a message whose write deadline passed
// with a part of it in the pipe must be the last thing written, or the
// server would read the rest of the stream as the end of that message.
func TestWriteStopsAfterPartialWrite(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	tr := newStdioTransport(&process{stdin: w}, DefaultLimits, &recorder{}, nil)
	defer tr.endLife()
	// More than the pipe takes (64 KiB), so the write stops part way.
	big := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: "x",
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"pad": strings.Repeat("p", 1<<20)}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := tr.write(ctx, big); !errors.Is(err, errStdinBlocked) {
		t.Fatalf("write of 1 MiB to a pipe nobody reads = %v; want %v", err, errStdinBlocked)
	}
	// The server reads all there is now: a part of the message.
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2<<20)
	n, err := r.Read(buf)
	if err != nil || n == 0 || n >= 1<<20 || buf[n-1] == '\n' {
		t.Fatalf("read %d bytes, %v; want a part of the message", n, err)
	}
	// Nothing more is written, at once.
	start := time.Now()
	small := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: "y"}}
	if err := tr.write(context.Background(), small); !errors.Is(err, errStdinBlocked) {
		t.Errorf("write after a message was cut off = %v; want %v", err, errStdinBlocked)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the write after a message was cut off took %v; want it refused at once", d)
	}
	// Had it been written, it would be in the pipe by now.
	r.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if n, err := r.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read %q, %v after the cut-off message; want nothing", buf[:n], err)
	}
}

func TestForbiddenAddresses(t *testing.T) {
	for addr, want := range map[string]bool{
		"169.254.169.254":        true,
		"::ffff:169.254.169.254": true,
		"fe80::1":                true,
		"fd00:ec2::254":          true,
		"100.100.100.200":        true,
		"127.0.0.1":              false,
		"10.0.0.1":               false,
		"::1":                    false,
		"93.184.216.34":          false,
	} {
		if got := forbidden(netip.MustParseAddr(addr)); got != want {
			t.Errorf("forbidden(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestRedact(t *testing.T) {
	target := Target{Env: map[string]string{"K": "hunter22", "SHORT": "ab"}, Headers: map[string]string{"Authorization": "Bearer tok-1234"}}
	got := redact("pw hunter22, auth Bearer tok-1234, ab", target.secrets())
	if got != "pw [redacted], auth [redacted], ab" {
		t.Errorf("redact = %q", got)
	}
}

// TestNewSince checks the window of pids an escapee scan looks at: from
// the server's pid while nothing can have wrapped, everything otherwise;
// and that a scan with the window sees what a full scan sees among the
// server's processes.
func TestNewSince(t *testing.T) {
	p, err := startProcess(processConfig{Command: "sh", Args: []string{"-c", "sleep 30 & sleep 30 & cat"},
		Env: childEnv(os.Getenv, nil), StderrCap: 1024, Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop(100 * time.Millisecond)
	pid := p.pgid()
	// Unless the machine's pids wrapped round since the start (a busy
	// machine with a small pid_max), the window starts at the server.
	if last, _ := lastPid(); last >= pid {
		if got := p.newSince(100); got != pid {
			t.Errorf("newSince(100) = %d just after start; want the server's pid %d", got, pid)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(GroupMembers(pid)) < 4 && time.Now().Before(deadline) { // sh, two sleeps, cat
		time.Sleep(5 * time.Millisecond)
	}
	members := func(procs []procStat) []int {
		var out []int
		for _, ps := range procs {
			if ps.pgrp == pid {
				out = append(out, ps.pid)
			}
		}
		slices.Sort(out)
		return out
	}
	if all, window := members(scanProcs(nil)), members(scanProcs(p.newSince)); len(all) != 4 || !slices.Equal(all, window) {
		t.Errorf("group members: %v in a full scan, %v in the window; want the same 4", all, window)
	}

	forks := p.startForks
	p.startForks = forks - uint64(pidMax()) // as if the pid space went round since
	if got := p.newSince(100); got != 0 {
		t.Errorf("newSince after pid_max forks = %d; want 0 (all)", got)
	}
	p.startForks = 0 // the count could not be read at start
	if got := p.newSince(100); got != 0 {
		t.Errorf("newSince without a start count = %d; want 0 (all)", got)
	}
	p.startForks = forks
}

// TestStopLooksAgain: a process that leaves the group after the server's
// processes were looked at (here, as if after the tools were listed, see
// VerifyEarly) and drops the run marker is still found by stop, which
// looks again before anything exits, while its parent still leads back to
// the server.
func TestStopLooksAgain(t *testing.T) {
	gcfile := filepath.Join(t.TempDir(), "gc")
	p, err := startProcess(processConfig{Command: "sh",
		Args: []string{"-c", `read go; setsid env -i sleep 300 & echo $! > "$0"; exec cat >/dev/null`, gcfile},
		Env:  childEnv(os.Getenv, nil), StderrCap: 1024, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop(time.Second)
	if esc := p.escapees(); len(esc) != 0 {
		t.Fatalf("escapees() = %v before the server started any", esc)
	}
	if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	pid := readPid(t, gcfile)
	killAtEnd(t, pid)
	// Wait until it is sleep: out of the group, without the marker.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		ps, ok := readProcStat(pid)
		if ok && ps.pgrp != p.pgid() && !hasMarker(pid, p.marker) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not leave the group (%+v, %v)", pid, ps, ok)
		}
	}
	p.stop(time.Second)
	assertGroupGone(t, p.pgid())
	assertDead(t, pid, "the process that left the group after the last look")
	if killed, left := p.escapeReport(); !slices.Equal(killed, []int{pid}) || len(left) != 0 {
		t.Errorf("escapeReport() = %v, %v; want [%d] killed", killed, left, pid)
	}
}

// TestEscapeesIgnoreOlderGroup: processes in a group with the server's
// group id that started before the server are not the server's (once a
// group is gone, its id may be taken by another), and neither are their
// children outside it.
func TestEscapeesIgnoreOlderGroup(t *testing.T) {
	gcfile := filepath.Join(t.TempDir(), "gc")
	stranger := exec.Command("sh", "-c", `setsid sleep 300 & echo $! > "$0"; exec sleep 300`, gcfile)
	stranger.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-stranger.Process.Pid, syscall.SIGKILL)
		stranger.Wait()
	}()
	pid := readPid(t, gcfile)
	killAtEnd(t, pid)
	var leader, child procStat
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var ok1, ok2 bool
		leader, ok1 = readProcStat(stranger.Process.Pid)
		child, ok2 = readProcStat(pid)
		if ok1 && ok2 && child.pgrp == pid && child.ppid == leader.pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stranger's child did not leave its group: %+v %+v", leader, child)
		}
	}
	// A server whose pid, and so group id, is the stranger's.
	server := func(start uint64) *process {
		return &process{cmd: &exec.Cmd{Process: stranger.Process}, marker: []byte(RunMarkerVar + "=none\x00"),
			startTicks: start, escaped: map[int]uint64{}}
	}
	if got := server(leader.start).escapees(); !slices.Equal(got, []int{pid}) {
		t.Fatalf("escapees() of the group's own server = %v; want [%d] (the test is void)", got, pid)
	}
	if got := server(max(leader.start, child.start) + 1).escapees(); len(got) != 0 {
		t.Errorf("escapees() of a server started after the group = %v; want none", got)
	}
}

// killAtEndExactly kills pid when the test ends, if it is still the
// process it is now.
func killAtEndExactly(t *testing.T, pid int) {
	if ps, ok := readProcStat(pid); ok {
		t.Cleanup(func() { killExactly(pid, ps.start) })
	}
}

// runFiles returns the run records in c's directory.
func runFiles(t *testing.T, c *Containment) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(c.dir, runPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestRunRecorded: a run is written down before its server starts, with
// the server's marker, group and start time once it runs, and crossed
// off when it is stopped, or when it fails to start.
func TestRunRecorded(t *testing.T) {
	c, err := Contain(filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if fi, err := os.Stat(c.dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("run records directory: %v, %v; want mode 0700", fi, err)
	}
	p, err := startProcess(processConfig{Command: "cat", Env: childEnv(os.Getenv, nil), StderrCap: 1024, Grace: time.Second, Runs: c})
	if err != nil {
		t.Fatal(err)
	}
	files := runFiles(t, c)
	if len(files) != 1 {
		p.stop(time.Second)
		t.Fatalf("run records while a server runs: %q; want 1", files)
	}
	got, ok := readRun(files[0])
	want := runInfo{boot: bootID(), pidNS: pidNamespace(), marker: strings.TrimSuffix(strings.TrimPrefix(string(p.marker), RunMarkerVar+"="), "\x00"),
		pgid: p.pgid(), start: p.startTicks, forks: got.forks, inUse: got.inUse}
	if !ok || got != want || got.boot == "" || got.start == 0 || got.forks == 0 || got.inUse == 0 || got.forks > p.startForks {
		t.Errorf("readRun(%s) = %+v, %v; want %+v with a pid clock read before the start (forks then %d)", files[0], got, ok, want, p.startForks)
	}
	p.stop(time.Second)
	if files := runFiles(t, c); len(files) != 0 {
		t.Errorf("run records after stop: %q; want none", files)
	}

	// A file the kernel will not run: the start fails after the record
	// was written.
	bad := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(bad, []byte("\x7fELF not really"), 0o755)
	if _, err := startProcess(processConfig{Command: bad, Env: childEnv(os.Getenv, nil), StderrCap: 1024, Grace: time.Second, Runs: c}); err == nil {
		t.Fatal("startProcess of a bad executable succeeded")
	}
	if files := runFiles(t, c); len(files) != 0 {
		t.Errorf("run records after a failed start: %q; want none", files)
	}
}

// TestSweepStopsWhatACrashLeft: the start-up sweep stops what is left of
// a run recorded and never crossed off, as a crash leaves it: the server
// is dead; a process of its group without the run marker, one that left
// the group with the marker, and that one's child without the marker
// live on. It spares processes in groups the records name but that are
// not (or may not be) the servers' groups: one whose leader started at
// another time (its pid was reused), one whose leader is gone and whose
// pid the kernel may have handed out again since, one recorded in
// another boot.
func TestSweepStopsWhatACrashLeft(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sb.db")
	c, err := Contain(db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	start := func(marker, script string) *exec.Cmd {
		t.Helper()
		cmd := exec.Command("sh", "-c", script, dir)
		cmd.Env = childEnv(os.Getenv, nil)
		if marker != "" {
			cmd.Env = append(cmd.Env, RunMarkerVar+"="+marker)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAtEndExactly(t, cmd.Process.Pid)
		return cmd
	}
	pidOf := func(name string) int {
		pid := readPid(t, filepath.Join(dir, name))
		killAtEndExactly(t, pid)
		return pid
	}
	record := func(c *Containment, marker string, pgid int, start, forks, inUse uint64) {
		t.Helper()
		r, err := c.begin(marker)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.started(pgid, start, forks, inUse); err != nil {
			t.Fatal(err)
		}
	}

	// The crashed run.
	const marker = "0123456789abcdef"
	forks, inUse := pidClock()
	server := start(marker, `env -i sleep 300 & echo $! > "$0/member"; `+
		`setsid sh -c 'env -i sleep 300 & echo $! > "$0/grandchild"; exec sleep 300' "$0" & echo $! > "$0/escapee"; exec sleep 300`)
	serverStat, _ := readProcStat(server.Process.Pid)
	record(c, marker, server.Process.Pid, serverStat.start, forks, inUse)
	member, escapee, grandchild := pidOf("member"), pidOf("escapee"), pidOf("grandchild")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		m, _ := readProcStat(member)
		e, _ := readProcStat(escapee)
		g, _ := readProcStat(grandchild)
		if m.pgrp == server.Process.Pid && e.pgrp == escapee && g.ppid == escapee && !hasMarker(member, []byte(RunMarkerVar)) && hasMarker(escapee, []byte(RunMarkerVar+"="+marker+"\x00")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the crashed run's processes are not in place: %+v %+v %+v", m, e, g)
		}
	}
	syscall.Kill(server.Process.Pid, syscall.SIGKILL)
	server.Wait()

	// A group whose leader started after the recorded server: the pid
	// went to another process.
	reused := start("", `sleep 300 & exec sleep 300`)
	reusedStat, _ := readProcStat(reused.Process.Pid)
	record(c, "1111111111111111", reused.Process.Pid, reusedStat.start-1, forks, inUse)
	// A group whose leader is gone, recorded as if all pids had been in
	// use: its pid may have been handed out again since.
	headless := start("", `sleep 300 & echo $! > "$0/headless"`)
	headless.Wait()
	headlessMember := pidOf("headless")
	record(c, "2222222222222222", headless.Process.Pid, 0, forks, uint64(pidMax()))
	// A group recorded in another boot: start times and pids then say
	// nothing about processes now.
	elsewhere := start("", `exec sleep 300`)
	elsewhereStat, _ := readProcStat(elsewhere.Process.Pid)
	other := *c
	other.boot = "another-boot"
	record(&other, "3333333333333333", elsewhere.Process.Pid, elsewhereStat.start, forks, inUse)

	swept, err := c.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	want := []int{member, escapee, grandchild}
	slices.Sort(want)
	if swept.Runs != 4 || !slices.Equal(swept.Killed, want) || len(swept.Left) != 0 {
		t.Errorf("Sweep() = %+v; want 4 runs, killed %v, none left", swept, want)
	}
	assertDead(t, member, "the member of the crashed run's group")
	assertDead(t, escapee, "the crashed run's process outside the group")
	assertDead(t, grandchild, "the child of that process")
	for what, pid := range map[string]int{"a group leader with a reused pid": reused.Process.Pid,
		"a member of a group whose pid may have been reused": headlessMember, "a process recorded in another boot": elsewhere.Process.Pid} {
		if !alive(pid) {
			t.Errorf("%s (pid %d) was killed", what, pid)
		}
	}
	if files := runFiles(t, c); len(files) != 0 {
		t.Errorf("run records after the sweep: %q; want none", files)
	}
	syscall.Kill(-reused.Process.Pid, syscall.SIGKILL)
	reused.Wait()
	syscall.Kill(elsewhere.Process.Pid, syscall.SIGKILL)
	elsewhere.Wait()
}

// TestReaperReapsOnlyAdopted: as a child subreaper this process adopts an
// orphan that left the group (setsid) and reaps it once it dies, by pid;
// it leaves to their own Wait a zombie server started by startChild and
// a zombie child in its own process group (such as the store's check),
// both already waiting when the reaper passes.
func TestReaperReapsOnlyAdopted(t *testing.T) {
	release, err := becomeReaper()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	zombie := func(what string, pid int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			switch state := procState(pid); {
			case state == "Z":
				return
			case state == "":
				t.Fatalf("%s (pid %d) is gone before its Wait: someone else reaped it", what, pid)
			case time.Now().After(deadline):
				t.Fatalf("%s (pid %d) did not exit (state %q)", what, pid, state)
			}
		}
	}

	plain := exec.Command("sh", "-c", "exit 7")
	if err := plain.Start(); err != nil {
		t.Fatal(err)
	}
	server := exec.Command("sh", "-c", "exit 5")
	server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := startChild(server); err != nil {
		t.Fatal(err)
	}
	gcfile := filepath.Join(t.TempDir(), "orphan")
	parent := exec.Command("sh", "-c", `setsid sleep 300 & echo $! > "$0"`, gcfile)
	parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := startChild(parent); err != nil {
		t.Fatal(err)
	}
	orphan := readPid(t, gcfile)
	killAtEndExactly(t, orphan)
	if err := parent.Wait(); err != nil {
		t.Fatalf("Wait of the orphan's parent, a server: %v", err)
	}
	childReaped(parent.Process.Pid)
	if ps, ok := readProcStat(orphan); !ok || ps.ppid != os.Getpid() {
		t.Fatalf("orphan %d: %+v, %v; want it adopted by this process %d", orphan, ps, ok, os.Getpid())
	}

	zombie("the child in this process's group", plain.Process.Pid)
	zombie("the server", server.Process.Pid)
	syscall.Kill(orphan, syscall.SIGKILL)
	reapAdopted()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat("/proc/" + strconv.Itoa(orphan)); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("adopted orphan %d not reaped (state %q)", orphan, procState(orphan))
		}
		reapAdopted()
	}
	if err := plain.Wait(); plain.ProcessState == nil || plain.ProcessState.ExitCode() != 7 {
		t.Errorf("child in this process's group: Wait() = %v, exit code %v; want 7", err, plain.ProcessState)
	}
	err = server.Wait()
	childReaped(server.Process.Pid)
	if server.ProcessState == nil || server.ProcessState.ExitCode() != 5 {
		t.Errorf("server: Wait() = %v, exit code %v; want 5", err, server.ProcessState)
	}
}
