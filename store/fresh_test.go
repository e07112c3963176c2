package store

import (
	"testing"
	"time"
)

// A list TTL (2026-07-28's ttlMs) shortens freshness, never below
// MinListTTL and never beyond the server's own TTL.
func TestListTTLHint(t *testing.T) {
	ms := func(d time.Duration) *int64 { n := d.Milliseconds(); return &n }
	verified := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name      string
		ttlSecs   int
		list      *int64
		wantTTL   time.Duration
		wantHint  bool
		wantState string // at verified + MinListTTL + 1 min
	}{
		{"no list TTL", 3600, nil, time.Hour, false, FreshFresh},
		{"shorter list TTL", 3600, ms(330 * time.Second), 330 * time.Second, true, FreshStale},
		{"list TTL 0 is at least MinListTTL", 3600, ms(0), MinListTTL, true, FreshStale},
		{"longer list TTL changes nothing", 3600, ms(2 * time.Hour), time.Hour, false, FreshFresh},
		{"the server's own TTL bounds it", 60, ms(time.Hour), time.Minute, false, FreshStale},
		{"the default TTL bounds it", 0, ms(0), 5 * time.Minute, false, FreshStale},
		{"an absurd list TTL", 600, ms(1 << 62), 10 * time.Minute, false, FreshFresh},
	} {
		sum := Summary{Server: Server{Transport: TransportHTTP, URL: "https://example.com/mcp", TTLSeconds: c.ttlSecs},
			Discovery: Discovery{Status: StatusSuccess, VerifiedAt: verified, ListTTLMS: c.list}}
		sum.Discovery.ConfigHash = sum.Server.currentConfigHash()
		if ttl, hint := sum.TTL(5 * time.Minute); ttl != c.wantTTL || hint != c.wantHint {
			t.Errorf("%s: TTL = %s, hint %v; want %s, %v", c.name, ttl, hint, c.wantTTL, c.wantHint)
		}
		f := sum.Freshness(5*time.Minute, verified.Add(MinListTTL+time.Minute))
		if f.State != c.wantState || f.Hint != c.wantHint {
			t.Errorf("%s: Freshness = %s (hint %v); want %s (hint %v)", c.name, f.State, f.Hint, c.wantState, c.wantHint)
		}
		if f.State == FreshStale && !f.Since.Equal(verified.Add(c.wantTTL)) {
			t.Errorf("%s: stale since %s; want %s", c.name, f.Since, verified.Add(c.wantTTL))
		}
	}
}

// A verification that ended asking for a sign-in is its own state, not a
// failure: the server's record says where to sign in, the tools of an
// earlier success stay (stale), and the history keeps the outcome.
func TestSignInRequiredIsItsOwnState(t *testing.T) {
	db := mustOpen(t)
	s := mustCreate(t, db, Server{ID: "remote", Name: "remote", Transport: TransportHTTP, URL: "https://mcp.example/mcp", DefaultPolicy: PolicyAsk, Enabled: true})
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	if err := db.RecordSuccess(s.ID, Verification{JobID: "j1", ConfigHash: s.ConfigHash(), StartedAt: at, FinishedAt: at.Add(time.Second),
		Tools: []Tool{{Name: "t", Raw: []byte(`{"name":"t"}`), Pin: "p", State: ToolActive}}}); err != nil {
		t.Fatal(err)
	}
	need := &SignInNeed{Status: 401, Scope: "mcp", Issuer: "https://as.example", Scopes: []string{"mcp", "offline_access"}}
	if err := db.RecordFailure(s.ID, Failure{JobID: "j2", ConfigHash: s.ConfigHash(), Status: StatusSignIn, StartedAt: at.Add(time.Hour),
		FinishedAt: at.Add(time.Hour + time.Second), Error: VerifyError{Class: "auth_required", Message: "the server answered 401", SignIn: need}}); err != nil {
		t.Fatal(err)
	}
	sum, err := db.Summary(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	d := sum.Discovery
	if d.Status != StatusSignIn || d.Error == nil || d.Error.SignIn == nil || d.Error.SignIn.Issuer != need.Issuer || len(d.Error.SignIn.Scopes) != 2 {
		t.Fatalf("record = %s, error %+v; want sign_in_required with where to sign in", d.Status, d.Error)
	}
	if !d.Stale() || d.ToolCount != 1 {
		t.Errorf("stale %v, %d tools; want the earlier tools kept, stale", d.Stale(), d.ToolCount)
	}
	if f := sum.Freshness(time.Hour, at.Add(2*time.Hour)); f.State != FreshSignIn || !f.Since.Equal(at.Add(time.Hour)) || f.Error == nil {
		t.Errorf("freshness = %+v; want %s since the attempt", f, FreshSignIn)
	}
	h, _, err := db.History(s.ID, 1)
	if err != nil || len(h) != 1 || h[0].Outcome != StatusSignIn {
		t.Errorf("history = %+v, %v; want the sign_in_required outcome", h, err)
	}
}
