package store

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestRevision checks that the revision changes with every committed
// change, and only then, that it survives a reopen, and that ForEachTool
// reports the revision its tools were read at.
func TestRevision(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchboard.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{db.Revision(): "open"}
	changed := func(what string) {
		t.Helper()
		rev := db.Revision()
		if prev, ok := seen[rev]; ok {
			t.Fatalf("after %s the revision is %q, as after %s", what, rev, prev)
		}
		seen[rev] = what
		at, err := db.ForEachTool(func(ToolEntry) error { return nil })
		if err != nil || at != rev {
			t.Fatalf("after %s: ForEachTool revision %q, %v; Revision %q", what, at, err, rev)
		}
	}
	unchanged := func(what string) {
		t.Helper()
		before := db.Revision()
		if _, ok := seen[before]; !ok {
			t.Fatalf("revision %q was never reported", before)
		}
		seen[before] = seen[before] + ", " + what
	}

	s := mustCreate(t, db, stdioServer("a"))
	changed("CreateServer")
	rev := db.Revision()
	if err := db.CreateServer(stdioServer("a")); !errors.Is(err, ErrExists) {
		t.Fatalf("second CreateServer = %v", err)
	}
	if db.Revision() != rev {
		t.Fatal("a change that did not commit moved the revision")
	}
	unchanged("failed CreateServer")
	if _, err := db.Summaries(); err != nil {
		t.Fatal(err)
	}
	if db.Revision() != rev {
		t.Fatal("a read moved the revision")
	}
	if err := db.MarkRunning("a", "j1", at(1)); err != nil {
		t.Fatal(err)
	}
	changed("MarkRunning")
	mustRecordSuccess(t, db, "a", verification(s, "j1", at(2), mkTool("t1", "v1")))
	changed("RecordSuccess")
	if _, err := db.SetPolicy("a", "t1", PolicyDeny, "test"); err != nil {
		t.Fatal(err)
	}
	changed("SetPolicy")
	if err := db.RecordFailure("a", failure(s, "j2", StatusFailed, at(3))); err != nil {
		t.Fatal(err)
	}
	changed("RecordFailure")
	s.Name = "Renamed"
	if err := db.UpdateServer(s); err != nil {
		t.Fatal(err)
	}
	changed("UpdateServer")
	last := db.Revision()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	changed("reopen")
	if db.Revision() == last {
		t.Fatal("reopen kept the revision")
	}
	if err := db.DeleteServer("a"); err != nil {
		t.Fatal(err)
	}
	changed("DeleteServer")

	other := mustOpen(t)
	if _, ok := seen[other.Revision()]; ok {
		t.Errorf("a second database file reports revision %q, like this one", other.Revision())
	}
}
