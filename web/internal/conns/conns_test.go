package conns

import (
	"net"
	"net/http"
	"testing"
)

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
	g := New(2)
	a, b, c := &fakeConn{addr: "192.0.2.1:1"}, &fakeConn{addr: "192.0.2.2:1"}, &fakeConn{addr: "192.0.2.3:1"}
	if !g.admit(a) || !g.admit(b) {
		t.Fatal("a guard with room refused a connection")
	}
	if !g.admit(c) || !a.closed || b.closed {
		t.Errorf("at the cap: c admitted, a (waiting longest) closed; got a closed %v, b closed %v", a.closed, b.closed)
	}
	if all, waiting := g.Counts(); all != 2 || waiting != 2 {
		t.Errorf("Counts = %d, %d; want 2, 2", all, waiting)
	}
}

func TestServedConnectionsAreNotClosedForNewOnes(t *testing.T) {
	g := New(1)
	a, b := &fakeConn{addr: "192.0.2.1:1"}, &fakeConn{addr: "192.0.2.2:1"}
	g.admit(a)
	g.served(a) // its request was read: it is being served
	if g.admit(b) || a.closed {
		t.Errorf("at the cap with none waiting: want the new one refused and a kept; got b admitted or a closed (%v)", a.closed)
	}
	g.Track(a, http.StateIdle) // between requests it waits again
	if !g.admit(b) || !a.closed {
		t.Error("an idle connection was not closed for a new one")
	}
}

func TestOneClientWaitsWithAFewAtMost(t *testing.T) {
	g := New(1000)
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
	if !g.admit(&fakeConn{addr: "192.0.2.9:2"}) || !first.closed || other.closed {
		t.Errorf("one more waiting connection of a client: want its oldest closed (%v), the other client's kept (%v)", first.closed, other.closed)
	}
}
