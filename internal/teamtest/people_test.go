package teamtest

import (
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/oidctest"
)

// oidcCallback is the callback the test's client is registered with: the
// test carries the provider's answer to whichever replica it likes.
const oidcCallback = "http://switchboard.test/login/oidc/callback"

// person is a browser signed in through the identity provider.
type person struct {
	email string
	http  *http.Client // its session cookie, for every replica (they share sessions)
	csrf  string
}

// signIn walks a browser through the provider: the sign-in begins on
// from, the provider's answer is carried to to.
func signIn(t *testing.T, from, to *replica, email string) *person {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	noFollow := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(from.base + "/login/oidc")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var state *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "switchboard_oidc" {
			state = c
		}
	}
	auth, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || state == nil {
		t.Fatalf("the sign-in on %s did not begin: %d %q", from.name, resp.StatusCode, resp.Header.Get("Location"))
	}
	q := auth.Query()
	q.Set("login_hint", email)
	auth.RawQuery = q.Encode()
	resp, err = noFollow.Get(auth.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, _ := url.Parse(resp.Header.Get("Location"))
	if !strings.HasPrefix(back.String(), oidcCallback) {
		t.Fatalf("the provider answered %d to %q", resp.StatusCode, back)
	}
	req, _ := http.NewRequest(http.MethodGet, to.base+"/login/oidc/callback?"+back.RawQuery, nil)
	req.AddCookie(state)
	resp, err = noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("the callback on %s for %s = %d to %q", to.name, email, resp.StatusCode, resp.Header.Get("Location"))
	}
	p := &person{email: email, http: &http.Client{Jar: jar, CheckRedirect: noFollow.CheckRedirect}}
	// The session cookie is the replica's host's: the same on every
	// replica (127.0.0.1), as behind one load balancer.
	page, err := p.http.Get(to.base + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer page.Body.Close()
	var b strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, err := page.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	m := regexp.MustCompile(`name="csrf-token" content="([0-9a-f]+)"`).FindStringSubmatch(b.String())
	if m == nil {
		t.Fatalf("%s signed in on %s has no page: %d", email, to.name, page.StatusCode)
	}
	p.csrf = m[1]
	return p
}

// status is what replica r answers p's request.
func (p *person) status(t *testing.T, r *replica, method, path string) int {
	t.Helper()
	var body *strings.Reader
	if method == http.MethodPost {
		body = strings.NewReader(url.Values{"_csrf": {p.csrf}}.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, _ := http.NewRequest(method, r.base+path, body)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("Origin", r.base)
	}
	if path == "/events" {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := p.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // a stream ends here
	return resp.StatusCode
}

// People sign in through the real authorization server (e2e/oidc) on a
// team's three replicas: a sign-in begun on one replica finishes on
// another, and each person's role is held on every replica and every
// class of route — pages, forms, the live stream (issue 38).
func TestPeopleSignInOnAnyReplica(t *testing.T) {
	client, _ := json.Marshal(map[string]any{"client_id": "switchboard-team", "redirect_uris": []string{oidcCallback},
		"grant_types": []string{"authorization_code"}, "token_endpoint_auth_method": "none"})
	issuer := oidctest.Start(t, "../..", "--auto-approve", "--client", string(client))
	etcd := startCluster(t)
	env := []string{"SWITCHBOARD_OIDC_ISSUER=" + issuer, "SWITCHBOARD_OIDC_CLIENT_ID=switchboard-team",
		"SWITCHBOARD_OIDC_REDIRECT_URL=" + oidcCallback, "SWITCHBOARD_OIDC_ALLOWED_DOMAINS=example.com"}
	a, b, c := startReplica(t, "A", etcd.clients, env...), startReplica(t, "B", etcd.clients, env...), startReplica(t, "C", etcd.clients, env...)
	rs := []*replica{a, b, c}

	// The first person of the deployment is admin; the others of the
	// allowed domain join as viewers; an admin makes one an approver.
	boss := signIn(t, a, b, "boss@example.com")
	ann := signIn(t, b, c, "ann@example.com")
	vic := signIn(t, c, a, "vic@example.com")
	var list struct {
		Users []struct{ ID, Email, Role string } `json:"users"`
	}
	json.Unmarshal(a.must(t, http.MethodGet, "/api/v1/users", nil, http.StatusOK), &list)
	roles := map[string]string{}
	for _, u := range list.Users {
		roles[u.Email] = u.Role
		if u.Email == "ann@example.com" {
			b.must(t, http.MethodPut, "/api/v1/users/"+u.ID, map[string]any{"role": "approver"}, http.StatusOK)
		}
	}
	if roles["boss@example.com"] != "admin" || roles["ann@example.com"] != "viewer" || roles["vic@example.com"] != "viewer" {
		t.Fatalf("roles after the first sign-ins: %v", roles)
	}

	// Every role on every replica: a page, the live stream, an
	// approver's form, an admin's form and page.
	routes := []struct {
		method, path, need string
	}{
		{http.MethodGet, "/", "viewer"},
		{http.MethodGet, "/events", "viewer"},
		{http.MethodPost, "/approvals/nope", "approver"},
		{http.MethodPost, "/verify-all", "approver"},
		{http.MethodGet, "/people", "admin"},
		{http.MethodPost, "/servers", "admin"},
	}
	rank := map[string]int{"viewer": 1, "approver": 2, "admin": 3}
	for _, who := range []struct {
		p    *person
		role string
	}{{boss, "admin"}, {ann, "approver"}, {vic, "viewer"}} {
		for _, r := range rs {
			for _, rt := range routes {
				got := who.p.status(t, r, rt.method, rt.path)
				if allowed := rank[who.role] >= rank[rt.need]; allowed == (got == http.StatusForbidden) {
					t.Errorf("%s (%s) on %s: %s %s = %d; its rule is %s", who.p.email, who.role, r.name, rt.method, rt.path, got, rt.need)
				}
			}
		}
	}
}
