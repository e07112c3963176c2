package verify

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
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
	r := newRefresher(refreshDeps{})
	added := verified(`{}`)
	added.Server.ID, added.Discovery.Status = "added", store.StatusNever
	added.Server.CreatedAt = time.Now().Add(time.Second)
	// Left running by a replica that died, and running here.
	orphan, here := verified(`{}`), verified(`{}`)
	orphan.Server.ID, orphan.Discovery.Status = "orphan", store.StatusRunning
	here.Server.ID, here.Discovery.Status = "here", store.StatusRunning
	var submitted []string
	r.deps = refreshDeps{
		Summaries: func(context.Context) ([]store.Summary, error) {
			return []store.Summary{before, interrupted, added, orphan, here}, nil
		},
		Running: func(id string) bool { return id == "here" },
		Submit: func(srv store.Server, trigger string) error {
			submitted = append(submitted, srv.ID+" "+trigger)
			return nil
		},
		Log: slog.New(slog.DiscardHandler),
	}
	r.startup()
	if want := []string{"before startup", "crashed startup", "orphan startup"}; !slices.Equal(submitted, want) {
		t.Errorf("start-up verifications %q; want %q", submitted, want)
	}
}

// A replica that does not lead verifies nothing and holds no watch; once
// it leads, it runs the start-up verifications, once.
func TestOnlyTheLeaderVerifies(t *testing.T) {
	never := verified(`{}`)
	never.Server.ID, never.Discovery.Status = "never", store.StatusNever
	never.Server.CreatedAt = time.Now().Add(-time.Hour)
	stale := verified(`{}`) // auto-refreshed, and stale by a TTL long past
	stale.Server.ID = "stale"
	on := true
	stale.Server.AutoRefresh = &on
	stale.Discovery.VerifiedAt = time.Now().Add(-48 * time.Hour)
	var mu sync.Mutex
	var submitted []string
	var watched [][]store.Summary
	r := newRefresher(refreshDeps{
		Summaries: func(context.Context) ([]store.Summary, error) { return []store.Summary{never, stale}, nil },
		TTL:       time.Hour,
		Running:   func(string) bool { return false },
		Submit: func(srv store.Server, trigger string) error {
			mu.Lock()
			submitted = append(submitted, srv.ID+" "+trigger)
			mu.Unlock()
			return nil
		},
		Publish: func(string) {},
		Watch: func(sums []store.Summary) {
			mu.Lock()
			watched = append(watched, sums)
			mu.Unlock()
		},
		Log: slog.New(slog.DiscardHandler),
	})
	go r.Run(true)
	defer r.Close()
	r.SetLeading(false)
	time.Sleep(3 * settle)
	mu.Lock()
	if len(submitted) != 0 || len(watched) == 0 || watched[len(watched)-1] != nil {
		t.Errorf("a follower submitted %q and watched %v; want nothing submitted and no watch held", submitted, watched)
	}
	mu.Unlock()
	r.SetLeading(true)
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		got := slices.Clone(submitted)
		mu.Unlock()
		if slices.Contains(got, "never startup") && slices.Contains(got, "stale ttl") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new leader submitted %q; want never's start-up and stale's TTL verifications", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
