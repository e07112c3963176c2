package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Turning the shared token off (serve -no-shared-token) leaves it no way
// in: not the token itself, not the one-time login link (it logs in as
// the token's holder), not a browser session it opened before; people
// get in with their personal tokens (issue 38).
func TestTheSharedTokenTurnedOffLetsNobodyInWithIt(t *testing.T) {
	on := newEnv(t)
	rec := on.apiWith(testToken, http.MethodPost, "/api/v1/users", `{"email": "ann@example.com", "role": "admin"}`)
	wantStatus(t, rec, http.StatusCreated)
	var made struct{ Token string }
	json.Unmarshal(rec.Body.Bytes(), &made)
	before := on.login() // the shared holder's session, from the link

	off := newEnvOn(t, on.db.Store(), func(c *webConfig) { c.NoSharedToken = true })
	if rec := off.apiWith(testToken, http.MethodGet, "/api/v1/servers", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("the shared token on the API = %d; want 401", rec.Code)
	}
	if rec := off.serve(newRequest(http.MethodGet, "/login?code="+loginCode, nil)); rec.Code != http.StatusUnauthorized ||
		!strings.Contains(rec.Body.String(), "Login links are off here") || len(rec.Result().Cookies()) > 0 {
		t.Errorf("the login link = %d %q; want it refused, saying why, with no session", rec.Code, truncate(rec.Body.String()))
	}
	if rec := off.serve(before.request(http.MethodGet, "/", nil)); rec.Code == http.StatusOK {
		t.Errorf("the shared holder's browser session from before = %d; want it refused", rec.Code)
	}
	if rec := off.apiWith(made.Token, http.MethodGet, "/api/v1/servers", ""); rec.Code != http.StatusOK {
		t.Errorf("ann's personal token = %d; want 200", rec.Code)
	}
	page := off.loginAs(made.Token).get("/people")
	if page.Code != http.StatusOK || strings.Contains(page.Body.String(), "The shared API token is on") {
		t.Errorf("ann's People page = %d; want it, not saying the shared token is on", page.Code)
	}
}
