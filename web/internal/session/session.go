// Package session keeps the dashboard's logged-in browsers: sessions in
// memory, each with its CSRF token, the API token, and the one-time code
// of the login link.
package session

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"sync"
	"time"
)

// TTL is how long a login lasts.
const TTL = 7 * 24 * time.Hour

// Session is one logged-in browser.
type Session struct {
	ID      string // the cookie's value
	CSRF    string
	Expires time.Time
}

// Sessions holds browser sessions in memory, the API token and the
// one-time login code.
type Sessions struct {
	token string
	mu    sync.Mutex
	code  string // one-time login code; "" once used
	byID  map[string]Session
}

// New returns the sessions of a dashboard whose API token is token and
// whose login link carries code.
func New(token, code string) *Sessions {
	return &Sessions{token: token, code: code, byID: map[string]Session{}}
}

// RedeemCode reports whether code is the unused one-time login code, and
// uses it up.
func (ss *Sessions) RedeemCode(code string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.code == "" || !equal(code, ss.code) {
		return false
	}
	ss.code = ""
	return true
}

// ValidToken reports whether t is the API token.
func (ss *Sessions) ValidToken(t string) bool { return t != "" && equal(t, ss.token) }

// Create starts a session of TTL.
func (ss *Sessions) Create() (id string, s Session) {
	id = randomHex(32)
	s = Session{ID: id, CSRF: randomHex(32), Expires: time.Now().Add(TTL)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.byID[id] = s
	return id, s
}

// Get is the session id names, if it is still going.
func (ss *Sessions) Get(id string) (Session, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.byID[id]
	if !ok || time.Now().After(s.Expires) {
		delete(ss.byID, id)
		return Session{}, false
	}
	return s, true
}

// Delete ends the session.
func (ss *Sessions) Delete(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byID, id)
}

// equal compares secrets in constant time.
func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
