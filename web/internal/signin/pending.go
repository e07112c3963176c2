// Package signin holds the sign-ins to remote servers sent to an
// authorization server and awaiting its answer (Pending); the handlers
// that drive them are in web, and the grants they leave are kept by
// internal/grants.
package signin

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/discovery/oauth"
	"github.com/switchboard-dev/switchboard/web/internal/held"
)

// CookiePrefix begins the name of every sign-in's cookie (see CookieName).
const CookiePrefix = "switchboard_signin_"

// Bounds of pending sign-ins: each expires after TTL, and at most
// maxPending are kept (the oldest goes first).
const (
	TTL        = 10 * time.Minute
	maxPending = 32
)

// Attempt is a sign-in sent to an authorization server, awaiting its
// answer at the callback.
type Attempt struct {
	ServerID  string
	Session   string // the Switchboard session that started it
	NonceHash [32]byte
	Auth      *oauth.Pending
}

// Pending holds the pending sign-ins, and why each server's last sign-in
// attempt failed (shown on its page until the next attempt).
type Pending struct {
	pending *held.Map[*Attempt] // by state

	mu       sync.Mutex
	problems map[string]Problem // by server
}

// Problem is why a sign-in could not start or finish.
type Problem struct {
	Message string
	// NeedsClient: the authorization server registers no client by
	// itself; the server's form must name one.
	NeedsClient bool
}

// NewPending returns an empty Pending.
func NewPending() *Pending {
	return &Pending{pending: held.New[*Attempt](TTL, maxPending), problems: map[string]Problem{}}
}

// Add keeps the sign-in of state, for TTL at most (the oldest goes
// first beyond maxPending).
func (si *Pending) Add(state string, p *Attempt) { si.pending.Put(state, p) }

// Peek returns the pending sign-in of state without removing it: a
// callback that is not its browser's (see web's handleOAuthCallback)
// must not spend it.
func (si *Pending) Peek(state string) *Attempt {
	p, _ := si.pending.Get(state)
	return p
}

// Take removes and returns the pending sign-in of state: a callback
// answers once, whatever comes of it.
func (si *Pending) Take(state string) *Attempt {
	p, _ := si.pending.Take(state)
	return p
}

// SetProblem records why the server's sign-in failed.
func (si *Pending) SetProblem(id string, p Problem) {
	si.mu.Lock()
	defer si.mu.Unlock()
	si.problems[id] = p
}

// ClearProblem forgets it (a new attempt started, or one succeeded).
func (si *Pending) ClearProblem(id string) {
	si.mu.Lock()
	defer si.mu.Unlock()
	delete(si.problems, id)
}

// Problem is why the server's last sign-in failed, if it did.
func (si *Pending) Problem(id string) (Problem, bool) {
	si.mu.Lock()
	defer si.mu.Unlock()
	p, ok := si.problems[id]
	return p, ok
}

// Forget drops what is held about a deleted server.
func (si *Pending) Forget(id string) {
	si.mu.Lock()
	delete(si.problems, id)
	si.mu.Unlock()
	si.pending.DeleteFunc(func(_ string, p *Attempt) bool { return p.ServerID == id })
}

// CookieName is the name of the cookie that binds the sign-in of state
// to the browser that started it: one per sign-in, so two at once (two
// servers) do not overwrite each other's.
func CookieName(state string) string {
	sum := sha256.Sum256([]byte(state))
	return CookiePrefix + hex.EncodeToString(sum[:8])
}
