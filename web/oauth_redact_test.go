package web_test

import (
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/internal/oidctest"
	"github.com/switchboard-dev/switchboard/store"
)

// A token endpoint that echoes its request in error_description (issue
// 34 M5), against the real authorization server (e2e/oidc/provider.mjs
// with --echo-token-errors): the refresh token and the client secret it
// echoes reach neither the agent's JSON-RPC error, nor the call record,
// the grant's problem or the verification's failure in the store, nor
// the SSE stream, a page or a log line.

// echoSecret is a pre-registered client's secret with what form
// encoding, JSON and Basic credentials each change; every piece between
// its special characters starts with "piece" (see echoSecretPieces).
const echoSecret = `pieceA7/pieceB8+pieceC9="pieceD0"&pieceE1 pieceF2`

// echoSecretPieces are the pieces of echoSecret: each must never be
// shown, so that the secret is found in any encoding an echo gives it.
var echoSecretPieces = []string{"pieceA7", "pieceB8", "pieceC9", "pieceD0", "pieceE1", "pieceF2"}

// echoClient is the provider's --client value of the pre-registered
// client id, authenticating with a Basic header (as the dashboard does
// where the server supports it).
func echoClient(t *testing.T, id string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"client_id": id, "client_secret": echoSecret,
		"redirect_uris": []string{"http://" + testHost + "/oauth/callback"}, "token_endpoint_auth_method": "client_secret_basic",
		"application_type": "native", "grant_types": []string{"authorization_code", "refresh_token"}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// keepEchoSecrets adds the client secret's pieces and its Basic
// credentials to the values no answer or log line may hold.
func (e *env) keepEchoSecrets(clientID string) {
	e.secrets = append(e.secrets, echoSecretPieces...)
	e.secrets = append(e.secrets, base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(clientID)+":"+url.QueryEscape(echoSecret))))
}

// checkRedactedEcho fails e's test if text holds a secret, or unless it
// holds every one of echoed: the echo arrived, its secrets replaced.
func (e *env) checkRedactedEcho(what, text string, echoed ...string) {
	e.t.Helper()
	e.checkNoSecrets(what, text)
	for _, w := range echoed {
		if !strings.Contains(text, w) {
			e.t.Errorf("%s = %s; want %q in it (the token endpoint's echo, redacted)", what, text, w)
		}
	}
}

// The refresh of a routed call's token is refused with the request
// echoed: the agent is told to sign in again, and what it, the call log,
// the store, the live stream and the log hold of the refusal has the
// refresh token and the client secret taken out; a verification then
// stores its failure the same way.
func TestRefreshEchoRedactedThroughTheGateway(t *testing.T) {
	ctx := t.Context()
	issuer := oidctest.Start(t, "..", "--auto-approve", "--scopes", "mcp", "--access-ttl", "3", "--no-registration",
		"--client", echoClient(t, "echo-pre"), "--echo-token-errors", "refresh_token")
	u := protectedFixture(t, issuer, "-oauth-scopes", "mcp")
	e := newEnv(t)
	e.keepEchoSecrets("echo-pre")
	srv, hc := e.liveServer()
	e.addProtected("r1", u, map[string]any{"oauth": map[string]any{"client_id": "echo-pre", "client_secret": echoSecret, "scopes": []string{"mcp"}}})
	b := e.login()
	b.signIn("r1")
	waitFor(t, 20*time.Second, "verified after the sign-in", func() bool { return e.serverStatus("r1") == store.StatusSuccess })
	g := e.grant("r1")
	e.keepSecret(g)
	if g.ClientID != "echo-pre" || g.AuthMethod != "client_secret_basic" || g.RefreshToken == "" {
		t.Fatalf("grant = client %q by %q, refresh token %v; want echo-pre by client_secret_basic, with a refresh token", g.ClientID, g.AuthMethod, g.RefreshToken != "")
	}
	e.setPolicy("r1", "tool_000", "allow")
	c := mcptest.Connect(t, srv.URL, testMCPToken)
	events := b.openEvents(srv, hc)

	// The call that refreshes the token: its refusal, redacted, is the
	// agent's error.
	time.Sleep(time.Until(g.ExpiresAt.Add(-refreshLeadOf(g) / 2)))
	err := mcptest.Refused(c.Call("r1__tool_000", map[string]any{}))
	if err == nil || !strings.Contains(err.Error(), "sign in again") {
		t.Fatalf("routed call with the refresh refused = %v; want an error saying to sign in again", err)
	}
	echoed := []string{"echoes its request", "refresh_token=[redacted]", "authorization Basic [redacted]", "basic echo-pre:[redacted]"}
	e.checkRedactedEcho("the agent's JSON-RPC error", err.Error(), echoed...)

	// The grant's problem, as stored.
	if p := e.grant("r1").Problem; p == "" {
		t.Error("the refused refresh left no problem on the grant")
	} else {
		e.checkRedactedEcho("the grant's problem in the store", p, echoed...)
	}

	// The call record, as stored (written in the background).
	var rec store.Call
	waitFor(t, 10*time.Second, "the call's record", func() bool {
		calls, _, err := e.db.Calls(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range calls {
			if cl.ServerID == "r1" && cl.Outcome == "error" {
				rec = cl
				return true
			}
		}
		return false
	})
	stored, _ := json.Marshal(rec)
	e.checkRedactedEcho("the call record in the store", string(stored), echoed...)
	for _, cl := range e.calls() { // the API's answer is checked by serve
		if cl.ServerID == "r1" && cl.Error != "" && !strings.Contains(cl.Error, "refresh_token=[redacted]") {
			t.Errorf("API call record error = %q; want the echo, redacted", cl.Error)
		}
	}

	// A verification: the failure it stores says the same, redacted.
	if job := e.verify("r1"); job.Status == "success" || job.Error == nil {
		t.Fatalf("verify after the refused refresh = %+v; want a sign-in asked for", job)
	} else {
		e.checkRedactedEcho("the verification job's error", job.Error.Message, echoed...)
	}
	sum, err := e.db.Summary(ctx, "r1")
	if err != nil || sum.Discovery.Error == nil {
		t.Fatalf("summary of r1 = %+v, %v; want the failure stored", sum.Discovery, err)
	}
	stored, _ = json.Marshal(sum.Discovery.Error)
	e.checkRedactedEcho("the verification failure in the store", string(stored), echoed...)
	page := b.get("/servers/r1").Body.String() // checked by serve
	if !strings.Contains(page, "refresh_token=[redacted]") {
		t.Errorf("the server's page does not show the refusal, redacted: %s", truncate(page))
	}

	// The live stream pushed the refusal, redacted.
	for _, ev := range events.until(t, 10*time.Second, "an event with the refusal", func(ev sseEvent) bool {
		return strings.Contains(ev.text(), "refresh_token=[redacted]")
	}) {
		e.checkNoSecrets("SSE "+ev.name, ev.text())
	}

	// The log: the routed call's line and the verification's, redacted
	// (every line is checked for secrets again when the test ends).
	logs := strings.Join(e.logs.Texts(slog.LevelDebug), "\n")
	e.checkRedactedEcho("the application's log", logs, echoed...)
}

// The code exchange of a dashboard sign-in is refused with the request
// echoed: the callback page and the server's sign-in problem show the
// refusal without the code, the PKCE code verifier or the client secret.
func TestCodeExchangeEchoRedactedThroughTheDashboard(t *testing.T) {
	issuer := oidctest.Start(t, "..", "--auto-approve", "--scopes", "mcp", "--no-registration",
		"--client", echoClient(t, "echo-pre"), "--echo-token-errors", "authorization_code")
	u := protectedFixture(t, issuer, "-oauth-scopes", "mcp")
	e := newEnv(t)
	e.keepEchoSecrets("echo-pre")
	e.addProtected("r2", u, map[string]any{"oauth": map[string]any{"client_id": "echo-pre", "client_secret": echoSecret, "scopes": []string{"mcp"}}})
	b := e.login()
	rec, callback := b.signIn("r2") // the page is checked by serve
	cb, err := url.Parse(callback)
	if err != nil || cb.Query().Get("code") == "" {
		t.Fatalf("callback %q: %v; want a code", callback, err)
	}
	e.secrets = append(e.secrets, cb.Query().Get("code"))
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("callback with the code exchange refused = %d; want 400", rec.Code)
	}
	echoed := []string{"echoes its request", "code=[redacted]", "code_verifier=[redacted]", "authorization Basic [redacted]", "basic echo-pre:[redacted]"}
	e.checkRedactedEcho("the callback page", rec.Body.String(), echoed...)
	e.checkRedactedEcho("the server's page", b.get("/servers/r2").Body.String(), echoed...)
	if _, ok, _ := e.db.LatestGrant(t.Context(), "r2"); ok {
		t.Error("a refused code exchange left a grant")
	}
}
