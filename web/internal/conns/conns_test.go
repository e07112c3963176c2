package conns

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// clock is a Guard's clock that a test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func (c *clock) stall() { c.t = c.t.Add(Grace) }

func newGuard(max int) (*Guard, *clock) {
	g, c := New(max), &clock{t: time.Unix(1e9, 0)}
	g.now = c.now
	return g, c
}

// fakeConn is a connection from addr that records whether it was closed.
type fakeConn struct {
	net.Conn
	addr   string
	closed bool
}

func (c *fakeConn) RemoteAddr() net.Addr {
	a, _ := net.ResolveTCPAddr("tcp", c.addr)
	return a
}

func (c *fakeConn) Close() error { c.closed = true; return nil }

func TestFullGuardClosesTheLongestWaiting(t *testing.T) {
	g, clk := newGuard(2)
	a, b, c := &fakeConn{addr: "192.0.2.1:1"}, &fakeConn{addr: "192.0.2.2:1"}, &fakeConn{addr: "192.0.2.3:1"}
	if !g.admit(a) || !g.admit(b) {
		t.Fatal("a guard with room refused a connection")
	}
	if g.admit(c) || a.closed || b.closed {
		t.Fatal("at the cap, none stalled: want the new one refused and the others kept")
	}
	clk.stall()
	if !g.admit(c) || !a.closed || b.closed {
		t.Errorf("at the cap: c admitted, a (waiting longest) closed; got a closed %v, b closed %v", a.closed, b.closed)
	}
	if all, waiting := g.Counts(); all != 2 || waiting != 2 {
		t.Errorf("Counts = %d, %d; want 2, 2", all, waiting)
	}
}

func TestServedConnectionsAreNotClosedForNewOnes(t *testing.T) {
	g, clk := newGuard(1)
	a, b := &fakeConn{addr: "192.0.2.1:1"}, &fakeConn{addr: "192.0.2.2:1"}
	g.admit(a)
	g.served(a) // its request was read: it is being served
	if g.admit(b) || a.closed {
		t.Errorf("at the cap with none waiting: want the new one refused and a kept; got b admitted or a closed (%v)", a.closed)
	}
	clk.stall()
	if g.admit(b) || a.closed {
		t.Error("a connection being served was closed when it had been served Grace")
	}
	g.Track(a, http.StateIdle) // between requests it waits again
	clk.stall()
	if !g.admit(b) || !a.closed {
		t.Error("an idle connection was not closed for a new one")
	}
}

func TestOneClientWaitsWithAFewAtMost(t *testing.T) {
	g, clk := newGuard(1000)
	var first *fakeConn
	for i := range WaitingPerClient {
		c := &fakeConn{addr: "192.0.2.9:1"}
		if i == 0 {
			first = c
		}
		g.admit(c)
	}
	other := &fakeConn{addr: "198.51.100.1:1"}
	g.admit(other)
	// A burst: more than its share at once, none stalled, all admitted.
	burst := &fakeConn{addr: "192.0.2.9:3"}
	if !g.admit(burst) || first.closed {
		t.Fatal("a connection of a burst was refused, or an unstalled one closed for it")
	}
	clk.stall()
	if !g.admit(&fakeConn{addr: "192.0.2.9:2"}) || !first.closed || burst.closed || other.closed {
		t.Errorf("one more waiting connection of a client, all stalled: want its oldest closed (%v), its newest and the other client's kept (%v, %v)", first.closed, burst.closed, other.closed)
	}
}

// Over the cap with none stalled, a new connection is answered 503 with
// Retry-After, not reset.
func TestRefusedIsBusy(t *testing.T) {
	server, client := net.Pipe()
	go refuse(server)
	data, _ := io.ReadAll(client)
	resp, err := http.ReadResponse(bufioReader(string(data)), nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("refused connection read %q (%v); want 503 with Retry-After: 1", data, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if int64(len(body)) != resp.ContentLength {
		t.Errorf("body %q is not Content-Length %d", body, resp.ContentLength)
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
