// Package session keeps the dashboard's logged-in browsers, the API token
// and the one-time code of the login link. Sessions are kept in the store
// by the hash of their secret (the cookie's value), so a restart logs
// nobody out and a copy of the database logs nobody in; each session's
// CSRF token is derived from its secret, so it survives a restart too.
package session

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// TTL is how long a login lasts.
const TTL = 7 * 24 * time.Hour

// Cookie is the name of the session cookie.
const Cookie = "switchboard_session"

// touchEvery is how often a session's last use is written, at most: a
// write per request would cost a disk sync each.
const touchEvery = time.Minute

// Session is one logged-in browser.
type Session struct {
	ID      string // the cookie's value, the session's secret
	CSRF    string
	Expires time.Time
	// UserID is the person signed in; "" for the shared token's holder.
	UserID string
}

// Sessions holds browser sessions in the store, the API token and the
// one-time login code.
type Sessions struct {
	st    store.Sessions
	token *Token
	now   func() time.Time
	mu    sync.Mutex
	code  string               // one-time login code; "" once used
	wrote map[string]time.Time // session hash → when its last use was written
}

// New returns the sessions of a dashboard, kept in st, whose API token is
// token and whose login link carries code; now is the clock (time.Now
// if nil).
func New(st store.Sessions, token *Token, code string, now func() time.Time) *Sessions {
	if now == nil {
		now = time.Now
	}
	return &Sessions{st: st, token: token, code: code, now: now, wrote: map[string]time.Time{}}
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
func (ss *Sessions) ValidToken(t string) bool { return ss.token.Valid(t) }

// Start starts a session of TTL for the browser that sent r, signed in as
// the person userID ("" for the shared token's holder), and sets its
// cookie on w.
func (ss *Sessions) Start(w http.ResponseWriter, r *http.Request, userID string) error {
	secret, s := store.NewBrowserSession(AgentFamily(r.UserAgent()), ss.now(), TTL)
	s.UserID = userID
	if err := ss.st.CreateSession(r.Context(), s); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name:     Cookie,
		Value:    secret,
		Path:     "/",
		MaxAge:   int(TTL.Seconds()),
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		Secure:   r.TLS != nil,
	})
	return nil
}

// Of is the session of the request's cookie, if it is still going.
func (ss *Sessions) Of(r *http.Request) (Session, bool) {
	ck, err := r.Cookie(Cookie)
	if err != nil {
		return Session{}, false
	}
	return ss.Get(r.Context(), ck.Value)
}

// Get is the session whose secret is id, if it is still going. A store
// that cannot be read logs nobody in.
func (ss *Sessions) Get(ctx context.Context, id string) (Session, bool) {
	if id == "" {
		return Session{}, false
	}
	hash := store.HashToken(id)
	s, err := ss.st.Session(ctx, hash)
	if err != nil {
		return Session{}, false
	}
	now := ss.now()
	if s.Expired(now) {
		ss.forget(hash)
		ss.st.DeleteSession(ctx, hash)
		return Session{}, false
	}
	ss.touch(ctx, hash, now)
	return Session{ID: id, CSRF: csrfOf(id), Expires: s.Expires, UserID: s.UserID}, true
}

// touch records the session's use at now, unless it did less than
// touchEvery ago.
func (ss *Sessions) touch(ctx context.Context, hash string, now time.Time) {
	ss.mu.Lock()
	if now.Sub(ss.wrote[hash]) < touchEvery {
		ss.mu.Unlock()
		return
	}
	ss.wrote[hash] = now
	ss.mu.Unlock()
	if err := ss.st.TouchSession(ctx, hash, now); errors.Is(err, store.ErrSessionNotFound) {
		ss.forget(hash) // ended meanwhile
	}
}

func (ss *Sessions) forget(hash string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.wrote, hash)
}

// End ends the session of the request's cookie and clears the cookie on
// w. It returns the session's id, "" if there was none.
func (ss *Sessions) End(w http.ResponseWriter, r *http.Request) string {
	clearCookie(w)
	ck, err := r.Cookie(Cookie)
	if err != nil || ck.Value == "" {
		return ""
	}
	hash := store.HashToken(ck.Value)
	ss.forget(hash)
	ss.st.DeleteSession(r.Context(), hash)
	return ck.Value
}

// EndAll ends every session, the request's own too ("log out
// everywhere"), clears the cookie on w and says how many ended.
func (ss *Sessions) EndAll(w http.ResponseWriter, r *http.Request) (int, error) {
	n, err := ss.st.DeleteSessions(r.Context())
	if err != nil {
		return 0, err
	}
	ss.mu.Lock()
	clear(ss.wrote)
	ss.mu.Unlock()
	clearCookie(w)
	return n, nil
}

func clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: Cookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

// csrfOf is the CSRF token of the session whose secret is id: derived
// from it, so that it is the same after a restart and known only to
// whoever holds the secret.
func csrfOf(id string) string {
	sum := sha256.Sum256([]byte("switchboard csrf\x00" + id))
	return hex.EncodeToString(sum[:])
}

// equal compares secrets in constant time.
func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
