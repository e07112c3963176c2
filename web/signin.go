package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// Signing in to a remote server that wants an OAuth client, from the
// dashboard:
//
//  1. Sign in (POST /servers/:id/signin, from a logged-in page) finds the
//     server's authorization server, registers a client where it must,
//     keeps the pending sign-in (state, PKCE verifier) here, on the
//     server side, and sends the browser to the authorization server.
//     A cookie binds the sign-in to this browser.
//  2. The authorization server sends the browser back to
//     /oauth/callback, which answers once: it takes the pending sign-in
//     by its state, checks the cookie and that the Switchboard session
//     that started it is still logged in, exchanges the code, keeps the
//     tokens as the server's grant, and verifies the server again; the
//     page it shows leads back to the server's page, where the
//     verification is live.
//
// The callback is reached by a cross-site redirect, which carries no
// SameSite=Strict session cookie; its own cookie is SameSite=Lax, scoped
// to the callback's path, and holds only a nonce.

// Bounds of pending sign-ins: each expires after signInTTL, and at most
// maxPendingSignIns are kept (the oldest goes first).
const (
	signInTTL         = 10 * time.Minute
	maxPendingSignIns = 32
)

// signInTimeout bounds each step of a sign-in that talks to the
// authorization server (discovery and registration; the code exchange).
const signInTimeout = 30 * time.Second

const (
	callbackPath       = "/oauth/callback"
	signInCookiePrefix = "switchboard_signin_"
)

// pendingSignIn is a sign-in sent to an authorization server, awaiting
// its answer at the callback.
type pendingSignIn struct {
	serverID  string
	session   string // the Switchboard session that started it
	nonceHash [32]byte
	auth      *discovery.PendingAuth
	started   time.Time
}

// signIns holds the pending sign-ins, and why each server's last sign-in
// attempt failed (shown on its page until the next attempt).
type signIns struct {
	mu       sync.Mutex
	pending  map[string]*pendingSignIn // by state
	problems map[string]signInProblem  // by server
}

// signInProblem is why a sign-in could not start or finish.
type signInProblem struct {
	Message string
	// NeedsClient: the authorization server registers no client by
	// itself; the server's form must name one.
	NeedsClient bool
}

func newSignIns() *signIns {
	return &signIns{pending: map[string]*pendingSignIn{}, problems: map[string]signInProblem{}}
}

func (si *signIns) add(state string, p *pendingSignIn) {
	si.mu.Lock()
	defer si.mu.Unlock()
	si.expire(p.started)
	for len(si.pending) >= maxPendingSignIns {
		var oldest string
		for s, q := range si.pending {
			if oldest == "" || q.started.Before(si.pending[oldest].started) {
				oldest = s
			}
		}
		delete(si.pending, oldest)
	}
	si.pending[state] = p
}

// take removes and returns the pending sign-in of state: a callback
// answers once, whatever comes of it.
func (si *signIns) take(state string, now time.Time) *pendingSignIn {
	si.mu.Lock()
	defer si.mu.Unlock()
	si.expire(now)
	p := si.pending[state]
	delete(si.pending, state)
	return p
}

func (si *signIns) expire(now time.Time) {
	for s, p := range si.pending {
		if now.Sub(p.started) > signInTTL {
			delete(si.pending, s)
		}
	}
}

func (si *signIns) setProblem(id string, p signInProblem) {
	si.mu.Lock()
	defer si.mu.Unlock()
	si.problems[id] = p
}

func (si *signIns) clearProblem(id string) {
	si.mu.Lock()
	defer si.mu.Unlock()
	delete(si.problems, id)
}

func (si *signIns) problem(id string) (signInProblem, bool) {
	si.mu.Lock()
	defer si.mu.Unlock()
	p, ok := si.problems[id]
	return p, ok
}

// forget drops what is held about a deleted server.
func (si *signIns) forget(id string) {
	si.mu.Lock()
	defer si.mu.Unlock()
	delete(si.problems, id)
	for s, p := range si.pending {
		if p.serverID == id {
			delete(si.pending, s)
		}
	}
}

// signInCookie is the name of the cookie that binds the sign-in of state
// to the browser that started it: one per sign-in, so two at once (two
// servers) do not overwrite each other's.
func signInCookie(state string) string {
	sum := sha256.Sum256([]byte(state))
	return signInCookiePrefix + hex.EncodeToString(sum[:8])
}

// handleSignIn serves POST /servers/:id/signin: it starts a sign-in and
// sends the browser to the authorization server (htmx follows
// HX-Redirect; without script, a page links there: the CSP's
// form-action would stop a form's redirect to another origin).
func (s *Server) handleSignIn(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	srv, err := s.store.Server(ctx, id)
	if err != nil {
		return notFound(err)
	}
	if srv.Transport == store.TransportStdio {
		return &apiError{Status: http.StatusBadRequest, Message: "only remote servers sign in"}
	}
	if !srv.LaunchConfirmedNow() {
		// Signing in contacts the server: its URL must be confirmed first.
		if c.Request().Header.Get(headerHXRequest) != "" {
			c.Response().Header().Set("HX-Redirect", "/servers/"+id+"/confirm")
			return c.NoContent(http.StatusConflict)
		}
		return c.Redirect(http.StatusSeeOther, "/servers/"+id+"/confirm")
	}
	sess, _ := c.Cookie(sessionCookie)
	url, err := s.startSignIn(c.Request().Context(), srv, s.callbackURL(c), sess.Value, func(ck *http.Cookie) { c.SetCookie(ck) })
	if err != nil {
		s.publishServer(id)
		if c.Request().Header.Get(headerHXRequest) != "" {
			return c.NoContent(http.StatusNoContent) // the problem is on the page, live
		}
		return c.Redirect(http.StatusSeeOther, "/servers/"+id)
	}
	if c.Request().Header.Get(headerHXRequest) != "" {
		c.Response().Header().Set("HX-Redirect", url)
		return c.NoContent(http.StatusOK)
	}
	return render(c, http.StatusOK, views.SignInContinuePage(srv.Name, url))
}

// callbackURL is the dashboard's callback as this browser reaches it
// (the Host was checked against the allowed hosts).
func (s *Server) callbackURL(c echo.Context) string {
	return c.Scheme() + "://" + c.Request().Host + callbackPath
}

// startSignIn prepares a sign-in to srv for the browser session session,
// and returns the authorization URL. setCookie sets the cookie that
// binds the sign-in to the browser. A failure is kept as the server's
// sign-in problem (and returned).
func (s *Server) startSignIn(ctx context.Context, srv store.Server, redirectURI, session string, setCookie func(*http.Cookie)) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, signInTimeout)
	defer cancel()
	var challenge discovery.AuthChallenge
	if sum, err := s.store.Summary(ctx, srv.ID); err == nil && sum.Discovery.Error != nil && sum.Discovery.Error.SignIn != nil {
		need := sum.Discovery.Error.SignIn
		challenge = discovery.AuthChallenge{Status: need.Status, Error: need.Error, Scope: need.Scope, ResourceMetadata: need.ResourceMetadata}
	}
	prev, hasPrev, err := s.store.LatestGrant(ctx, srv.ID)
	if err != nil {
		return "", err
	}
	oc := srv.OAuthSettings()
	scopes := discovery.AuthScopes{Configured: oc.Scopes}
	if hasPrev {
		scopes.Granted = strings.Fields(prev.Scope)
	}
	fail := func(err error) (string, error) {
		p := signInProblem{Message: err.Error()}
		var oe *discovery.OAuthError
		if errors.As(err, &oe) {
			p.Message = oe.Error()
			p.NeedsClient = oe.Step == "registration" && oc.ClientID == ""
		}
		s.signIns.setProblem(srv.ID, p)
		return "", err
	}
	plan, err := s.verifier.DiscoverAuth(ctx, srv.URL, challenge, scopes)
	if err != nil {
		return fail(err)
	}
	client := discovery.OAuthClient{RedirectURI: redirectURI, Name: "Switchboard", MetadataURL: s.cfg.OAuthClientMetadataURL}
	switch {
	case oc.ClientID != "":
		client.ClientID, client.ClientSecret = oc.ClientID, oc.ClientSecret
	case hasPrev && prev.Issuer == plan.Server.Issuer && prev.RedirectURI == redirectURI && prev.ClientID != "":
		// The client registered at the last sign-in serves again: no new
		// registration at each sign-in.
		client.ClientID, client.ClientSecret, client.AuthMethod = prev.ClientID, prev.ClientSecret, prev.AuthMethod
	}
	pa, err := s.verifier.StartAuth(ctx, plan, client)
	if err != nil {
		return fail(err)
	}
	nonce := randomHex(32)
	now := time.Now()
	s.signIns.add(pa.State, &pendingSignIn{serverID: srv.ID, session: session, nonceHash: sha256.Sum256([]byte(nonce)), auth: pa, started: now})
	s.signIns.clearProblem(srv.ID)
	setCookie(&http.Cookie{
		Name: signInCookie(pa.State), Value: nonce, Path: callbackPath, MaxAge: int(signInTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: strings.HasPrefix(redirectURI, "https:"),
	})
	return pa.URL, nil
}

// handleOAuthCallback serves GET /oauth/callback, where the
// authorization server sends the browser back.
func (s *Server) handleOAuthCallback(c echo.Context) error {
	ctx := c.Request().Context()
	q := c.Request().URL.Query()
	state := q.Get("state")
	page := func(status int, v views.CallbackView) error { return render(c, status, views.CallbackPage(v)) }
	p := s.signIns.take(state, time.Now())
	if state == "" || p == nil {
		return page(http.StatusBadRequest, views.CallbackView{Message: "This sign-in is unknown, was already answered, or expired. Start it again with Sign in on the server's page."})
	}
	name := signInCookie(state)
	c.SetCookie(&http.Cookie{Name: name, Value: "", Path: callbackPath, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	back := "/servers/" + p.serverID
	ck, err := c.Cookie(name)
	if sum := sha256.Sum256([]byte(valueOf(ck, err))); err != nil || !equal(string(sum[:]), string(p.nonceHash[:])) {
		return page(http.StatusForbidden, views.CallbackView{Back: back, Message: "This sign-in was started in another browser, or its cookie was lost: start it again with Sign in on the server's page."})
	}
	if _, ok := s.sessions.get(p.session); !ok {
		return page(http.StatusForbidden, views.CallbackView{Back: back, Message: "The Switchboard session that started this sign-in has ended: log in and sign in again."})
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), signInTimeout)
	defer cancel()
	g, err := s.verifier.FinishAuth(ctx, p.auth, q)
	if err != nil {
		s.signIns.setProblem(p.serverID, signInProblem{Message: err.Error()})
		s.publishServer(p.serverID)
		return page(http.StatusBadRequest, views.CallbackView{Back: back, Message: err.Error()})
	}
	if g.Scope == "" {
		g.Scope = strings.Join(p.auth.Plan.Scopes, " ") // the server said none: as asked
	}
	if err := s.store.SaveGrant(ctx, p.serverID, storeGrant(*g, p.auth.RedirectURI, time.Now())); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return page(http.StatusNotFound, views.CallbackView{Message: "The server was deleted while you signed in."})
		}
		return err
	}
	s.tokens.forget(p.serverID) // a new grant: no backoff of the old one
	s.signIns.clearProblem(p.serverID)
	v := views.CallbackView{OK: true, Back: back, Issuer: g.Issuer, Message: "Verifying the server again…"}
	if srv, err := s.store.Server(ctx, p.serverID); err == nil && srv.LaunchConfirmedNow() {
		if _, err := s.submit(srv, store.TriggerSignIn); err != nil {
			v.Message = "The server could not be verified again: " + err.Error()
		}
	}
	return page(http.StatusOK, v)
}

func valueOf(ck *http.Cookie, err error) string {
	if err != nil {
		return ""
	}
	return ck.Value
}

// handleSignOut serves POST /servers/:id/signout: the tokens are revoked
// where the authorization server supports it, and forgotten.
func (s *Server) handleSignOut(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	g, ok, err := s.store.LatestGrant(ctx, id)
	if err != nil {
		return err
	}
	if ok {
		ctx, cancel := context.WithTimeout(c.Request().Context(), signInTimeout)
		dg := discoveryGrant(g)
		if _, err := s.verifier.RevokeAuth(ctx, &dg); err != nil {
			s.log.Warn("revoke tokens at sign-out", "server", id, "issuer", g.Issuer, "err", err)
		}
		cancel()
	}
	if err := s.store.DeleteGrants(ctx, id); err != nil {
		return notFound(err)
	}
	s.tokens.forget(id)
	s.signIns.clearProblem(id)
	s.mcp.StopUpstream(id) // a held session would go on with the tokens
	if c.Request().Header.Get(headerHXRequest) != "" {
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, "/servers/"+id)
}
