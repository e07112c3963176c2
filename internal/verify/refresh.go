// Verifying without a person asking: the refresher re-verifies servers
// whose tools went stale and shows them stale when the clock says so, and
// the watches (watch.go) hold a session to servers that announce tool
// list changes, to re-verify them when they do.

package verify

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

// settle is how long the refresher waits after a store change
// before it looks, so that a burst of changes costs one look.
const settle = 200 * time.Millisecond

// maxSleep bounds how long the refresher sleeps between looks at
// the store when nothing is due sooner.
const maxSleep = time.Minute

// refresher keeps the catalog true without a person asking: it publishes
// a server again when its tools turn stale by the clock, re-verifies
// servers with auto-refresh on when they do (and retries a failed one a
// TTL after the failure), and at start-up verifies servers a crash
// interrupted or that were never verified. It only ever verifies enabled
// servers whose launch a person confirmed.
//
// Of a team's replicas, only the leader verifies and holds watches (see
// SetLeading); the others only publish what the clock changed. A replica
// that becomes the leader first verifies what the start-up verifies,
// and the servers left running: a verification running elsewhere holds
// its server's claim, so only those whose replica died are verified
// again.
type refresher struct {
	deps     refreshDeps
	wake     chan struct{} // a store change: look again now
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	// leading is whether this replica leads; lead is set when it became
	// the leader, and the start-up verifications are due.
	leading, lead atomic.Bool

	// shown is the freshness each server was last published with.
	shown map[string]string
	// made is when the refresher was made: the start-up verifications
	// are of the servers there were then, not of those added since.
	made time.Time
}

// Deps is what the refresher needs from the rest of the application.
type refreshDeps struct {
	// Summaries reads every server; TTL is the fresh-for time of servers
	// that set none.
	Summaries func(ctx context.Context) ([]store.Summary, error)
	TTL       time.Duration
	// Running reports whether a verification of the server is queued or
	// running; Submit queues one (an error it returns is logged).
	Running func(id string) bool
	Submit  func(srv store.Server, trigger string) error
	// Publish shows a server's state again (its freshness changed by the
	// clock); Watch holds the sessions the servers want (see watches).
	Publish func(id string)
	Watch   func([]store.Summary)
	Log     *slog.Logger
}

// New returns a refresher; Run it, and Close it to stop.
func newRefresher(deps refreshDeps) *refresher {
	return &refresher{
		deps:  deps,
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		shown: map[string]string{},
		made:  time.Now(),
	}
}

// Poke makes the refresher look at the store again soon.
func (r *refresher) Poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// SetLeading says whether this replica leads (a Switchboard on its own
// leads from the start).
func (r *refresher) SetLeading(leading bool) {
	if r.leading.Swap(leading) != leading && leading {
		r.lead.Store(true)
	}
	r.Poke()
}

// Run is the refresher's goroutine (whenever this replica becomes the
// leader, first verifying the servers a crash interrupted, left running
// or never verified, if startup); it ends when Close is called.
func (r *refresher) Run(startup bool) {
	defer close(r.done)
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
			case <-time.After(settle):
			}
		case <-timer.C:
		}
		if r.lead.Swap(false) && startup && r.leading.Load() {
			r.startup()
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

// Close stops the refresher and waits for it; later calls just wait.
func (r *refresher) Close() {
	r.stopOnce.Do(func() { close(r.stop) })
	<-r.done
}

// Verifiable reports whether Switchboard may verify the server by itself.
func Verifiable(srv store.Server) bool { return srv.Enabled && srv.LaunchConfirmedNow() }

// startup verifies the servers a crash interrupted, and the enabled ones
// never verified.
func (r *refresher) startup() {
	sums, err := r.deps.Summaries(context.Background())
	if err != nil {
		r.logRead("read servers for start-up verification", err)
		return
	}
	for _, sum := range sums {
		d := sum.Discovery
		if !Verifiable(sum.Server) || (d.Status != store.StatusInterrupted && d.Status != store.StatusNever && d.Status != store.StatusRunning) ||
			sum.Server.CreatedAt.After(r.made) || r.deps.Running(sum.Server.ID) {
			continue // a server added since is verified when a person confirms it
		}
		r.Submit(sum.Server, store.TriggerStartup)
	}
}

// pass looks at every server once: publishes those whose freshness
// changed by the clock, starts the verifications that are due, and
// returns when to look again.
func (r *refresher) pass(now time.Time) time.Time {
	next := now.Add(maxSleep)
	sums, err := r.deps.Summaries(context.Background())
	if err != nil {
		r.logRead("read servers to refresh", err)
		return next
	}
	seen := make(map[string]bool, len(sums))
	ttl := r.deps.TTL
	for _, sum := range sums {
		id := sum.Server.ID
		seen[id] = true
		f := sum.Freshness(ttl, now)
		if state := f.State + "/" + f.Reason; r.shown[id] != state {
			if _, known := r.shown[id]; known {
				r.deps.Publish(id)
			}
			r.shown[id] = state
		}
		if f.State == store.FreshFresh && f.Until.Before(next) {
			next = f.Until
		}
		due, at := dueForRefresh(sum, f, ttl, now)
		if !r.leading.Load() {
			continue // the leader verifies
		}
		if due {
			if !r.deps.Running(id) {
				r.Submit(sum.Server, store.TriggerTTL)
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
	if r.leading.Load() {
		r.deps.Watch(sums)
	} else {
		r.deps.Watch(nil) // the leader holds them
	}
	return next
}

// logRead logs a failed read of the store: a warning while the store
// cannot be reached (a replica cut off from etcd tries again), else an
// error.
func (r *refresher) logRead(what string, err error) {
	if errors.Is(err, store.ErrUnavailable) {
		r.deps.Log.Warn(what, "err", err)
		return
	}
	r.deps.Log.Error(what, "err", err)
}

// dueForRefresh reports whether a server with auto-refresh on is due for
// a verification because its tools went stale by its TTL (or, after a
// failure, a TTL has passed since), and otherwise when it will be (zero
// if never by the clock alone).
func dueForRefresh(sum store.Summary, f store.Freshness, ttl time.Duration, now time.Time) (bool, time.Time) {
	srv := sum.Server
	if !Verifiable(srv) || !srv.AutoRefreshOn() {
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

// Submit queues a verification of srv, logging why it could not.
func (r *refresher) Submit(srv store.Server, trigger string) {
	if err := r.deps.Submit(srv, trigger); err != nil && !errors.Is(err, discovery.ErrClosed) {
		r.deps.Log.Error("start verification", "server", srv.ID, "trigger", trigger, "err", err)
	}
}
