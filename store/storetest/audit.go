package storetest

import (
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

func testCallsKeptNewestFirstAndBounded(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	rev := db.Revision()
	var batch []store.Call
	for i := range store.MaxCalls + 25 {
		batch = append(batch, store.Call{At: At(i), Tool: "t", Decision: store.DecisionAllowed, Outcome: "ok", DurationMS: int64(i)})
		if len(batch) == 1000 {
			if err := db.AppendCalls(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
	}
	if err := db.AppendCalls(ctx, batch); err != nil {
		t.Fatal(err)
	}
	calls, total, err := db.Calls(ctx, 3)
	if err != nil || total != store.MaxCalls || len(calls) != 3 {
		t.Fatalf("Calls(3) = %d calls, total %d, %v; want 3, %d", len(calls), total, err, store.MaxCalls)
	}
	if calls[0].DurationMS != store.MaxCalls+24 || calls[0].Seq != store.MaxCalls+25 || calls[2].DurationMS != store.MaxCalls+22 {
		t.Errorf("newest calls = %+v; want the last three appended, newest first", calls)
	}
	all, _, _ := db.Calls(ctx, store.MaxCalls+100)
	if len(all) != store.MaxCalls || all[len(all)-1].DurationMS != 25 {
		t.Errorf("all calls: %d, oldest %d; want %d, the oldest 25 dropped", len(all), all[len(all)-1].DurationMS, store.MaxCalls)
	}
	if db.Revision() != rev {
		t.Errorf("the revision moved from %s to %s with audit writes; the catalog did not change", rev, db.Revision())
	}
}

func testMCPTokenKeptAndRotated(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	tok, err := db.MCPToken(ctx)
	if err != nil || len(tok) < 40 {
		t.Fatalf("MCPToken() = %q, %v", tok, err)
	}
	db = be.Reopen(t, db)
	if again, _ := db.MCPToken(ctx); again != tok {
		t.Errorf("MCPToken after reopening = %q; want the same %q", again, tok)
	}
	rot, err := db.RotateMCPToken(ctx)
	if err != nil || rot == tok {
		t.Errorf("RotateMCPToken() = %q, %v; want a new token", rot, err)
	}
	if now, _ := db.MCPToken(ctx); now != rot {
		t.Errorf("MCPToken after rotation = %q; want %q", now, rot)
	}
}
