package bolt

import (
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store/storetest"

	"github.com/switchboard-dev/switchboard/store"
)

// faultyDisk is a store whose commits fail with ENOSPC while full is set,
// after the transaction made its writes, and which counts the changes it
// announced.
type faultyDisk struct {
	full    atomic.Bool
	mu      sync.Mutex
	changes []store.Change
}

func (f *faultyDisk) options() Options {
	return Options{
		BeforeCommit: func([]store.Change) error {
			if f.full.Load() {
				return syscall.ENOSPC
			}
			return nil
		},
	}
}

// hear records the changes db announces, without their revisions (the
// suite checks those).
func (f *faultyDisk) hear(db *DB) {
	db.Subscribe(func(c store.Change) {
		c.Revision = ""
		f.mu.Lock()
		f.changes = append(f.changes, c)
		f.mu.Unlock()
	})
}

func (f *faultyDisk) announced() []store.Change {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.changes)
}

// storeState is everything the store's readers can see.
type storeState struct {
	Revision  string
	Summaries []store.Summary
	Tools     []store.ToolEntry
	History   map[string][]store.HistoryEntry
	Calls     []store.Call
}

func readState(t *testing.T, db *DB) storeState {
	ctx := t.Context()
	t.Helper()
	st := storeState{Revision: db.Revision(), History: map[string][]store.HistoryEntry{}}
	var err error
	if st.Summaries, err = db.Summaries(ctx); err != nil {
		t.Fatalf("Summaries() = %v; want nil", err)
	}
	if st.Tools, err = db.AllTools(ctx); err != nil {
		t.Fatalf("AllTools() = %v; want nil", err)
	}
	for _, sum := range st.Summaries {
		if st.History[sum.Server.ID], _, err = db.History(ctx, sum.Server.ID, 0); err != nil {
			t.Fatalf("History(%q) = %v; want nil", sum.Server.ID, err)
		}
	}
	if st.Calls, _, err = db.Calls(ctx, 1000); err != nil {
		t.Fatalf("Calls() = %v; want nil", err)
	}
	return st
}

// A change whose commit fails half-way — after all its writes, as when
// the file cannot be written — leaves the previous state readable,
// returns the error, announces nothing, and the next change succeeds;
// reopened, the file holds the previous state and the next change.
func TestCommitFailsHalfWay(t *testing.T) {
	ctx := t.Context()
	tools := []store.Tool{storetest.MkTool("read", "v1"), storetest.MkTool("write", "v1"), storetest.MkTool("exec", "v1")}
	tests := []struct {
		name   string
		change func(db *DB, s store.Server) error
	}{
		{"CreateServer", func(db *DB, _ store.Server) error { return db.CreateServer(ctx, storetest.StdioServer("new")) }},
		{"UpdateServer", func(db *DB, s store.Server) error {
			s.Name, s.Args = "Renamed", []string{"other"}
			return db.UpdateServer(ctx, s)
		}},
		{"ConfirmLaunch", func(db *DB, s store.Server) error { return db.ConfirmLaunch(ctx, s.ID, s.LaunchHash(), "") }},
		{"DeleteServer", func(db *DB, s store.Server) error { return db.DeleteServer(ctx, s.ID) }},
		{"MarkRunning", func(db *DB, s store.Server) error { return db.MarkRunning(ctx, s.ID, "j2", storetest.At(20)) }},
		{"RecordSuccess", func(db *DB, s store.Server) error {
			return db.RecordSuccess(ctx, s.ID, storetest.Verification(s, "j2", storetest.At(20), storetest.MkTool("read", "v2"), storetest.MkTool("new", "v1")))
		}},
		{"SetPolicy", func(db *DB, s store.Server) error {
			_, err := db.SetPolicy(ctx, store.ToolRef{ServerID: s.ID, Tool: "exec"}, store.PolicyAllow, "me")
			return err
		}},
		{"ApproveChanges", func(db *DB, s store.Server) error {
			_, err := db.ApproveChanges(ctx, s.ID, map[string]string{"read": storetest.MkTool("read", "v2").Pin}, "me")
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var disk faultyDisk
			path := filepath.Join(t.TempDir(), "switchboard.db")
			db, err := Open(path, disk.options())
			if err != nil {
				t.Fatalf("Open(%q) = %v; want nil", path, err)
			}
			disk.hear(db)
			s := storetest.MustCreate(t, db, storetest.StdioServer("srv"))
			storetest.MustRecordSuccess(t, db, s.ID, storetest.Verification(s, "j1", storetest.At(10), tools...))
			// read changes (and waits for approval), exec goes missing.
			storetest.MustRecordSuccess(t, db, s.ID, storetest.Verification(s, "j1a", storetest.At(10), storetest.MkTool("read", "v2"), tools[1]))
			if err := db.RecordFailure(ctx, s.ID, storetest.Failure(s, "j1b", store.StatusFailed, storetest.At(11))); err != nil {
				t.Fatalf("RecordFailure = %v; want nil", err)
			}
			if err := db.AppendCalls(ctx, []store.Call{{At: storetest.At(12), ServerID: s.ID, Tool: "read", Outcome: "ok"}}); err != nil {
				t.Fatalf("AppendCalls = %v; want nil", err)
			}
			before := readState(t, db)
			announced := len(disk.announced())

			disk.full.Store(true)
			err = tt.change(db, s)
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s on a full disk = %v; want ENOSPC naming %s", tt.name, err, path)
			}
			if got := readState(t, db); !reflect.DeepEqual(got, before) {
				t.Errorf("state after the failed %s:\n%+v\nwant as before:\n%+v", tt.name, got, before)
			}
			if got := disk.announced(); len(got) != announced {
				t.Errorf("changes announced by the failed %s = %+v; want none", tt.name, got[announced:])
			}

			disk.full.Store(false)
			if err := db.CreateServer(ctx, storetest.StdioServer("after")); err != nil {
				t.Fatalf("CreateServer once there is room = %v; want nil", err)
			}
			if got := disk.announced(); len(got) != announced+1 || got[announced] != (store.Change{ServerID: "after", Created: true}) {
				t.Errorf("changes announced after room came back = %+v; want one, creating after", got[announced:])
			}
			if err := db.Close(); err != nil {
				t.Fatalf("Close() = %v; want nil", err)
			}
			rawCheck(t, path)

			db = mustOpenPath(t, path, Options{})
			got := readState(t, db)
			if got.Summaries = slices.DeleteFunc(got.Summaries, func(s store.Summary) bool { return s.Server.ID == "after" }); len(got.Summaries) != len(before.Summaries) {
				t.Fatalf("servers in the reopened file = %d (without after); want %d", len(got.Summaries), len(before.Summaries))
			}
			delete(got.History, "after")
			got.Revision, before.Revision = "", ""
			for i := range got.Summaries {
				// Open marks the file and bumps nothing in the records.
				if !reflect.DeepEqual(got.Summaries[i], before.Summaries[i]) {
					t.Errorf("reopened: Summaries()[%d] = %+v; want %+v", i, got.Summaries[i], before.Summaries[i])
				}
			}
			got.Summaries, before.Summaries = nil, nil
			if !reflect.DeepEqual(got, before) {
				t.Errorf("reopened after the failed %s:\n%+v\nwant the state before it:\n%+v", tt.name, got, before)
			}
		})
	}
}

// RecordFailure on a full disk returns the error but keeps the failure:
// reads show it at once, in place of the record the verification left
// running, and the store writes it, with its history entry, once there is
// room — without a restart, and announcing it then.
func TestUnsavedFailureWrittenOnceThereIsRoom(t *testing.T) {
	ctx := t.Context()
	var disk faultyDisk
	db := mustOpenOpts(t, disk.options())
	disk.hear(db)
	s := storetest.MustCreate(t, db, storetest.StdioServer("srv"))
	storetest.MustRecordSuccess(t, db, s.ID, storetest.Verification(s, "j1", storetest.At(10), storetest.MkTool("read", "v1")))
	if err := db.MarkRunning(ctx, s.ID, "j2", storetest.At(20)); err != nil {
		t.Fatalf("MarkRunning = %v; want nil", err)
	}
	rev := db.Revision()
	announced := len(disk.announced())

	disk.full.Store(true)
	if err := db.RecordSuccess(ctx, s.ID, storetest.Verification(s, "j2", storetest.At(21), storetest.MkTool("read", "v2"))); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("RecordSuccess on a full disk = %v; want ENOSPC", err)
	}
	if d := storetest.MustSummary(t, db, s.ID).Discovery; d.Status != store.StatusRunning || d.JobID != "j2" {
		t.Fatalf("record after the unsaved success = %s of %s; want running of j2 (a success is never shown unsaved)", d.Status, d.JobID)
	}
	f := storetest.Failure(s, "j2", store.StatusFailed, storetest.At(22))
	f.Error = store.VerifyError{Class: "internal", Phase: "saving", Message: "could not save: disk full"}
	if err := db.RecordFailure(ctx, s.ID, f); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("RecordFailure on a full disk = %v; want ENOSPC", err)
	}
	// Every read shows the failure, and the last good tools.
	sums, err := db.Summaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var fromCatalog *store.Summary
	if _, err := db.Catalog(ctx, func(sum *store.Summary, _ store.ToolEntry) error { fromCatalog = sum; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, d := range []store.Discovery{storetest.MustSummary(t, db, s.ID).Discovery, sums[0].Discovery, fromCatalog.Discovery} {
		if d.Status != store.StatusFailed || d.JobID != "j2" || d.Error == nil || d.Error.Message != "could not save: disk full" || d.ToolCount != 1 || !d.VerifiedAt.Equal(storetest.At(10)) {
			t.Errorf("record read on a full disk = %+v; want j2 failed, \"could not save: disk full\", the 1 tool of j1", d)
		}
	}
	if stored := storedDiscovery(t, db, s.ID); stored.Status != store.StatusRunning {
		t.Errorf("stored record on a full disk = %s; want still running (nothing written)", stored.Status)
	}
	if got := disk.announced(); len(got) != announced || db.Revision() != rev {
		t.Errorf("on a full disk: announced %+v, revision %s; want nothing, %s", got[announced:], db.Revision(), rev)
	}

	disk.full.Store(false)
	deadline := time.Now().Add(30 * time.Second)
	for storedDiscovery(t, db, s.ID).Status != store.StatusFailed {
		if time.Now().After(deadline) {
			t.Fatalf("stored record once there is room = %s; want failed, written by the store", storedDiscovery(t, db, s.ID).Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
	stored := storedDiscovery(t, db, s.ID)
	if stored.JobID != "j2" || stored.Error == nil || stored.Error.Message != "could not save: disk full" || stored.ToolCount != 1 {
		t.Errorf("stored record = %+v; want j2 failed, \"could not save: disk full\", 1 tool", stored)
	}
	h, _, err := db.History(ctx, s.ID, 0)
	if err != nil || len(h) != 2 || h[0].JobID != "j2" || h[0].Outcome != store.StatusFailed {
		t.Errorf("History = %+v, %v; want j2 failed on top of j1", h, err)
	}
	// The change is announced after its commit, which the loop above may
	// have seen first.
	for !slices.Contains(disk.announced()[announced:], store.Change{ServerID: s.ID, History: true}) {
		if time.Now().After(deadline) {
			t.Fatalf("announced once written = %+v; want the server's history change", disk.announced()[announced:])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A failure not written yet is written with the next change of its
// server's record, before it, and is dropped once a newer record of
// another kind replaced it or the server is gone.
func TestUnsavedFailureAndLaterChanges(t *testing.T) {
	ctx := t.Context()
	var disk faultyDisk
	db := mustOpenOpts(t, disk.options())
	disk.hear(db)
	s := storetest.MustCreate(t, db, storetest.StdioServer("srv"))
	gone := storetest.MustCreate(t, db, storetest.StdioServer("gone"))

	disk.full.Store(true)
	for _, srv := range []store.Server{s, gone} {
		if err := db.RecordFailure(ctx, srv.ID, storetest.Failure(srv, "j1", store.StatusTimeout, storetest.At(10))); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("RecordFailure(%s) on a full disk = %v; want ENOSPC", srv.ID, err)
		}
	}
	disk.full.Store(false)
	if err := db.MarkRunning(ctx, s.ID, "j2", storetest.At(20)); err != nil {
		t.Fatalf("MarkRunning = %v; want nil", err)
	}
	if err := db.DeleteServer(ctx, gone.ID); err != nil {
		t.Fatalf("DeleteServer = %v; want nil", err)
	}
	h, _, err := db.History(ctx, s.ID, 0)
	if err != nil || len(h) != 1 || h[0].JobID != "j1" || h[0].Outcome != store.StatusTimeout {
		t.Errorf("History after the next change = %+v, %v; want j1's timeout written", h, err)
	}
	if d := storetest.MustSummary(t, db, s.ID).Discovery; d.Status != store.StatusRunning || d.JobID != "j2" {
		t.Errorf("record = %s of %s; want running of j2", d.Status, d.JobID)
	}
	// The server comes back under the same id: nothing of the old one.
	storetest.MustCreate(t, db, storetest.StdioServer("gone"))
	if d := storetest.MustSummary(t, db, "gone").Discovery; d.Status != store.StatusNever {
		t.Errorf("record of the new gone = %s; want never", d.Status)
	}
	if db.unsaved.get(s.ID) != nil || db.unsaved.get("gone") != nil {
		t.Errorf("failures still kept after they were written or dropped")
	}
}

// storedDiscovery is the server's record as the file holds it.
func storedDiscovery(t *testing.T, db *DB, id string) store.Discovery {
	t.Helper()
	var d store.Discovery
	if err := db.bolt.View(func(tx *bbolt.Tx) error {
		return getJSON(tx.Bucket(bucketDiscovery), []byte(id), &d)
	}); err != nil {
		t.Fatalf("stored record of %s: %v", id, err)
	}
	return d
}
