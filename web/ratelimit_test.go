package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestFailedAuthIsRateLimited: after ten wrong tokens from one address,
// every wrong token from it — bearer or login form — is refused with 429
// and Retry-After; the right token still passes (issue 34, L2: all of
// loopback is one client, and another local user's failures must not
// lock the owner out); other addresses are not affected, and a request
// without credentials does not count. Login links have a budget of their
// own (TestLoginLinksAndTokensHaveSeparateBudgets).
func TestFailedAuthIsRateLimited(t *testing.T) {
	e := newEnv(t)
	from := func(r *http.Request, addr string) *http.Request { r.RemoteAddr = addr + ":4242"; return r }
	bearer := func(addr, token string) int {
		r := from(newRequest(http.MethodGet, "/api/v1/servers", nil), addr)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		return e.serve(r).Code
	}
	for range 20 {
		if got := bearer("198.51.100.7", ""); got != http.StatusUnauthorized {
			t.Fatalf("no credentials = %d; want 401", got)
		}
	}
	for i := range 10 {
		if got := bearer("198.51.100.7", "wrong-"+string(rune('a'+i))); got != http.StatusUnauthorized {
			t.Fatalf("wrong token #%d = %d; want 401", i+1, got)
		}
	}
	r := from(newRequest(http.MethodGet, "/api/v1/servers", nil), "198.51.100.7")
	r.Header.Set("Authorization", "Bearer wrong-once-more")
	rec := e.serve(r)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("a wrong token after 10 failures = %d, Retry-After %q; want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	if !strings.Contains(rec.Body.String(), "too many failed attempts") {
		t.Errorf("429 body = %s; want the reason", rec.Body.String())
	}
	if got := bearer("198.51.100.7", testToken); got != http.StatusOK {
		t.Errorf("right token after 10 failures = %d; want 200", got)
	}
	loginWith := func(token string) int {
		login := from(newRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"token": {token}}.Encode())), "198.51.100.7")
		login.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		login.Header.Set("Sec-Fetch-Site", "same-origin")
		return e.serve(login).Code
	}
	if got := loginWith("nope"); got != http.StatusTooManyRequests {
		t.Errorf("a wrong token in the login form after 10 failures = %d; want 429", got)
	}
	if got := loginWith(testToken); got != http.StatusSeeOther {
		t.Errorf("the right token in the login form after 10 failures = %d; want 303 (logged in)", got)
	}

	// Another address is unaffected.
	if got := bearer("203.0.113.9", testToken); got != http.StatusOK {
		t.Errorf("right token from another address = %d; want 200", got)
	}

	// Wrong tokens in the login form count as well.
	for range 10 {
		wrong := from(newRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"token": {"nope"}}.Encode())), "192.0.2.50")
		wrong.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		wrong.Header.Set("Sec-Fetch-Site", "same-origin")
		wantStatus(t, e.serve(wrong), http.StatusUnauthorized)
	}
	if got := bearer("192.0.2.50", "wrong"); got != http.StatusTooManyRequests {
		t.Errorf("a wrong bearer token after 10 wrong ones in the login form = %d; want 429", got)
	}
	// The login link was not used up by any of it.
	wantStatus(t, e.serve(from(newRequest(http.MethodGet, "/login?code="+loginCode, nil), "198.51.100.7")), http.StatusSeeOther)
}
