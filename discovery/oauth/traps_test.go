package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// The traps of the authorization flow (hostile #42), each refused with a
// message that says why and before any token is asked for (the
// conformance suite's auth/* scenarios run the same against its own
// servers).

// oauthServers serves a protected resource's metadata naming resource
// and the authorization server at its own origin, whose metadata names
// issuer; it returns the MCP URL and the origin.
func oauthServers(t *testing.T, resource, issuer func(base string) string) (string, string) {
	t.Helper()
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"resource": resource(base), "authorization_servers": []string{base}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": issuer(base), "authorization_endpoint": base + "/auth", "token_endpoint": base + "/token",
			"registration_endpoint": base + "/register"})
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	base = ts.URL
	return base + "/mcp", base
}

// Authorization server metadata naming another issuer than the one the
// resource named is refused (RFC 8414 3.3): a server could otherwise
// send the person to an impostor's endpoints.
func TestMetadataIssuerMismatchRefused(t *testing.T) {
	u, _ := oauthServers(t, func(b string) string { return b + "/mcp" }, func(string) string { return "https://impostor.example" })
	_, err := (&Client{}).Discover(context.Background(), u, Challenge{Status: 401}, Scopes{})
	var oe *Error
	if !errors.As(err, &oe) || oe.Step != "discovery" || !strings.Contains(err.Error(), "impostor.example") || !strings.Contains(err.Error(), "RFC 8414") {
		t.Fatalf("Discover = %v; want the issuer mismatch refused", err)
	}
}

// Protected resource metadata for another resource than the server's
// URL is refused (RFC 9728 3.3): tokens for it would be audience-bound
// elsewhere, or the server is pointing at someone else's grants.
func TestResourceMismatchRefused(t *testing.T) {
	for name, resource := range map[string]func(string) string{
		"another path":   func(b string) string { return b + "/other" },
		"another origin": func(string) string { return "https://elsewhere.example/mcp" },
		"a path prefix":  func(b string) string { return b + "/mc" },
	} {
		u, _ := oauthServers(t, resource, func(b string) string { return b })
		_, err := (&Client{}).Discover(context.Background(), u, Challenge{Status: 401}, Scopes{})
		if err == nil || !strings.Contains(err.Error(), "names the resource") {
			t.Errorf("%s: Discover = %v; want the resource mismatch refused", name, err)
		}
	}
}

// The authorization server's answer at the callback: the state must be
// the sign-in's, and iss (RFC 9207) the issuer, present where the
// server says it sends it; none of these refusals reaches the token
// endpoint.
func TestCallbackAnswerChecked(t *testing.T) {
	var tokenHits int
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tokenHits++ }))
	defer ts.Close()
	issuer := ts.URL
	p := &Pending{Plan: Plan{Resource: ts.URL + "/mcp", Server: ServerMetadata{Issuer: issuer, TokenEndpoint: ts.URL + "/token", IssParameterSupported: true}},
		State: "the-state", CodeVerifier: "v", RedirectURI: "http://127.0.0.1:9/cb", ClientID: "c", AuthMethod: "none"}
	oc := &Client{}
	for name, c := range map[string]struct {
		answer url.Values
		want   string
	}{
		"another state":           {url.Values{"state": {"forged"}, "code": {"x"}, "iss": {issuer}}, "state does not match"},
		"no state":                {url.Values{"code": {"x"}, "iss": {issuer}}, "state does not match"},
		"another issuer":          {url.Values{"state": {"the-state"}, "code": {"x"}, "iss": {"https://impostor.example"}}, "RFC 9207"},
		"the issuer, but altered": {url.Values{"state": {"the-state"}, "code": {"x"}, "iss": {issuer + "/"}}, "RFC 9207"},
		"two issuers":             {url.Values{"state": {"the-state"}, "code": {"x"}, "iss": {issuer, issuer}}, "RFC 9207"},
		"iss missing":             {url.Values{"state": {"the-state"}, "code": {"x"}}, "RFC 9207"},
		"refused by the person":   {url.Values{"state": {"the-state"}, "iss": {issuer}, "error": {"access_denied"}}, "access_denied"},
		"no code":                 {url.Values{"state": {"the-state"}, "iss": {issuer}}, "no code"},
	} {
		_, err := oc.Finish(context.Background(), p, c.answer)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Finish = %v; want a refusal with %q", name, err, c.want)
		}
	}
	if tokenHits != 0 {
		t.Errorf("the token endpoint got %d requests; want none", tokenHits)
	}
}
