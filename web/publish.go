package web

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/r3labs/sse/v2"

	"github.com/switchboard-dev/switchboard/web/internal/hub"
)

// live is what the open tabs are sent: the hub of their event streams,
// and the publisher of servers' fragments.
type live struct {
	hub *hub.Hub
	pub *publisher // the one path of servers' state to the tabs

	// pubMu orders reading a server's state with publishing it, so the
	// last fragment a tab gets is never older than one before it.
	pubMu sync.Mutex
	// snap is the servers' fragments of the last snapshot (pubMu; see
	// Server.snapshot).
	snap *serversSnapshot

	// lastTab and lastAPIPoll are when a tab last closed and a program last
	// read the waiting calls (Unix ns; see Server.approvers).
	lastTab, lastAPIPoll atomic.Int64
}

// newLive starts the hub, whose new tabs get snapshot, and the
// publisher, which publishes a server with publish; close it to stop
// both.
func newLive(snapshot func(since string) []*sse.Event, publish func(id string)) *live {
	return &live{hub: hub.New(snapshot), pub: newPublisher(publish)}
}

// close stops publishing and ends every tab's stream.
func (l *live) close() {
	l.pub.close()
	l.hub.Close()
}

// publisher is the one path by which a server's state reaches the tabs.
// Whatever changed a server — a committed store change, a job's
// progress, its watch, the clock turning it stale, a sign-in — marks it;
// one goroutine takes the marked servers and publishes each once. Marks
// that arrive while it publishes are taken together on its next round, so
// a burst of changes to a server costs one read and one render, and since
// one goroutine reads and publishes in order, the last fragment a tab
// gets is never older than one before it.
type publisher struct {
	publish func(id string) // reads the server and publishes its fragments

	mu     sync.Mutex
	marked map[string]struct{}
	closed bool

	wake chan struct{} // buffered: one wake-up pending at most
	stop chan struct{}
	done chan struct{}
}

// newPublisher starts a publisher; close it to stop its goroutine.
func newPublisher(publish func(id string)) *publisher {
	p := &publisher{
		publish: publish,
		marked:  map[string]struct{}{},
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go p.run()
	return p
}

// mark asks for the server's state to be published. It never waits.
func (p *publisher) mark(id string) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.marked[id] = struct{}{}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default: // a wake-up is already pending: it takes this mark too
	}
}

func (p *publisher) run() {
	defer close(p.done)
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
		}
		p.mu.Lock()
		ids := slices.Sorted(maps.Keys(p.marked))
		clear(p.marked)
		p.mu.Unlock()
		for _, id := range ids {
			p.publish(id)
		}
	}
}

// close stops the publisher and waits for its goroutine; marks not yet
// published are dropped.
func (p *publisher) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	close(p.stop)
	<-p.done
}
