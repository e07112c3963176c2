package discovery

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/switchboard-dev/switchboard/discovery/netpolicy"
	"github.com/switchboard-dev/switchboard/discovery/oauth"
)

// The sign-ins to remote servers, by package oauth, under the Verifier's
// outgoing-request policy: each method is the oauth.Client's of the same
// name (see there), its requests held to the policy of the server's URL
// as a verification's are.

// oauthClient is the OAuth client of the Verifier's sign-ins.
func (v *Verifier) oauthClient() *oauth.Client { return &oauth.Client{HTTP: v.oauthHTTP} }

// oauthHTTP is the HTTP client of a sign-in's requests: every request
// under the outgoing-request policy of the server's URL, with the
// server's network class taken from what its name resolves to now.
func (v *Verifier) oauthHTTP(ctx context.Context, serverURL string) (*http.Client, error) {
	policy, err := netpolicy.New(serverURL, nil)
	if err != nil {
		return nil, fmt.Errorf("invalid server URL: %v", err)
	}
	policy.ClassOf, policy.Resolver = v.classOf, v.resolver
	if err := policy.ResolveOrigin(ctx); err != nil {
		return nil, fmt.Errorf("cannot resolve the server's host: %v", err)
	}
	return policy.Client(), nil
}

// DiscoverAuth finds how to sign in to the server at serverURL, which
// answered challenge (see oauth.Client.Discover).
func (v *Verifier) DiscoverAuth(ctx context.Context, serverURL string, challenge oauth.Challenge, scopes oauth.Scopes) (*oauth.Plan, error) {
	return v.oauthClient().Discover(ctx, serverURL, challenge, scopes)
}

// StartAuth prepares a sign-in with plan (see oauth.Client.Start).
func (v *Verifier) StartAuth(ctx context.Context, plan *oauth.Plan, info oauth.ClientInfo) (*oauth.Pending, error) {
	return v.oauthClient().Start(ctx, plan, info)
}

// FinishAuth checks the authorization server's answer against p and
// exchanges its code for tokens (see oauth.Client.Finish).
func (v *Verifier) FinishAuth(ctx context.Context, p *oauth.Pending, answer url.Values) (*oauth.Grant, error) {
	return v.oauthClient().Finish(ctx, p, answer)
}

// RefreshAuth gets g new tokens with its refresh token, in place (see
// oauth.Client.Refresh).
func (v *Verifier) RefreshAuth(ctx context.Context, g *oauth.Grant) error {
	return v.oauthClient().Refresh(ctx, g)
}

// RevokeAuth asks g's authorization server to revoke its tokens (see
// oauth.Client.Revoke).
func (v *Verifier) RevokeAuth(ctx context.Context, g *oauth.Grant) (revoked bool, err error) {
	return v.oauthClient().Revoke(ctx, g)
}

// SignIn runs the whole flow for the server at serverURL, which answered
// challenge (see oauth.Client.SignIn).
func (v *Verifier) SignIn(ctx context.Context, serverURL string, challenge oauth.Challenge, info oauth.ClientInfo, prev *oauth.Grant,
	authorize func(context.Context, *oauth.Pending) (url.Values, error)) (*oauth.Grant, error) {
	return v.oauthClient().SignIn(ctx, serverURL, challenge, info, prev, authorize)
}

// AuthorizeNonInteractive is an authorize for SignIn without a person
// (see oauth.Client.AuthorizeNonInteractive).
func (v *Verifier) AuthorizeNonInteractive(ctx context.Context, p *oauth.Pending) (url.Values, error) {
	return v.oauthClient().AuthorizeNonInteractive(ctx, p)
}
