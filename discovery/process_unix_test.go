//go:build unix

// These need sh, cat, POSIX signals and process groups, a write deadline
// on a pipe, or a PATH lookup by the executable bit.

package discovery

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
		// The timeout leaves room for the start under a loaded -race run
		// (300 ms once ran out while sh was still starting).
		target, _ := shTarget(t, `trap '' TERM; exec sleep 300`)
		limits := Limits{InitTimeout: time.Second, Grace: grace}
		_, e, d := verify(t, limits, target, nil)
		wantClass(t, e, ClassTimeout, PhaseInitializing)
		if min := limits.InitTimeout + 2*grace; d < min {
			t.Errorf("Verify took %v, less than init timeout + 2 graces (%v): was it killed before the grace periods?", d, min)
		}
		if d > 5*time.Second {
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
	// Long enough for the writer to fill the pipe on a loaded machine
	// (CI saw nothing written within 200 ms under the race detector).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
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
