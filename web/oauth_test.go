package web_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/discovery/oauth"
	"github.com/switchboard-dev/switchboard/internal/fixturetest"
	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/internal/oidctest"
	"github.com/switchboard-dev/switchboard/store"
)

// The dashboard's sign-in, against a real authorization server
// (oidc-provider, e2e/oidc/provider.mjs) and a server that checks its
// JWTs (the fixture's -oauth-issuer mode).

// protectedFixture runs the fixture as a Streamable HTTP server whose
// /mcp wants access tokens from issuer, and returns its MCP URL.
func protectedFixture(t *testing.T, issuer string, args ...string) string {
	t.Helper()
	return fixturetest.MCP(fixturetest.Start(t, fixtureBin, "http", append([]string{"-addr", "127.0.0.1:0", "-tools", "2", "-oauth-issuer", issuer}, args...)...))
}

// addProtected adds the remote server id at u and verifies it: it must
// end asking for a sign-in.
func (e *env) addProtected(id, u string, extra map[string]any) apiJob {
	e.t.Helper()
	body := map[string]any{"id": id, "name": "Protected " + id, "transport": "http", "url": u, "default_policy": "allow"}
	for k, v := range extra {
		body[k] = v
	}
	e.createServer(body)
	job := e.verify(id)
	if job.Status != "failed" {
		e.t.Fatalf("verify of %s without a sign-in = %+v; want the job to end without tools", id, job)
	}
	return job
}

// signIn starts a sign-in from the browser b, lets the authorization
// server approve it (it runs with --auto-approve), and brings the answer
// to the callback as the browser would: a cross-site navigation with
// the sign-in's cookie and without the session's (SameSite=Strict). It
// returns the callback's answer and its request URI.
func (b *browser) signIn(id string) (*httptest.ResponseRecorder, string) {
	t := b.e.t
	t.Helper()
	rec := b.htmx(http.MethodPost, "/servers/"+id+"/signin", nil)
	authURL := rec.Header().Get("HX-Redirect")
	if rec.Code != http.StatusOK || authURL == "" {
		t.Fatalf("Sign in = %d, HX-Redirect %q: %s", rec.Code, authURL, truncate(rec.Body.String()))
	}
	var bind *http.Cookie
	for _, c := range rec.Result().Cookies() {
		if strings.HasPrefix(c.Name, "switchboard_signin_") {
			bind = c
		}
	}
	if bind == nil || !bind.HttpOnly || bind.SameSite != http.SameSiteLaxMode || bind.Path != "/oauth/callback" {
		t.Fatalf("Sign in set the binding cookie %+v; want an HttpOnly, SameSite=Lax cookie for /oauth/callback", bind)
	}
	callback := b.e.authorize(authURL)
	r := newRequest(http.MethodGet, callback, nil)
	r.AddCookie(bind)
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	r.Header.Set("Sec-Fetch-Mode", "navigate")
	return b.e.serve(r), callback
}

// authorize GETs an authorization URL of the provider (with
// --auto-approve) and follows its redirects up to the one to the
// dashboard's callback, whose path and query it returns.
func (e *env) authorize(authURL string) string {
	e.t.Helper()
	jar, _ := cookiejar.New(nil)
	var callback *url.URL
	hc := &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if r.URL.Host == testHost {
			callback = r.URL
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := hc.Get(authURL)
	if err != nil {
		e.t.Fatalf("GET the authorization URL: %v", err)
	}
	resp.Body.Close()
	if callback == nil || callback.Path != "/oauth/callback" {
		e.t.Fatalf("the authorization server answered %d without sending the browser back to the callback (%v)", resp.StatusCode, callback)
	}
	return callback.RequestURI()
}

// grant is the server's latest grant, which must exist.
func (e *env) grant(id string) store.Grant {
	ctx := context.Background()
	e.t.Helper()
	g, ok, err := e.db.LatestGrant(ctx, id)
	if err != nil || !ok {
		e.t.Fatalf("grant of %s: %v, %v", id, ok, err)
	}
	return g
}

// keepSecret adds a grant's tokens (and its client's secret) to the
// values no answer or log line may hold.
func (e *env) keepSecret(g store.Grant) {
	for _, s := range []string{g.AccessToken, g.RefreshToken, g.ClientSecret} {
		if s != "" {
			e.secrets = append(e.secrets, s)
		}
	}
}

func TestSignInFromTheDashboard(t *testing.T) {
	ctx := t.Context()
	issuer := oidctest.Start(t, "..", "--auto-approve", "--scopes", "mcp")
	u := protectedFixture(t, issuer, "-oauth-scopes", "mcp")
	e := newEnv(t)
	srv, _ := e.liveServer()
	e.addProtected("o1", u, nil)

	// Sign-in required: its own state, with where and what.
	if st := e.serverStatus("o1"); st != store.StatusSignIn {
		t.Fatalf("status = %q; want %q", st, store.StatusSignIn)
	}
	d := e.discovery("o1")
	var need apiSignInNeed
	if d.Error != nil && d.Error.SignIn != nil {
		need = *d.Error.SignIn
	}
	if need.Issuer != issuer || need.Status != 401 || !strings.Contains(strings.Join(need.Scopes, " "), "mcp") {
		t.Errorf("API sign_in need = %+v; want the issuer %s, 401, scopes with mcp", need, issuer)
	}
	if d.Freshness.State != store.FreshSignIn {
		t.Errorf("freshness = %+v; want %s", d.Freshness, store.FreshSignIn)
	}
	b := e.login()
	page := parseHTML(t, b.get("/servers/o1").Body.String())
	if got := testIDText(t, page, "status"); got != "Sign-in required" {
		t.Errorf("status badge = %q; want Sign-in required", got)
	}
	if got := testIDText(t, page, "signin-issuer"); got != issuer {
		t.Errorf("issuer shown = %q; want %s", got, issuer)
	}
	if page.Find(testID("verify-error")).Length() != 0 {
		t.Error("the page shows a sign-in request as a verification error")
	}

	// Sign in: the callback shows a page that leads back, and the
	// verification continues by itself.
	resp, callback := b.signIn("o1")
	body := resp.Body.String()
	if resp.Code != http.StatusOK || !strings.Contains(body, `http-equiv="refresh"`) || !strings.Contains(body, "/servers/o1") {
		t.Fatalf("callback = %d %s; want the page leading back to the server", resp.Code, truncate(body))
	}
	g := e.grant("o1")
	e.keepSecret(g)
	if g.Issuer != issuer || g.AccessToken == "" || g.RefreshToken == "" || g.RedirectURI != "http://"+testHost+"/oauth/callback" {
		t.Errorf("grant = issuer %q, tokens %v/%v, redirect %q", g.Issuer, g.AccessToken != "", g.RefreshToken != "", g.RedirectURI)
	}
	waitFor(t, 20*time.Second, "verified after the sign-in", func() bool { return e.serverStatus("o1") == store.StatusSuccess })
	if n := len(decodeAs[toolsAnswer](t, e.api(http.MethodGet, "/api/v1/servers/o1/tools", nil)).Tools); n != 2 {
		t.Errorf("%d tools after the sign-in; want the fixture's 2", n)
	}

	// The callback answers once.
	again := e.serve(newRequest(http.MethodGet, callback, nil))
	if again.Code != http.StatusBadRequest {
		t.Errorf("the same callback again = %d; want 400", again.Code)
	}

	// Who is signed in, never a token: page, API and live fragments.
	page = parseHTML(t, b.get("/servers/o1").Body.String())
	if got := testIDText(t, page, "grant-issuer"); got != issuer {
		t.Errorf("grant issuer shown = %q", got)
	}
	if got := testIDText(t, page, "grant-refresh"); !strings.HasPrefix(got, "refresh token held") {
		t.Errorf("refresh shown = %q", got)
	}
	if sj := e.server("o1").SignIn; sj == nil || sj.Issuer != issuer || !sj.RefreshTokenHeld || sj.ExpiresAt == nil ||
		sj.SignedInBy != "dashboard" || sj.SignedInAt == nil {
		t.Errorf("API sign_in = %+v; want it named by who signed in (the shared token's holder: dashboard), and when", sj)
	}
	if got := testIDText(t, page, "grant-by"); !strings.HasPrefix(got, "dashboard ") {
		t.Errorf("signed in by, shown = %q", got)
	}
	ev := b.openEvents(srv, &http.Client{})
	for _, x := range ev.until(t, 5*time.Second, "snapshot", named("status-o1")) {
		e.checkNoSecrets("SSE "+x.name, x.text())
	}

	// A routed call uses the token.
	e.setPolicy("o1", "tool_000", "allow")
	c := mcptest.Connect(t, srv.URL, testMCPToken)
	if res, err := c.Call("o1__tool_000", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("routed call = %v, %v; want the upstream's answer with the signed-in token", mcptest.Text(res), err)
	}

	// Sign out: the tokens are revoked at the authorization server, and
	// forgotten; a routed call then fails at once, saying to sign in.
	rec := b.htmx(http.MethodPost, "/servers/o1/signout", nil)
	wantStatus(t, rec, http.StatusNoContent)
	if _, ok, _ := e.db.LatestGrant(ctx, "o1"); ok {
		t.Error("a grant is left after Sign out")
	}
	v := discovery.NewVerifier(discovery.Limits{}, nil)
	dg := oauth.Grant{Issuer: g.Issuer, TokenEndpoint: g.TokenEndpoint, Resource: g.Resource, ClientID: g.ClientID,
		ClientSecret: g.ClientSecret, AuthMethod: g.AuthMethod, RefreshToken: g.RefreshToken}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := v.RefreshAuth(ctx, &dg); err == nil || !strings.Contains(err.Error(), "invalid_grant") {
		t.Errorf("refresh with the signed-out refresh token = %v; want invalid_grant (revoked)", err)
	}
	start := time.Now()
	err := mcptest.Refused(c.Call("o1__tool_000", map[string]any{}))
	if err == nil || !strings.Contains(err.Error(), "sign in") || time.Since(start) > 5*time.Second {
		t.Errorf("routed call after Sign out = %v after %s; want a refusal saying to sign in, at once", err, time.Since(start))
	}
}

// The callback answers only the browser, and the session, that started
// the sign-in, and only once; an unknown state changes nothing.
func TestSignInCallbackIsBound(t *testing.T) {
	ctx := t.Context()
	issuer := oidctest.Start(t, "..", "--auto-approve", "--scopes", "mcp")
	u := protectedFixture(t, issuer, "-oauth-scopes", "mcp")
	e := newEnv(t)
	e.addProtected("o2", u, nil)
	b := e.login()

	start := func() (string, *http.Cookie) {
		rec := b.htmx(http.MethodPost, "/servers/o2/signin", nil)
		wantStatus(t, rec, http.StatusOK)
		for _, c := range rec.Result().Cookies() {
			if strings.HasPrefix(c.Name, "switchboard_signin_") {
				return e.authorize(rec.Header().Get("HX-Redirect")), c
			}
		}
		t.Fatal("no binding cookie")
		return "", nil
	}
	navigate := func(uri string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
		r := newRequest(http.MethodGet, uri, nil)
		for _, c := range cookies {
			r.AddCookie(c)
		}
		r.Header.Set("Sec-Fetch-Site", "cross-site")
		r.Header.Set("Sec-Fetch-Mode", "navigate")
		return e.serve(r)
	}

	// Another browser (no cookie): refused, and the sign-in is kept for
	// the browser that started it (issue 34: a hit without the cookie
	// must not spend the person's sign-in).
	kept, keptBind := start()
	if rec := navigate(kept); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "another browser") {
		t.Errorf("callback without the cookie = %d %s; want 403", rec.Code, truncate(rec.Body.String()))
	}
	// A cookie of another sign-in does not fit.
	callback, bind := start()
	_, other := start()
	other.Name = bind.Name // this sign-in's cookie, holding the other's nonce
	if rec := navigate(callback, other); rec.Code != http.StatusForbidden {
		t.Errorf("callback with another sign-in's cookie = %d; want 403", rec.Code)
	}
	// Unknown or missing state.
	for _, uri := range []string{"/oauth/callback", "/oauth/callback?state=nope&code=x", "/oauth/callback?error=access_denied"} {
		if rec := navigate(uri); rec.Code != http.StatusBadRequest {
			t.Errorf("%s = %d; want 400", uri, rec.Code)
		}
	}
	if _, ok, _ := e.db.LatestGrant(ctx, "o2"); ok {
		t.Error("a refused callback left a grant")
	}
	if st := e.serverStatus("o2"); st != store.StatusSignIn {
		t.Errorf("status after refused callbacks = %q; want still %s", st, store.StatusSignIn)
	}
	// The kept sign-in, answered in its own browser, completes, once.
	if rec := navigate(kept, keptBind); rec.Code != http.StatusOK {
		t.Errorf("the callback with its cookie after a cookie-less hit = %d %s; want 200", rec.Code, truncate(rec.Body.String()))
	}
	if rec := navigate(kept, keptBind); rec.Code != http.StatusBadRequest {
		t.Errorf("the same callback again = %d; want 400 (answered once)", rec.Code)
	}
	// The session that started it logged out meanwhile.
	callback, bind = start()
	wantStatus(t, b.post("/logout", nil), http.StatusSeeOther)
	if rec := navigate(callback, bind); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "session") {
		t.Errorf("callback after a logout = %d %s; want 403", rec.Code, truncate(rec.Body.String()))
	}
}

// With a short-lived token, a verification after most of its life
// refreshes it first, without the person; once the grant is revoked at
// the authorization server (its refresh token spent elsewhere: reuse
// revokes it), the next verification asks to sign in again, and signing
// in again mends it.
func TestRefreshAndRevokedGrantThroughTheDashboard(t *testing.T) {
	issuer := oidctest.Start(t, "..", "--auto-approve", "--scopes", "mcp", "--access-ttl", "3")
	u := protectedFixture(t, issuer, "-oauth-scopes", "mcp")
	e := newEnv(t)
	e.addProtected("o3", u, nil)
	b := e.login()
	b.signIn("o3")
	waitFor(t, 20*time.Second, "verified after the sign-in", func() bool { return e.serverStatus("o3") == store.StatusSuccess })
	first := e.grant("o3")
	e.keepSecret(first)

	time.Sleep(time.Until(first.ExpiresAt.Add(-refreshLeadOf(first) / 2)))
	if job := e.verify("o3"); job.Status != "success" {
		t.Fatalf("verify near the token's expiry = %+v; want success after a refresh", job)
	}
	second := e.grant("o3")
	e.keepSecret(second)
	if second.AccessToken == first.AccessToken || second.RefreshToken == first.RefreshToken || !second.ExpiresAt.After(first.ExpiresAt) {
		t.Fatalf("after the verification: new access token %v, rotated refresh token %v, later expiry %v",
			second.AccessToken != first.AccessToken, second.RefreshToken != first.RefreshToken, second.ExpiresAt.After(first.ExpiresAt))
	}

	// Revoked: the spent refresh token used again (the provider revokes
	// the grant on reuse), then the current one used up elsewhere.
	v := discovery.NewVerifier(discovery.Limits{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	spent := oauth.Grant{Issuer: first.Issuer, TokenEndpoint: first.TokenEndpoint, Resource: first.Resource, ClientID: first.ClientID,
		ClientSecret: first.ClientSecret, AuthMethod: first.AuthMethod, RefreshToken: first.RefreshToken}
	v.RefreshAuth(ctx, &spent)
	current := spent
	current.RefreshToken = second.RefreshToken
	v.RefreshAuth(ctx, &current)
	if current.AccessToken != "" {
		e.secrets = append(e.secrets, current.AccessToken)
	}
	time.Sleep(time.Until(second.ExpiresAt.Add(-refreshLeadOf(second) / 2)))
	if job := e.verify("o3"); job.Status == "success" {
		t.Fatalf("verify after the grant was revoked = %v; want a sign-in asked for", job)
	}
	if st := e.serverStatus("o3"); st != store.StatusSignIn {
		t.Errorf("status = %q; want %s", st, store.StatusSignIn)
	}
	page := parseHTML(t, b.get("/servers/o3").Body.String())
	if got := testIDText(t, page, "grant-problem"); !strings.Contains(got, "sign in again") {
		t.Errorf("grant problem shown = %q; want it to say sign in again", got)
	}
	if got := testIDText(t, page, "signin-button"); got != "Sign in again" {
		t.Errorf("button = %q; want Sign in again", got)
	}
	b.signIn("o3")
	waitFor(t, 20*time.Second, "verified after signing in again", func() bool { return e.serverStatus("o3") == store.StatusSuccess })
	e.keepSecret(e.grant("o3"))
	if g := e.grant("o3"); g.Problem != "" {
		t.Errorf("grant problem after signing in again = %q", g.Problem)
	}
}

// refreshLeadOf mirrors the keeper's lead for a grant (the last third
// of a short token's life).
func refreshLeadOf(g store.Grant) time.Duration { return g.ExpiresAt.Sub(g.SavedAt) / 3 }

// An authorization server that registers no client: the sign-in says a
// client must be entered, and where; with the pre-registered client (its
// secret masked everywhere) the sign-in works.
func TestPreRegisteredClient(t *testing.T) {
	ctx := t.Context()
	const secret = "pre-registered-secret-4242"
	client := `{"client_id":"switchboard-pre","client_secret":"` + secret + `","redirect_uris":["http://` + testHost + `/oauth/callback"],` +
		`"token_endpoint_auth_method":"client_secret_basic","application_type":"native","grant_types":["authorization_code","refresh_token"]}`
	issuer := oidctest.Start(t, "..", "--auto-approve", "--scopes", "mcp", "--no-registration", "--client", client)
	u := protectedFixture(t, issuer, "-oauth-scopes", "mcp")
	e := newEnv(t)
	e.secrets = append(e.secrets, secret)
	e.addProtected("o4", u, nil)
	b := e.login()
	rec := b.htmx(http.MethodPost, "/servers/o4/signin", nil)
	if rec.Code != http.StatusNoContent || rec.Header().Get("HX-Redirect") != "" {
		t.Fatalf("Sign in without a client = %d, redirect %q; want no redirect, the problem on the page", rec.Code, rec.Header().Get("HX-Redirect"))
	}
	page := parseHTML(t, b.get("/servers/o4").Body.String())
	if got := testIDText(t, page, "signin-problem"); !strings.Contains(got, "neither") {
		t.Errorf("problem shown = %q; want it to say the server registers no client", got)
	}
	mustOne(t, page, testID("signin-client-link"))

	// The form asks for it; the API takes it, and never shows the secret.
	edit := b.get("/servers/o4/edit")
	if !strings.Contains(edit.Body.String(), "http://"+testHost+"/oauth/callback") {
		t.Error("the form does not say which callback URL to register")
	}
	// The answer of a GET sent back with the client added: the raw map.
	srv := decode(t, e.api(http.MethodGet, "/api/v1/servers/o4", nil))
	srv["oauth"] = map[string]any{"client_id": "switchboard-pre", "client_secret": secret, "scopes": []string{"mcp"}}
	delete(srv, "discovery")
	delete(srv, "sign_in")
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/o4", srv), http.StatusOK)
	if got := e.server("o4").OAuth; got == nil || got.ClientID != "switchboard-pre" || got.ClientSecret != "********" {
		t.Errorf("API oauth = %+v; want the client id and the secret masked", got)
	}
	// A form save that leaves the secret empty keeps it.
	form := url.Values{"name": {"Protected o4"}, "transport": {"http"}, "url": {u}, "default_policy": {"allow"}, "enabled": {"on"},
		"oauth_client_id": {"switchboard-pre"}, "oauth_client_secret": {""}, "oauth_scopes": {"mcp"}}
	wantStatus(t, b.post("/servers/o4", form), http.StatusSeeOther)
	if s, _ := e.db.Server(ctx, "o4"); s.OAuthSettings().ClientSecret != secret {
		t.Error("saving the form with an empty secret lost the stored secret")
	}

	// Not even an export with secrets carries it: client configs have no
	// place for a sign-in, and a secret must not travel where none is.
	for _, f := range []string{"claude", "vscode", "codex"} {
		rec := e.api(http.MethodGet, "/api/v1/export?format="+f+"&secrets=true", nil)
		wantStatus(t, rec, http.StatusOK)
	}

	b.signIn("o4")
	waitFor(t, 20*time.Second, "verified with the pre-registered client", func() bool { return e.serverStatus("o4") == store.StatusSuccess })
	g := e.grant("o4")
	e.keepSecret(g)
	if g.ClientID != "switchboard-pre" || g.AuthMethod != "client_secret_basic" {
		t.Errorf("grant client = %q by %q; want switchboard-pre by client_secret_basic", g.ClientID, g.AuthMethod)
	}
	b.get("/servers/o4")
}

// A token without the scope an operation needs (403
// insufficient_scope): the step-up asks for it and keeps what was
// granted; signing in again with both serves.
func TestStepUp(t *testing.T) {
	issuer := oidctest.Start(t, "..", "--auto-approve", "--scopes", "mcp admin")
	u := protectedFixture(t, issuer, "-oauth-scopes", "mcp admin", "-oauth-required-scope", "admin")
	e := newEnv(t)
	e.addProtected("o5", u, map[string]any{"oauth": map[string]any{"scopes": []string{"mcp"}}})
	b := e.login()
	b.signIn("o5")
	e.keepSecret(e.grant("o5"))
	waitFor(t, 20*time.Second, "the verification after the sign-in", func() bool {
		d := e.discovery("o5")
		return d.JobID == "" && d.Error != nil && d.Error.SignIn != nil && d.Error.SignIn.Error == "insufficient_scope"
	})
	page := parseHTML(t, b.get("/servers/o5").Body.String())
	if got := testIDText(t, page, "signin-scopes"); !strings.Contains(got, "admin") || !strings.Contains(got, "mcp") {
		t.Errorf("scopes asked for the step-up = %q; want admin with the granted mcp", got)
	}
	b.signIn("o5")
	waitFor(t, 20*time.Second, "verified after the step-up", func() bool { return e.serverStatus("o5") == store.StatusSuccess })
	g := e.grant("o5")
	e.keepSecret(g)
	if !strings.Contains(g.Scope, "admin") || !strings.Contains(g.Scope, "mcp") {
		t.Errorf("granted scope after the step-up = %q; want mcp and admin", g.Scope)
	}
}
