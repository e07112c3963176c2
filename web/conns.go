package web

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/web/internal/authlimit"
)

// Connection limits. A client that opens connections and never finishes
// a request (slowloris: headers or a body a byte at a time) must not be
// able to use up the process's file descriptors — the store, the
// verifications' pipes and every other client need them — nor keep
// others out. So:
//
//   - a request's header must arrive within HeaderTimeout, and its body
//     (capped in size by limitBodies) within BodyTimeout of the handler
//     starting (both defaults of Config); a connection between requests is closed after
//     IdleTimeout. There is no timeout on the response or on the handler,
//     so the event stream and a tool call that waits for a person live as
//     long as they need (see bodyDeadline).
//   - a connection is "waiting" from the moment it is accepted until its
//     request has been read whole, and again while it is idle between
//     requests. Each client (see authlimit.Client: all of loopback is one) may
//     have at most waitingPerClient waiting connections; one more closes
//     the client's connection that has waited longest. A person's request
//     waits for milliseconds and gets through; a stalled one is the oldest.
//   - all connections together are capped at a share of the descriptor
//     limit (maxConns); at the cap, the longest-waiting connection of any
//     client is closed for a new one, and if none is waiting (every
//     connection is being served), the new one is closed at once.
const (
	HeaderTimeout    = 10 * time.Second
	BodyTimeout      = 30 * time.Second
	IdleTimeout      = 2 * time.Minute
	maxHeaderBytes   = 64 << 10
	waitingPerClient = 64
)

// connGuard keeps the connection limits. Its listener admits connections;
// the http.Server reports their states (track); the handler marks a
// connection served once its request was read (served).
type connGuard struct {
	max int // connections in all

	mu      sync.Mutex
	conns   map[net.Conn]*guarded
	waiting map[string]int // client → its waiting connections
	seq     uint64
}

type guarded struct {
	client  string
	waiting bool
	since   uint64 // order in which it started waiting
}

func newConnGuard(max int) *connGuard {
	return &connGuard{max: max, conns: map[net.Conn]*guarded{}, waiting: map[string]int{}}
}

// admit takes a newly accepted connection in, waiting, closing another
// to make room if the limits say so. It reports false if c itself must
// be closed.
func (g *connGuard) admit(c net.Conn) bool {
	client := authlimit.Client(c.RemoteAddr().String())
	var evict []net.Conn
	g.mu.Lock()
	if g.waiting[client] >= waitingPerClient {
		if old := g.oldestWaiting(client); old != nil {
			evict = append(evict, old)
			g.remove(old)
		}
	}
	if len(g.conns) >= g.max {
		if old := g.oldestWaiting(""); old != nil {
			evict = append(evict, old)
			g.remove(old)
		}
	}
	ok := len(g.conns) < g.max
	if ok {
		g.conns[c] = &guarded{client: client}
		g.wait(g.conns[c])
	}
	g.mu.Unlock()
	for _, old := range evict {
		old.Close()
	}
	return ok
}

// oldestWaiting is the connection that has waited longest, of client or
// (if "") of anyone; nil if none waits. g.mu is held.
func (g *connGuard) oldestWaiting(client string) net.Conn {
	var oldest net.Conn
	var since uint64
	for c, gc := range g.conns {
		if gc.waiting && (client == "" || gc.client == client) && (oldest == nil || gc.since < since) {
			oldest, since = c, gc.since
		}
	}
	return oldest
}

// wait marks gc waiting from now. g.mu is held.
func (g *connGuard) wait(gc *guarded) {
	if !gc.waiting {
		gc.waiting = true
		g.waiting[gc.client]++
	}
	g.seq++
	gc.since = g.seq
}

// remove forgets c. g.mu is held.
func (g *connGuard) remove(c net.Conn) {
	gc, ok := g.conns[c]
	if !ok {
		return
	}
	if gc.waiting {
		g.unwait(gc)
	}
	delete(g.conns, c)
}

func (g *connGuard) unwait(gc *guarded) {
	gc.waiting = false
	if g.waiting[gc.client]--; g.waiting[gc.client] <= 0 {
		delete(g.waiting, gc.client)
	}
}

// track is the http.Server's ConnState hook: an idle connection waits for
// its next request; a closed or hijacked one is forgotten.
func (g *connGuard) track(c net.Conn, state http.ConnState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch state {
	case http.StateIdle:
		if gc, ok := g.conns[c]; ok {
			g.wait(gc)
		}
	case http.StateHijacked, http.StateClosed:
		g.remove(c)
	}
}

// served marks c's request as read whole: it no longer waits.
func (g *connGuard) served(c net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if gc, ok := g.conns[c]; ok && gc.waiting {
		g.unwait(gc)
	}
}

// counts reports the connections held and those waiting, for tests.
func (g *connGuard) counts() (all, waiting int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range g.waiting {
		waiting += n
	}
	return len(g.conns), waiting
}

// guardedListener admits each accepted connection through a connGuard.
type guardedListener struct {
	net.Listener
	g *connGuard
}

func (l guardedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.g.admit(c) {
			return c, nil
		}
		c.Close()
	}
}

type connKey struct{}

// HTTPServer returns the http.Server that serves the application, with
// its timeouts and connection limits, and the listener to serve it on
// (ln, with the limits applied). Serve it with srv.Serve(listener).
func (s *Server) HTTPServer(ln net.Listener) (*http.Server, net.Listener) {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.HeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		// No ReadTimeout and no WriteTimeout: either would end the event
		// stream and long tool calls (see bodyDeadline).
		ConnState: s.conns.track,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	return srv, guardedListener{Listener: ln, g: s.conns}
}

// bodyDeadline gives the reading of r's body Config.BodyTimeout and marks the
// connection served once the body was read (at once if there is none).
//
// http.Server.ReadTimeout would do the first, but it stays in force after
// the body was read: the server's background read (which notices a client
// going away) then fails when it passes and cancels the request's context,
// ending every stream and long call at that moment. Here the deadline is
// lifted as soon as the body has been read.
func (s *Server) bodyDeadline(w http.ResponseWriter, r *http.Request) *http.Request {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		if c != nil {
			s.conns.served(c)
		}
		return r
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) != nil {
		return r // not a real connection (tests through ServeHTTP)
	}
	r2 := *r
	served := func() {
		if c != nil {
			s.conns.served(c)
		}
	}
	r2.Body = &deadlineBody{ReadCloser: r.Body, read: func() {
		rc.SetReadDeadline(time.Time{})
		served()
	}, closed: served}
	return &r2
}

// deadlineBody calls read once when the body ends (EOF or an error), or
// else closed when it is closed unread: then the deadline stays, and
// bounds the server's discarding of the rest.
type deadlineBody struct {
	io.ReadCloser
	once         sync.Once
	read, closed func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.read)
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	b.once.Do(b.closed)
	return b.ReadCloser.Close()
}
