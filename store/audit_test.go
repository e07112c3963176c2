package store

import (
	"testing"
)

func TestCallsKeptNewestFirstAndBounded(t *testing.T) {
	db := mustOpenOpts(t, Options{NoSync: true})
	rev := db.Revision()
	var batch []Call
	for i := range MaxCalls + 25 {
		batch = append(batch, Call{At: at(i), Tool: "t", Decision: DecisionAllowed, Outcome: "ok", DurationMS: int64(i)})
		if len(batch) == 1000 {
			if err := db.AppendCalls(batch); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
	}
	if err := db.AppendCalls(batch); err != nil {
		t.Fatal(err)
	}
	calls, total, err := db.Calls(3)
	if err != nil || total != MaxCalls || len(calls) != 3 {
		t.Fatalf("Calls(3) = %d calls, total %d, %v; want 3, %d", len(calls), total, err, MaxCalls)
	}
	if calls[0].DurationMS != MaxCalls+24 || calls[0].Seq != MaxCalls+25 || calls[2].DurationMS != MaxCalls+22 {
		t.Errorf("newest calls = %+v; want the last three appended, newest first", calls)
	}
	all, _, _ := db.Calls(MaxCalls + 100)
	if len(all) != MaxCalls || all[len(all)-1].DurationMS != 25 {
		t.Errorf("all calls: %d, oldest %d; want %d, the oldest 25 dropped", len(all), all[len(all)-1].DurationMS, MaxCalls)
	}
	if db.Revision() != rev {
		t.Errorf("the revision moved from %s to %s with audit writes; the catalog did not change", rev, db.Revision())
	}
}

func TestMCPTokenKeptAndRotated(t *testing.T) {
	path := t.TempDir() + "/t.db"
	db := mustOpenPath(t, path, Options{})
	tok, err := db.MCPToken()
	if err != nil || len(tok) < 40 {
		t.Fatalf("MCPToken() = %q, %v", tok, err)
	}
	db.Close()
	db = mustOpenPath(t, path, Options{})
	if again, _ := db.MCPToken(); again != tok {
		t.Errorf("MCPToken after reopening = %q; want the same %q", again, tok)
	}
	rot, err := db.RotateMCPToken()
	if err != nil || rot == tok {
		t.Errorf("RotateMCPToken() = %q, %v; want a new token", rot, err)
	}
	if now, _ := db.MCPToken(); now != rot {
		t.Errorf("MCPToken after rotation = %q; want %q", now, rot)
	}
}
