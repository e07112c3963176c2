package gateway

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

// A connected client's token says who an agent is, not whether it is
// there: the endpoint keeps, per token, when it was last used and what
// the agent declared with it, so the dashboard can tell a client that is
// connected now from one seen long ago or never. This lives in memory,
// like the sessions it is read from: after a restart every client is
// "never" (since the start) until it comes back.

// ClientUse is how agents used a connected client's token since
// Switchboard started.
type ClientUse struct {
	// State is UseConnected, UseSeen or UseNever.
	State string
	// LastSeen is the token's last request (zero if none).
	LastSeen time.Time
	// Protocol and Client are what the agent declared last with the
	// token: the MCP protocol version and its clientInfo ("name
	// version", self-declared, "" if it gave none).
	Protocol, Client string
	// Sessions counts its live sessions (2025-11-25 and earlier),
	// Listening its open subscriptions/listen streams (2026-07-28).
	Sessions, Listening int
}

// The states of a connected client (ClientUse.State).
const (
	// UseConnected: it has a live session with an open stream or used in
	// the last RecentlyConnected, or an open listen stream, or made a
	// stateless request in the last RecentlyConnected.
	UseConnected = "connected"
	// UseSeen: it used its token, but is not connected now.
	UseSeen = "seen"
	// UseNever: its token was not used since Switchboard started.
	UseNever = "never"
)

// RecentlyConnected is how long after its last request a client counts
// as connected when nothing stays open to say so: a 2026-07-28 client
// (which holds no session) between requests, or a session without an
// open GET stream (an agent that went away without ending its session
// leaves it live until the idle sweep, an hour later).
const RecentlyConnected = 5 * time.Minute

// tokenUse is what the endpoint saw of one client token.
type tokenUse struct {
	lastSeen, lastStateless time.Time
	protocol, client        string
	listening               int
}

// tokenLocked returns the use of token id, made if new.
func (m *mcpSessions) tokenLocked(id string) *tokenUse {
	u, ok := m.tokens[id]
	if !ok {
		u = &tokenUse{}
		m.tokens[id] = u
	}
	return u
}

// tokenSeen records a request made with client token id ("" for the
// endpoint's own token: nothing is recorded).
func (m *mcpSessions) tokenSeen(id string) {
	if id == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokenLocked(id).lastSeen = time.Now()
}

// tokenDeclared records what an agent declared with client token id:
// its protocol version and clientInfo. A stateless request counts as a
// connection for StatelessConnected.
func (m *mcpSessions) tokenDeclared(id, protocol, client string, stateless bool) {
	if id == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.tokenLocked(id)
	u.lastSeen, u.protocol, u.client = time.Now(), protocol, client
	if stateless {
		u.lastStateless = u.lastSeen
	}
}

// tokenListening records a subscriptions/listen stream opened with
// client token id; the function returned records it closing.
func (m *mcpSessions) tokenListening(id string) (closed func()) {
	if id == "" {
		return func() {}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.tokenLocked(id)
	u.listening++
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		u.listening--
		u.lastSeen, u.lastStateless = time.Now(), time.Now()
	}
}

// initialized records the initialize of session id, made with client
// token tokenID ("" for the endpoint's own token), with the protocol
// version negotiated, the agent's clientInfo and what it declared it
// answers.
func (m *mcpSessions) initialized(id, tokenID, protocol, client string, asks discovery.Asks) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.live[id]; ok {
		s.Client, s.tokenID, s.bound, s.asks = client, tokenID, true, asks
	}
	if tokenID != "" {
		u := m.tokenLocked(tokenID)
		u.lastSeen, u.protocol, u.client = time.Now(), protocol, client
	}
}

// forgetToken forgets the use of a revoked client token.
func (m *mcpSessions) forgetToken(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tokens, id)
}

// clientUse is the use of client token id at now.
func (m *mcpSessions) clientUse(id string, now time.Time) ClientUse {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.tokens[id]
	if !ok {
		return ClientUse{State: UseNever}
	}
	out := ClientUse{State: UseSeen, LastSeen: u.lastSeen, Protocol: u.protocol, Client: u.client, Listening: u.listening}
	connected := u.listening > 0 || now.Sub(u.lastStateless) < RecentlyConnected
	for _, s := range m.live {
		if s.tokenID == id {
			out.Sessions++
			connected = connected || s.streams > 0 || now.Sub(s.LastUsed) < RecentlyConnected
		}
	}
	if connected {
		out.State = UseConnected
	}
	return out
}

// streaming records a GET stream of session id opening, if it is live;
// the function returned records it closing, and the session's client
// token as seen then.
func (m *mcpSessions) streaming(id string) (closed func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.live[id]
	if !ok {
		return func() {}
	}
	s.streams++
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		s.streams-- // on the session it opened on, even if ended since
		if u, ok := m.tokens[s.tokenID]; ok && s.tokenID != "" {
			u.lastSeen = time.Now()
		}
	}
}

// ClientUse is how agents used the connected client's token with the id
// given since Switchboard started.
func (e *Endpoint) ClientUse(id string) ClientUse { return e.sessions.clientUse(id, time.Now()) }

// connectedClient is the connected client whose token made the request
// in ctx (ok false for the endpoint's own token).
func connectedClient(ctx context.Context) (store.ClientToken, bool) {
	ct, ok := ctx.Value(connectionKey{}).(store.ClientToken)
	return ct, ok
}
