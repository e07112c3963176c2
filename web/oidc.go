package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// Signing people in with the company's identity provider (OpenID
// Connect): the authorization code flow with PKCE (S256), the issuer's
// discovery document, and the ID token's signature, issuer, audience,
// expiry (go-oidc) and nonce checked. The state, nonce and verifier ride
// in a short-lived cookie of the browser's own (SameSite=Lax, so that the
// provider's redirect back carries it), so any replica can finish a
// sign-in another began. A signed-in person gets a session as the token
// login does; who may sign in is the people an admin added, the -admin
// email, the first person on a deployment without people, and anyone
// whose verified email is of an allowed domain or who is in an allowed
// group (as a viewer).

// OIDCConfig configures sign-in with an identity provider.
type OIDCConfig struct {
	Issuer, ClientID, ClientSecret string
	// RedirectURL is the callback as registered with the provider;
	// empty: http(s)://<the request's host>/login/oidc/callback.
	RedirectURL string
	// AllowedDomains and AllowedGroups let people in who are not listed
	// yet: they join as viewers.
	AllowedDomains, AllowedGroups []string
	// Admin is the email that is admin whenever it signs in.
	Admin string
}

const (
	oidcStartPath    = "/login/oidc"
	oidcCallbackPath = "/login/oidc/callback"
	oidcCookie       = "switchboard_oidc"
	oidcCookieTTL    = 10 * time.Minute
)

// oidcDoor is the identity provider, found from its discovery document
// at first use (and again after a failure).
type oidcDoor struct {
	cfg      OIDCConfig
	mu       sync.Mutex
	provider *oidc.Provider
}

func (d *oidcDoor) get(ctx context.Context) (*oidc.Provider, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.provider != nil {
		return d.provider, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, d.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("the identity provider %s cannot be reached: %w", d.cfg.Issuer, err)
	}
	d.provider = p
	return p, nil
}

// oauth is the OAuth client of a sign-in answered at the request's host.
func (d *oidcDoor) oauth(p *oidc.Provider, c echo.Context) *oauth2.Config {
	redirect := d.cfg.RedirectURL
	if redirect == "" {
		scheme := "http"
		if c.Request().TLS != nil {
			scheme = "https"
		}
		redirect = scheme + "://" + c.Request().Host + oidcCallbackPath
	}
	scopes := []string{oidc.ScopeOpenID, "email"}
	if len(d.cfg.AllowedGroups) > 0 {
		scopes = append(scopes, "groups")
	}
	return &oauth2.Config{ClientID: d.cfg.ClientID, ClientSecret: d.cfg.ClientSecret, Endpoint: p.Endpoint(), RedirectURL: redirect, Scopes: scopes}
}

// handleOIDCStart serves GET /login/oidc: off to the identity provider.
func (s *Server) handleOIDCStart(c echo.Context) error {
	if s.oidc == nil {
		return &apiError{Status: http.StatusNotFound, Message: "no identity provider is configured: log in with a token"}
	}
	p, err := s.oidc.get(c.Request().Context())
	if err != nil {
		return render(c, http.StatusBadGateway, s.loginPage(err.Error()))
	}
	state, nonce, verifier := randomHex(16), randomHex(16), oauth2.GenerateVerifier()
	http.SetCookie(c.Response(), &http.Cookie{Name: oidcCookie, Value: state + "." + nonce + "." + verifier, Path: oidcStartPath,
		MaxAge: int(oidcCookieTTL.Seconds()), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.Request().TLS != nil})
	return c.Redirect(http.StatusSeeOther, s.oidc.oauth(p, c).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)))
}

// idClaims are the ID token's (or userinfo's) claims a sign-in reads.
type idClaims struct {
	Email         string   `json:"email"`
	EmailVerified *bool    `json:"email_verified"`
	Groups        []string `json:"groups"`
}

// handleOIDCCallback serves GET /login/oidc/callback: the provider's
// answer, checked, and the person signed in.
func (s *Server) handleOIDCCallback(c echo.Context) error {
	if s.oidc == nil {
		return &apiError{Status: http.StatusNotFound, Message: "no identity provider is configured"}
	}
	refuse := func(status int, msg string) error {
		return render(c, status, s.loginPage(msg))
	}
	ck, err := c.Cookie(oidcCookie)
	http.SetCookie(c.Response(), &http.Cookie{Name: oidcCookie, Value: "", Path: oidcStartPath, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	if err != nil {
		return refuse(http.StatusBadRequest, "The sign-in took too long or began in another browser: sign in again.")
	}
	parts := strings.SplitN(ck.Value, ".", 3)
	q := c.Request().URL.Query()
	if len(parts) != 3 || !equal(q.Get("state"), parts[0]) {
		return refuse(http.StatusBadRequest, "The sign-in's answer does not match the sign-in this browser began: sign in again.")
	}
	if e := q.Get("error"); e != "" {
		return refuse(http.StatusUnauthorized, "The identity provider refused the sign-in: "+cutText(e+" "+q.Get("error_description"), 200))
	}
	ctx := c.Request().Context()
	p, err := s.oidc.get(ctx)
	if err != nil {
		return refuse(http.StatusBadGateway, err.Error())
	}
	if iss := q.Get("iss"); iss != "" && iss != s.oidc.cfg.Issuer { // RFC 9207
		return refuse(http.StatusUnauthorized, "The sign-in's answer came from another issuer.")
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conf := s.oidc.oauth(p, c)
	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(parts[2]))
	if err != nil {
		return refuse(http.StatusUnauthorized, "The identity provider did not exchange the sign-in's code: "+cutText(err.Error(), 200))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return refuse(http.StatusUnauthorized, "The identity provider sent no ID token.")
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: s.oidc.cfg.ClientID}).Verify(ctx, raw)
	if err != nil {
		return refuse(http.StatusUnauthorized, "The ID token did not check out: "+cutText(err.Error(), 200))
	}
	if !equal(idt.Nonce, parts[1]) {
		return refuse(http.StatusUnauthorized, "The ID token is not this sign-in's (its nonce differs).")
	}
	var cl idClaims
	if err := idt.Claims(&cl); err != nil {
		return refuse(http.StatusUnauthorized, "The ID token's claims cannot be read.")
	}
	if cl.Email == "" { // some providers keep it for userinfo
		if ui, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok)); err == nil && ui.Subject == idt.Subject {
			var more idClaims
			if ui.Claims(&more) == nil {
				cl = more
			}
		}
	}
	u, err := s.signInPerson(ctx, cl)
	if err != nil {
		var refusal *signInRefusal
		if errors.As(err, &refusal) {
			return refuse(http.StatusForbidden, refusal.msg)
		}
		return err
	}
	return s.startSession(c, u.ID)
}

// signInRefusal is a person the sign-in lets not in, and why.
type signInRefusal struct{ msg string }

func (r *signInRefusal) Error() string { return r.msg }

// signInPerson is the person a checked sign-in with claims cl is: one
// listed already, or one added now (the -admin email and the first
// person of a deployment without people as admins, one of an allowed
// domain or group as a viewer).
func (s *Server) signInPerson(ctx context.Context, cl idClaims) (store.User, error) {
	email := store.NormalEmail(cl.Email)
	if email == "" || cl.EmailVerified != nil && !*cl.EmailVerified {
		return store.User{}, &signInRefusal{"The identity provider gave no verified email, which names you here."}
	}
	users, err := s.deps.Store.Users(ctx)
	if err != nil {
		return store.User{}, err
	}
	now := s.cfg.Now().UTC()
	isAdmin := s.oidc.cfg.Admin != "" && email == store.NormalEmail(s.oidc.cfg.Admin)
	if i := slices.IndexFunc(users, func(u store.User) bool { return u.Email == email }); i >= 0 {
		return s.deps.Store.UpdateUser(ctx, users[i].ID, func(u *store.User) error {
			u.LastSignIn = now
			if isAdmin {
				u.Role = store.RoleAdmin
			}
			return nil
		})
	}
	role, first := store.RoleViewer, false
	switch {
	case isAdmin:
		role = store.RoleAdmin
	case len(users) == 0 && s.allowedByIdP(email, cl.Groups, true):
		role, first = store.RoleAdmin, true
	case s.allowedByIdP(email, cl.Groups, false):
	default:
		return store.User{}, &signInRefusal{email + " is not one of this Switchboard's people: ask an admin to add you."}
	}
	u := store.User{ID: "u-" + randomHex(6), Email: email, Role: role, CreatedAt: now, CreatedBy: "sign-in", LastSignIn: now}
	create := s.deps.Store.CreateUser
	if first { // the first only if nobody came first meanwhile, on any replica
		create = s.deps.Store.CreateFirstUser
	}
	if err := create(ctx, u); errors.Is(err, store.ErrUserExists) || errors.Is(err, store.ErrNotFirst) {
		return s.signInPerson(ctx, cl) // added meanwhile (another replica): signed in as listed, or as who joins now
	} else if err != nil {
		return store.User{}, err
	}
	s.log.Info("person signed in for the first time", "email", email, "role", role)
	return u, nil
}

// allowedByIdP reports whether a person not listed may join: their email
// is of an allowed domain, or they are in an allowed group; with neither
// configured, only first (the first person of a deployment) may.
func (s *Server) allowedByIdP(email string, groups []string, first bool) bool {
	cfg := s.oidc.cfg
	if len(cfg.AllowedDomains) == 0 && len(cfg.AllowedGroups) == 0 {
		return first
	}
	_, domain, _ := strings.Cut(email, "@")
	for _, d := range cfg.AllowedDomains {
		if strings.EqualFold(strings.TrimPrefix(d, "@"), domain) {
			return true
		}
	}
	for _, g := range groups {
		if slices.Contains(cfg.AllowedGroups, g) {
			return true
		}
	}
	return false
}

// loginPage is the login page with msg, offering the identity provider's
// sign-in when one is configured.
func (s *Server) loginPage(msg string) templ.Component {
	if s.oidc == nil {
		return views.LoginPage(msg)
	}
	return views.LoginPageWith(msg, s.oidc.cfg.Issuer)
}

// cutText cuts s to n bytes of valid UTF-8.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
