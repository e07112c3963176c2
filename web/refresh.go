package web

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

// refreshSettle is how long the refresher waits after a store change
// before it looks, so that a burst of changes costs one look.
const refreshSettle = 200 * time.Millisecond

// refreshMaxSleep bounds how long the refresher sleeps between looks at
// the store when nothing is due sooner.
const refreshMaxSleep = time.Minute

// refresher keeps the catalog true without a person asking: it publishes
// a server again when its tools turn stale by the clock, re-verifies
// servers with auto-refresh on when they do (and retries a failed one a
// TTL after the failure), and at start-up verifies servers a crash
// interrupted or that were never verified. It only ever verifies enabled
// servers whose launch a person confirmed.
type refresher struct {
	deps     refreshDeps
	wake     chan struct{} // a store change: look again now
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	// shown is the freshness each server was last published with.
	shown map[string]string
}

// refreshDeps is what the refresher needs from the rest of the
// application.
type refreshDeps struct {
	// summaries reads every server; ttl is the fresh-for time of servers
	// that set none.
	summaries func(ctx context.Context) ([]store.Summary, error)
	ttl       time.Duration
	// running reports whether a verification of the server is queued or
	// running; submit queues one.
	running func(id string) bool
	submit  func(srv store.Server, trigger string) (discovery.Job, error)
	// publish shows a server's state again (its freshness changed by the
	// clock); watch holds the sessions the servers want (see watches).
	publish func(id string)
	watch   func([]store.Summary)
	log     *slog.Logger
}

func newRefresher(deps refreshDeps) *refresher {
	return &refresher{
		deps:  deps,
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		shown: map[string]string{},
	}
}

// poke makes the refresher look at the store again soon.
func (r *refresher) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run is the refresher's goroutine; it ends when close is called.
func (r *refresher) run(startup bool) {
	defer close(r.done)
	if startup {
		r.startup()
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-r.wake:
			// Let a burst of changes (a Verify all) settle into one pass.
			select {
			case <-r.stop:
				return
			case <-time.After(refreshSettle):
			}
		case <-timer.C:
		}
		next := r.pass(time.Now())
		timer.Stop()
		select {
		case <-timer.C:
		default:
		}
		timer.Reset(time.Until(next))
	}
}

// close stops the refresher and waits for it; later calls just wait.
func (r *refresher) close() {
	r.stopOnce.Do(func() { close(r.stop) })
	<-r.done
}

// verifiable reports whether Switchboard may verify the server by itself.
func verifiable(srv store.Server) bool { return srv.Enabled && srv.LaunchConfirmedNow() }

// startup verifies the servers a crash interrupted, and the enabled ones
// never verified.
func (r *refresher) startup() {
	sums, err := r.deps.summaries(context.Background())
	if err != nil {
		r.deps.log.Error("read servers for start-up verification", "err", err)
		return
	}
	for _, sum := range sums {
		d := sum.Discovery
		if !verifiable(sum.Server) || (d.Status != store.StatusInterrupted && d.Status != store.StatusNever) {
			continue
		}
		r.submit(sum.Server, triggerStartup)
	}
}

// pass looks at every server once: publishes those whose freshness
// changed by the clock, starts the verifications that are due, and
// returns when to look again.
func (r *refresher) pass(now time.Time) time.Time {
	next := now.Add(refreshMaxSleep)
	sums, err := r.deps.summaries(context.Background())
	if err != nil {
		r.deps.log.Error("read servers to refresh", "err", err)
		return next
	}
	seen := make(map[string]bool, len(sums))
	ttl := r.deps.ttl
	for _, sum := range sums {
		id := sum.Server.ID
		seen[id] = true
		f := sum.Freshness(ttl, now)
		if state := f.State + "/" + f.Reason; r.shown[id] != state {
			if _, known := r.shown[id]; known {
				r.deps.publish(id)
			}
			r.shown[id] = state
		}
		if f.State == store.FreshFresh && f.Until.Before(next) {
			next = f.Until
		}
		due, at := dueForRefresh(sum, f, ttl, now)
		if due {
			if !r.deps.running(id) {
				r.submit(sum.Server, triggerTTL)
			}
		} else if !at.IsZero() && at.Before(next) {
			next = at
		}
	}
	for id := range r.shown {
		if !seen[id] {
			delete(r.shown, id)
		}
	}
	r.deps.watch(sums)
	return next
}

// dueForRefresh reports whether a server with auto-refresh on is due for
// a verification because its tools went stale by its TTL (or, after a
// failure, a TTL has passed since), and otherwise when it will be (zero
// if never by the clock alone).
func dueForRefresh(sum store.Summary, f store.Freshness, ttl time.Duration, now time.Time) (bool, time.Time) {
	srv := sum.Server
	if !verifiable(srv) || !srv.AutoRefreshOn() {
		return false, time.Time{}
	}
	switch f.State {
	case store.FreshStale:
		return f.Reason == store.StaleTTL, time.Time{}
	case store.FreshFresh:
		return false, f.Until
	case store.FreshFailed:
		retry := sum.Discovery.LastAttemptAt.Add(srv.TTL(ttl))
		return !now.Before(retry), retry
	}
	return false, time.Time{}
}

func (r *refresher) submit(srv store.Server, trigger string) {
	if _, err := r.deps.submit(srv, trigger); err != nil && !errors.Is(err, discovery.ErrClosed) {
		var ae *apiError
		if !errors.As(err, &ae) { // not "shutting down"
			r.deps.log.Error("start verification", "server", srv.ID, "trigger", trigger, "err", err)
		}
	}
}

// afterEdit re-verifies a server whose edit changed what it is (its
// configuration hash), if Switchboard may: the old tools stay, marked
// stale, until the new verification succeeds. A verification of the old
// configuration still running is cancelled: its result would be
// discarded anyway.
func (s *Server) afterEdit(old store.Server) {
	ctx := context.Background()
	srv, err := s.store.Server(ctx, old.ID)
	if err != nil || srv.ConfigHash() == old.ConfigHash() {
		return
	}
	if j, ok := s.runner.Active(srv.ID); ok && j.ConfigHash != srv.ConfigHash() {
		s.runner.Cancel(j.ID)
	}
	if verifiable(srv) {
		s.refresh.submit(srv, triggerEdit)
	}
}
