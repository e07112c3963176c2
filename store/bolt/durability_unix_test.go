//go:build unix

// These need a Unix system: the writer is killed with SIGKILL and its wait
// status must say so, a full disk is a file size limit (RLIMIT_FSIZE), and
// the open file is reached through symbolic links.

package bolt

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store/storetest"

	"github.com/switchboard-dev/switchboard/store"
)

// killedWriter is what one run of the "count" helper reported before it
// was killed: -1 where it reported nothing.
type killedWriter struct {
	ready int // the stored value it started from
	last  int // the last value it acknowledged
}

// killWriter runs the "count" helper on path and SIGKILLs it after delay,
// counted from its start if early is set (so the kill can land while it
// opens the store), otherwise from its "ready" line (while it writes).
func killWriter(t *testing.T, path string, early bool, delay time.Duration) killedWriter {
	t.Helper()
	cmd := helperCommand(t, "count", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start writer: %v", err)
	}
	kill := func() { cmd.Process.Kill() }
	var timer *time.Timer
	if early {
		timer = time.AfterFunc(delay, kill)
	}
	w := killedWriter{ready: -1, last: -1}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "ready "); ok {
			w.ready, err = strconv.Atoi(v)
			if !early {
				timer = time.AfterFunc(delay, kill)
			}
		} else {
			w.last, err = strconv.Atoi(line)
		}
		if err != nil {
			t.Fatalf("writer said %q: %v", line, err)
		}
	}
	err = cmd.Wait()
	if timer != nil {
		timer.Stop()
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("writer ended with %v (stderr %q); want killed by SIGKILL", err, stderr.String())
	}
	return w
}

// kill -9 at random moments, over and over: every time, the file opens,
// passes bbolt's check, and holds every value the writer acknowledged.
func TestCrashLoopLosesNoAcknowledgedChange(t *testing.T) {
	const iterations = 75
	path := filepath.Join(t.TempDir(), "switchboard.db")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	stored, acked, unacked, early, writing := 0, 0, 0, 0, 0
	for i := range iterations {
		// One kill in four is timed from the start, to land while the
		// writer opens the store; the others land among its writes.
		isEarly := i%4 == 0
		delay := time.Duration(rng.IntN(int(20 * time.Millisecond)))
		if isEarly {
			delay = time.Duration(rng.IntN(int(150 * time.Millisecond)))
		}
		w := killWriter(t, path, isEarly, delay)
		if w.ready >= 0 && w.ready != stored {
			t.Fatalf("kill %d (seed %d): writer started from %d; want %d, the value stored after the previous kill", i, seed, w.ready, stored)
		}
		if w.ready < 0 {
			early++
		} else if w.last >= 0 {
			writing++
			acked += w.last - w.ready
		}

		db, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("kill %d (seed %d): Open(%q) = %v; want nil", i, seed, path, err)
		}
		got := counter(t, db)
		if err := db.Close(); err != nil {
			t.Fatalf("kill %d: Close() = %v; want nil", i, err)
		}
		rawCheck(t, path)
		known := max(stored, w.ready, w.last)
		// At most one commit can land without its acknowledgement.
		if got < known || got > known+1 {
			t.Fatalf("kill %d (seed %d, delay %v, early %v): stored counter = %d; want %d or %d (last acknowledged %d)", i, seed, delay, isEarly, got, known, known+1, w.last)
		}
		if got > known {
			unacked++
		}
		stored = got
	}
	t.Logf("%d kills with SIGKILL (seed %d): %d before the writer was open, %d among its writes; %d writes acknowledged, %d more committed but killed before acknowledging; counter at %d",
		iterations, seed, early, writing, acked, unacked, stored)
}

// A full disk, without root: the writer runs under RLIMIT_FSIZE. Writes
// fail with an error (no panic), and the file keeps everything that was
// acknowledged and stays usable.
func TestDiskFullFailsCleanly(t *testing.T) {
	ctx := t.Context()
	tests := []struct {
		name string
		// prepare may fill the file first; it returns the limit to set.
		prepare func(t *testing.T, path string) int64
	}{
		{
			// bbolt grows the file (ftruncate) before writing new pages:
			// the growth is what fails.
			name:    "file cannot grow",
			prepare: func(*testing.T, string) int64 { return 256 << 10 },
		},
		{
			// The file is already larger than the limit, so the growth
			// works and writing pages past the limit fails.
			name: "pages past the limit",
			prepare: func(t *testing.T, path string) int64 {
				db := mustOpenPath(t, path, Options{NoSync: true})
				arg := strings.Repeat("y", 4096)
				for i := 0; fileSize(t, path) < 1<<20; i++ {
					s := store.Server{ID: fmt.Sprintf("p%05d", i), Transport: store.TransportStdio, Command: "true", Args: []string{arg}, DefaultPolicy: store.PolicyAsk}
					if err := db.CreateServer(ctx, s); err != nil {
						t.Fatalf("CreateServer(%q) = %v; want nil", s.ID, err)
					}
				}
				if err := db.Close(); err != nil {
					t.Fatalf("Close() = %v; want nil", err)
				}
				return fileSize(t, path) - 64<<10
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "switchboard.db")
			limit := tt.prepare(t, path)
			cmd := helperCommand(t, "fill", path, helperFileSizeEnv+"="+strconv.FormatInt(limit, 10))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != exitFull {
				t.Fatalf("writer under a %d-byte limit = %v (exit %d), stderr:\n%s\nwant exit %d after a failed write", limit, err, code, stderr.String(), exitFull)
			}
			if msg := stderr.String(); !strings.Contains(msg, "write failed:") || !strings.Contains(msg, "file too large") {
				t.Errorf("writer stderr = %q; want the write error (file too large)", msg)
			}
			acked := strings.Fields(stdout.String())
			if len(acked) < 10 {
				t.Fatalf("writer acknowledged %d writes; want >= 10 before the limit", len(acked))
			}
			if size := fileSize(t, path); size > limit {
				t.Logf("file is %d bytes, limit %d (it was larger before the writer started)", size, limit)
			}

			db := mustOpenPath(t, path, Options{})
			for _, id := range acked {
				if _, err := db.Server(ctx, id); err != nil {
					t.Errorf("Server(%q) after the disk filled = %v; want the acknowledged server", id, err)
				}
			}
			if err := db.CreateServer(ctx, storetest.StdioServer("after")); err != nil {
				t.Errorf("CreateServer once there is room again = %v; want nil", err)
			}
			if err := db.Close(); err != nil {
				t.Fatalf("Close() = %v; want nil", err)
			}
			rawCheck(t, path)
			t.Logf("limit %d bytes: %d writes acknowledged, then: %s", limit, len(acked), strings.TrimSpace(stderr.String()))
		})
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A second Open of an open file in the same process fails at once with
// ErrInUse, under any name: without the registry it would wait out the
// whole lock timeout (and, where flock is per process, succeed).
func TestOpenTwiceInProcess(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "switchboard.db")
	db := mustOpenPath(t, path, Options{})
	if err := os.Symlink(path, filepath.Join(dir, "link.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, filepath.Join(dir, "hard.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(dir, "dirlink")); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path string }{
		{"same path", path},
		{"relative path", rel},
		{"unclean path", filepath.Join(dir, ".", "x", "..", "switchboard.db")},
		{"symlink", filepath.Join(dir, "link.db")},
		{"hard link", filepath.Join(dir, "hard.db")},
		{"symlinked directory", filepath.Join(dir, "dirlink", "switchboard.db")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			second, err := Open(tt.path, Options{})
			elapsed := time.Since(start)
			if err == nil {
				second.Close()
				t.Fatalf("Open(%q) while open = nil error; want ErrInUse", tt.path)
			}
			if !errors.Is(err, store.ErrInUse) || !strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), "already open in this process") {
				t.Errorf("Open(%q) while open = %v; want ErrInUse naming the path and saying it is open in this process", tt.path, err)
			}
			if elapsed > DefaultOpenTimeout/2 {
				t.Errorf("Open(%q) while open took %v; want an answer at once, not after the lock timeout", tt.path, elapsed)
			}
		})
	}
	if err := db.CreateServer(ctx, storetest.StdioServer("still-works")); err != nil {
		t.Errorf("CreateServer on the first handle = %v; want nil", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	// Closing releases the file for this process.
	again, err := Open(filepath.Join(dir, "link.db"), Options{})
	if err != nil {
		t.Fatalf("Open(link.db) after Close = %v; want nil", err)
	}
	if _, err := again.Server(ctx, "still-works"); err != nil {
		t.Errorf("Server(still-works) through the link = %v; want nil", err)
	}
	again.Close()
}
