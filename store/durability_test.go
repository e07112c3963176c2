//go:build linux

package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// rawCheck runs bbolt's own consistency check over the file, outside the
// store.
func rawCheck(t *testing.T, path string) {
	t.Helper()
	rawView(t, path, func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("tx.Check(%s): %v", path, err)
		}
		return nil
	})
}

// counter returns the value the "count" helper keeps, 0 if it never ran.
func counter(t *testing.T, db *DB) int {
	t.Helper()
	s, err := db.Server(counterID)
	if errors.Is(err, ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatalf("Server(%q) = %v; want nil", counterID, err)
	}
	return s.TimeoutMS
}

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
					s := Server{ID: fmt.Sprintf("p%05d", i), Transport: TransportStdio, Command: "true", Args: []string{arg}, DefaultPolicy: PolicyAsk}
					if err := db.CreateServer(s); err != nil {
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
				if _, err := db.Server(id); err != nil {
					t.Errorf("Server(%q) after the disk filled = %v; want the acknowledged server", id, err)
				}
			}
			if err := db.CreateServer(stdioServer("after")); err != nil {
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
			if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), "already open in this process") {
				t.Errorf("Open(%q) while open = %v; want ErrInUse naming the path and saying it is open in this process", tt.path, err)
			}
			if elapsed > DefaultOpenTimeout/2 {
				t.Errorf("Open(%q) while open took %v; want an answer at once, not after the lock timeout", tt.path, elapsed)
			}
		})
	}
	if err := db.CreateServer(stdioServer("still-works")); err != nil {
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
	if _, err := again.Server("still-works"); err != nil {
		t.Errorf("Server(still-works) through the link = %v; want nil", err)
	}
	again.Close()
}

// realDB makes a store with a few servers and tools, closed cleanly, and
// returns its path and its server ids.
func realDB(t *testing.T) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "real.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatalf("Open(%q) = %v; want nil", path, err)
	}
	tools := benchTools(20)
	var ids []string
	for i := range 40 {
		s := mustCreate(t, db, stdioServer(fmt.Sprintf("srv-%02d", i)))
		mustRecordSuccess(t, db, s.ID, verification(s, "job", at(i), tools...))
		ids = append(ids, s.ID)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	return path, ids
}

// layout is where things are in a database file: the meta page bbolt
// uses, and the first page of the discovery bucket.
type layout struct {
	boltMeta
	discovery uint64
}

func fileLayout(t *testing.T, path string) layout {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m0 := readBoltMeta(f, 0)
	m1 := readBoltMeta(f, m0.pageSize)
	if !m0.valid || !m1.valid {
		t.Fatalf("meta pages of %s: valid %v, %v; want both valid", path, m0.valid, m1.valid)
	}
	l := layout{boltMeta: m0}
	if m1.txid > m0.txid {
		l.boltMeta = m1
	}
	rawView(t, path, func(tx *bolt.Tx) error {
		l.discovery = uint64(tx.Bucket(bucketDiscovery).Root())
		return nil
	})
	if l.discovery == 0 {
		t.Fatalf("discovery bucket of %s is inline; want it on a page of its own", path)
	}
	return l
}

// markUnclean sets the open marker, as a run that was killed leaves it.
func markUnclean(t *testing.T, path string) {
	t.Helper()
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyOpen, []byte("killed"))
	})
}

// Damaged files are refused with a message naming the file and saying
// what to do, never a crash, never a silent re-initialisation — or, where
// bbolt can fall back to the other meta page, opened with all their data.
func TestOpenDamaged(t *testing.T) {
	page := func(l layout, id uint64) int64 { return int64(id) * l.pageSize }
	flip := func(data []byte, off int64) []byte {
		data[off] ^= 0xff
		return data
	}
	zero := func(data []byte, l layout, id uint64) []byte {
		clear(data[page(l, id) : page(l, id)+l.pageSize])
		return data
	}
	const (
		cutShort = "was cut short"
		checked  = "and the integrity check"
		invalid  = "is not a valid switchboard database"
		unclean  = "did not shut down cleanly"
	)
	tests := []struct {
		name    string
		unclean bool // the last run did not close the file
		damage  func(data []byte, l layout) []byte
		want    []string // in the error; nil: Open succeeds with all data
	}{
		{"first two pages", false, func(d []byte, l layout) []byte { return d[:page(l, 2)] }, []string{cutShort, checked}},
		{"cut in the middle", false, func(d []byte, l layout) []byte { return d[:page(l, l.pages/2)] }, []string{cutShort, checked}},
		{"cut inside a page", false, func(d []byte, l layout) []byte { return d[:page(l, l.pages/2)+100] }, []string{"not a whole number", checked}},
		// bbolt falls back to the other meta page, the commit before:
		// Close's own, so no data is lost. Open checks the file first.
		{"newest meta flipped", false, func(d []byte, l layout) []byte { return flip(d, page(l, l.txid%2)+pageHeaderSize+16) }, nil},
		{"older meta flipped", false, func(d []byte, l layout) []byte { return flip(d, page(l, 1-l.txid%2)+pageHeaderSize+16) }, nil},
		{"both metas flipped", false, func(d []byte, l layout) []byte {
			return flip(flip(d, pageHeaderSize+16), page(l, 1)+pageHeaderSize+16)
		}, []string{invalid}},
		{"freelist page of another type", false, func(d []byte, l layout) []byte {
			d[page(l, l.freelist)+8] = leafPage
			return d
		}, []string{"freelist page is damaged", checked}},
		{"freelist count absurd", false, func(d []byte, l layout) []byte {
			binary.NativeEndian.PutUint16(d[page(l, l.freelist)+10:], 0xFFFF)
			binary.NativeEndian.PutUint64(d[page(l, l.freelist)+pageHeaderSize:], 1<<62)
			return d
		}, []string{"freelist page is damaged", checked}},
		{"root page zeroed", false, func(d []byte, l layout) []byte { return zero(d, l, l.root) }, []string{"root page is damaged", checked}},
		// The check finds the zeroed page before it reads anything
		// through bbolt, so without knowing how the last run ended.
		{"discovery page zeroed after a crash", true, func(d []byte, l layout) []byte { return zero(d, l, l.discovery) }, []string{"the integrity check found a problem: page"}},
		{"a record's JSON damaged after a crash", true, func(d []byte, l layout) []byte {
			i := bytes.Index(d, []byte(`"status":"success"`))
			d[i] = '{'
			return d
		}, []string{unclean, checked + " could not read it"}},
		// The header looks sound and the last run closed the file: the
		// check finds it all the same, before bbolt would panic in this
		// process.
		{"discovery page zeroed", false, func(d []byte, l layout) []byte { return zero(d, l, l.discovery) }, []string{"is damaged: the integrity check found"}},
		// Damage inside a value: the pages are sound, the JSON is not.
		{"a record's JSON damaged", false, func(d []byte, l layout) []byte {
			i := bytes.Index(d, []byte(`"status":"success"`))
			d[i] = '{'
			return d
		}, []string{"is damaged: the integrity check could not read it", `discovery/"srv-`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, ids := realDB(t)
			if tt.unclean {
				markUnclean(t, path)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data = tt.damage(data, fileLayout(t, path))
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}

			if tt.want == nil {
				db := mustOpenPath(t, path, Options{})
				for _, id := range ids {
					if tools, err := db.Tools(id); err != nil || len(tools) != 20 {
						t.Errorf("Tools(%q) = %d tools, %v; want 20, nil", id, len(tools), err)
					}
				}
				if err := db.Close(); err != nil {
					t.Fatalf("Close() = %v; want nil", err)
				}
				rawCheck(t, path)
				// The next commits rewrote both meta pages.
				if exists, why, err := inspect(path); !exists || why != "" || err != nil {
					t.Errorf("inspect(%q) after Open = %v, %q, %v; want it there with nothing wrong", path, exists, why, err)
				}
				return
			}
			// Twice: the refusal must not leave the file locked or claimed.
			for attempt := 1; attempt <= 2; attempt++ {
				db, err := Open(path, Options{})
				if err == nil {
					db.Close()
					t.Fatalf("Open(%q) #%d = nil error; want a refusal", path, attempt)
				}
				msg := err.Error()
				if !errors.Is(err, ErrDamaged) || !strings.Contains(msg, path) || !strings.Contains(msg, "restore a backup") {
					t.Errorf("Open(%q) #%d = %v; want ErrDamaged naming the path and saying to restore a backup", path, attempt, err)
				}
				for _, w := range tt.want {
					if !strings.Contains(msg, w) {
						t.Errorf("Open(%q) #%d = %q; want it to contain %q", path, attempt, msg, w)
					}
				}
				if attempt == 1 {
					t.Logf("%s", msg)
				}
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(after, data) {
				t.Errorf("%s after the refused Open changed; want it untouched", path)
			}
		})
	}
}

// Every existing file is checked before it is used, however its last run
// ended (which a program that cannot run checks cannot open, below); a
// new file needs no check.
func TestEveryOpenIsChecked(t *testing.T) {
	path, _ := realDB(t)
	childCheckReady.Store(false)
	t.Cleanup(func() { childCheckReady.Store(true) })

	fresh := filepath.Join(t.TempDir(), "new.db")
	db, err := Open(fresh, Options{})
	if err != nil {
		t.Fatalf("Open(%q) of a new file, without child checks = %v; want nil", fresh, err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	for _, p := range []string{path, fresh} {
		db, err = Open(p, Options{})
		if err == nil {
			db.Close()
			t.Fatalf("Open(%q) after a clean shutdown, without child checks = nil error; want a refusal to open it unchecked", p)
		}
		if !strings.Contains(err.Error(), "RunChildCheckIfAsked") {
			t.Errorf("Open(%q) without child checks = %v; want it to name RunChildCheckIfAsked", p, err)
		}
	}

	childCheckReady.Store(true)
	db, err = Open(path, Options{})
	if err != nil {
		t.Fatalf("Open(%q) = %v; want nil (checked in a child)", path, err)
	}
	var marked bool
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		marked = tx.Bucket(bucketMeta).Get(keyOpen) != nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !marked {
		t.Errorf("meta %s while open = missing; want set", keyOpen)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	rawView(t, path, func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyOpen); v != nil {
			t.Errorf("meta %s after Close = %q; want deleted", keyOpen, v)
		}
		return nil
	})
	markUnclean(t, path)
	db, err = Open(path, Options{})
	if err != nil {
		t.Fatalf("Open(%q) after a crash = %v; want nil (checked in a child)", path, err)
	}
	db.Close()
}

// CheckInChild reports a sound file as sound, and a damaged one as
// damaged, however bbolt fails on it in the child.
func TestCheckInChild(t *testing.T) {
	path, _ := realDB(t)
	if err := CheckInChild(t.Context(), path); err != nil {
		t.Errorf("CheckInChild(%q) = %v; want nil", path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Cut after the two meta pages: bbolt would fault (SIGBUS or
	// SIGSEGV, depending on how the mapping ends) on the first page it
	// reads past the end, or panic on what it finds there; the child
	// finds it cut short before bbolt reads a page.
	l := fileLayout(t, path)
	cut := filepath.Join(t.TempDir(), "cut.db")
	if err := os.WriteFile(cut, data[:2*l.pageSize], 0o600); err != nil {
		t.Fatal(err)
	}
	err = CheckInChild(t.Context(), cut)
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "the file holds 2 pages") || !strings.Contains(err.Error(), cut) {
		t.Errorf("CheckInChild(%q) on a file cut after its meta pages = %v; want ErrDamaged saying it holds 2 pages", cut, err)
	}
}

// 50 goroutines × 1000 updates: every one commits exactly once, and the
// last one of each goroutine is what stays.
func TestConcurrentUpdatesExactCounts(t *testing.T) {
	const workers, updates = 50, 1000
	var changes atomic.Int64
	path := filepath.Join(t.TempDir(), "switchboard.db")
	// NoSync: 50 000 fsyncs would take minutes; what is tested here is
	// the concurrency, not the disk.
	db, err := Open(path, Options{NoSync: true, OnChange: func(Change) { changes.Add(1) }})
	if err != nil {
		t.Fatalf("Open(%q) = %v; want nil", path, err)
	}
	s := mustCreate(t, db, stdioServer("busy"))
	tools := make([]Tool, workers)
	for w := range tools {
		tools[w] = mkTool(fmt.Sprintf("t%02d", w), "v1")
	}
	mustRecordSuccess(t, db, s.ID, verification(s, "j", at(0), tools...))
	startRev := db.rev.Load()
	changes.Store(0)

	policies := []string{PolicyAllow, PolicyAsk, PolicyDeny}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range updates {
				by := fmt.Sprintf("w%02d-%04d", w, i)
				e, err := db.SetPolicy(s.ID, tools[w].Name, policies[i%3], by)
				if err != nil || e.Policy.SetBy != by {
					t.Errorf("SetPolicy(%q, %q, %s) = %+v, %v; want set by %s", s.ID, tools[w].Name, by, e.Policy, err, by)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := changes.Load(); got != workers*updates {
		t.Errorf("OnChange calls = %d; want %d", got, workers*updates)
	}
	if got := db.rev.Load() - startRev; got != workers*updates {
		t.Errorf("revision advanced by %d; want %d", got, workers*updates)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}

	db = mustOpenPath(t, path, Options{})
	if got, want := db.rev.Load(), startRev+workers*updates+1; got != want {
		t.Errorf("revision after reopening = %d; want %d (one more for the open)", got, want)
	}
	got := mustTools(t, db, s.ID)
	for w, tool := range tools {
		e := got[tool.Name]
		want := Policy{Policy: policies[(updates-1)%3], Pin: tool.Pin, SetBy: fmt.Sprintf("w%02d-%04d", w, updates-1)}
		if e.Policy.Policy != want.Policy || e.Policy.Pin != want.Pin || e.Policy.SetBy != want.SetBy {
			t.Errorf("Tools(%q)[%s].Policy = %+v; want %+v", s.ID, tool.Name, e.Policy, want)
		}
	}
}

// Backups taken while a writer keeps committing are sound databases with
// the data of one moment during the backup.
func TestBackupWhileWriting(t *testing.T) {
	dir := t.TempDir()
	db := mustOpenPath(t, filepath.Join(dir, "switchboard.db"), Options{})
	tools := benchTools(50)
	for i := range 20 {
		s := mustCreate(t, db, stdioServer(fmt.Sprintf("srv-%02d", i)))
		mustRecordSuccess(t, db, s.ID, verification(s, "job", at(i), tools...))
	}
	c := mustCreate(t, db, Server{ID: counterID, Transport: TransportStdio, Command: "true", DefaultPolicy: PolicyAsk})

	var acked atomic.Int64
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { // ends when stop is closed, or at the first failed write
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			c.TimeoutMS++
			if err := db.UpdateServer(c); err != nil {
				done <- err
				return
			}
			acked.Store(int64(c.TimeoutMS))
		}
	}()
	first := acked.Load()
	for i := range 4 {
		out := filepath.Join(dir, fmt.Sprintf("backup-%d.db", i))
		lo := acked.Load()
		if i%2 == 0 {
			if err := db.BackupTo(t.Context(), out); err != nil {
				t.Fatalf("BackupTo(%q) = %v; want nil", out, err)
			}
		} else {
			var buf bytes.Buffer
			n, err := db.Backup(&buf)
			if err != nil || n != int64(buf.Len()) {
				t.Fatalf("Backup() = %d, %v; want %d, nil", n, err, buf.Len())
			}
			if err := os.WriteFile(out, buf.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		hi := acked.Load()

		rawCheck(t, out)
		b := mustOpenPath(t, out, Options{})
		if got := int64(counter(t, b)); got < lo || got > hi+1 {
			t.Errorf("counter in backup %d = %d; want between %d and %d (acknowledged before and after it)", i, got, lo, hi+1)
		}
		if all, err := b.AllTools(); err != nil || len(all) != 20*len(tools) {
			t.Errorf("AllTools() in backup %d = %d tools, %v; want %d", i, len(all), err, 20*len(tools))
		}
		if err := b.Close(); err != nil {
			t.Fatalf("Close() of backup %d = %v; want nil", i, err)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("UpdateServer while backing up = %v; want nil", err)
	}
	if last := acked.Load(); last <= first {
		t.Errorf("writer acknowledged %d during the backups; want it to keep writing", last-first)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left behind in %s: %s; want no temporary files", dir, e.Name())
		}
	}
}

func TestBackupToRefusesTheDatabaseItself(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "switchboard.db")
	db := mustOpenPath(t, path, Options{})
	mustCreate(t, db, stdioServer("kept"))
	if err := os.Link(path, filepath.Join(dir, "hard.db")); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{path, filepath.Join(dir, "hard.db")} {
		if err := db.BackupTo(t.Context(), out); err == nil || !strings.Contains(err.Error(), "the database itself") {
			t.Errorf("BackupTo(%q) = %v; want a refusal to overwrite the database", out, err)
		}
	}
	if _, err := db.Server("kept"); err != nil {
		t.Errorf("Server(kept) after the refused backups = %v; want nil", err)
	}
}
