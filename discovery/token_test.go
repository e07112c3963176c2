package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/discovery/oauth"
	"github.com/switchboard-dev/switchboard/internal/oidctest"
)

// testToken is a TokenSource for tests: it hands out the token set last,
// or fails with the error set last, and counts the calls.
type testToken struct {
	mu    sync.Mutex
	token string
	err   error
	calls int
}

func (s *testToken) Token(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return s.token, s.err
}

// set makes the source hand out token from now on.
func (s *testToken) set(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token, s.err = token, nil
}

// fail makes the source fail with err from now on.
func (s *testToken) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token, s.err = "", err
}

func (s *testToken) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// signInAgain is what a TokenSource returns for a grant that cannot be
// used again.
var signInAgain = NewError(ClassAuth, "", "the grant for this server was revoked: sign in again")

// bearerServer is an MCP server (mcp-go's Streamable HTTP) that wants a
// Bearer token: a request without one is answered 401 with a Bearer
// challenge. It records the Authorization header of every request.
type bearerServer struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func newBearerServer(t *testing.T, mcpServer *server.MCPServer) *bearerServer {
	t.Helper()
	s := &bearerServer{}
	h := server.NewStreamableHTTPServer(mcpServer)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		s.mu.Lock()
		s.auth = append(s.auth, a)
		s.mu.Unlock()
		if !strings.HasPrefix(a, "Bearer ") {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("WWW-Authenticate", `Bearer scope="mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// sent reports whether a request carried Authorization: Bearer token.
func (s *bearerServer) sent(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.auth, "Bearer "+token)
}

// Against a real authorization server (oidc-provider) and a server that
// checks its JWTs (the fixture's -oauth-issuer mode): a verification that
// ends asking for a sign-in says where to sign in; one whose TokenSource
// holds the token signed in with succeeds, the token asked for each
// request; one whose source says to sign in again ends auth_required
// with the source's message.
func TestTokenSourceWithRealAuthorizationServer(t *testing.T) {
	issuer := oidctest.Start(t, "..", "--auto-approve", "--scopes", "mcp")
	u := startRemoteFixture(t, TransportHTTP, "-oauth-issuer", issuer, "-oauth-scopes", "mcp", "-tools", "1")
	if !strings.HasSuffix(u, "/mcp") {
		u += "/mcp"
	}
	target := Target{Transport: TransportHTTP, URL: u}

	_, e, _ := verify(t, Limits{}, target, nil)
	wantClass(t, e, ClassAuth, "")
	if e.SignIn == nil || e.SignIn.Server.Issuer != issuer || e.SignIn.Resource != u ||
		!slices.Equal(e.SignIn.Scopes, []string{"mcp", "offline_access"}) || e.SignInProblem != "" {
		t.Fatalf("verify without a token: SignIn = %+v, SignInProblem %q; want a sign-in at %s for %s with the scopes [mcp offline_access]", e.SignIn, e.SignInProblem, issuer, u)
	}
	configured := target
	configured.OAuthScopes = []string{"openid", "mcp"}
	switch _, e, _ := verify(t, Limits{}, configured, nil); {
	case e == nil || e.SignIn == nil:
		t.Errorf("verify with OAuthScopes [openid mcp] = %v; want auth_required with a sign-in", e)
	case !slices.Equal(e.SignIn.Scopes, []string{"openid", "mcp", "offline_access"}):
		t.Errorf("verify with OAuthScopes [openid mcp]: SignIn.Scopes = %q; want [openid mcp offline_access]", e.SignIn.Scopes)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := NewVerifier(Limits{}, nil)
	g, err := v.SignIn(ctx, u, *e.Auth, oauth.ClientInfo{RedirectURI: "http://127.0.0.1:9/callback"}, nil, v.AuthorizeNonInteractive)
	if err != nil {
		t.Fatalf("SignIn = %v", err)
	}
	src := &testToken{token: g.AccessToken}
	withToken := target
	withToken.Token = src
	if res, e, _ := verify(t, Limits{}, withToken, nil); e != nil || len(res.Tools) != 1 {
		t.Fatalf("verify with a TokenSource = %v; want the fixture's tool", e)
	}
	if n := src.count(); n < 2 {
		t.Errorf("the TokenSource was asked %d times; want once for each request (the handshake, tools/list)", n)
	}

	src.fail(signInAgain)
	_, e, _ = verify(t, Limits{}, withToken, nil)
	wantClass(t, e, ClassAuth, "")
	if e.Message != signInAgain.Message || e.Auth == nil || e.SignIn == nil || e.SignIn.Server.Issuer != issuer {
		t.Errorf("verify with a source that says to sign in again = %v (Auth %+v, SignIn %+v); want auth_required, its message, and where to sign in", e, e.Auth, e.SignIn)
	}
	if signInAgain.Phase != "" || signInAgain.Message != "the grant for this server was revoked: sign in again" {
		t.Errorf("the source's *Error was changed: %+v", signInAgain)
	}

	src.fail(errors.New("the grant store is closed"))
	_, e, _ = verify(t, Limits{}, withToken, nil)
	if e == nil || e.Class == ClassAuth || !strings.Contains(e.Message, "the grant store is closed") {
		t.Errorf("verify with a source that fails otherwise = %v; want an error of another class than auth_required that says why", e)
	}
}

// The tokens a source hands out are redacted from what a server echoes
// back, as header values are: in an HTML page's sample, and in a
// JSON-RPC error's message.
func TestTokenRedacted(t *testing.T) {
	const token = "tok-from-source-0123456789"
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		echo := "you sent " + r.Header.Get("Authorization")
		switch {
		case r.URL.Path == "/html":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<html><body>%s</body></html>", echo)
		case req.ID == nil:
			w.WriteHeader(http.StatusAccepted)
		default:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32603, "message": echo}})
		}
	}))
	defer ts.Close()
	for _, path := range []string{"/html", "/jsonrpc"} {
		t.Run(path[1:], func(t *testing.T) {
			src := &testToken{token: token}
			_, e, _ := verify(t, Limits{InitTimeout: 5 * time.Second}, Target{Transport: TransportHTTP, URL: ts.URL + path, Token: src}, nil)
			if e == nil {
				t.Fatal("Verify succeeded against a server that answers no MCP")
			}
			if strings.Contains(e.Message, token) || !strings.Contains(e.Message, "Bearer [redacted]") {
				t.Errorf("Verify = %v; want the echoed token redacted", e)
			}
		})
	}
}

// The token goes with requests to the origin that never left it, in place
// of a configured Authorization header, and never to another origin, nor
// back to the origin after a redirect left it.
func TestTokenOnlyToOrigin(t *testing.T) {
	const token = "tok-from-source-0123456789"
	t.Run("same origin", func(t *testing.T) {
		var got []string
		var mu sync.Mutex
		h := server.NewStreamableHTTPServer(newToolServer(1))
		mux := http.NewServeMux()
		mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, r.Header.Get("Authorization"))
			mu.Unlock()
			h.ServeHTTP(w, r)
		}))
		mux.Handle("/old", http.RedirectHandler("/mcp", http.StatusPermanentRedirect))
		ts := httptest.NewServer(mux)
		defer ts.Close()
		_, e := verifyWith(t, NewVerifier(Limits{InitTimeout: 5 * time.Second}, nil),
			Target{Transport: TransportHTTP, URL: ts.URL + "/old", Headers: secretHeaders(), Token: &testToken{token: token}})
		if e != nil {
			t.Fatalf("Verify = %v", e)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, a := range got {
			if a != "Bearer "+token {
				t.Errorf("the server received Authorization %q; want the source's token in place of the configured one", a)
			}
		}
		if len(got) == 0 {
			t.Error("the server received no request")
		}
	})
	t.Run("another origin", func(t *testing.T) {
		admin := newRecordingServer(t)
		origin := redirector(t, http.StatusTemporaryRedirect, admin.URL+"/elsewhere")
		src := &testToken{token: token}
		if _, e := verifyWith(t, NewVerifier(Limits{InitTimeout: 500 * time.Millisecond}, nil), Target{Transport: TransportSSE, URL: origin.URL + "/sse", Token: src}); e == nil {
			t.Fatal("Verify succeeded against a server that sends no endpoint")
		}
		if len(admin.requests()) == 0 {
			t.Fatal("the redirected GET never arrived; want it to, without the token")
		}
		for _, r := range admin.requests() {
			if a := r.Header.Get("Authorization"); a != "" {
				t.Errorf("another origin received Authorization %q; want none", a)
			}
		}
		if src.count() == 0 {
			t.Error("the source was never asked; want it asked for the request to the origin")
		}
	})
	t.Run("back to the origin", func(t *testing.T) {
		back := newRecordingServer(t)
		var origin *httptest.Server
		elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, origin.URL+"/chosen-by-elsewhere", http.StatusFound)
		}))
		defer elsewhere.Close()
		origin = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/sse" {
				http.Redirect(w, r, elsewhere.URL+"/hop", http.StatusFound)
				return
			}
			back.Config.Handler.ServeHTTP(w, r)
		}))
		defer origin.Close()
		if _, e := verifyWith(t, NewVerifier(Limits{InitTimeout: 500 * time.Millisecond}, nil), Target{Transport: TransportSSE, URL: origin.URL + "/sse", Token: &testToken{token: token}}); e == nil {
			t.Fatal("Verify succeeded against a server that sends no endpoint")
		}
		if len(back.requests()) == 0 {
			t.Fatal("the redirect back to the origin never arrived")
		}
		for _, r := range back.requests() {
			if a := r.Header.Get("Authorization"); a != "" {
				t.Errorf("the origin received Authorization %q at %s after a redirect through another origin; want none", a, r.Path)
			}
		}
	})
}

// A session asks its source for each request: a call after the token
// changed sends the new one; a call while the source says to sign in
// again ends auth_required with its message (and the session goes on:
// the next call, signed in, is answered).
func TestSessionTokenSource(t *testing.T) {
	srv := newBearerServer(t, newToolServer(1))
	src := &testToken{token: "first-token-0123"}
	s, err := NewVerifier(Limits{}, nil).Open(context.Background(), Target{Transport: TransportHTTP, URL: srv.URL + "/mcp", Token: src}, 5*time.Second)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer s.Close()
	tool := s.Tools()["tool_000"]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	src.set("second-token-0123")
	if _, err := s.Call(ctx, tool.Name, tool.Pin, map[string]any{"q": "x"}, 0); err != nil || !srv.sent("second-token-0123") {
		t.Fatalf("Call after the token changed = %v (sent it: %v); want an answer, the new token sent", err, srv.sent("second-token-0123"))
	}

	src.fail(signInAgain)
	_, err = s.Call(ctx, tool.Name, tool.Pin, map[string]any{"q": "x"}, 0)
	var e *Error
	if !errors.As(err, &e) || e.Class != ClassAuth || e.Phase != PhaseCalling || e.Message != signInAgain.Message || e.Auth == nil || e.SignIn != nil {
		t.Fatalf("Call while the source says to sign in again = %v; want auth_required in calling with its message, a challenge, and no sign-in looked for", err)
	}

	src.set("third-token-0123")
	if _, err := s.Call(ctx, tool.Name, tool.Pin, map[string]any{"q": "x"}, 0); err != nil {
		t.Errorf("Call once signed in again = %v; want an answer", err)
	}
}

// A watch asks its source for each request (its pings here): the current
// token goes with them, and a source that says to sign in again ends the
// watch auth_required with its message.
func TestWatchTokenSource(t *testing.T) {
	srv := newBearerServer(t, newToolServer(1))
	src := &testToken{token: "first-token-0123"}
	w := startWatch(t, nil, Target{Transport: TransportHTTP, URL: srv.URL + "/mcp", Token: src}, 50*time.Millisecond)
	w.waitCount(t, WatchConnected, 1)
	src.set("second-token-0123")
	waitFor(t, "a ping with the new token", 5*time.Second, func() bool { return srv.sent("second-token-0123") })

	src.fail(signInAgain)
	e := w.ended(t, 5*time.Second)
	if e.Class != ClassAuth || e.Message != signInAgain.Message || e.Auth == nil || e.SignIn != nil {
		t.Errorf("Watch while the source says to sign in again = %v; want auth_required with its message, and no sign-in looked for", e)
	}
}

// A server whose protected resource metadata names another resource
// ends a verification auth_required with no sign-in, and says why.
func TestVerifySignInProblem(t *testing.T) {
	var ts *httptest.Server
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/prm" {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": "https://elsewhere.example/mcp", "authorization_servers": []string{ts.URL}})
			return
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/prm"`, ts.URL))
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer ts.Close()
	_, e, _ := verify(t, Limits{}, Target{Transport: TransportHTTP, URL: ts.URL + "/mcp"}, nil)
	wantClass(t, e, ClassAuth, "")
	if e.SignIn != nil || !strings.Contains(e.SignInProblem, `names the resource "https://elsewhere.example/mcp"`) {
		t.Errorf("verify = %v: SignIn %+v, SignInProblem %q; want no sign-in, and a problem naming the other resource", e, e.SignIn, e.SignInProblem)
	}
}
