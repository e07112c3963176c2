package storetest

import (
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// A verification that ended asking for a sign-in is its own state, not a
// failure: the server's record says where to sign in, the tools of an
// earlier success stay (stale), and the history keeps the outcome.
func testSignInRequiredIsItsOwnState(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := MustCreate(t, db, store.Server{ID: "remote", Name: "remote", Transport: store.TransportHTTP, URL: "https://mcp.example/mcp", DefaultPolicy: store.PolicyAsk, Enabled: true})
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	if err := db.RecordSuccess(ctx, s.ID, store.Verification{JobID: "j1", ConfigHash: s.ConfigHash(), StartedAt: at, FinishedAt: at.Add(time.Second),
		Tools: []store.Tool{{Name: "t", Raw: []byte(`{"name":"t"}`), Pin: "p", State: store.ToolActive}}}); err != nil {
		t.Fatal(err)
	}
	need := &store.SignInNeed{Status: 401, Scope: "mcp", Issuer: "https://as.example", Scopes: []string{"mcp", "offline_access"}}
	if err := db.RecordFailure(ctx, s.ID, store.Failure{JobID: "j2", ConfigHash: s.ConfigHash(), Status: store.StatusSignIn, StartedAt: at.Add(time.Hour),
		FinishedAt: at.Add(time.Hour + time.Second), Error: store.VerifyError{Class: "auth_required", Message: "the server answered 401", SignIn: need}}); err != nil {
		t.Fatal(err)
	}
	sum, err := db.Summary(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	d := sum.Discovery
	if d.Status != store.StatusSignIn || d.Error == nil || d.Error.SignIn == nil || d.Error.SignIn.Issuer != need.Issuer || len(d.Error.SignIn.Scopes) != 2 {
		t.Fatalf("record = %s, error %+v; want sign_in_required with where to sign in", d.Status, d.Error)
	}
	if !d.Stale() || d.ToolCount != 1 {
		t.Errorf("stale %v, %d tools; want the earlier tools kept, stale", d.Stale(), d.ToolCount)
	}
	if f := sum.Freshness(time.Hour, at.Add(2*time.Hour)); f.State != store.FreshSignIn || !f.Since.Equal(at.Add(time.Hour)) || f.Error == nil {
		t.Errorf("freshness = %+v; want %s since the attempt", f, store.FreshSignIn)
	}
	h, _, err := db.History(ctx, s.ID, 1)
	if err != nil || len(h) != 1 || h[0].Outcome != store.StatusSignIn {
		t.Errorf("history = %+v, %v; want the sign_in_required outcome", h, err)
	}
}
