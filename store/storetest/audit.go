package storetest

import (
	"strings"
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

// A server's policy on what it may ask of the calling agents is allow for
// every kind by default, kept per kind as set by an update and across a
// restart, and changes neither the config hash nor the launch
// confirmation.
func testServerAsksKept(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	srv := MustCreate(t, db, StdioServer("asker"))
	for _, kind := range store.AskKinds {
		if p := srv.Asks.Of(kind); p != store.PolicyAllow {
			t.Errorf("a new server's policy on %s = %q; want allow", kind, p)
		}
	}
	launch := srv.LaunchHash()
	if err := db.ConfirmLaunch(ctx, srv.ID, launch, ""); err != nil {
		t.Fatal(err)
	}
	srv.Asks.Set(store.AskSampling, store.PolicyDeny)
	srv.Asks.Set(store.AskElicitation, store.PolicyAsk)
	if err := db.UpdateServer(ctx, srv); err != nil {
		t.Fatalf("UpdateServer(asks) = %v", err)
	}
	db = be.Reopen(t, db)
	got, err := db.Server(ctx, srv.ID)
	switch {
	case err != nil:
		t.Fatalf("Server(%q) after reopening = %v", srv.ID, err)
	case got.Asks.Of(store.AskSampling) != store.PolicyDeny || got.Asks.Of(store.AskElicitation) != store.PolicyAsk || got.Asks.Of(store.AskRoots) != store.PolicyAllow:
		t.Errorf("Server(%q).Asks after update and reopening = %+v; want sampling deny, elicitation ask, roots allow", srv.ID, got.Asks)
	case got.ConfigHash() != srv.ConfigHash() || got.LaunchConfirmed != launch:
		t.Errorf("setting what the server may ask changed the config hash or the launch confirmation: %+v", got)
	}
}

// A server's "record call arguments" setting is off by default, kept as
// set by an update and across a restart, and changes neither what the
// server is (its config hash) nor its launch confirmation; a call record
// keeps the arguments it was given.
func testRecordCallArguments(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	srv := MustCreate(t, db, StdioServer("files"))
	if srv.RecordArgs {
		t.Fatalf("Server(%q).RecordArgs of a new server = true; want off by default", srv.ID)
	}
	launch := srv.LaunchHash()
	if err := db.ConfirmLaunch(ctx, srv.ID, launch, ""); err != nil {
		t.Fatal(err)
	}
	srv.RecordArgs = true
	if err := db.UpdateServer(ctx, srv); err != nil {
		t.Fatalf("UpdateServer(RecordArgs on) = %v", err)
	}
	db = be.Reopen(t, db)
	got, err := db.Server(ctx, srv.ID)
	switch {
	case err != nil:
		t.Fatalf("Server(%q) after reopening = %v", srv.ID, err)
	case !got.RecordArgs:
		t.Errorf("Server(%q).RecordArgs after update and reopening = false; want true", srv.ID)
	case got.ConfigHash() != srv.ConfigHash() || got.LaunchConfirmed != launch:
		t.Errorf("turning RecordArgs on changed the config hash or the launch confirmation: %+v", got)
	}
	got.RecordArgs = false
	if err := db.UpdateServer(ctx, got); err != nil {
		t.Fatal(err)
	}
	if again, _ := db.Server(ctx, srv.ID); again.RecordArgs {
		t.Errorf("Server(%q).RecordArgs after turning it off = true", srv.ID)
	}

	t.Run("a call keeps its arguments", func(t *testing.T) {
		args := `{"path":"/tmp/<b>","token":"[redacted]"}`
		long := strings.Repeat("x", store.MaxCallArguments)
		if err := db.AppendCalls(ctx, []store.Call{
			{At: At(1), ServerID: srv.ID, Tool: "read", Arguments: args, Decision: store.DecisionAllowed, Outcome: "ok"},
			{At: At(2), ServerID: srv.ID, Tool: "read", Arguments: long, ArgumentsTruncated: true, Decision: store.DecisionAllowed, Outcome: "ok"},
			{At: At(3), ServerID: srv.ID, Tool: "read", ArgsHash: "abc", Decision: store.DecisionAllowed, Outcome: "ok"},
		}); err != nil {
			t.Fatal(err)
		}
		calls, _, err := db.Calls(ctx, 3)
		if err != nil || len(calls) != 3 {
			t.Fatalf("Calls(3) = %d, %v", len(calls), err)
		}
		if c := calls[2]; c.Arguments != args || c.ArgumentsTruncated {
			t.Errorf("Calls()[2] = %q, truncated %v; want %q, not truncated", c.Arguments, c.ArgumentsTruncated, args)
		}
		if c := calls[1]; c.Arguments != long || !c.ArgumentsTruncated {
			t.Errorf("Calls()[1]: %d bytes, truncated %v; want %d, truncated", len(c.Arguments), c.ArgumentsTruncated, len(long))
		}
		if c := calls[0]; c.Arguments != "" || c.ArgsHash != "abc" {
			t.Errorf("Calls()[0] = %q, hash %q; want only the hash", c.Arguments, c.ArgsHash)
		}
	})
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
