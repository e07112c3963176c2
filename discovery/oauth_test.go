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

	"github.com/switchboard-dev/switchboard/discovery/oauth"
)

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
	_, err := v.DiscoverAuth(context.Background(), mcpURL, oauth.Challenge{Status: 401}, oauth.Scopes{})
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Step != "discovery" || !strings.Contains(err.Error(), "loopback") || !strings.Contains(err.Error(), "public") {
		t.Fatalf("DiscoverAuth = %v; want a refusal: the authorization server is loopback, the server public", err)
	}
	if n := asHits.Load(); n != 0 {
		t.Errorf("the authorization server got %d requests; want none", n)
	}
	// The same servers, the MCP server as loopback as it is: allowed.
	v.classOf = nil
	if _, err := v.DiscoverAuth(context.Background(), mcpURL, oauth.Challenge{Status: 401}, oauth.Scopes{}); err == nil || asHits.Load() == 0 {
		t.Fatalf("DiscoverAuth with a loopback server = %v (%d requests to the authorization server); want it asked (and failing: it serves no metadata)", err, asHits.Load())
	}
}
