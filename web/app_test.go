package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// apiRoutes is every JSON API route, with a concrete path.
var apiRoutes = []struct{ method, path string }{
	{http.MethodGet, "/api/v1/servers"},
	{http.MethodPost, "/api/v1/servers"},
	{http.MethodGet, "/api/v1/servers/s1"},
	{http.MethodPut, "/api/v1/servers/s1"},
	{http.MethodDelete, "/api/v1/servers/s1"},
	{http.MethodPost, "/api/v1/servers/s1/verify"},
	{http.MethodGet, "/api/v1/servers/s1/tools"},
	{http.MethodPut, "/api/v1/servers/s1/tools/tool_000/policy"},
	{http.MethodGet, "/api/v1/jobs/job_1"},
	{http.MethodPost, "/api/v1/jobs/job_1/cancel"},
	{http.MethodGet, "/api/v1/tools"},
	{http.MethodGet, "/api/v1/backup"},
}

func TestAPIRequiresBearerToken(t *testing.T) {
	e := newEnv(t)
	e.createServer(fixtureServer("s1"))
	n := 0
	for _, rt := range apiRoutes {
		for _, auth := range []string{"", "Bearer wrong-token", "Bearer ", "bearer test-token-x", "Basic dGVzdC10b2tlbg==", testToken} {
			r := newRequest(rt.method, rt.path, strings.NewReader(`{"policy":"deny"}`))
			// From many addresses, to stay under the failure limit
			// (TestFailedAuthIsRateLimited).
			n++
			r.RemoteAddr = "198.18.0." + strconv.Itoa(n%200+10) + ":1"
			if auth != "" {
				r.Header.Set("Authorization", auth)
			}
			rec := e.serve(r)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("%s %s with Authorization %q: status %d, want 401", rt.method, rt.path, auth, rec.Code)
				continue
			}
			if m := decodeAs[apiError](t, rec); m.Error == "" {
				t.Errorf("%s %s: 401 body %+v has no error", rt.method, rt.path, m)
			}
		}
	}
	// Nothing changed.
	rec := e.api(http.MethodGet, "/api/v1/servers/s1", nil)
	wantStatus(t, rec, http.StatusOK)
	// The scheme is case-insensitive.
	r := newRequest(http.MethodGet, "/api/v1/servers/s1", nil)
	r.Header.Set("Authorization", "bearer "+testToken)
	wantStatus(t, e.serve(r), http.StatusOK)
}

func TestHealthzIsOpen(t *testing.T) {
	e := newEnv(t)
	rec := e.serve(newRequest(http.MethodGet, "/healthz", nil))
	wantStatus(t, rec, http.StatusOK)
	if diff := cmp.Diff(map[string]any{"status": "ok", "replica": "local", "leader": true, "checks": map[string]any{"store": "ok"}}, decodeAs[map[string]any](t, rec)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func TestPagesWithoutSession(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	e.createServer(fixtureServer("s1"))
	pages := []string{"/", "/servers/new", "/servers/s1", "/servers/s1/edit", "/fragments/servers", "/servers/s1/tools"}
	for _, p := range pages {
		for _, cookie := range []string{"", "not-a-session"} {
			r := newRequest(http.MethodGet, p, nil)
			if cookie != "" {
				r.AddCookie(&http.Cookie{Name: "switchboard_session", Value: cookie})
			}
			rec := e.serve(r)
			if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/login" {
				t.Errorf("GET %s (cookie %q): %d Location %q, want 303 to /login", p, cookie, rec.Code, rec.Header().Get("Location"))
			}
		}
		// htmx requests get a 401 the page can show, not a redirect.
		r := newRequest(http.MethodGet, p, nil)
		r.Header.Set("HX-Request", "true")
		if rec := e.serve(r); rec.Code != http.StatusUnauthorized {
			t.Errorf("htmx GET %s: %d, want 401", p, rec.Code)
		}
	}
	unauth := []struct{ method, path string }{
		{http.MethodGet, "/events"},
		{http.MethodPost, "/servers"},
		{http.MethodPost, "/servers/s1"},
		{http.MethodPost, "/servers/s1/delete"},
		{http.MethodPost, "/servers/s1/verify"},
		{http.MethodPost, "/servers/s1/policy"},
		{http.MethodPost, "/jobs/job_1/cancel"},
		{http.MethodPost, "/logout"},
	}
	for _, rt := range unauth {
		r := newRequest(rt.method, rt.path, strings.NewReader("id=x&transport=stdio&command=true"))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		if rec := e.serve(r); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s %s without session: %d, want 401", rt.method, rt.path, rec.Code)
		}
	}
	// The server is still there, unverified.
	srv, err := e.db.Summary(ctx, "s1")
	if err != nil || srv.Discovery.Status != "never" {
		t.Errorf("server after unauthenticated requests: %+v, %v", srv.Discovery, err)
	}
}

func TestLoginCodeWorksOnce(t *testing.T) {
	e := newEnv(t)
	rec := e.serve(newRequest(http.MethodGet, "/login?code="+loginCode, nil))
	wantStatus(t, rec, http.StatusSeeOther)
	if loc := rec.Header().Get("Location"); loc != "/" {
		t.Errorf("Location = %q, want / (a clean URL without the code)", loc)
	}
	var ck *http.Cookie
	for _, c := range rec.Result().Cookies() {
		if c.Name == "switchboard_session" {
			ck = c
		}
	}
	if ck == nil {
		t.Fatal("no session cookie")
	}
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/", ck)
	}
	if strings.Contains(ck.Value, loginCode) || strings.Contains(ck.Value, testToken) {
		t.Errorf("cookie value %q contains the code or the token", ck.Value)
	}
	r := newRequest(http.MethodGet, "/", nil)
	r.AddCookie(ck)
	wantStatus(t, e.serve(r), http.StatusOK)

	// Second use of the code.
	rec = e.serve(newRequest(http.MethodGet, "/login?code="+loginCode, nil))
	wantStatus(t, rec, http.StatusUnauthorized)
	if len(rec.Result().Cookies()) != 0 {
		t.Errorf("a used code set cookies: %v", rec.Result().Cookies())
	}
	doc := parseHTML(t, rec.Body.String())
	if msg := testIDText(t, doc, "login-error"); !strings.Contains(msg, "already used") {
		t.Errorf("login error = %q", msg)
	}
	// A wrong code on a fresh app is refused too, and does not use up the
	// right one.
	e2 := newEnv(t)
	wantStatus(t, e2.serve(newRequest(http.MethodGet, "/login?code=wrong", nil)), http.StatusUnauthorized)
	wantStatus(t, e2.serve(newRequest(http.MethodGet, "/login?code="+loginCode, nil)), http.StatusSeeOther)
}

func TestLoginWithToken(t *testing.T) {
	e := newEnv(t)
	post := func(token string, hdr map[string]string) int {
		r := newRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		rec := e.serve(r)
		if rec.Code == http.StatusSeeOther && len(rec.Result().Cookies()) == 0 {
			t.Errorf("login with %q: redirect without cookie", token)
		}
		if rec.Code != http.StatusSeeOther && len(rec.Result().Cookies()) != 0 {
			t.Errorf("login with %q refused (%d) but set a cookie", token, rec.Code)
		}
		return rec.Code
	}
	same := map[string]string{"Sec-Fetch-Site": "same-origin"}
	if got := post("wrong", same); got != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", got)
	}
	if got := post("", same); got != http.StatusUnauthorized {
		t.Errorf("empty token: %d, want 401", got)
	}
	if got := post(testToken, map[string]string{"Sec-Fetch-Site": "cross-site"}); got != http.StatusForbidden {
		t.Errorf("cross-site login: %d, want 403", got)
	}
	if got := post(testToken, map[string]string{"Origin": "http://evil.example"}); got != http.StatusForbidden {
		t.Errorf("login from another origin: %d, want 403", got)
	}
	if got := post(testToken, same); got != http.StatusSeeOther {
		t.Errorf("right token: %d, want 303", got)
	}
	b := e.loginWithToken()
	wantStatus(t, b.get("/"), http.StatusOK)
}

func TestLogoutEndsSession(t *testing.T) {
	e := newEnv(t)
	b := e.login()
	other := e.loginWithToken()
	// GET /logout changes nothing.
	if rec := b.get("/logout"); rec.Code == http.StatusSeeOther || rec.Code == http.StatusOK {
		t.Errorf("GET /logout: %d", rec.Code)
	}
	wantStatus(t, b.get("/"), http.StatusOK)

	rec := b.post("/logout", nil)
	wantStatus(t, rec, http.StatusSeeOther)
	if loc := rec.Header().Get("Location"); loc != "/login" {
		t.Errorf("Location = %q", loc)
	}
	cleared := false
	for _, c := range rec.Result().Cookies() {
		if c.Name == "switchboard_session" && c.MaxAge < 0 {
			cleared = true
		}
	}
	if !cleared {
		t.Error("logout did not clear the cookie")
	}
	// The old cookie no longer works, even if the browser keeps sending it.
	rec = b.get("/")
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/login" {
		t.Errorf("GET / after logout: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if rec := b.post("/servers", url.Values{"id": {"x"}}); rec.Code != http.StatusUnauthorized {
		t.Errorf("POST after logout: %d, want 401", rec.Code)
	}
	// Another session is not affected.
	wantStatus(t, other.get("/"), http.StatusOK)
}

func TestHostCheck(t *testing.T) {
	e := newEnv(t)
	b := e.loginWithToken()
	paths := []string{"/", "/static/app.js", "/events", "/api/v1/servers", "/healthz", "/login", "/login?code=" + loginCode}
	for _, host := range []string{"evil.example", "evil.example:7420", "127.0.0.1.evil.example", "localhost.evil.example:7420", ""} {
		for _, p := range paths {
			r := b.request(http.MethodGet, p, nil)
			r.Host = host
			r.Header.Set("Authorization", "Bearer "+testToken)
			rec := e.serve(r)
			if rec.Code != http.StatusForbidden {
				t.Errorf("GET %s with Host %q: %d, want 403", p, host, rec.Code)
			}
		}
	}
	for _, host := range []string{"localhost:7420", "[::1]:7420", "127.0.0.1", "LOCALHOST:7420", "localhost"} {
		for _, p := range []string{"/", "/static/app.js", "/api/v1/servers", "/healthz"} {
			r := b.request(http.MethodGet, p, nil)
			r.Host = host
			r.Header.Set("Authorization", "Bearer "+testToken)
			if rec := e.serve(r); rec.Code != http.StatusOK {
				t.Errorf("GET %s with Host %q: %d, want 200", p, host, rec.Code)
			}
		}
	}
	// The refused login link was not used up.
	wantStatus(t, e.serve(newRequest(http.MethodGet, "/login?code="+loginCode, nil)), http.StatusSeeOther)

	// Extra allowed hosts.
	e2 := newEnv(t, func(c *webConfig) { c.AllowedHosts = []string{"Switchboard.Internal"} })
	r := newRequest(http.MethodGet, "/healthz", nil)
	r.Host = "switchboard.internal:7420"
	wantStatus(t, e2.serve(r), http.StatusOK)
	r = newRequest(http.MethodGet, "/healthz", nil)
	r.Host = "other.internal:7420"
	wantStatus(t, e2.serve(r), http.StatusForbidden)
}

func TestCSRF(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	b := e.login()
	form := func(id string) url.Values {
		return url.Values{"id": {id}, "transport": {"stdio"}, "command": {fixtureBin}, "enabled": {"on"}}
	}
	send := func(id string, mod func(h http.Header, f url.Values)) int {
		f := form(id)
		h := http.Header{}
		mod(h, f)
		r := b.request(http.MethodPost, "/servers", strings.NewReader(f.Encode()))
		for k, v := range h {
			r.Header[k] = v
		}
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return e.serve(r).Code
	}
	exists := func(id string) bool {
		_, err := e.db.Server(ctx, id)
		return err == nil
	}
	other := e.loginWithToken() // another session, for its token
	cases := []struct {
		name string
		mod  func(h http.Header, f url.Values)
		want int
	}{
		{"no token", func(h http.Header, f url.Values) { h.Set("Sec-Fetch-Site", "same-origin") }, http.StatusForbidden},
		{"wrong token", func(h http.Header, f url.Values) {
			h.Set("Sec-Fetch-Site", "same-origin")
			f.Set("_csrf", "0000")
		}, http.StatusForbidden},
		{"cross-site with token", func(h http.Header, f url.Values) {
			h.Set("Sec-Fetch-Site", "cross-site")
			f.Set("_csrf", b.csrf)
		}, http.StatusForbidden},
		{"same-site with token", func(h http.Header, f url.Values) {
			h.Set("Sec-Fetch-Site", "same-site")
			h.Set("X-CSRF-Token", b.csrf)
		}, http.StatusForbidden},
		{"other origin with token", func(h http.Header, f url.Values) {
			h.Set("Origin", "http://evil.example")
			f.Set("_csrf", b.csrf)
		}, http.StatusForbidden},
		{"null origin without fetch metadata", func(h http.Header, f url.Values) {
			h.Set("Origin", "null")
			f.Set("_csrf", b.csrf)
		}, http.StatusForbidden},
		{"token of another session", func(h http.Header, f url.Values) {
			h.Set("Sec-Fetch-Site", "same-origin")
			f.Set("_csrf", other.csrf)
		}, http.StatusForbidden},
		{"form field token", func(h http.Header, f url.Values) {
			h.Set("Sec-Fetch-Site", "same-origin")
			f.Set("_csrf", b.csrf)
		}, http.StatusSeeOther},
		{"header token", func(h http.Header, f url.Values) {
			h.Set("Sec-Fetch-Site", "same-origin")
			h.Set("X-CSRF-Token", b.csrf)
		}, http.StatusSeeOther},
		{"same origin header, no fetch metadata", func(h http.Header, f url.Values) {
			h.Set("Origin", "http://"+testHost)
			f.Set("_csrf", b.csrf)
		}, http.StatusSeeOther},
		{"null origin with fetch metadata", func(h http.Header, f url.Values) {
			h.Set("Origin", "null")
			h.Set("Sec-Fetch-Site", "same-origin")
			f.Set("_csrf", b.csrf)
		}, http.StatusSeeOther},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "csrf-" + string(rune('a'+i))
			if got := send(id, c.mod); got != c.want {
				t.Errorf("status %d, want %d", got, c.want)
			}
			if want := c.want == http.StatusSeeOther; exists(id) != want {
				t.Errorf("server created = %v, want %v", exists(id), want)
			}
		})
	}
}

func TestGETHasNoSideEffects(t *testing.T) {
	e := newEnv(t)
	b := e.login()
	e.createServer(fixtureServer("s1"))
	for _, p := range []string{"/servers/s1/verify", "/servers/s1/delete", "/logout"} {
		if rec := b.get(p); rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("GET %s: %d, want 404 or 405", p, rec.Code)
		}
	}
	for _, p := range []string{"/api/v1/servers/s1/verify", "/api/v1/jobs/x/cancel"} {
		if rec := e.api(http.MethodGet, p, nil); rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("GET %s: %d, want 404 or 405", p, rec.Code)
		}
	}
	if d := e.discovery("s1"); d.Status != "never" || d.JobID != "" {
		t.Errorf("discovery after GETs = %+v, want never verified and no job", d)
	}
	wantStatus(t, b.get("/"), http.StatusOK) // session still valid
}

func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t)
	b := e.login()
	e.createServer(fixtureServer("s1"))
	check := func(what string, rec interface{ Header() http.Header }, cache bool) {
		t.Helper()
		h := rec.Header()
		// Exactly this: data: URLs for images and media alone (a Try it
		// result's), nothing else loosened.
		const wantCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
			"media-src data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
		if csp := h.Get("Content-Security-Policy"); csp != wantCSP {
			t.Errorf("%s: CSP = %q; want %q", what, csp, wantCSP)
		}
		for k, v := range map[string]string{
			"X-Frame-Options":        "DENY",
			"X-Content-Type-Options": "nosniff",
			"Referrer-Policy":        "no-referrer",
		} {
			if got := h.Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q", what, k, got, v)
			}
		}
		if cache {
			if got := h.Get("Cache-Control"); got != "no-store" {
				t.Errorf("%s: Cache-Control = %q, want no-store", what, got)
			}
		}
	}
	for _, p := range []string{"/", "/servers/new", "/servers/s1", "/servers/s1/edit", "/servers/nope"} {
		rec := b.get(p)
		check("GET "+p, rec, true)
		body := rec.Body.String()
		if strings.Contains(body, testToken) {
			t.Errorf("GET %s: the page contains the token", p)
		}
		if p == "/servers/nope" {
			wantStatus(t, rec, http.StatusNotFound)
			continue
		}
		wantStatus(t, rec, http.StatusOK)
		// No inline script: every script is a same-origin file.
		for _, s := range parseHTML(t, body).Find("script").EachIter() {
			if src := s.AttrOr("src", ""); !strings.HasPrefix(src, "/static/") || textOf(s) != "" {
				t.Errorf("GET %s: script src=%q with %d bytes inline", p, src, len(textOf(s)))
			}
		}
	}
	login := e.serve(newRequest(http.MethodGet, "/login", nil))
	check("GET /login", login, true)
	check("GET /api/v1/servers", e.api(http.MethodGet, "/api/v1/servers", nil), true)
	check("GET /static/app.js", b.get("/static/app.js"), false)
	check("403 host", e.serve(func() *http.Request { r := newRequest(http.MethodGet, "/", nil); r.Host = "evil.example"; return r }()), true)
}

func TestNotFoundPages(t *testing.T) {
	e := newEnv(t)
	b := e.login()
	rec := b.get("/servers/nope")
	wantStatus(t, rec, http.StatusNotFound)
	if msg := testIDText(t, parseHTML(t, rec.Body.String()), "error-message"); !strings.Contains(msg, "no server") {
		t.Errorf("404 message = %q", msg)
	}
	rec = b.htmx(http.MethodGet, "/servers/nope/tools", nil)
	wantStatus(t, rec, http.StatusNotFound)
	if got := testIDText(t, parseFragment(t, rec.Body.String()), "alert"); got == "" {
		t.Error("htmx 404 without alert text")
	}
	rec = e.api(http.MethodGet, "/api/v1/servers/nope", nil)
	wantStatus(t, rec, http.StatusNotFound)
	if decodeAs[apiError](t, rec).Error == "" {
		t.Error("API 404 without error")
	}
	rec = e.api(http.MethodGet, "/api/v1/nothing-here", nil)
	wantStatus(t, rec, http.StatusNotFound)
	decodeAs[apiError](t, rec)
}
