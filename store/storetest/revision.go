package storetest

import (
	"errors"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

// testRevision checks that the revision changes with every committed
// change, and only then, that it survives a reopen, and that Catalog
// reports the revision its tools were read at.
func testRevision(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	seen := map[string]string{db.Revision(): "open"}
	changed := func(what string) {
		t.Helper()
		rev := db.Revision()
		if prev, ok := seen[rev]; ok {
			t.Fatalf("after %s the revision is %q, as after %s", what, rev, prev)
		}
		seen[rev] = what
		at, err := db.Catalog(ctx, func(*store.Summary, store.ToolEntry) error { return nil })
		if err != nil || at != rev {
			t.Fatalf("after %s: Catalog revision %q, %v; Revision %q", what, at, err, rev)
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

	s := MustCreate(t, db, StdioServer("a"))
	changed("CreateServer")
	rev := db.Revision()
	if err := db.CreateServer(ctx, StdioServer("a")); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second CreateServer = %v", err)
	}
	if db.Revision() != rev {
		t.Fatal("a change that did not commit moved the revision")
	}
	unchanged("failed CreateServer")
	if _, err := db.Summaries(ctx); err != nil {
		t.Fatal(err)
	}
	if db.Revision() != rev {
		t.Fatal("a read moved the revision")
	}
	if err := db.MarkRunning(ctx, "a", "j1", At(1)); err != nil {
		t.Fatal(err)
	}
	changed("MarkRunning")
	MustRecordSuccess(t, db, "a", Verification(s, "j1", At(2), MkTool("t1", "v1")))
	changed("RecordSuccess")
	if _, err := db.SetPolicy(ctx, store.ToolRef{ServerID: "a", Tool: "t1"}, store.PolicyDeny, "test"); err != nil {
		t.Fatal(err)
	}
	changed("SetPolicy")
	if err := db.RecordFailure(ctx, "a", Failure(s, "j2", store.StatusFailed, At(3))); err != nil {
		t.Fatal(err)
	}
	changed("RecordFailure")
	s.Name = "Renamed"
	if err := db.UpdateServer(ctx, s); err != nil {
		t.Fatal(err)
	}
	changed("UpdateServer")
	last := db.Revision()
	db = be.Reopen(t, db)
	// A reopened store may report the revision it had or a new one, but
	// never one it reported for another state.
	if rev := db.Revision(); rev != last {
		changed("reopen")
	}
	if err := db.DeleteServer(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	changed("DeleteServer")

	other := be.Open(t)
	if _, ok := seen[other.Revision()]; ok {
		t.Errorf("a second database file reports revision %q, like this one", other.Revision())
	}
}
