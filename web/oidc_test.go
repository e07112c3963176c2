package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/oidctest"
	"github.com/switchboard-dev/switchboard/web"
)

// oidcRedirect is the callback the test's client is registered with.
const oidcRedirect = "http://" + testHost + "/login/oidc/callback"

// oidcEnv is an app that signs people in through a real authorization
// server (e2e/oidc/provider.mjs, oidc-provider), which signs in whoever an
// authorization request's login_hint names.
func oidcEnv(t *testing.T, cfg web.OIDCConfig) (*env, string) {
	t.Helper()
	client, _ := json.Marshal(map[string]any{"client_id": "switchboard-dashboard", "redirect_uris": []string{oidcRedirect},
		"grant_types": []string{"authorization_code"}, "token_endpoint_auth_method": "none"})
	issuer := oidctest.Start(t, "..", "--auto-approve", "--client", string(client),
		"--groups", `{"ops@partner.test": ["switchboard-ops"]}`)
	cfg.Issuer, cfg.ClientID, cfg.RedirectURL = issuer, "switchboard-dashboard", oidcRedirect
	return newEnv(t, func(c *webConfig) { c.OIDC = &cfg }), issuer
}

// signIn walks a browser through the sign-in as email: Switchboard's
// redirect, the provider's answer (its redirect back), the callback. It
// returns the callback's answer.
func (e *env) signIn(email string, tamper func(q url.Values)) *httptest.ResponseRecorder {
	e.t.Helper()
	start := e.serve(newRequest(http.MethodGet, "/login/oidc", nil))
	wantStatus(e.t, start, http.StatusSeeOther)
	var state *http.Cookie
	for _, c := range start.Result().Cookies() {
		if c.Name == "switchboard_oidc" {
			state = c
		}
	}
	if state == nil || !state.HttpOnly || state.SameSite != http.SameSiteLaxMode {
		e.t.Fatalf("the sign-in's cookie: %+v", state)
	}
	auth, _ := url.Parse(start.Header().Get("Location"))
	q := auth.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("nonce") == "" || q.Get("state") == "" || !strings.Contains(q.Get("scope"), "openid") {
		e.t.Fatalf("the authorization request lacks PKCE, nonce, state or openid: %s", auth)
	}
	q.Set("login_hint", email)
	auth.RawQuery = q.Encode()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(auth.String())
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(back.String(), oidcRedirect) {
		e.t.Fatalf("the provider answered %d, to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	bq := back.Query()
	if tamper != nil {
		tamper(bq)
	}
	r := newRequest(http.MethodGet, "/login/oidc/callback?"+bq.Encode(), nil)
	r.AddCookie(state)
	return e.serve(r)
}

// signedIn is the browser a successful sign-in as email gives.
func (e *env) signedIn(email string) *browser {
	e.t.Helper()
	rec := e.signIn(email, nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/" {
		e.t.Fatalf("sign-in as %s = %d to %q: %s", email, rec.Code, rec.Header().Get("Location"), rec.Body.String())
	}
	return e.browserFrom(rec)
}

// People sign in with the company's identity provider: the first person
// of a deployment without people is admin, the -admin email is admin,
// people of an allowed domain or group join as viewers, anyone else is
// refused; a forged state or a spent code signs nobody in; and what a
// signed-in person changes names them (issue 38).
func TestSignInWithTheIdentityProvider(t *testing.T) {
	e, _ := oidcEnv(t, web.OIDCConfig{AllowedDomains: []string{"example.com"}, AllowedGroups: []string{"switchboard-ops"}, Admin: "boss@corp.test"})
	first := e.signedIn("ann@example.com")
	bob := e.signedIn("bob@example.com")
	e.signedIn("boss@corp.test")
	e.signedIn("ops@partner.test")
	roles := map[string]string{}
	var list struct {
		Users []struct {
			Email, Role string
			LastSignIn  *string `json:"last_sign_in"`
		} `json:"users"`
	}
	json.Unmarshal(e.api(http.MethodGet, "/api/v1/users", nil).Body.Bytes(), &list)
	for _, u := range list.Users {
		roles[u.Email] = u.Role
		if u.LastSignIn == nil {
			t.Errorf("%s: no last sign-in", u.Email)
		}
	}
	want := map[string]string{"ann@example.com": "admin", "bob@example.com": "viewer", "boss@corp.test": "admin", "ops@partner.test": "viewer"}
	for email, role := range want {
		if roles[email] != role {
			t.Errorf("%s signed in as %q; want %s (people: %v)", email, roles[email], role, roles)
		}
	}

	// Nobody else; nothing forged.
	if rec := e.signIn("eve@elsewhere.test", nil); rec.Code != http.StatusForbidden {
		t.Errorf("an outsider's sign-in = %d; want 403", rec.Code)
	}
	if rec := e.signIn("bob@example.com", func(q url.Values) { q.Set("state", "forged") }); rec.Code != http.StatusBadRequest {
		t.Errorf("a forged state = %d; want 400", rec.Code)
	}
	if rec := e.signIn("bob@example.com", func(q url.Values) { q.Set("code", "not-a-code") }); rec.Code != http.StatusUnauthorized {
		t.Errorf("a made-up code = %d; want 401", rec.Code)
	}
	if rec := e.signIn("bob@example.com", func(q url.Values) { q.Set("iss", "http://evil.test") }); rec.Code != http.StatusUnauthorized {
		t.Errorf("an answer naming another issuer = %d; want 401", rec.Code)
	}

	// A viewer reads and changes nothing; what the admin changes names her.
	e.verifyFixture("fx")
	wantStatus(t, bob.get("/servers/fx"), http.StatusOK)
	wantStatus(t, bob.htmx(http.MethodPost, "/servers/fx/policy", url.Values{"tool": {"tool_000"}, "key": {"0"}, "policy": {"deny"}}), http.StatusForbidden)
	if rec := first.htmx(http.MethodPost, "/servers/fx/policy", url.Values{"tool": {"tool_000"}, "key": {"0"}, "policy": {"deny"}}); rec.Code >= 400 {
		t.Fatalf("the admin's policy change = %d %s", rec.Code, rec.Body.String())
	}
	if tl := e.apiTools("fx")["tool_000"]; tl.Policy != "deny" || tl.PolicySetBy != "ann@example.com" {
		t.Errorf("tool_000 = %s set by %q; want deny set by ann@example.com", tl.Policy, tl.PolicySetBy)
	}

	// Removed, bob's session ends at his next request.
	var bobID string
	var ids struct {
		Users []struct{ ID, Email string } `json:"users"`
	}
	json.Unmarshal(e.api(http.MethodGet, "/api/v1/users", nil).Body.Bytes(), &ids)
	for _, u := range ids.Users {
		if u.Email == "bob@example.com" {
			bobID = u.ID
		}
	}
	wantStatus(t, e.api(http.MethodDelete, "/api/v1/users/"+bobID, nil), http.StatusNoContent)
	if rec := bob.get("/servers/fx"); rec.Code != http.StatusSeeOther && rec.Code != http.StatusUnauthorized {
		t.Errorf("a removed person's session = %d; want it ended", rec.Code)
	}
}
