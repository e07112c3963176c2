package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
)

// ErrSessionNotFound is the answer for a browser session the store does
// not keep (never created, logged out, revoked or pruned).
var ErrSessionNotFound = errors.New("store: session not found")

// BrowserSession is one logged-in browser of the dashboard. The store
// keeps the hash of the session's secret (the cookie's value), never the
// secret, so a copy of the database logs nobody in.
type BrowserSession struct {
	Hash      string    `json:"hash"` // see HashToken
	CreatedAt time.Time `json:"created_at"`
	LastSeen  time.Time `json:"last_seen"`
	Expires   time.Time `json:"expires"`
	// Agent is the browser's family, as its User-Agent names it
	// ("Firefox", "Chrome"), for the person's own list.
	Agent string `json:"agent,omitempty"`
	// UserID is the person signed in (see User); "" for whoever logged in
	// with the shared API token or the login link: the local owner, as
	// admin.
	UserID string `json:"user_id,omitempty"`
}

// Expired reports whether the session has ended by now.
func (s BrowserSession) Expired(now time.Time) bool { return !now.Before(s.Expires) }

// NewBrowserSession makes a session that starts at now and lasts ttl:
// the secret to hand to the browser once, and what the store keeps of
// it.
func NewBrowserSession(agent string, now time.Time, ttl time.Duration) (secret string, s BrowserSession) {
	b := make([]byte, 32)
	rand.Read(b)
	secret = hex.EncodeToString(b)
	now = now.UTC()
	return secret, BrowserSession{Hash: HashToken(secret), CreatedAt: now, LastSeen: now, Expires: now.Add(ttl), Agent: agent}
}

// MCPSession is an agent's session with the MCP endpoint (the
// 2025-era revisions' Mcp-Session-Id), kept so that a restarted dashboard,
// or another replica of a team's, serves it: its agent's next request
// carries on where it was. The store keeps the hash of the session's id,
// never the id.
type MCPSession struct {
	Hash string `json:"hash"` // see HashToken
	// TokenID is the connected client whose token opened the session
	// ("" for the endpoint's own token): only that token resumes it.
	TokenID string `json:"token_id,omitempty"`
	// Init is the params of the agent's initialize (its protocol version,
	// capabilities and clientInfo), as it sent them.
	Init     json.RawMessage `json:"init"`
	Started  time.Time       `json:"started"`
	LastUsed time.Time       `json:"last_used"`
}

// MCPSessions keeps agents' MCP sessions by the hash of their id. Like
// browser sessions, they are not changes of the catalog.
type MCPSessions interface {
	// PutMCPSession keeps s (replacing the one under its hash), and
	// forgets every session last used before unusedSince.
	PutMCPSession(ctx context.Context, s MCPSession, unusedSince time.Time) error
	// MCPSession is the session kept under hash; ErrSessionNotFound if
	// there is none.
	MCPSession(ctx context.Context, hash string) (MCPSession, error)
	// DeleteMCPSession forgets one session; forgetting one that is not
	// kept is not an error.
	DeleteMCPSession(ctx context.Context, hash string) error
}
