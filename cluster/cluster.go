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
	// this replica until release is called or the replica dies;
	// ErrClaimed if another holds it.
	Claim(ctx context.Context, name string) (release func(), err error)
	// Publish sends an event of a topic to every other replica.
	Publish(topic string, data []byte) error
	// Subscribe calls fn with each event of the topic another replica
	// publishes, in the order they were published, on one goroutine.
	Subscribe(topic string, fn func(data []byte)) (cancel func())
}

// ErrClaimed is a claim another replica holds.
var ErrClaimed = errors.New("another replica holds it")

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

// Claim takes name unless this process holds it.
func (l *Local) Claim(_ context.Context, name string) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.claims == nil {
		l.claims = map[string]bool{}
	}
	if l.claims[name] {
		return nil, ErrClaimed
	}
	l.claims[name] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			delete(l.claims, name)
			l.mu.Unlock()
		})
	}, nil
}

// Publish sends nothing: there is no other replica.
func (l *Local) Publish(string, []byte) error { return nil }

// Subscribe hears nothing.
func (l *Local) Subscribe(string, func([]byte)) (cancel func()) { return func() {} }
