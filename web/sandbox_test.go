package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// The permission profile is part of a stdio server in the API: a package
// runner gets its preset, visible and editable; a wrong field gets its
// own message.
func TestAPISandboxProfile(t *testing.T) {
	e := newEnv(t)
	body := fixtureServer("npx-one")
	body["command"] = "npx"
	body["args"] = []string{"-y", "@modelcontextprotocol/server-memory"}
	rec := e.api(http.MethodPost, "/api/v1/servers", body)
	wantStatus(t, rec, http.StatusCreated)
	got := decodeAs[apiServer](t, rec)
	if got.Sandbox == nil || got.Sandbox.Runner != "npx" || got.Sandbox.Network != "allow" || !slices.Contains(got.Sandbox.Allow, "registry.npmjs.org") ||
		!slices.Contains(got.Sandbox.Write, "~/.npm") {
		t.Errorf("sandbox of an npx server = %+v; want the npx preset (network allow, registry.npmjs.org, ~/.npm writable)", got.Sandbox)
	}

	body = fixtureServer("walled")
	body["sandbox"] = map[string]any{"network": "anywhere", "allow": []string{"example.com"}}
	rec = e.api(http.MethodPost, "/api/v1/servers", body)
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if m := decodeAs[apiError](t, rec); !strings.Contains(m.Fields["sandbox_network"], "anywhere") {
		t.Errorf("errors = %v; want one for sandbox_network naming the value", m.Fields)
	}

	body["sandbox"] = map[string]any{"network": "allow", "allow": []string{"api.example.com", "*.example.org:8443"}, "write": []string{"~/notes"}, "processes": 16}
	rec = e.api(http.MethodPost, "/api/v1/servers", body)
	wantStatus(t, rec, http.StatusCreated)
	got = decodeAs[apiServer](t, rec)
	if want := []string{"*.example.org:8443", "api.example.com"}; got.Sandbox == nil || !slices.Equal(got.Sandbox.Allow, want) || got.Sandbox.Processes != 16 {
		t.Errorf("sandbox = %+v; want allow %q and 16 processes, as sent", got.Sandbox, want)
	}
}

// Learn mode through the dashboard: a server that needs a host fails
// under network none with the host named; "Allow and verify again" puts
// it on the allow-list, and the next verification succeeds.
func TestAllowAndVerifyAgain(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	host := strings.TrimPrefix(up.URL, "http://")
	e := newEnv(t)
	body := fixtureServer("needy")
	body["args"] = []string{"-mode", "escape"}
	body["env"] = map[string]string{"FIXTURE_ESCAPE": "need:http=" + up.URL + "/"}
	e.createServer(body)
	if j := e.waitJob(e.verify("needy").ID); j.Status != "failed" {
		t.Fatalf("first verification = %s; want failed (network none)", j.Status)
	}
	d := e.discovery("needy")
	if d.Error == nil || d.Error.Refused == nil || len(d.Error.Refused.Hosts) != 1 || d.Error.Refused.Hosts[0].Reason == "" {
		t.Fatalf("error = %+v; want the refused host with its reason", d.Error)
	}
	b := e.login()
	page := parseHTML(t, b.get("/servers/needy").Body.String())
	if got := testIDText(t, page, "refused-host"); got != host {
		t.Errorf("refused host shown = %q; want %q", got, host)
	}
	rec := b.post("/servers/needy/sandbox/allow", url.Values{"host": {host}})
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("POST allow = %d; want 303\n%s", rec.Code, rec.Body)
	}
	waitFor(t, 2*time.Minute, "the verification after allowing", func() bool { return e.serverStatus("needy") == "success" })
	if srv := e.server("needy"); srv.Sandbox == nil || srv.Sandbox.Network != "allow" || !slices.Contains(srv.Sandbox.Allow, host) {
		t.Errorf("sandbox = %+v; want network allow with %s", srv.Sandbox, host)
	}
}
