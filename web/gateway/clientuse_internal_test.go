package gateway

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
)

// A client token's state: never used; connected while it holds a live
// session with an open stream or used in the last RecentlyConnected, a
// listen stream, or made a stateless request in the last
// RecentlyConnected; seen otherwise, with what its agent declared.
func TestClientUse(t *testing.T) { synctest.Test(t, testClientUse) }

func testClientUse(t *testing.T) {
	m := newMCPSessions()
	state := func(id string) ClientUse { t.Helper(); return m.clientUse(id, time.Now()) }
	if got := state("a"); got.State != UseNever || !got.LastSeen.IsZero() {
		t.Fatalf("clientUse(a) of an unused token = %+v; want never", got)
	}

	// A session.
	sid := m.Generate()
	m.initialized(sid, "a", "2025-11-25", "desktop 1", discovery.Asks{})
	if got := state("a"); got.State != UseConnected || got.Sessions != 1 || got.Protocol != "2025-11-25" || got.Client != "desktop 1" {
		t.Errorf("clientUse(a) in a session = %+v; want connected, its protocol and client", got)
	}
	if got := state("b"); got.State != UseNever {
		t.Errorf("clientUse(b) = %+v; another token's session is not b's", got)
	}
	closeStream := m.streaming(sid)
	time.Sleep(time.Hour)
	if got := state("a"); got.State != UseConnected {
		t.Errorf("clientUse(a) an hour into a session with its stream open = %+v; want connected", got)
	}
	closeStream() // the agent went away without ending its session
	if got := state("a"); got.State != UseSeen || !got.LastSeen.Equal(time.Now()) || got.Sessions != 1 {
		t.Errorf("clientUse(a) once its stream closed, the session idle for an hour = %+v; want seen now", got)
	}
	m.touch(sid)
	time.Sleep(RecentlyConnected - time.Second)
	if got := state("a"); got.State != UseConnected {
		t.Errorf("clientUse(a) after a recent request in its session = %+v; want connected", got)
	}
	start := time.Now()
	m.tokenSeen("a")
	m.Terminate(sid)
	time.Sleep(time.Minute)
	if got := state("a"); got.State != UseSeen || !got.LastSeen.Equal(start) || got.Sessions != 0 || got.Client != "desktop 1" {
		t.Errorf("clientUse(a) after its session ended = %+v; want seen at %v, what it declared kept", got, start)
	}
	if m.streaming(sid)(); len(m.live) != 0 {
		t.Errorf("a stream of an ended session made it live again")
	}

	// Stateless requests.
	m.tokenDeclared("b", "2026-07-28", "cli 2", true)
	time.Sleep(RecentlyConnected - time.Second)
	if got := state("b"); got.State != UseConnected || got.Protocol != "2026-07-28" {
		t.Errorf("clientUse(b) just after a stateless request = %+v; want connected", got)
	}
	time.Sleep(time.Second)
	if got := state("b"); got.State != UseSeen {
		t.Errorf("clientUse(b) %v after its last request = %+v; want seen", RecentlyConnected, got)
	}
	closed := m.tokenListening("b")
	time.Sleep(time.Hour)
	if got := state("b"); got.State != UseConnected || got.Listening != 1 {
		t.Errorf("clientUse(b) listening = %+v; want connected", got)
	}
	closed()
	if got := state("b"); got.State != UseConnected || got.Listening != 0 || !got.LastSeen.Equal(time.Now()) {
		t.Errorf("clientUse(b) as its stream closes = %+v; want connected, seen now", got)
	}

	// The endpoint's own token is no client's; a revoked one is forgotten.
	m.tokenSeen("")
	m.tokenDeclared("", "2026-07-28", "x", true)
	m.tokenListening("")()
	if len(m.tokens) != 2 {
		t.Errorf("tokens = %v; want a and b only", m.tokens)
	}
	m.forgetToken("a")
	if got := state("a"); got.State != UseNever {
		t.Errorf("clientUse(a) after forgetToken = %+v; want never", got)
	}
}
