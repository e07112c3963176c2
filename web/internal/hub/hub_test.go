package hub

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/r3labs/sse/v2"
)

// bodyWriter is a flushable ResponseWriter that can be read while the
// handler writes.
type bodyWriter struct {
	mu     sync.Mutex
	header http.Header
	buf    bytes.Buffer
}

func (w *bodyWriter) Header() http.Header { return w.header }
func (w *bodyWriter) WriteHeader(int)     {}
func (w *bodyWriter) Flush()              {}
func (w *bodyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}
func (w *bodyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestHubSnapshotNeverOverwritesNewerState: a change published while a
// snapshot is being read must not be followed by the older snapshot; and
// a snapshot event with empty data must not end the connection.
func TestHubSnapshotNeverOverwritesNewerState(t *testing.T) {
	h := New(nil)
	defer h.Close()
	var (
		mu    sync.Mutex
		state = "old"
		calls int
	)
	h.snapshot = func(string) []*sse.Event {
		mu.Lock()
		calls++
		v := state
		first := calls == 1
		if first {
			state = "new"
		}
		mu.Unlock()
		if first {
			// The state changed after it was read; the change is
			// published before the snapshot is sent.
			h.Publish(&sse.Event{Event: []byte("k"), Data: []byte("new")})
		}
		return []*sse.Event{
			{Event: []byte("broken")}, // e.g. a failed render
			{Event: []byte("k"), Data: []byte(v)},
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := httptest.NewRequest(http.MethodGet, "/events", nil).WithContext(ctx)
	w := &bodyWriter{header: http.Header{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(w, r)
	}()

	// Wait until no snapshot is due, then flush the stream with a marker.
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.mu.Lock()
		settled := len(h.conns) == 1
		for _, c := range h.conns {
			settled = settled && !c.behind && !c.syncing
		}
		h.mu.Unlock()
		if settled {
			break
		}
		select {
		case <-done:
			t.Fatalf("the connection ended; body %q", w.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("snapshot never completed; body %q", w.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.Publish(&sse.Event{Event: []byte("end"), Data: []byte("x")})
	for !strings.Contains(w.String(), "event: end\n\n") {
		select {
		case <-done:
			t.Fatalf("the connection ended; body %q", w.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("marker not received; body %q", w.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	body := w.String()
	if strings.Contains(body, "event: broken") {
		t.Error("an event without data was sent")
	}
	// The last value of k is the newest.
	var last string
	for _, block := range strings.Split(body, "\n\n") {
		var name, data string
		for _, line := range strings.Split(block, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = d
			}
			if n, ok := strings.CutPrefix(line, "event: "); ok {
				name = n
			}
		}
		if name == "k" {
			last = data
		}
	}
	if last != "new" {
		t.Errorf("the tab ends with k = %q, want new; body:\n%s", last, body)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("connection did not end")
	}
}

// TestHubEndsStalledClient: a client that keeps its connection open but
// stops reading is disconnected once a write to it has waited
// writeTimeout, so its goroutines end (without the deadline they would
// block for as long as the connection lives).
func TestHubEndsStalledClient(t *testing.T) {
	h := New(nil)
	h.writeTimeout = 300 * time.Millisecond
	// A snapshot far larger than any socket buffer.
	big := bytes.Repeat([]byte("x"), 4096)
	h.snapshot = func(string) []*sse.Event {
		evs := make([]*sse.Event, 4000)
		for i := range evs {
			evs[i] = &sse.Event{Event: []byte("fill"), Data: big}
		}
		return evs
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := conn.Write([]byte("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// Never read. The hub must give up on the connection.
	conns := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.conns)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after 10 s: %s", what)
			}
		}
	}
	waitFor("the client never connected", func() bool { return conns() == 1 })
	waitFor("a client that stopped reading is still connected", func() bool { return conns() == 0 })
	closed := make(chan struct{})
	go func() { h.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Hub.Close hangs")
	}
}

// A session's stream ends when the session expires, and EndSession ends
// every stream of that session and no other.
func TestHubSessionStreamsEnd(t *testing.T) {
	h := New(nil)
	defer h.Close()
	serve := func(session string, until time.Time) chan struct{} {
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			r := httptest.NewRequest(http.MethodGet, "/events", nil)
			h.ServeSession(&bodyWriter{header: http.Header{}}, r, session, until)
		}()
		return ended
	}
	wait := func(what string, ended chan struct{}) {
		t.Helper()
		select {
		case <-ended:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: stream still open after 5 s", what)
		}
	}
	expiring := serve("a", time.Now().Add(200*time.Millisecond))
	b1, b2 := serve("b", time.Time{}), serve("b", time.Time{})
	c := serve("c", time.Now().Add(time.Hour))
	wait("expired session", expiring)
	for h.Connections() != 3 {
		time.Sleep(10 * time.Millisecond)
	}
	h.EndSession("b")
	wait("ended session, first tab", b1)
	wait("ended session, second tab", b2)
	select {
	case <-c:
		t.Fatal("another session's stream ended")
	case <-time.After(100 * time.Millisecond):
	}
	if n := h.Connections(); n != 1 {
		t.Errorf("Connections() = %d; want 1", n)
	}
	// EndSessions ends every session's stream, and only those.
	d, anonymous := serve("d", time.Time{}), serve("", time.Time{})
	for h.Connections() != 3 {
		time.Sleep(10 * time.Millisecond)
	}
	h.EndSessions()
	wait("every session, c", c)
	wait("every session, d", d)
	select {
	case <-anonymous:
		t.Fatal("EndSessions ended a stream of no session")
	case <-time.After(100 * time.Millisecond):
	}
	if n := h.Connections(); n != 1 {
		t.Errorf("Connections() after EndSessions = %d; want 1", n)
	}
}
