package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestParseChallenge(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   Challenge
		ok     bool
	}{
		{[]string{`Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="read write"`},
			Challenge{Status: 401, ResourceMetadata: "https://a.example/.well-known/oauth-protected-resource/mcp", Scope: "read write"}, true},
		{[]string{`Basic realm="x"`, `Bearer error="insufficient_scope", scope="mcp:write", error_description="needs \"write\", sorry"`},
			Challenge{Status: 401, Scope: "mcp:write", Error: "insufficient_scope"}, true},
		{[]string{`bearer scope=files,error=invalid_token`}, Challenge{Status: 401, Scope: "files", Error: "invalid_token"}, true},
		{[]string{`Bearer`}, Challenge{Status: 401}, true},
		{[]string{`Basic realm="x"`}, Challenge{Status: 401}, false},
		{nil, Challenge{Status: 401}, false},
	} {
		got, ok := ParseChallenge(401, c.values)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseChallenge(%q) = %+v, %v; want %+v, %v", c.values, got, ok, c.want, c.ok)
		}
	}
}

func TestSameResource(t *testing.T) {
	for _, c := range []struct {
		resource, server string
		want             bool
	}{
		{"https://a.example/mcp", "https://a.example/mcp", true},
		{"https://a.example/mcp/", "https://a.example/mcp", true},
		{"https://a.example", "https://a.example/mcp", true},
		{"https://a.example/", "https://a.example/mcp", true},
		{"https://A.example:443/mcp", "https://a.example/mcp", true},
		{"https://a.example/mc", "https://a.example/mcp", false},
		{"https://a.example/mcp/x", "https://a.example/mcp", false},
		{"https://b.example/mcp", "https://a.example/mcp", false},
		{"http://a.example/mcp", "https://a.example/mcp", false},
		{"https://a.example:8443/mcp", "https://a.example/mcp", false},
		{"https://a.example/mcp?x=1", "https://a.example/mcp", false},
		{"", "https://a.example/mcp", false},
	} {
		if got := sameResource(c.resource, c.server); got != c.want {
			t.Errorf("sameResource(%q, %q) = %v; want %v", c.resource, c.server, got, c.want)
		}
	}
}

// authServers serves a protected resource's metadata at /mcp's
// well-known URL, naming prmScopes, and its authorization server's
// (itself), naming asScopes; it returns the MCP URL.
func authServers(t *testing.T, prmScopes, asScopes []string) string {
	t.Helper()
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}, "scopes_supported": prmScopes})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": base, "authorization_endpoint": base + "/auth", "token_endpoint": base + "/token", "scopes_supported": asScopes})
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	base = ts.URL
	return base + "/mcp"
}

// The scopes a sign-in asks for: those configured, else the challenge's,
// else all the resource supports; the challenge's added for a step-up,
// then those granted before; offline_access last, where the
// authorization server supports it and something else is asked for.
func TestDiscoverScopes(t *testing.T) {
	withOffline := authServers(t, []string{"read", "write"}, []string{"read", "write", "offline_access"})
	without := authServers(t, []string{"read", "write"}, []string{"read", "write"})
	none := authServers(t, nil, []string{"offline_access"})
	for _, c := range []struct {
		name      string
		server    string
		challenge Challenge
		scopes    Scopes
		want      []string
	}{
		{"the resource's by default", withOffline, Challenge{Status: 401}, Scopes{}, []string{"read", "write", "offline_access"}},
		{"the challenge's", withOffline, Challenge{Status: 401, Scope: "read"}, Scopes{}, []string{"read", "offline_access"}},
		{"configured over the challenge's", withOffline, Challenge{Status: 401, Scope: "read"}, Scopes{Configured: []string{"admin"}}, []string{"admin", "offline_access"}},
		{"configured, and a step-up's", withOffline, Challenge{Status: 403, Scope: "write", Error: "insufficient_scope"}, Scopes{Configured: []string{"admin"}}, []string{"admin", "write", "offline_access"}},
		{"a step-up keeps those granted", withOffline, Challenge{Status: 403, Scope: "write", Error: "insufficient_scope"}, Scopes{Granted: []string{"read", "write"}}, []string{"write", "read", "offline_access"}},
		{"configured, granted, no repeats", withOffline, Challenge{Status: 401}, Scopes{Configured: []string{"read", "offline_access"}, Granted: []string{"read", "admin"}}, []string{"read", "offline_access", "admin"}},
		{"no offline_access where unsupported", without, Challenge{Status: 401}, Scopes{}, []string{"read", "write"}},
		{"nothing asked: no offline_access alone", none, Challenge{Status: 401}, Scopes{}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan, err := (&Client{}).Discover(context.Background(), c.server, c.challenge, c.scopes)
			if err != nil {
				t.Fatalf("Discover = %v", err)
			}
			if !slices.Equal(plan.Scopes, c.want) {
				t.Errorf("Discover(%+v, %+v).Scopes = %q; want %q", c.challenge, c.scopes, plan.Scopes, c.want)
			}
		})
	}
}

func TestErrorSignInAgain(t *testing.T) {
	for _, c := range []struct {
		err  Error
		want bool
	}{
		{Error{Status: 400, Code: "invalid_grant"}, true},
		{Error{Status: 401, Code: "invalid_client"}, true},
		{Error{Status: 400, Code: "unauthorized_client"}, true},
		{Error{Status: 400, Code: "invalid_scope"}, true},
		{Error{Status: 400}, true},
		{Error{Status: 401}, true},
		{Error{Status: 400, Code: "invalid_request"}, false},
		{Error{Status: 403}, false},
		{Error{Status: 429}, false},
		{Error{Status: 503, Code: "temporarily_unavailable"}, false},
		{Error{Status: 500}, false},
		{Error{}, false},
	} {
		if got := c.err.SignInAgain(); got != c.want {
			t.Errorf("Error{Status: %d, Code: %q}.SignInAgain() = %v; want %v", c.err.Status, c.err.Code, got, c.want)
		}
	}
}

// A refresh the token endpoint refuses says how (the status and OAuth
// error) and whether to sign in again; one it does not answer is to be
// retried later.
func TestRefreshRefusals(t *testing.T) {
	for _, c := range []struct {
		name        string
		status      int
		body        string
		code        string
		signInAgain bool
		says        string
	}{
		{"unavailable", http.StatusServiceUnavailable, "down for maintenance", "", false, "try again later"},
		{"unavailable, an OAuth error", http.StatusServiceUnavailable, `{"error":"temporarily_unavailable"}`, "temporarily_unavailable", false, "try again later"},
		{"too many requests", http.StatusTooManyRequests, "", "", false, "try again later"},
		{"spent grant", http.StatusBadRequest, `{"error":"invalid_grant","error_description":"grant request is invalid"}`, "invalid_grant", true, "sign in again"},
		{"refused without a code", http.StatusUnauthorized, "", "", true, "sign in again"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(c.body, "{") {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			}))
			defer ts.Close()
			g := &Grant{Resource: ts.URL + "/mcp", TokenEndpoint: ts.URL + "/token", ClientID: "c", AuthMethod: "none", RefreshToken: "r"}
			err := (&Client{}).Refresh(context.Background(), g)
			var oe *Error
			if !errors.As(err, &oe) || oe.Step != "refresh" || oe.Status != c.status || oe.Code != c.code || oe.SignInAgain() != c.signInAgain || !strings.Contains(oe.Message, c.says) {
				t.Errorf("Refresh = %v (%+v); want a refresh error, HTTP %d, code %q, SignInAgain %v, saying %q", err, oe, c.status, c.code, c.signInAgain, c.says)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		ts := httptest.NewServer(http.NotFoundHandler())
		ts.Close()
		g := &Grant{Resource: ts.URL + "/mcp", TokenEndpoint: ts.URL + "/token", ClientID: "c", AuthMethod: "none", RefreshToken: "r"}
		err := (&Client{}).Refresh(context.Background(), g)
		var oe *Error
		if !errors.As(err, &oe) || oe.Status != 0 || oe.Code != "" || oe.SignInAgain() || !strings.Contains(oe.Message, "try again later") {
			t.Errorf("Refresh of an unreachable token endpoint = %v (%+v); want no status, not to sign in again, to try later", err, oe)
		}
	})
	t.Run("no refresh token", func(t *testing.T) {
		err := (&Client{}).Refresh(context.Background(), &Grant{Resource: "http://127.0.0.1:9/mcp"})
		var oe *Error
		if !errors.As(err, &oe) || !oe.SignInAgain() {
			t.Errorf("Refresh without a refresh token = %v; want to sign in again", err)
		}
	})
}
