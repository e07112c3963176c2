package store_test

import (
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
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
		{"no list TTL", 3600, nil, time.Hour, false, store.FreshFresh},
		{"shorter list TTL", 3600, ms(330 * time.Second), 330 * time.Second, true, store.FreshStale},
		{"list TTL 0 is at least MinListTTL", 3600, ms(0), store.MinListTTL, true, store.FreshStale},
		{"longer list TTL changes nothing", 3600, ms(2 * time.Hour), time.Hour, false, store.FreshFresh},
		{"the server's own TTL bounds it", 60, ms(time.Hour), time.Minute, false, store.FreshStale},
		{"the default TTL bounds it", 0, ms(0), 5 * time.Minute, false, store.FreshStale},
		{"an absurd list TTL", 600, ms(1 << 62), 10 * time.Minute, false, store.FreshFresh},
	} {
		sum := store.Summary{Server: store.Server{Transport: store.TransportHTTP, URL: "https://example.com/mcp", TTLSeconds: c.ttlSecs},
			Discovery: store.Discovery{Status: store.StatusSuccess, VerifiedAt: verified, ListTTLMS: c.list}}
		sum.Discovery.ConfigHash = sum.Server.ConfigHash()
		if ttl, hint := sum.TTL(5 * time.Minute); ttl != c.wantTTL || hint != c.wantHint {
			t.Errorf("%s: TTL = %s, hint %v; want %s, %v", c.name, ttl, hint, c.wantTTL, c.wantHint)
		}
		f := sum.Freshness(5*time.Minute, verified.Add(store.MinListTTL+time.Minute))
		if f.State != c.wantState || f.Hint != c.wantHint {
			t.Errorf("%s: Freshness = %s (hint %v); want %s (hint %v)", c.name, f.State, f.Hint, c.wantState, c.wantHint)
		}
		if f.State == store.FreshStale && !f.Since.Equal(verified.Add(c.wantTTL)) {
			t.Errorf("%s: stale since %s; want %s", c.name, f.Since, verified.Add(c.wantTTL))
		}
	}
}

// A server's failures say since when it fails: the first failed
// verification since the last success, kept across retries, until a
// success clears it.
func TestFailingSinceIsTheFirstFailure(t *testing.T) {
	s := store.Server{ID: "s", Transport: store.TransportStdio, Command: "x", Enabled: true}
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	d := store.Discovery{ServerID: "s"}
	store.ApplySuccess(&d, "s", store.Verification{JobID: "ok", ConfigHash: s.ConfigHash(), StartedAt: at, FinishedAt: at}, store.Merged{})
	fail := func(min int) {
		start := at.Add(time.Duration(min) * time.Minute)
		store.ApplyFailure(s, &d, store.Failure{JobID: "f", ConfigHash: s.ConfigHash(), Status: store.StatusTimeout, StartedAt: start, FinishedAt: start,
			Error: store.VerifyError{Class: "timeout"}})
	}
	since := func() time.Time {
		return store.Summary{Server: s, Discovery: d}.Freshness(time.Hour, at.Add(time.Hour)).Since
	}
	fail(5)
	fail(10)
	fail(15)
	if got, want := since(), at.Add(5*time.Minute); !got.Equal(want) {
		t.Errorf("failing since %s after three failures; want the first's start, %s", got, want)
	}
	store.ApplySuccess(&d, "s", store.Verification{JobID: "ok2", ConfigHash: s.ConfigHash(), StartedAt: at.Add(20 * time.Minute), FinishedAt: at.Add(20 * time.Minute)}, store.Merged{})
	fail(25)
	if got, want := since(), at.Add(25*time.Minute); !got.Equal(want) {
		t.Errorf("failing since %s after a success and a failure; want the new failure's start, %s", got, want)
	}
}
