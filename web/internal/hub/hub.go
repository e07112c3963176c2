// Package hub fans live updates out to every open browser tab over
// server-sent events.
package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/r3labs/sse/v2"
)

// Hub fans live updates out to every open browser tab.
//
// r3labs/sse is used the safe way docs/architecture.md describes: one stream per
// browser connection (so a stalled tab can only block its own stream),
// AutoReplay off (nothing is kept), SplitData on (multi-line HTML), and
// publishing with TryPublish so the publisher never waits. A connection
// whose buffer was full when an event came is marked behind and gets a
// fresh snapshot once it drains. Every connection gets a snapshot when it
// opens, and a ping comment every PingInterval.
//
// A snapshot is sent by its own goroutine (one per connection at most),
// which may wait for the connection's buffer, so a snapshot larger than
// the buffer still arrives whole; it ends when the connection does. If a
// live event was published while a snapshot was due or being sent,
// another snapshot follows, so an older state never arrives last.
type Hub struct {
	sse *sse.Server
	// snapshot returns the current state as events; since is the store
	// revision the tab already shows ("" if unknown), so that signals of
	// what changed after it can be included.
	snapshot     func(since string) []*sse.Event
	pingInterval time.Duration
	writeTimeout time.Duration

	mu     sync.Mutex
	conns  map[string]*conn
	closed bool

	stop chan struct{}
	done chan struct{}
}

type conn struct {
	cancel context.CancelFunc
	// session is the browser session the stream belongs to ("" if none).
	session string
	// behind: a snapshot is due or being sent.
	behind bool
	// syncing: a goroutine is sending this connection a snapshot.
	syncing bool
	// missed: a live event was published since the snapshot was read.
	missed bool
	// since is the store revision the tab's page was rendered at, for
	// its first snapshot; later snapshots (after it fell behind) know
	// nothing of what it missed.
	since string
}

// Hub defaults.
const (
	PingInterval   = 15 * time.Second
	resyncInterval = 500 * time.Millisecond
	// streamBuffer is how many events one tab may lag behind before it is
	// marked behind and resynchronised with a snapshot.
	streamBuffer = 256
	// StreamWriteTimeout bounds one write to a tab: a client that stopped
	// reading (its connection alive, its buffers full) is disconnected
	// then, rather than holding a goroutine until the connection dies.
	StreamWriteTimeout = 10 * time.Second
)

// New returns a running hub that sends each connection snapshot's events
// when it opens or fell behind. Close it to end every connection and its
// background goroutine.
func New(snapshot func(since string) []*sse.Event) *Hub {
	h := &Hub{
		snapshot:     snapshot,
		conns:        map[string]*conn{},
		pingInterval: PingInterval,
		writeTimeout: StreamWriteTimeout,
		stop:         make(chan struct{}),
		done:         make(chan struct{}),
	}
	s := sse.New()
	s.AutoReplay = false
	s.AutoStream = false
	s.SplitData = true
	s.BufferSize = streamBuffer
	s.Headers = map[string]string{"X-Accel-Buffering": "no"}
	// r3labs calls OnSubscribe on a goroutine of its own.
	s.OnSubscribe = func(streamID string, _ *sse.Subscriber) { h.sync(streamID) }
	h.sse = s
	go h.loop()
	return h
}

// loop pings every connection and resynchronises the ones that fell
// behind. It ends when the hub is closed.
func (h *Hub) loop() {
	defer close(h.done)
	ping := time.NewTicker(h.pingInterval)
	defer ping.Stop()
	resync := time.NewTicker(resyncInterval)
	defer resync.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-ping.C:
			h.publish(&sse.Event{Comment: []byte("ping")})
		case <-resync.C:
			h.mu.Lock()
			for id, c := range h.conns {
				if c.behind && !c.syncing {
					c.syncing = true
					go h.sync(id)
				}
			}
			h.mu.Unlock()
		}
	}
}

// sync sends the whole current state to one connection, waiting for room
// in its buffer (only this goroutine waits; it ends with the connection),
// and repeats while live events were published meanwhile.
func (h *Hub) sync(streamID string) {
	for {
		h.mu.Lock()
		c, ok := h.conns[streamID]
		if !ok {
			h.mu.Unlock()
			return
		}
		c.missed = false
		since := c.since
		c.since = ""
		h.mu.Unlock()

		var events []*sse.Event
		if h.snapshot != nil {
			events = h.snapshot(since)
		}
		for _, ev := range events {
			if len(ev.Data) == 0 {
				continue // r3labs would end the connection
			}
			// Returns once queued, or at once when the stream is gone.
			h.sse.Publish(streamID, ev)
		}

		h.mu.Lock()
		c, ok = h.conns[streamID]
		if !ok || !c.missed {
			if ok {
				c.behind, c.syncing = false, false
			}
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
	}
}

// Publish sends events to every connection without waiting. Events must
// have non-empty Data (r3labs ends a connection on empty data).
func (h *Hub) Publish(events ...*sse.Event) {
	for _, ev := range events {
		if len(ev.Data) == 0 {
			continue
		}
		h.publish(ev)
	}
}

func (h *Hub) publish(ev *sse.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, c := range h.conns {
		if c.behind && len(ev.Data) > 0 {
			// A snapshot is due or being sent, and may predate ev: ev is
			// still sent (it may be a signal no snapshot carries), and
			// another snapshot follows, so the newest state comes last.
			c.missed = true
		}
		if !h.sse.TryPublish(id, ev) {
			c.behind = true
		}
	}
}

// EndSession ends every stream of a browser session at once.
func (h *Hub) EndSession(session string) {
	if session == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		if c.session == session {
			c.cancel()
		}
	}
}

// EndSessions ends every stream of every browser session at once (a
// "log out everywhere").
func (h *Hub) EndSessions() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		if c.session != "" {
			c.cancel()
		}
	}
}

// Connections returns how many tabs are connected.
func (h *Hub) Connections() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// ServeHTTP serves one browser connection until the client goes away or
// the hub closes.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.ServeSession(w, r, "", time.Time{})
}

// ServeSession is ServeHTTP for a stream of a browser session: it also
// ends when the session expires (at until, unless zero) or is ended (see
// EndSession).
func (h *Hub) ServeSession(w http.ResponseWriter, r *http.Request, session string, until time.Time) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if !until.IsZero() {
		var cancelDeadline context.CancelFunc
		ctx, cancelDeadline = context.WithDeadline(ctx, until)
		defer cancelDeadline()
	}
	id := newStreamID()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	// The first snapshot is sent on subscribe.
	h.conns[id] = &conn{cancel: cancel, session: session, behind: true, syncing: true, since: r.URL.Query().Get("rev")}
	h.sse.CreateStream(id)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.conns, id)
		h.mu.Unlock()
		h.sse.RemoveStream(id)
	}()

	r = r.WithContext(ctx)
	q := r.URL.Query()
	q.Set("stream", id)
	r.URL.RawQuery = q.Encode()
	r.Header.Del("Last-Event-ID") // nothing is replayed; the snapshot covers it
	h.sse.ServeHTTP(&streamWriter{ResponseWriter: w, rc: http.NewResponseController(w), cancel: cancel, timeout: h.writeTimeout}, r)
}

// streamWriter gives every write to a stream a deadline and ends the
// stream (cancels its context) at the first failed write. r3labs ignores
// write errors and would otherwise block in a write to a client that
// stopped reading, with its stream's goroutine blocked behind it, for as
// long as the connection lives.
type streamWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	cancel  context.CancelFunc
	timeout time.Duration
}

func (s *streamWriter) Write(p []byte) (int, error) {
	s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	n, err := s.ResponseWriter.Write(p)
	if err != nil {
		s.cancel()
	}
	return n, err
}

func (s *streamWriter) Flush() {
	s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if err := s.rc.Flush(); err != nil {
		s.cancel()
	}
}

// Close ends every connection and stops the hub's goroutine. Connections
// end through their request context, so r3labs' own goroutines unwind.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	for _, c := range h.conns {
		c.cancel()
	}
	h.mu.Unlock()
	close(h.stop)
	<-h.done
}

func newStreamID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}
