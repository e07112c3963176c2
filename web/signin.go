package web

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/discovery/oauth"
	"github.com/switchboard-dev/switchboard/internal/grants"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/signin"
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

// signInTimeout bounds each step of a sign-in that talks to the
// authorization server (discovery and registration; the code exchange).
const signInTimeout = 30 * time.Second

const (
	callbackPath = "/oauth/callback"
)

// handleSignIn serves POST /servers/:id/signin: it starts a sign-in and
// sends the browser to the authorization server (htmx follows
// HX-Redirect; without script, a page links there: the CSP's
// form-action would stop a form's redirect to another origin).
func (s *Server) handleSignIn(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	srv, err := s.deps.Store.Server(ctx, id)
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
	var challenge oauth.Challenge
	if sum, err := s.deps.Store.Summary(ctx, srv.ID); err == nil && sum.Discovery.Error != nil && sum.Discovery.Error.SignIn != nil {
		need := sum.Discovery.Error.SignIn
		challenge = oauth.Challenge{Status: need.Status, Error: need.Error, Scope: need.Scope, ResourceMetadata: need.ResourceMetadata}
	}
	prev, hasPrev, err := s.deps.Store.LatestGrant(ctx, srv.ID)
	if err != nil {
		return "", err
	}
	oc := srv.OAuthSettings()
	scopes := oauth.Scopes{Configured: oc.Scopes}
	if hasPrev {
		scopes.Granted = strings.Fields(prev.Scope)
	}
	fail := func(err error) (string, error) {
		p := signin.Problem{Message: err.Error()}
		var oe *oauth.Error
		if errors.As(err, &oe) {
			p.Message = oe.Error()
			p.NeedsClient = oe.Step == "registration" && oc.ClientID == ""
		}
		s.holds.signIns.SetProblem(srv.ID, p)
		return "", err
	}
	plan, err := s.deps.Verifier.DiscoverAuth(ctx, srv.URL, challenge, scopes)
	if err != nil {
		return fail(err)
	}
	client := oauth.ClientInfo{RedirectURI: redirectURI, Name: "Switchboard", MetadataURL: s.cfg.OAuthClientMetadataURL}
	switch {
	case oc.ClientID != "":
		client.ClientID, client.ClientSecret = oc.ClientID, oc.ClientSecret
	case hasPrev && prev.Issuer == plan.Server.Issuer && prev.RedirectURI == redirectURI && prev.ClientID != "":
		// The client registered at the last sign-in serves again: no new
		// registration at each sign-in.
		client.ClientID, client.ClientSecret, client.AuthMethod = prev.ClientID, prev.ClientSecret, prev.AuthMethod
	}
	pa, err := s.deps.Verifier.StartAuth(ctx, plan, client)
	if err != nil {
		return fail(err)
	}
	nonce := randomHex(32)
	s.holds.signIns.Add(pa.State, &signin.Attempt{ServerID: srv.ID, Session: session, NonceHash: sha256.Sum256([]byte(nonce)), Auth: pa})
	s.holds.signIns.ClearProblem(srv.ID)
	setCookie(&http.Cookie{
		Name: signin.CookieName(pa.State), Value: nonce, Path: callbackPath, MaxAge: int(signin.TTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: strings.HasPrefix(redirectURI, "https:"),
	})
	return pa.URL, nil
}

// handleOAuthCallback serves GET /oauth/callback, where the
// authorization server sends the browser back.
func (s *Server) handleOAuthCallback(c echo.Context) error {
	q := c.Request().URL.Query()
	state := q.Get("state")
	page := func(status int, v views.CallbackView) error { return render(c, status, views.CallbackPage(v)) }
	unknown := views.CallbackView{Message: "This sign-in is unknown, was already answered, or expired. Start it again with Sign in on the server's page."}
	p := s.holds.signIns.Peek(state)
	if state == "" || p == nil {
		return page(http.StatusBadRequest, unknown)
	}
	// The browser that started it first: a hit without its cookie (a
	// link another sent) is refused and spends nothing.
	name := signin.CookieName(state)
	back := "/servers/" + p.ServerID
	ck, err := c.Cookie(name)
	if sum := sha256.Sum256([]byte(valueOf(ck, err))); err != nil || !equal(string(sum[:]), string(p.NonceHash[:])) {
		return page(http.StatusForbidden, views.CallbackView{Back: back, Message: "This sign-in was started in another browser, or its cookie was lost: start it again with Sign in on the server's page."})
	}
	if p = s.holds.signIns.Take(state); p == nil { // answered meanwhile
		return page(http.StatusBadRequest, unknown)
	}
	c.SetCookie(&http.Cookie{Name: name, Value: "", Path: callbackPath, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	if _, ok := s.doors.sessions.Get(c.Request().Context(), p.Session); !ok {
		return page(http.StatusForbidden, views.CallbackView{Back: back, Message: "The Switchboard session that started this sign-in has ended: log in and sign in again."})
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), signInTimeout)
	defer cancel()
	g, err := s.deps.Verifier.FinishAuth(ctx, p.Auth, q)
	if err != nil {
		s.holds.signIns.SetProblem(p.ServerID, signin.Problem{Message: err.Error()})
		s.publishServer(p.ServerID)
		return page(http.StatusBadRequest, views.CallbackView{Back: back, Message: err.Error()})
	}
	if g.Scope == "" {
		g.Scope = strings.Join(p.Auth.Plan.Scopes, " ") // the server said none: as asked
	}
	kept := grants.FromOAuth(*g, p.Auth.RedirectURI, time.Now())
	// Named by the session that started it (the callback is the
	// browser's, which the cookie checked above).
	by := "dashboard"
	if sess, ok := s.doors.sessions.Get(ctx, p.Session); ok {
		if a, ok := s.sessionActor(c, sess); ok {
			by = a.name()
		}
	}
	kept.SignedInBy, kept.SignedInAt = by, kept.SavedAt
	if err := s.deps.Store.SaveGrant(ctx, p.ServerID, kept); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return page(http.StatusNotFound, views.CallbackView{Message: "The server was deleted while you signed in."})
		}
		return err
	}
	s.deps.Grants.Forget(p.ServerID) // a new grant: no backoff of the old one
	s.log.Info("signed in to a server", "server", p.ServerID, "issuer", g.Issuer, "by", by)
	s.holds.signIns.ClearProblem(p.ServerID)
	v := views.CallbackView{OK: true, Back: back, Issuer: g.Issuer, Message: "Verifying the server again…"}
	if srv, err := s.deps.Store.Server(ctx, p.ServerID); err == nil && srv.LaunchConfirmedNow() {
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
	g, ok, err := s.deps.Store.LatestGrant(ctx, id)
	if err != nil {
		return err
	}
	if ok {
		ctx, cancel := context.WithTimeout(c.Request().Context(), signInTimeout)
		dg := grants.ToOAuth(g)
		if _, err := s.deps.Verifier.RevokeAuth(ctx, &dg); err != nil {
			s.log.Warn("revoke tokens at sign-out", "server", id, "issuer", g.Issuer, "err", err)
		}
		cancel()
	}
	if err := s.deps.Store.DeleteGrants(ctx, id); err != nil {
		return notFound(err)
	}
	s.deps.Grants.Forget(id)
	s.holds.signIns.ClearProblem(id)
	s.mcp.StopUpstream(id) // a held session would go on with the tokens
	if c.Request().Header.Get(headerHXRequest) != "" {
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, "/servers/"+id)
}
