// Package cluster is how the replicas of one Switchboard coordinate: one
// of them leads (it runs the refresher, the TTL auto-refresh and the held
// watches), a verification of a server runs on one replica at a time
// (a claim), and what happens on one replica that is not in the store
// (a verification's phases) reaches the others (events). A Switchboard
// on its own file is a cluster of one: Local. The replicas of a team's
// Switchboard on etcd use store/etcd's Coordinator, which does each of
// these with an etcd lease: a replica that dies loses its leadership and
// its claims when its lease ends.
package cluster

import (
	"context"
	"errors"
	"sync"
)

// Cluster coordinates the replicas of one Switchboard.
type Cluster interface {
	// ID names this replica.
	ID() string
	// OnLeader calls fn with true when this replica becomes the leader
	// and with false when it stops being it (at once with the current
	// state). fn runs on one goroutine at a time and must not block
	// long.
	OnLeader(fn func(leading bool)) (cancel func())
	// Claim takes the claim name (such as a server's verification) for
	// this replica until it is released or the replica loses it (dies,
	// or loses the store for long enough that another may take it);
	// ErrClaimed if another holds it.
	Claim(ctx context.Context, name string) (Hold, error)
	// Held reports whether any replica holds the claim name now.
	Held(ctx context.Context, name string) (bool, error)
	// OnClaimEnded calls fn with the name of each claim that ends,
	// released or lost with its replica (another replica's or this
	// one's), on one goroutine.
	OnClaimEnded(fn func(name string)) (cancel func())
	// Publish sends an event of a topic to every other replica.
	Publish(topic string, data []byte) error
	// Subscribe calls fn with each event of the topic another replica
	// publishes, in the order they were published, on one goroutine.
	Subscribe(topic string, fn func(data []byte)) (cancel func())
}

// ErrClaimed is a claim another replica holds.
var ErrClaimed = errors.New("another replica holds it")

// Hold is a claim this replica holds.
type Hold struct {
	// Release gives the claim up; again is nothing.
	Release func()
	// Lost is closed when the claim ends without Release: this replica
	// can no longer be sure it holds it (it lost the store for long
	// enough that the claim may have expired and gone to another). Work
	// done under the claim stops then. Nil for a claim that cannot be
	// lost.
	Lost <-chan struct{}
	// fence is the store's condition for writes made under the claim
	// (see WithFence); nil for a claim no other replica can take.
	fence any
}

// NewHold is a claim released by release, lost when lost closes (nil:
// never), whose writes the store fences with fence (see FenceOf).
func NewHold(release func(), lost <-chan struct{}, fence any) Hold {
	return Hold{Release: release, Lost: lost, fence: fence}
}

type fenceKey struct{}

// WithFence marks the store writes made with ctx as made under the claim
// h: a store shared by replicas refuses them (store.ErrFenced) once the
// claim is not this replica's any more, whatever this replica believes.
// That is the fence: a replica cut off from the others, still working
// because it has not noticed yet, cannot overwrite what the replica that
// took the claim since writes.
func WithFence(ctx context.Context, h Hold) context.Context {
	if h.fence == nil {
		return ctx
	}
	return context.WithValue(ctx, fenceKey{}, h.fence)
}

// FenceOf is the fence WithFence put on ctx (nil if none), for the store
// whose claims made it.
func FenceOf(ctx context.Context) any { return ctx.Value(fenceKey{}) }

// Local is the cluster of one Switchboard: it always leads, its claims
// are its own, and nobody hears its events.
type Local struct {
	mu     sync.Mutex
	claims map[string]bool
}

// ID is "local".
func (l *Local) ID() string { return "local" }

// OnLeader calls fn(true) at once: the only replica leads.
func (l *Local) OnLeader(fn func(bool)) (cancel func()) {
	fn(true)
	return func() {}
}

// Claim takes name unless this process holds it: a claim nobody else
// can take, never lost, unfenced.
func (l *Local) Claim(_ context.Context, name string) (Hold, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.claims == nil {
		l.claims = map[string]bool{}
	}
	if l.claims[name] {
		return Hold{}, ErrClaimed
	}
	l.claims[name] = true
	var once sync.Once
	return NewHold(func() {
		once.Do(func() {
			l.mu.Lock()
			delete(l.claims, name)
			l.mu.Unlock()
		})
	}, nil, nil), nil
}

// Held reports whether this process holds name.
func (l *Local) Held(_ context.Context, name string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.claims[name], nil
}

// OnClaimEnded tells nothing: a claim of the only replica ends with its
// work, which it knows.
func (l *Local) OnClaimEnded(func(string)) (cancel func()) { return func() {} }

// Publish sends nothing: there is no other replica.
func (l *Local) Publish(string, []byte) error { return nil }

// Subscribe hears nothing.
func (l *Local) Subscribe(string, func([]byte)) (cancel func()) { return func() {} }
