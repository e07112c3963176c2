package refresh

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// verified is a remote server with auto-refresh (the default for remote
// servers), confirmed and enabled, last verified at t0 with caps.
func verified(caps string) store.Summary {
	srv := store.Server{ID: "r", Transport: store.TransportHTTP, URL: "https://mcp.example/mcp", Enabled: true}
	srv.LaunchConfirmed = srv.LaunchHash()
	return store.Summary{Server: srv, Discovery: store.Discovery{
		Status: store.StatusSuccess, VerifiedAt: t0, LastAttemptAt: t0,
		ConfigHash: srv.ConfigHash(), Capabilities: json.RawMessage(caps)}}
}

func TestDueForRefresh(t *testing.T) {
	const ttl = 5 * time.Minute
	failed := verified(`{}`)
	failed.Discovery.Status, failed.Discovery.LastAttemptAt = store.StatusFailed, t0.Add(time.Minute)
	off := verified(`{}`)
	no := false
	off.Server.AutoRefresh = &no
	unconfirmed := verified(`{}`)
	unconfirmed.Server.LaunchConfirmed = ""
	for _, c := range []struct {
		name    string
		sum     store.Summary
		now     time.Time
		wantDue bool
		wantAt  time.Time
	}{
		{"fresh: due when it turns stale", verified(`{}`), t0.Add(time.Minute), false, t0.Add(ttl)},
		{"stale by its TTL", verified(`{}`), t0.Add(ttl), true, time.Time{}},
		{"failed: retried a TTL after the failure", failed, t0.Add(2 * time.Minute), false, t0.Add(time.Minute + ttl)},
		{"failed, a TTL later", failed, t0.Add(time.Minute + ttl), true, t0.Add(time.Minute + ttl)},
		{"auto-refresh off", off, t0.Add(ttl), false, time.Time{}},
		{"launch not confirmed", unconfirmed, t0.Add(ttl), false, time.Time{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			due, at := dueForRefresh(c.sum, c.sum.Freshness(ttl, c.now), ttl, c.now)
			if due != c.wantDue || !at.Equal(c.wantAt) {
				t.Errorf("dueForRefresh = %v, %v; want %v, %v", due, at, c.wantDue, c.wantAt)
			}
		})
	}
}

func TestWanted(t *testing.T) {
	signIn := verified(`{"tools":{"listChanged":true}}`)
	signIn.Discovery.Status = store.StatusSignIn
	never := verified(`{"tools":{"listChanged":true}}`)
	never.Discovery.VerifiedAt = time.Time{}
	for _, c := range []struct {
		name string
		sum  store.Summary
		want bool
	}{
		{"announces list changes", verified(`{"tools":{"listChanged":true}}`), true},
		{"does not announce them", verified(`{"tools":{}}`), false},
		{"no tools capability", verified(`{}`), false},
		{"unreadable capabilities", verified(`not json`), false},
		{"never verified", never, false},
		{"waits for a sign-in", signIn, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := wanted(c.sum); got != c.want {
				t.Errorf("wanted = %v; want %v", got, c.want)
			}
		})
	}
}

// The start-up verifications are of the servers there were when the
// refresher was made (left never verified, or interrupted by a crash),
// not of one a person added meanwhile: that one waits for its own
// confirmation and Verify.
func TestStartupVerifiesOnlyServersFromBefore(t *testing.T) {
	before := verified(`{}`)
	before.Server.ID, before.Discovery.Status = "before", store.StatusNever
	before.Server.CreatedAt = time.Now().Add(-time.Hour)
	interrupted := verified(`{}`)
	interrupted.Server.ID, interrupted.Discovery.Status = "crashed", store.StatusInterrupted
	r := New(Deps{})
	added := verified(`{}`)
	added.Server.ID, added.Discovery.Status = "added", store.StatusNever
	added.Server.CreatedAt = time.Now().Add(time.Second)
	var submitted []string
	r.deps = Deps{
		Summaries: func(context.Context) ([]store.Summary, error) {
			return []store.Summary{before, interrupted, added}, nil
		},
		Submit: func(srv store.Server, trigger string) error {
			submitted = append(submitted, srv.ID+" "+trigger)
			return nil
		},
		Log: slog.New(slog.DiscardHandler),
	}
	r.startup()
	if want := []string{"before startup", "crashed startup"}; !slices.Equal(submitted, want) {
		t.Errorf("start-up verifications %q; want %q", submitted, want)
	}
}
