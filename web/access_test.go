package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/web"
)

// public are the routes anyone may reach: health, the login and its
// callbacks, static files, and /mcp (which has its own tokens).
var public = regexp.MustCompile(`^(GET /healthz|GET /livez|GET /readyz|GET /metrics|GET /login|POST /login|GET /oauth/callback|GET /login/oidc|GET /login/oidc/callback|GET /static/\*|(GET|POST|DELETE) /mcp)$`)

// The rule table is whole: every route behind a sign-in has a rule, and
// every rule is a route's (issue 38: one rule table).
func TestEveryRouteHasARule(t *testing.T) {
	e := newEnv(t)
	rules := web.RouteRoles()
	seen := map[string]bool{}
	for _, r := range e.app.RouteTable() {
		key := r[0] + " " + r[1]
		if public.MatchString(key) || r[0] == "echo_route_not_found" || strings.HasSuffix(r[1], "/*") && r[1] != "/static/*" {
			continue
		}
		seen[key] = true
		if _, ok := rules[key]; !ok {
			t.Errorf("%s has no rule: add it to routeRoles", key)
		}
	}
	for key := range rules {
		if !seen[key] {
			t.Errorf("the rule %q names no route", key)
		}
	}
}

// What issue 38 says each role may do, written apart from the rule table
// so that a wrong rule fails here: viewers read only; approvers answer
// approvals, set policies and presets, approve changes and verify, but
// neither add, edit nor delete servers nor manage people or tokens.
func TestTheRuleTableSaysWhatTheIssueSays(t *testing.T) {
	rules := web.RouteRoles()
	for key, want := range map[string]string{
		"GET /":                      "viewer",
		"GET /servers/:id":           "viewer",
		"GET /events":                "viewer",
		"GET /api/v1/calls":          "viewer",
		"POST /approvals/:id":        "approver",
		"POST /api/v1/approvals/:id": "approver",
		"PUT /api/v1/servers/:id/tools/:name/policy": "approver",
		"PUT /api/v1/servers/:id/preset":             "approver",
		"POST /api/v1/servers/:id/approve":           "approver",
		"POST /api/v1/servers/:id/verify":            "approver",
		"POST /api/v1/servers":                       "admin",
		"PUT /api/v1/servers/:id":                    "admin",
		"DELETE /api/v1/servers/:id":                 "admin",
		"POST /servers":                              "admin",
		"POST /servers/:id/delete":                   "admin",
		"POST /api/v1/users":                         "admin",
		"PUT /api/v1/users/:id":                      "admin",
		"DELETE /api/v1/users/:id":                   "admin",
		"POST /api/v1/clients":                       "admin",
		"POST /agents/token":                         "admin",
		"GET /api/v1/backup":                         "admin",
		"GET /api/v1/export":                         "admin",
	} {
		if rules[key] != want {
			t.Errorf("%s: rule %q; want %q", key, rules[key], want)
		}
	}
}

// Each role may reach exactly the routes its rule allows, on every page,
// form, fragment, stream and API route: the API with a personal token,
// the pages with a session signed in with it. A refused request is 403
// and names the role it needs; an allowed one is never 403 (what it then
// answers, 404 or 422 for the made-up ids here, is the handler's).
func TestEachRoleReachesOnlyItsRoutes(t *testing.T) {
	e := newEnv(t)
	// The endpoint's shared MCP token is an admin's to see (checked below).
	e.secrets = slices.DeleteFunc(e.secrets, func(s string) bool { return s == testMCPToken })
	tokens := map[string]string{}
	for _, role := range []string{"viewer", "approver", "admin"} {
		rec := e.api(http.MethodPost, "/api/v1/users", map[string]any{"email": role + "@example.com", "role": role})
		wantStatus(t, rec, http.StatusCreated)
		var body struct {
			Token string `json:"token"`
		}
		json.Unmarshal(rec.Body.Bytes(), &body)
		tokens[role] = body.Token
		e.secrets = append(e.secrets, body.Token)
	}
	rank := map[string]int{"viewer": 1, "approver": 2, "admin": 3}
	fill := strings.NewReplacer(":id", "nope", ":name", "nope", ":agent", "nope__nope", ":call", "nope", ":server", "nope", ":tool", "nope")
	var keys []string
	for k := range web.RouteRoles() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for role, token := range tokens {
		b := e.loginAs(token)
		for _, key := range keys {
			need := web.RouteRoles()[key]
			method, path, _ := strings.Cut(key, " ")
			if key == "POST /logout" || key == "POST /logout/everywhere" || key == "DELETE /api/v1/sessions" || key == "GET /events" {
				continue // they end or hold the session the loop goes on with; checked below
			}
			path = fill.Replace(path)
			var rec *httptest.ResponseRecorder
			if strings.HasPrefix(path, "/api/") {
				rec = e.apiWith(token, method, path, "{}")
			} else if method == http.MethodGet {
				rec = b.get(path)
			} else {
				rec = b.post(path, url.Values{})
			}
			ruled := rec.Code == http.StatusForbidden && strings.Contains(rec.Body.String(), "needs the "+need+" role")
			if allowed := rank[role] >= rank[need]; allowed && rec.Code == http.StatusForbidden && strings.Contains(rec.Body.String(), " role; you are ") {
				t.Errorf("%s: %s refused by the rule table: %s", role, key, rec.Body.String())
			} else if !allowed && !ruled {
				t.Errorf("%s: %s = %d %.200s; want 403 naming the %s role", role, key, rec.Code, rec.Body.String(), need)
			}
			if role != "admin" && strings.Contains(rec.Body.String(), testMCPToken) {
				t.Errorf("%s: %s shows the endpoint's shared MCP token", role, key)
			}
		}
	}
	// What they change names them: the server the admin adds, the launch
	// the approver confirms.
	body, _ := json.Marshal(fixtureServer("named"))
	wantStatus(t, e.apiWith(tokens["admin"], http.MethodPost, "/api/v1/servers", string(body)), http.StatusCreated)
	wantStatus(t, e.apiWith(tokens["approver"], http.MethodPost, "/api/v1/servers/named/verify", `{"confirm": true}`), http.StatusAccepted)
	var named struct {
		UpdatedBy   string  `json:"updated_by"`
		ConfirmedBy string  `json:"confirmed_by"`
		ConfirmedAt *string `json:"confirmed_at"`
	}
	json.Unmarshal(e.api(http.MethodGet, "/api/v1/servers/named", nil).Body.Bytes(), &named)
	if named.UpdatedBy != "admin@example.com" || named.ConfirmedBy != "approver@example.com" || named.ConfirmedAt == nil {
		t.Errorf("server named: %+v; want added by admin@, its launch confirmed by approver@", named)
	}
	e.waitIdle("named")
	// The token of a client the admin connects names them too, on the
	// API and the Agents page.
	rec := e.apiWith(tokens["admin"], http.MethodPost, "/api/v1/clients", `{"name": "Ann's laptop"}`)
	wantStatus(t, rec, http.StatusCreated)
	var made struct {
		Client struct {
			CreatedBy string `json:"created_by"`
		} `json:"client"`
		Token string `json:"token"`
	}
	json.Unmarshal(rec.Body.Bytes(), &made)
	e.secrets = append(e.secrets, made.Token)
	if made.Client.CreatedBy != "admin@example.com" {
		t.Errorf("the client's token made by %q; want admin@example.com", made.Client.CreatedBy)
	}
	if page := e.loginAs(tokens["viewer"]).get("/agents"); !strings.Contains(testIDText(t, parseHTML(t, page.Body.String()), "client-made-by"), "admin@example.com") {
		t.Errorf("the Agents page does not say who made the client's token")
	}

	// Logging out everywhere is an admin's.
	wantStatus(t, e.apiWith(tokens["approver"], http.MethodDelete, "/api/v1/sessions", ""), http.StatusForbidden)
	rec = e.apiWith(tokens["viewer"], http.MethodPost, "/api/v1/users", `{"email": "eve@example.com", "role": "admin"}`)
	wantStatus(t, rec, http.StatusForbidden)
	if !strings.Contains(rec.Body.String(), "needs the admin role; you are viewer") {
		t.Errorf("a refusal does not say what it needs: %s", rec.Body.String())
	}
}
