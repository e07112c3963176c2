package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store/storetest"

	"github.com/switchboard-dev/switchboard/store"
)

// rawCheck runs bbolt's own consistency check over the file, outside the
// store.
func rawCheck(t *testing.T, path string) {
	t.Helper()
	rawView(t, path, func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("tx.Check(%s): %v", path, err)
		}
		return nil
	})
}

// counter returns the value the "count" helper keeps, 0 if it never ran.
func counter(t *testing.T, db *DB) int {
	ctx := t.Context()
	t.Helper()
	s, err := db.Server(ctx, counterID)
	if errors.Is(err, store.ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatalf("Server(%q) = %v; want nil", counterID, err)
	}
	return s.TimeoutMS
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
		s := storetest.MustCreate(t, db, storetest.StdioServer(fmt.Sprintf("srv-%02d", i)))
		storetest.MustRecordSuccess(t, db, s.ID, storetest.Verification(s, "job", storetest.At(i), tools...))
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
	rawView(t, path, func(tx *bbolt.Tx) error {
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
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyOpen, []byte("killed"))
	})
}

// Damaged files are refused with a message naming the file and saying
// what to do, never a crash, never a silent re-initialisation — or, where
// bbolt can fall back to the other meta page, opened with all their data.
func TestOpenDamaged(t *testing.T) {
	ctx := t.Context()
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
					if tools, err := db.Tools(ctx, id); err != nil || len(tools) != 20 {
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
				if !errors.Is(err, store.ErrDamaged) || !strings.Contains(msg, path) || !strings.Contains(msg, "restore a backup") {
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

// Every existing file is checked in a child before it is used, unless
// its seal shows it is the file the last run closed (which a program that
// cannot run checks can still open, below); a new file needs no check.
// A file changed by one byte, cut, grown, copied without its seal, left
// open by a crash, or sealed by a seal that does not parse, is checked.
func TestEveryOpenIsChecked(t *testing.T) {
	path, _ := realDB(t)
	childCheckReady.Store(false)
	t.Cleanup(func() { childCheckReady.Store(true) })
	openUnchecked := func(p string) error {
		t.Helper()
		db, err := Open(p, Options{})
		if err != nil {
			return err
		}
		if _, err := os.Stat(sealPath(p)); err == nil {
			t.Errorf("seal of %s while it is open = there; want it removed", p)
		}
		return db.Close()
	}
	wantRefused := func(p, what string) {
		t.Helper()
		err := openUnchecked(p)
		if err == nil {
			t.Fatalf("Open(%q) %s, without child checks = nil error; want a refusal to open it unchecked", p, what)
		}
		if !strings.Contains(err.Error(), "RunChildCheckIfAsked") {
			t.Errorf("Open(%q) %s, without child checks = %v; want it to name RunChildCheckIfAsked", p, what, err)
		}
	}

	fresh := filepath.Join(t.TempDir(), "new.db")
	if err := openUnchecked(fresh); err != nil {
		t.Fatalf("Open(%q) of a new file, without child checks = %v; want nil", fresh, err)
	}
	for _, p := range []string{path, fresh} {
		for i := range 2 { // each Close seals the file again
			if err := openUnchecked(p); err != nil {
				t.Fatalf("Open(%q) #%d after a clean shutdown, sealed, without child checks = %v; want nil", p, i+1, err)
			}
		}
	}
	sealed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seal, err := os.ReadFile(sealPath(path))
	if err != nil {
		t.Fatalf("seal after Close: %v; want one", err)
	}
	restore := func() {
		t.Helper()
		if err := os.WriteFile(path, sealed, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sealPath(path), seal, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		what   string
		change func()
	}{
		{"with one bit flipped in its last page", func() {
			d := bytes.Clone(sealed)
			d[len(d)-1] ^= 1
			os.WriteFile(path, d, 0o600)
		}},
		{"cut by a page", func() { os.WriteFile(path, sealed[:len(sealed)-4096], 0o600) }},
		{"grown by a page", func() { os.WriteFile(path, append(bytes.Clone(sealed), make([]byte, 4096)...), 0o600) }},
		{"without its seal", func() { os.Remove(sealPath(path)) }},
		{"with its seal damaged", func() {
			os.WriteFile(sealPath(path), bytes.Replace(seal, []byte("sum="), []byte("sum=x"), 1), 0o600)
		}},
		{"with the seal of another file", func() {
			other, _ := os.ReadFile(sealPath(fresh))
			os.WriteFile(sealPath(path), other, 0o600)
		}},
		{"after a crash", func() { markUnclean(t, path) }},
	} {
		restore()
		tt.change()
		wantRefused(path, tt.what)
	}
	restore()
	if err := openUnchecked(path); err != nil {
		t.Fatalf("Open(%q) restored with its seal, without child checks = %v; want nil", path, err)
	}

	childCheckReady.Store(true)
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open(%q) = %v; want nil", path, err)
	}
	var marked bool
	if err := db.bolt.View(func(tx *bbolt.Tx) error {
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
	rawView(t, path, func(tx *bbolt.Tx) error {
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
	if !errors.Is(err, store.ErrDamaged) || !strings.Contains(err.Error(), "the file holds 2 pages") || !strings.Contains(err.Error(), cut) {
		t.Errorf("CheckInChild(%q) on a file cut after its meta pages = %v; want ErrDamaged saying it holds 2 pages", cut, err)
	}
}

// 50 goroutines × 1000 updates: every one commits exactly once, and the
// last one of each goroutine is what stays.
func TestConcurrentUpdatesExactCounts(t *testing.T) {
	ctx := t.Context()
	const workers, updates = 50, 1000
	var changes atomic.Int64
	path := filepath.Join(t.TempDir(), "switchboard.db")
	// NoSync: 50 000 fsyncs would take minutes; what is tested here is
	// the concurrency, not the disk.
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatalf("Open(%q) = %v; want nil", path, err)
	}
	db.Subscribe(func(store.Change) { changes.Add(1) })
	s := storetest.MustCreate(t, db, storetest.StdioServer("busy"))
	tools := make([]store.Tool, workers)
	for w := range tools {
		tools[w] = storetest.MkTool(fmt.Sprintf("t%02d", w), "v1")
	}
	storetest.MustRecordSuccess(t, db, s.ID, storetest.Verification(s, "j", storetest.At(0), tools...))
	startRev := db.rev.Load()
	changes.Store(0)

	policies := []store.Policy{store.PolicyAllow, store.PolicyAsk, store.PolicyDeny}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range updates {
				by := fmt.Sprintf("w%02d-%04d", w, i)
				e, err := db.SetPolicy(ctx, store.ToolRef{ServerID: s.ID, Tool: tools[w].Name}, policies[i%3], by)
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
	got := storetest.MustTools(t, db, s.ID)
	for w, tool := range tools {
		e := got[tool.Name]
		want := store.PolicySetting{Policy: policies[(updates-1)%3], Pin: tool.Pin, SetBy: fmt.Sprintf("w%02d-%04d", w, updates-1)}
		if e.Policy.Policy != want.Policy || e.Policy.Pin != want.Pin || e.Policy.SetBy != want.SetBy {
			t.Errorf("Tools(%q)[%s].Policy = %+v; want %+v", s.ID, tool.Name, e.Policy, want)
		}
	}
}

// Backups taken while a writer keeps committing are sound databases with
// the data of one moment during the backup.
func TestBackupWhileWriting(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db := mustOpenPath(t, filepath.Join(dir, "switchboard.db"), Options{})
	tools := benchTools(50)
	for i := range 20 {
		s := storetest.MustCreate(t, db, storetest.StdioServer(fmt.Sprintf("srv-%02d", i)))
		storetest.MustRecordSuccess(t, db, s.ID, storetest.Verification(s, "job", storetest.At(i), tools...))
	}
	c := storetest.MustCreate(t, db, store.Server{ID: counterID, Transport: store.TransportStdio, Command: "true", DefaultPolicy: store.PolicyAsk})

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
			if err := db.UpdateServer(ctx, c); err != nil {
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
			n, err := db.Backup(ctx, &buf)
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
		if all, err := b.AllTools(t.Context()); err != nil || len(all) != 20*len(tools) {
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
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "switchboard.db")
	db := mustOpenPath(t, path, Options{})
	storetest.MustCreate(t, db, storetest.StdioServer("kept"))
	if err := os.Link(path, filepath.Join(dir, "hard.db")); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{path, filepath.Join(dir, "hard.db")} {
		if err := db.BackupTo(t.Context(), out); err == nil || !strings.Contains(err.Error(), "the database itself") {
			t.Errorf("BackupTo(%q) = %v; want a refusal to overwrite the database", out, err)
		}
	}
	if _, err := db.Server(ctx, "kept"); err != nil {
		t.Errorf("Server(kept) after the refused backups = %v; want nil", err)
	}
}
