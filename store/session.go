package store

import (
	"crypto/rand"
	"encoding/hex"
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
