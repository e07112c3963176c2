package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/oidctest"
)

// A token endpoint that echoes its request in error_description (issue
// 34 M5): the OAuth client's error must hold none of the request's
// secrets, in any encoding the echo gives them. Against the real
// authorization server (e2e/oidc/provider.mjs), made hostile with
// --echo-token-errors.

// echoSecret is a client secret with what form encoding, JSON and
// Basic credentials each change; every piece between its special
// characters starts with "piece", so an error holding any part of it, in
// any encoding, is found.
const echoSecret = `pieceA7/pieceB8+pieceC9="pieceD0"&pieceE1 pieceF2`

// echoClients are the provider's --client values: the same secret sent
// in the form (client_secret_post) and in a Basic header
// (client_secret_basic).
func echoClients() map[string]string {
	out := map[string]string{}
	for _, method := range []string{"client_secret_post", "client_secret_basic"} {
		out[method] = `{"client_id":"echo-` + method + `","client_secret":` + jsonString(echoSecret) + `,` +
			`"redirect_uris":["http://127.0.0.1/callback"],"token_endpoint_auth_method":"` + method + `",` +
			`"application_type":"native","grant_types":["authorization_code","refresh_token"]}`
	}
	return out
}

func jsonString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// echoProvider starts the provider with the echo clients pre-registered,
// its token endpoint echoing the requests of the grant types echo names
// (with more of its flags, if given), and a resource that names it as
// its authorization server (see resourceOf); it returns the resource's
// URL.
func echoProvider(t *testing.T, echo string, more ...string) string {
	t.Helper()
	args := append([]string{"--auto-approve", "--scopes", "mcp", "--no-registration", "--echo-token-errors", echo}, more...)
	for _, c := range echoClients() {
		args = append(args, "--client", c)
	}
	return resourceOf(t, oidctest.Start(t, "../..", args...), "mcp")
}

// resourceOf serves the protected resource metadata (RFC 9728) of a
// resource at /mcp, as an MCP server would at its well-known URL, naming
// issuer as its authorization server and scopes as those it supports;
// it returns the resource's URL.
func resourceOf(t *testing.T, issuer string, scopes ...string) string {
	t.Helper()
	var resource string
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"resource": resource, "authorization_servers": []string{issuer}, "scopes_supported": scopes})
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	resource = ts.URL + "/mcp"
	return resource
}

// checkEchoRedacted fails t if msg holds any piece of echoSecret, or any
// of values (as sent and form-encoded), or the Basic credentials of
// clientID; and unless it holds every one of echoed, which proves the
// echo arrived and was redacted rather than lost.
func checkEchoRedacted(t *testing.T, what, msg, clientID string, values []string, echoed ...string) {
	t.Helper()
	if strings.Contains(msg, "piece") {
		t.Errorf("%s holds (part of) the client secret: %s", what, msg)
	}
	basic := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(clientID) + ":" + url.QueryEscape(echoSecret)))
	for _, v := range append(values, basic) {
		if v == "" {
			t.Fatalf("%s: a secret to look for is empty", what)
		}
		if strings.Contains(msg, v) || strings.Contains(msg, url.QueryEscape(v)) {
			t.Errorf("%s holds the secret %q: %s", what, v, msg)
		}
	}
	for _, w := range append([]string{"echoes its request"}, echoed...) {
		if !strings.Contains(msg, w) {
			t.Errorf("%s = %s; want %q in it (the echo, redacted)", what, msg, w)
		}
	}
}

// A refresh refused with the request echoed: the error holds neither the
// refresh token nor the client secret (nor the access token), whether
// the secret went in the form or in a Basic header; it still says what
// the server answered, and that a new sign-in is needed.
func TestRefreshEchoRedacted(t *testing.T) {
	u := echoProvider(t, "refresh_token")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := &Client{}
	for _, tc := range []struct {
		method string
		echoed []string
	}{
		{"client_secret_post", []string{"refresh_token=[redacted]", "client_secret=[redacted]", `"client_secret":"[redacted]"`}},
		{"client_secret_basic", []string{"refresh_token=[redacted]", "authorization Basic [redacted]", "basic echo-client_secret_basic:[redacted]"}},
	} {
		t.Run(tc.method, func(t *testing.T) {
			info := ClientInfo{RedirectURI: "http://127.0.0.1:9/callback", ClientID: "echo-" + tc.method, ClientSecret: echoSecret, AuthMethod: tc.method}
			g, err := c.SignIn(ctx, u, Challenge{}, info, nil, c.AuthorizeNonInteractive)
			if err != nil {
				t.Fatalf("SignIn = %v", err)
			}
			if g.AuthMethod != tc.method || g.AccessToken == "" || g.RefreshToken == "" {
				t.Fatalf("grant = method %q, access %v, refresh %v; want %s and both tokens", g.AuthMethod, g.AccessToken != "", g.RefreshToken != "", tc.method)
			}
			held := *g
			err = c.Refresh(ctx, g)
			var oe *Error
			if !errors.As(err, &oe) || oe.Step != "refresh" || oe.Code != "invalid_grant" || oe.Status != 400 || !oe.SignInAgain() {
				t.Fatalf("Refresh = %v (%+v); want a refresh error, invalid_grant, HTTP 400, to sign in again", err, oe)
			}
			checkEchoRedacted(t, "Refresh's error", err.Error(), info.ClientID,
				[]string{held.RefreshToken, held.AccessToken}, tc.echoed...)
			if g.AccessToken != held.AccessToken || g.RefreshToken != held.RefreshToken {
				t.Error("a refused refresh changed the grant's tokens")
			}
		})
	}
}

// A code exchange refused with the request echoed: the error holds
// neither the authorization code, nor the PKCE code verifier, nor the
// client secret.
func TestCodeExchangeEchoRedacted(t *testing.T) {
	u := echoProvider(t, "authorization_code")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := &Client{}
	for _, method := range []string{"client_secret_post", "client_secret_basic"} {
		t.Run(method, func(t *testing.T) {
			info := ClientInfo{RedirectURI: "http://127.0.0.1:9/callback", ClientID: "echo-" + method, ClientSecret: echoSecret, AuthMethod: method}
			plan, err := c.Discover(ctx, u, Challenge{}, Scopes{})
			if err != nil {
				t.Fatalf("Discover = %v", err)
			}
			p, err := c.Start(ctx, plan, info)
			if err != nil {
				t.Fatalf("Start = %v", err)
			}
			answer, err := c.AuthorizeNonInteractive(ctx, p)
			if err != nil || answer.Get("code") == "" {
				t.Fatalf("AuthorizeNonInteractive = %v, %v; want a code", answer, err)
			}
			g, err := c.Finish(ctx, p, answer)
			var oe *Error
			if g != nil || !errors.As(err, &oe) || oe.Step != "token" || oe.Code != "invalid_grant" {
				t.Fatalf("Finish = %v, %v; want a token error, invalid_grant", g, err)
			}
			checkEchoRedacted(t, "Finish's error", err.Error(), info.ClientID,
				[]string{answer.Get("code"), p.CodeVerifier}, "code=[redacted]", "code_verifier=[redacted]")
		})
	}
}

// A refresh refused for now (503 temporarily_unavailable) with the
// request echoed: the error that says to try again later is redacted
// as well.
func TestRefreshEchoRedactedRetryLater(t *testing.T) {
	u := echoProvider(t, "refresh_token", "--echo-error", "temporarily_unavailable", "--echo-status", "503")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := &Client{}
	info := ClientInfo{RedirectURI: "http://127.0.0.1:9/callback", ClientID: "echo-client_secret_post", ClientSecret: echoSecret, AuthMethod: "client_secret_post"}
	g, err := c.SignIn(ctx, u, Challenge{}, info, nil, c.AuthorizeNonInteractive)
	if err != nil {
		t.Fatalf("SignIn = %v", err)
	}
	held := *g
	err = c.Refresh(ctx, g)
	var oe *Error
	if !errors.As(err, &oe) || oe.Code != "temporarily_unavailable" || oe.Status != 503 || oe.SignInAgain() || !strings.HasSuffix(err.Error(), "try again later") {
		t.Fatalf("Refresh = %v (%+v); want temporarily_unavailable, HTTP 503, to try again later", err, oe)
	}
	checkEchoRedacted(t, "Refresh's error", err.Error(), info.ClientID,
		[]string{held.RefreshToken, held.AccessToken}, "refresh_token=[redacted]", "client_secret=[redacted]")
}
