package discovery

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery/oauth"
	"github.com/switchboard-dev/switchboard/internal/oidctest"
)

// Against a real authorization server (oidc-provider) and a server that
// checks its JWTs (the fixture's -oauth-issuer mode): a verification
// without a token asks for a sign-in with the server's challenge; the
// sign-in's token verifies; once it expired the server refuses it again,
// and the refresh token gets a new one (rotated: the spent one is
// refused).
func TestSignInAndRefreshWithRealAuthorizationServer(t *testing.T) {
	issuer := oidctest.Start(t, "..", "--auto-approve", "--access-ttl", "2", "--scopes", "mcp")
	u := startRemoteFixture(t, TransportHTTP, "-oauth-issuer", issuer, "-oauth-scopes", "mcp", "-tools", "1")
	if !strings.HasSuffix(u, "/mcp") {
		u += "/mcp"
	}
	target := Target{Transport: TransportHTTP, URL: u}
	_, e, _ := verify(t, Limits{}, target, nil)
	if e == nil || e.Class != ClassAuth || e.Auth == nil || e.Auth.Scope != "mcp" ||
		!strings.HasSuffix(e.Auth.ResourceMetadata, "/.well-known/oauth-protected-resource/mcp") {
		t.Fatalf("verify without a token = %+v (challenge %+v); want auth_required with the server's challenge", e, e.Auth)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := NewVerifier(Limits{}, nil)
	g, err := v.SignIn(ctx, u, *e.Auth, oauth.ClientInfo{RedirectURI: "http://127.0.0.1:9/callback"}, nil, v.AuthorizeNonInteractive)
	if err != nil {
		t.Fatalf("SignIn = %v", err)
	}
	if g.Issuer != issuer || g.Resource != u || g.AccessToken == "" || g.RefreshToken == "" || time.Until(g.ExpiresAt) > 3*time.Second {
		t.Fatalf("grant = issuer %q, resource %q, access %v, refresh %v, expires in %s; want %s, %s, both tokens, within 2 s",
			g.Issuer, g.Resource, g.AccessToken != "", g.RefreshToken != "", time.Until(g.ExpiresAt), issuer, u)
	}
	withToken := func(token string) Target {
		t := target
		t.Headers = map[string]string{"Authorization": "Bearer " + token}
		return t
	}
	if res, e, _ := verify(t, Limits{}, withToken(g.AccessToken), nil); e != nil || len(res.Tools) != 1 {
		t.Fatalf("verify with the token = %v; want the fixture's tool", e)
	}

	time.Sleep(time.Until(g.ExpiresAt) + 500*time.Millisecond)
	if _, e, _ := verify(t, Limits{}, withToken(g.AccessToken), nil); e == nil || e.Class != ClassAuth {
		t.Fatalf("verify with the expired token = %v; want auth_required", e)
	}
	spent, expired := g.RefreshToken, g.AccessToken
	if err := v.RefreshAuth(ctx, g); err != nil {
		t.Fatalf("RefreshAuth = %v", err)
	}
	if g.AccessToken == expired || g.RefreshToken == spent || time.Until(g.ExpiresAt) <= 0 {
		t.Fatalf("after the refresh: new access token %v, rotated refresh token %v, expires in %s", g.AccessToken != expired, g.RefreshToken != spent, time.Until(g.ExpiresAt))
	}
	if _, e, _ := verify(t, Limits{}, withToken(g.AccessToken), nil); e != nil {
		t.Fatalf("verify with the refreshed token = %v", e)
	}
	again := *g
	again.RefreshToken = spent
	var oe *oauth.Error
	if err := v.RefreshAuth(ctx, &again); !errors.As(err, &oe) || oe.Step != "refresh" || oe.Code != "invalid_grant" || oe.Status != 400 || !oe.SignInAgain() {
		t.Errorf("RefreshAuth with the spent refresh token = %v (%+v); want a refresh error, invalid_grant, HTTP 400, to sign in again", err, oe)
	}
}
