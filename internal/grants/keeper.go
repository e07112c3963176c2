// Package grants keeps the OAuth grants signing in to remote servers
// left: their tokens, handed to every request that needs one and
// refreshed as requests need them (Keeper). The sign-ins themselves are
// driven by web.
package grants

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/discovery/oauth"
	"github.com/switchboard-dev/switchboard/store"
)

// An OAuth grant's access token serves every request to its server:
// verifications, watches and routed tool calls ask the server's
// TokenSource for it, request by request. The token is refreshed when it
// is about to be used and close to its expiry (never after it: a request
// would be refused first), one refresh at a time per server, so nothing
// refreshes the tokens of a server nothing calls, and a deleted server
// (whose grants are deleted with it) is never refreshed again. A refusal
// no retry mends (invalid_grant: the grant was revoked) is kept on the
// grant, and every later request fails at once saying to sign in again;
// any other failure (the authorization server unreachable, a 5xx) is
// retried with backoff, the current token serving until it expires.

// Backoff of failed refreshes: from refreshBackoffMin, doubling, up to
// refreshBackoffMax.
const (
	refreshBackoffMin = 5 * time.Second
	refreshBackoffMax = 5 * time.Minute
)

// maxRefreshLead bounds how long before its expiry a token is refreshed;
// a short-lived token is refreshed in the last third of its life.
const maxRefreshLead = 5 * time.Minute

// refreshLead is how long before g's expiry its token is refreshed.
func refreshLead(g store.Grant) time.Duration {
	life := g.ExpiresAt.Sub(g.SavedAt)
	if g.SavedAt.IsZero() || life <= 0 {
		return time.Minute
	}
	return min(maxRefreshLead, life/3)
}

// Store is what the keeper needs from the store.
type Store interface {
	Server(ctx context.Context, id string) (store.Server, error)
	LatestGrant(ctx context.Context, id string) (store.Grant, bool, error)
	SaveGrant(ctx context.Context, id string, g store.Grant) error
}

// Keeper hands out and refreshes the access tokens of servers'
// grants.
type Keeper struct {
	store    Store
	verifier *discovery.Verifier
	now      func() time.Time

	mu      sync.Mutex
	servers map[string]*refreshState
}

// refreshState is one server's refresh lock and backoff.
type refreshState struct {
	mu       sync.Mutex // held across a refresh: one at a time per server
	failures int
	next     time.Time // no refresh before this (backoff)
	lastErr  string
}

// NewKeeper returns a keeper of the grants in st, refreshed through v.
func NewKeeper(st Store, v *discovery.Verifier) *Keeper {
	return &Keeper{store: st, verifier: v, now: time.Now, servers: map[string]*refreshState{}}
}

// Source is the discovery.TokenSource of the server id.
func (k *Keeper) Source(id string) discovery.TokenSource { return serverTokens{k, id} }

// Forget drops what the keeper holds about a server (it was deleted, or
// signed out).
func (k *Keeper) Forget(id string) {
	k.mu.Lock()
	delete(k.servers, id)
	k.mu.Unlock()
}

func (k *Keeper) state(id string) *refreshState {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.servers[id]
	if st == nil {
		st = &refreshState{}
		k.servers[id] = st
	}
	return st
}

type serverTokens struct {
	k  *Keeper
	id string
}

func (t serverTokens) Token(ctx context.Context) (string, error) { return t.k.token(ctx, t.id) }

// signInAgain is the error of a request whose grant cannot serve: the
// person must sign in.
func signInAgain(msg string) error {
	return discovery.NewError(discovery.ClassAuth, "", msg)
}

// token returns the access token of the server's latest grant ("" if it
// has none), refreshed first if it is due.
func (k *Keeper) token(ctx context.Context, id string) (string, error) {
	st := k.state(id)
	st.mu.Lock()
	defer st.mu.Unlock()
	g, ok, err := k.store.LatestGrant(ctx, id)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", nil
	case g.Problem != "":
		return "", signInAgain(g.Problem)
	}
	now := k.now()
	if g.ExpiresAt.IsZero() || g.ExpiresAt.Sub(now) > refreshLead(g) {
		return g.AccessToken, nil
	}
	expired := !now.Before(g.ExpiresAt)
	usable := func(err error) (string, error) {
		if expired {
			return "", err
		}
		return g.AccessToken, nil
	}
	if g.RefreshToken == "" {
		return usable(signInAgain("the access token expired and the authorization server gave no refresh token: sign in again"))
	}
	if now.Before(st.next) {
		return usable(discovery.NewError(discovery.ClassNetwork, "", fmt.Sprintf(
			"refreshing the access token failed (%s); the next try is in %s", st.lastErr, st.next.Sub(now).Round(time.Second))))
	}
	srv, err := k.store.Server(ctx, id)
	switch {
	case err != nil:
		return "", err
	case !srv.Enabled:
		return usable(signInAgain("the server is disabled: its tokens are not refreshed until it is enabled"))
	}
	dg := ToOAuth(g)
	if err := k.verifier.RefreshAuth(ctx, &dg); err != nil {
		var oe *oauth.Error
		if errors.As(err, &oe) && oe.SignInAgain() {
			// oe is redacted already; the grant's own values are taken out
			// again before anything is kept (issue 34 M5).
			g.Problem = oauth.RedactSecrets("the authorization server refused to refresh the sign-in ("+oe.Message+"): sign in again",
				g.AccessToken, g.RefreshToken, g.ClientSecret)
			g.ProblemAt = now
			if serr := k.store.SaveGrant(ctx, id, g); serr != nil && !errors.Is(serr, store.ErrNotFound) {
				return "", serr
			}
			return "", signInAgain(g.Problem)
		}
		st.failures++
		st.next = now.Add(min(refreshBackoffMax, refreshBackoffMin<<min(st.failures-1, 16)))
		st.lastErr = oauth.RedactSecrets(err.Error(), g.AccessToken, g.RefreshToken, g.ClientSecret)
		return usable(discovery.NewError(discovery.ClassNetwork, "", "refreshing the access token failed: "+st.lastErr))
	}
	st.failures, st.next, st.lastErr = 0, time.Time{}, ""
	refreshed := FromOAuth(dg, g.RedirectURI, now)
	refreshed.SignedInBy, refreshed.SignedInAt = g.SignedInBy, g.SignedInAt // still their sign-in
	if err := k.store.SaveGrant(ctx, id, refreshed); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", signInAgain("the server was deleted")
		}
		return "", err
	}
	return refreshed.AccessToken, nil
}

// ToOAuth and FromOAuth convert a grant between the store's shape
// and the OAuth client's.
func ToOAuth(g store.Grant) oauth.Grant {
	return oauth.Grant{
		Issuer: g.Issuer, TokenEndpoint: g.TokenEndpoint, Revocation: g.Revocation, Resource: g.Resource,
		ClientID: g.ClientID, ClientSecret: g.ClientSecret, AuthMethod: g.AuthMethod, Scope: g.Scope,
		AccessToken: g.AccessToken, RefreshToken: g.RefreshToken, ExpiresAt: g.ExpiresAt,
	}
}

func FromOAuth(g oauth.Grant, redirectURI string, at time.Time) store.Grant {
	return store.Grant{
		Issuer: g.Issuer, TokenEndpoint: g.TokenEndpoint, Revocation: g.Revocation, Resource: g.Resource,
		ClientID: g.ClientID, ClientSecret: g.ClientSecret, AuthMethod: g.AuthMethod, Scope: g.Scope,
		AccessToken: g.AccessToken, RefreshToken: g.RefreshToken, ExpiresAt: g.ExpiresAt,
		RedirectURI: redirectURI, SavedAt: at,
	}
}
