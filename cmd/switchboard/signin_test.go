package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/fixturetest"
	"github.com/switchboard-dev/switchboard/internal/oidctest"
)

// protectedFixture runs the fixture as a Streamable HTTP server whose
// /mcp wants JWT access tokens from issuer (the fixture's -oauth-issuer
// mode), and returns its MCP URL.
func protectedFixture(t *testing.T, issuer string, args ...string) string {
	t.Helper()
	return fixturetest.MCP(fixturetest.Start(t, fixture, "http", append([]string{"-addr", "127.0.0.1:0", "-tools", "2", "-oauth-issuer", issuer}, args...)...))
}

// noTokens fails t if what a command printed holds an access token (a
// JWT, as the test authorization server issues) or a Bearer header.
func noTokens(t *testing.T, outputs ...string) {
	t.Helper()
	for _, o := range outputs {
		if strings.Contains(o, "eyJ") || strings.Contains(o, "Bearer ") {
			t.Errorf("the command printed a token: %q", o)
		}
	}
}

// call and verify sign in to a server that answers 401, against a real
// authorization server (oidc-provider) that approves at once, and the
// server (which checks the JWT's signature, issuer, audience and expiry)
// answers with the token.
//
// An authorization server that wants a person (its login page) cannot
// be signed in to without one: the command says so and exits 1.
func TestSignInNonInteractive(t *testing.T) {
	issuer := oidctest.Start(t, "../..", "--auto-approve", "--scopes", "mcp:read")
	u := protectedFixture(t, issuer, "-oauth-scopes", "mcp:read")

	code, stdout, stderr := runCall(t, "--json", "--oauth-non-interactive", u, "tool_000", `{"q": "x"}`)
	out := decodeCall(t, stdout)
	if code != 0 || !out.OK || !strings.Contains(string(out.Result), `tool_000`) || !strings.Contains(stderr, "signed in at "+issuer) {
		t.Fatalf("call --oauth-non-interactive = %d, %+v (result %s), stderr %s; want the tool's answer after a sign-in at %s", code, out, out.Result, stderr, issuer)
	}
	noTokens(t, stdout, stderr)

	var vout, verr bytes.Buffer
	if err := run(context.Background(), []string{"verify", "--json", "--oauth-non-interactive", u}, os.Getenv, nil, &vout, &verr); err != nil {
		t.Fatalf("verify --oauth-non-interactive = %v; stderr %s", err, verr.String())
	}
	if !strings.Contains(vout.String(), `"ok":true`) || !strings.Contains(vout.String(), "tool_001") {
		t.Errorf("verify --oauth-non-interactive printed %s; want ok and the two tools", vout.String())
	}
	noTokens(t, vout.String(), verr.String())

	withPages := oidctest.Start(t, "../..")
	code, _, stderr = runCall(t, "--oauth-non-interactive", protectedFixture(t, withPages), "tool_000")
	if code != 1 || !strings.Contains(stderr, "did not approve at once") {
		t.Errorf("call --oauth-non-interactive to a server with a login page = %d, stderr %q; want 1, saying it did not approve at once", code, stderr)
	}
}

// A call the server refuses with 403 insufficient_scope signs in again
// asking for the scopes it had and the one missing (step-up), once.
// With --oauth-scopes naming the missing one, the first sign-in asks for
// it, and there is no step-up.
func TestSignInStepUp(t *testing.T) {
	issuer := oidctest.Start(t, "../..", "--auto-approve", "--scopes", "mcp:read mcp:write")
	u := protectedFixture(t, issuer, "-oauth-scopes", "mcp:read", "-oauth-required-scope", "mcp:write")
	code, stdout, stderr := runCall(t, "--json", "--oauth-non-interactive", u, "tool_001")
	if out := decodeCall(t, stdout); code != 0 || !out.OK || strings.Count(stderr, "signed in at") != 2 {
		t.Fatalf("call = %d, %+v, stderr %s; want the answer after two sign-ins (the second with mcp:write)", code, out.Error, stderr)
	}
	code, stdout, stderr = runCall(t, "--json", "--oauth-non-interactive", "--oauth-scopes", "mcp:read mcp:write", u, "tool_001")
	if out := decodeCall(t, stdout); code != 0 || !out.OK || strings.Count(stderr, "signed in at") != 1 {
		t.Fatalf("call --oauth-scopes 'mcp:read mcp:write' = %d, %+v, stderr %s; want the answer after one sign-in", code, out.Error, stderr)
	}
	noTokens(t, stdout, stderr)
}

// Without --oauth-non-interactive the person is sent to the
// authorization server (here the URL printed, --no-browser) and comes
// back to a listener on 127.0.0.1, which the command waits on.
func TestSignInThroughTheBrowser(t *testing.T) {
	issuer := oidctest.Start(t, "../..", "--auto-approve")
	u := protectedFixture(t, issuer)

	pr, pw := io.Pipe()
	done := make(chan error, 1)
	var stdout bytes.Buffer
	go func() {
		err := run(context.Background(), []string{"call", "--no-browser", u, "tool_000"}, os.Getenv, nil, &stdout, pw)
		pw.Close()
		done <- err
	}()
	var printed strings.Builder
	sc := bufio.NewScanner(pr)
	sc.Buffer(nil, 1<<20)
	signInURL := ""
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if line := strings.TrimSpace(sc.Text()); signInURL == "" && strings.HasPrefix(line, issuer) {
			signInURL = line
			// The person's browser: it follows the authorization
			// server's redirect back to the command's listener.
			go func() {
				resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(signInURL)
				if err != nil {
					t.Errorf("the browser: GET %s: %v", signInURL, err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !strings.Contains(string(body), "you can close this tab") {
					t.Errorf("the page the person is sent back to says %q", body)
				}
			}()
		}
	}
	if err := <-done; err != nil || signInURL == "" || stdout.String() != `tool_000 {}`+"\n" {
		var ee *exitError
		errors.As(err, &ee)
		t.Fatalf("call = %v (%+v), stdout %q; want the tool's answer after a sign-in; stderr:\n%s", err, ee, stdout.String(), printed.String())
	}
	if !strings.Contains(signInURL, "code_challenge_method=S256") || !strings.Contains(signInURL, "redirect_uri=http%3A%2F%2F127.0.0.1%3A") {
		t.Errorf("the sign-in URL %s does not ask for PKCE S256 and a loopback redirect", signInURL)
	}
	noTokens(t, stdout.String(), printed.String())
}
