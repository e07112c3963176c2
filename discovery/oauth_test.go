package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestParseChallenge(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   AuthChallenge
		ok     bool
	}{
		{[]string{`Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="read write"`},
			AuthChallenge{Status: 401, ResourceMetadata: "https://a.example/.well-known/oauth-protected-resource/mcp", Scope: "read write"}, true},
		{[]string{`Basic realm="x"`, `Bearer error="insufficient_scope", scope="mcp:write", error_description="needs \"write\", sorry"`},
			AuthChallenge{Status: 401, Scope: "mcp:write", Error: "insufficient_scope"}, true},
		{[]string{`bearer scope=files,error=invalid_token`}, AuthChallenge{Status: 401, Scope: "files", Error: "invalid_token"}, true},
		{[]string{`Bearer`}, AuthChallenge{Status: 401}, true},
		{[]string{`Basic realm="x"`}, AuthChallenge{Status: 401}, false},
		{nil, AuthChallenge{Status: 401}, false},
	} {
		got, ok := parseChallenge(401, c.values)
		if got != c.want || ok != c.ok {
			t.Errorf("parseChallenge(%q) = %+v, %v; want %+v, %v", c.values, got, ok, c.want, c.ok)
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

// The authorization server a server's metadata names is held to the
// outgoing-request policy of the server's URL: a public server cannot
// send Switchboard to a loopback (or private) authorization server, and
// the request is never made.
func TestAuthServerUnderPolicy(t *testing.T) {
	var asHits atomic.Int32
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { asHits.Add(1) }))
	defer as.Close()
	var mcpURL string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"resource": mcpURL, "authorization_servers": []string{as.URL}})
	}))
	defer srv.Close()
	mcpURL = srv.URL + "/mcp"
	v := NewVerifier(Limits{}, nil)
	v.classOf = publicAt(t, srv.URL)
	_, err := v.DiscoverAuth(context.Background(), mcpURL, AuthChallenge{Status: 401})
	var oe *OAuthError
	if !errors.As(err, &oe) || oe.Step != "discovery" || !strings.Contains(err.Error(), "loopback") || !strings.Contains(err.Error(), "public") {
		t.Fatalf("DiscoverAuth = %v; want a refusal: the authorization server is loopback, the server public", err)
	}
	if n := asHits.Load(); n != 0 {
		t.Errorf("the authorization server got %d requests; want none", n)
	}
	// The same servers, the MCP server as loopback as it is: allowed.
	v.classOf = nil
	if _, err := v.DiscoverAuth(context.Background(), mcpURL, AuthChallenge{Status: 401}); err == nil || asHits.Load() == 0 {
		t.Fatalf("DiscoverAuth with a loopback server = %v (%d requests to the authorization server); want it asked (and failing: it serves no metadata)", err, asHits.Load())
	}
}
