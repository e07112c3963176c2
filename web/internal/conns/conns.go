// Package conns keeps an HTTP server's connection limits.
//
// A client that opens connections and never finishes a request
// (slowloris: headers or a body a byte at a time) must not be able to use
// up the process's file descriptors — the store, the verifications' pipes
// and every other client need them — nor keep others out. So:
//
//   - a request's header must arrive within the server's header timeout,
//     and its body within the timeout BodyDeadline is given, from the
//     handler starting. There is no timeout on the response or on the
//     handler, so an event stream and a tool call that waits for a person
//     live as long as they need (see BodyDeadline).
//   - a connection is "waiting" from the moment it is accepted until its
//     request has been read whole, and again while it is idle between
//     requests; it is "stalled" once it has waited Grace. A request being
//     served is never shed: only stalled connections are. Each client (see
//     authlimit.Client: all of loopback is one) may keep WaitingPerClient
//     waiting connections; past that, a new one sheds the client's
//     stalled connections, longest-waiting first, down to that share. A
//     burst of requests (500 calls at once) waits for milliseconds and is
//     all served; a slowloris' connections stall and are shed.
//   - all connections together are capped at a share of the descriptor
//     limit (Max); at the cap, the longest-stalled connection of any
//     client is closed for a new one, and if none has stalled, the new one
//     is answered 503 with Retry-After and closed.
package conns

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/web/internal/authlimit"
)

const (
	// MaxHeaderBytes caps a request's header.
	MaxHeaderBytes = 64 << 10
	// WaitingPerClient is how many waiting connections one client keeps
	// when it opens more (see the package comment).
	WaitingPerClient = 64
	// Grace is how long a connection waits before it counts as stalled:
	// long beyond what reading a request takes on a loaded machine.
	Grace = time.Second
)

// Guard keeps the connection limits. Its listener admits connections;
// the http.Server reports their states (Track) and gives each request its
// connection (ConnContext); BodyDeadline marks a connection served once
// its request was read.
type Guard struct {
	max int              // connections in all
	now func() time.Time // the clock (tests set theirs)

	mu      sync.Mutex
	conns   map[net.Conn]*guarded
	waiting map[string]int // client → its waiting connections
	seq     uint64
}

type guarded struct {
	client  string
	waiting bool
	since   uint64    // order in which it started waiting
	at      time.Time // when it started waiting
}

func New(max int) *Guard {
	return &Guard{max: max, now: time.Now, conns: map[net.Conn]*guarded{}, waiting: map[string]int{}}
}

// admit takes a newly accepted connection in, waiting, closing another
// to make room if the limits say so. It reports false if c itself must
// be closed.
func (g *Guard) admit(c net.Conn) bool {
	client := authlimit.Client(c.RemoteAddr().String())
	var evict []net.Conn
	g.mu.Lock()
	now := g.now()
	for g.waiting[client] >= WaitingPerClient {
		old := g.oldestStalled(client, now)
		if old == nil {
			break
		}
		evict = append(evict, old)
		g.remove(old)
	}
	if len(g.conns) >= g.max {
		if old := g.oldestStalled("", now); old != nil {
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

// oldestStalled is the connection that has waited longest, of client or
// (if "") of anyone, if it has waited Grace at now; nil if none has.
// g.mu is held.
func (g *Guard) oldestStalled(client string, now time.Time) net.Conn {
	var oldest net.Conn
	var since uint64
	for c, gc := range g.conns {
		if gc.waiting && now.Sub(gc.at) >= Grace && (client == "" || gc.client == client) && (oldest == nil || gc.since < since) {
			oldest, since = c, gc.since
		}
	}
	return oldest
}

// wait marks gc waiting from now. g.mu is held.
func (g *Guard) wait(gc *guarded) {
	if !gc.waiting {
		gc.waiting = true
		g.waiting[gc.client]++
	}
	g.seq++
	gc.since, gc.at = g.seq, g.now()
}

// remove forgets c. g.mu is held.
func (g *Guard) remove(c net.Conn) {
	gc, ok := g.conns[c]
	if !ok {
		return
	}
	if gc.waiting {
		g.unwait(gc)
	}
	delete(g.conns, c)
}

func (g *Guard) unwait(gc *guarded) {
	gc.waiting = false
	if g.waiting[gc.client]--; g.waiting[gc.client] <= 0 {
		delete(g.waiting, gc.client)
	}
}

// Track is the http.Server's ConnState hook: an idle connection waits for
// its next request; a closed or hijacked one is forgotten.
func (g *Guard) Track(c net.Conn, state http.ConnState) {
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
func (g *Guard) served(c net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if gc, ok := g.conns[c]; ok && gc.waiting {
		g.unwait(gc)
	}
}

// Counts reports the connections held and those waiting.
func (g *Guard) Counts() (all, waiting int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range g.waiting {
		waiting += n
	}
	return len(g.conns), waiting
}

// Listener is ln admitting each accepted connection through g.
func (g *Guard) Listener(ln net.Listener) net.Listener { return guardedListener{Listener: ln, g: g} }

// guardedListener admits each accepted connection through a Guard.
type guardedListener struct {
	net.Listener
	g *Guard
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
		refuse(c)
	}
}

// busy is the answer to a connection over the cap while none has
// stalled: a client retries it, where a reset would read as a failure.
const busy = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Connection: close\r\nContent-Length: 44\r\n\r\ntoo many connections: try again in a second\n"

// refuse answers c busy, without reading its request, and closes it.
func refuse(c net.Conn) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	io.WriteString(c, busy)
	c.Close()
}

type connKey struct{}

// ConnContext is the http.Server's ConnContext hook: it gives each
// request its connection, for BodyDeadline.
func (g *Guard) ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// BodyDeadline gives the reading of r's body timeout and marks the
// connection served once the body was read (at once if there is none).
//
// http.Server.ReadTimeout would do the first, but it stays in force after
// the body was read: the server's background read (which notices a client
// going away) then fails when it passes and cancels the request's context,
// ending every stream and long call at that moment. Here the deadline is
// lifted as soon as the body has been read.
func (g *Guard) BodyDeadline(w http.ResponseWriter, r *http.Request, timeout time.Duration) *http.Request {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		if c != nil {
			g.served(c)
		}
		return r
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(timeout)) != nil {
		return r // not a real connection (tests through ServeHTTP)
	}
	r2 := *r
	served := func() {
		if c != nil {
			g.served(c)
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
