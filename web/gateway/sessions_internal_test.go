package gateway

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// Stateless clients are bounded: past maxStateless names, a new one makes
// room by forgetting one not listening, the one unused for longest; an
// hour after its last request a client is forgotten, unless it listens.
func TestStatelessClientsBounded(t *testing.T) { synctest.Test(t, testStatelessClientsBounded) }

func testStatelessClientsBounded(t *testing.T) {
	m := newMCPSessions()
	closeListen := m.listening("listener 1") // the oldest, but listening
	for i := range maxStateless - 1 {
		time.Sleep(time.Second)
		m.seen(fmt.Sprintf("agent %d", i))
	}
	time.Sleep(time.Second)
	m.seen("agent 0") // used again: now agent 1 is unused for longest
	time.Sleep(time.Second)
	m.seen("newcomer")
	names := func() []string {
		var out []string
		for _, c := range m.statelessList() {
			out = append(out, c.Client)
		}
		return out
	}
	got := names()
	if len(got) != maxStateless || slices.Contains(got, "agent 1") || !slices.Contains(got, "listener 1") ||
		!slices.Contains(got, "agent 0") || got[0] != "newcomer" {
		t.Fatalf("after %d names, kept %d, first %q, agent 1 kept %v, listener kept %v; want %d, newcomer first, agent 1 forgotten, the listener kept",
			maxStateless+1, len(got), got[0], slices.Contains(got, "agent 1"), slices.Contains(got, "listener 1"), maxStateless)
	}
	if c := m.statelessList()[slices.Index(got, "agent 0")]; c.Requests != 2 || c.Listening != 0 {
		t.Errorf("agent 0 = %+v; want 2 requests, not listening", c)
	}

	time.Sleep(mcpSessionIdle + time.Second)
	m.forgetStateless(time.Now().Add(-mcpSessionIdle))
	if got := names(); !slices.Equal(got, []string{"listener 1"}) {
		t.Errorf("after an hour without requests, kept %q; want only the listener", got)
	}
	closeListen()
	if c := m.statelessList()[0]; c.Listening != 0 || c.Requests != 1 {
		t.Errorf("listener after its stream closed = %+v; want 1 request, not listening", c)
	}
	time.Sleep(mcpSessionIdle + time.Second)
	m.forgetStateless(time.Now().Add(-mcpSessionIdle))
	if got := names(); len(got) != 0 {
		t.Errorf("after the listener's stream closed and an hour passed, kept %q; want none", got)
	}
}
