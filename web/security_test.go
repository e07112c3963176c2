package web_test

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// concrete fills a route's parameters with values that exist in the test.
var concrete = strings.NewReplacer(":id", "s1", ":name", "tool_000", ":agent", "s1__tool_000", "*", "app.js")

// routeClass says how a route is guarded: "public" (no credentials),
// "api" (bearer token), "mcp" (the MCP endpoint's own bearer token) or
// "ui" (session cookie, CSRF token to change).
func routeClass(path string) string {
	switch {
	case path == "/mcp":
		return "mcp"
	case path == "/healthz" || path == "/livez" || path == "/readyz" || path == "/login" || path == "/oauth/callback" || path == "/login/oidc" || path == "/login/oidc/callback" || strings.HasPrefix(path, "/static/"):
		return "public"
	case strings.HasPrefix(path, "/api/") || path == "/metrics":
		return "api"
	}
	return "ui"
}

// TestEveryRouteIsGuarded walks the whole route table, so a route added
// later is held to the same rules without editing this test: without
// credentials a page redirects to the login and everything else is 401;
// a foreign Host is 403 everywhere (DNS rebinding); a foreign Origin and
// a cross-site or same-site fetch are 403 everywhere, with valid
// credentials; a cross-site state change is 403 and changes nothing.
func TestEveryRouteIsGuarded(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	e.createServer(fixtureServer("s1"))
	b := e.login()
	routes := e.app.RouteTable()
	sort.Slice(routes, func(i, j int) bool { return routes[i][1]+routes[i][0] < routes[j][1]+routes[j][0] })
	classes := map[string]int{}

	// req is a request to the route that cannot hang the test: a guard
	// that fails on /events would otherwise open an endless stream.
	req := func(method, path string) *http.Request {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		t.Cleanup(cancel)
		return newRequest(method, path, strings.NewReader("{}")).WithContext(ctx)
	}
	// withAuth adds valid credentials of the route's class.
	withAuth := func(r *http.Request, class string) *http.Request {
		switch class {
		case "api":
			r.Header.Set("Authorization", "Bearer "+testToken)
		case "mcp":
			r.Header.Set("Authorization", "Bearer "+testMCPToken)
		case "ui":
			r.AddCookie(b.cookie)
			r.Header.Set("X-CSRF-Token", b.csrf)
		}
		return r
	}
	for _, rt := range routes {
		method, path := rt[0], concrete.Replace(rt[1])
		class := routeClass(rt[1])
		classes[class]++
		name := method + " " + path

		// No credentials.
		if class != "public" {
			r := req(method, path)
			r.Header.Set("Sec-Fetch-Site", "same-origin")
			rec := e.serve(r)
			switch {
			case class == "ui" && method == http.MethodGet && path != "/events":
				if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/login" {
					t.Errorf("%s without a session = %d to %q; want 303 to /login", name, rec.Code, rec.Header().Get("Location"))
				}
			case rec.Code != http.StatusUnauthorized:
				t.Errorf("%s without credentials = %d; want 401", name, rec.Code)
			}
		}

		// A foreign Host, even with valid credentials.
		for _, host := range []string{"evil.example", "evil.example:7420", "localhost.evil.example", "127.0.0.1.nip.io:7420"} {
			r := withAuth(req(method, path), class)
			r.Host = host
			if rec := e.serve(r); rec.Code != http.StatusForbidden {
				t.Errorf("%s with Host %s = %d; want 403", name, host, rec.Code)
			}
		}

		// A foreign Origin or a cross-site fetch, with valid credentials.
		for _, h := range []map[string]string{
			{"Origin": "http://evil.example"},
			{"Origin": "http://localhost:3000"}, // another local app
			{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"},
			{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors"},
		} {
			r := withAuth(req(method, path), class)
			for k, v := range h {
				r.Header.Set(k, v)
			}
			if rec := e.serve(r); rec.Code != http.StatusForbidden {
				t.Errorf("%s with %v = %d; want 403", name, h, rec.Code)
			}
		}

		// A cross-site top-level navigation may read a page (it carries
		// no SameSite=Strict cookie), but never change anything.
		r := req(method, path)
		r.Header.Set("Sec-Fetch-Site", "cross-site")
		r.Header.Set("Sec-Fetch-Mode", "navigate")
		rec := e.serve(r)
		if method != http.MethodGet && rec.Code != http.StatusForbidden {
			t.Errorf("cross-site %s navigation = %d; want 403", name, rec.Code)
		}
	}
	if classes["public"] != 9 || classes["api"] < 12 || classes["ui"] < 15 || classes["mcp"] != 3 {
		t.Errorf("route classes = %v; want the 9 public routes (the login, its two sign-ins with the identity provider, the remote servers' callback, health, liveness, readiness, static) and every API and UI route", classes)
	}
	// Nothing changed and nothing ran.
	if sum, err := e.db.Summary(ctx, "s1"); err != nil || sum.Discovery.Status != "never" || sum.Server.Name != "Fixture s1" {
		t.Errorf("server after refused requests: %+v %+v, %v", sum.Server, sum.Discovery, err)
	}
}

// TestSecretsNeverEcho: a server that prints its secret env value on
// stdout (garbage for the protocol) and stderr, then fails, has that value
// in none of what Switchboard shows: not in the API's error and stderr
// tail, the page, the SSE frames or the log (e.serve and newEnv check every
// body and log line for e.secrets).
func TestSecretsNeverEcho(t *testing.T) {
	e := newEnv(t)
	// A quote, so that escaping (JSON, HTML) would hide an unredacted
	// value from a plain search: each escaped form is searched for too.
	const secret = `leaky"secret-value-77`
	e.secrets = append(e.secrets, secret, `leaky\"secret-value-77`, `leaky&#34;secret-value-77`, `leaky\u0022secret-value-77`)
	e.createServer(map[string]any{
		"id": "leak", "name": "Leak", "transport": "stdio", "command": "sh",
		"args": []string{"-c", `printf 'my token is %s\n' "$LEAK_TOKEN" >&2; printf 'garbage %s\n' "$LEAK_TOKEN"; sleep 1; exit 3`},
		"env":  map[string]string{"LEAK_TOKEN": secret},
	})
	b := e.login()
	srv, client := e.liveServer()
	s := b.openEvents(srv, client)
	s.until(t, 5*time.Second, "snapshot", named("status-leak"))

	job := e.verify("leak")
	if job.Status == "success" {
		t.Fatalf("verify of a server printing garbage = %v; want a failure", job)
	}
	seen := s.until(t, 10*time.Second, "failure pushed", func(ev sseEvent) bool {
		return ev.name == "status-leak" && strings.Contains(ev.text(), `data-testid="verify-error"`)
	})
	for _, ev := range seen {
		e.checkNoSecrets("SSE event "+ev.name, ev.text())
	}
	final := seen[len(seen)-1].text()
	if !strings.Contains(final, "[redacted]") {
		t.Errorf("failure shown = %q; want the secret shown as [redacted]", final)
	}
	rec := e.api(http.MethodGet, "/api/v1/servers/leak", nil)
	if !strings.Contains(rec.Body.String(), "[redacted]") {
		t.Errorf("API answer = %s; want the stderr tail with [redacted]", rec.Body.String())
	}
	wantStatus(t, b.get("/servers/leak"), http.StatusOK)
}
