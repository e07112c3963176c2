package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
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
// it on the allow-list and verifies again (the host is made up, so that
// run fails to resolve it: TestRealNpxLearnMode in discovery goes the
// whole way with the npm registry). A loopback host it was refused is
// listed without the button, and a click cannot allow it.
func TestAllowAndVerifyAgain(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	loopback := strings.TrimPrefix(up.URL, "http://")
	const host = "registry.example.com"
	e := newEnv(t)
	body := fixtureServer("needy")
	body["args"] = []string{"-mode", "escape"}
	body["env"] = map[string]string{"FIXTURE_ESCAPE": "http=" + up.URL + "/,need:http=http://" + host + "/"}
	e.createServer(body)
	if j := e.waitJob(e.verify("needy").ID); j.Status != "failed" {
		t.Fatalf("first verification = %s; want failed (network none)", j.Status)
	}
	d := e.discovery("needy")
	if d.Error == nil || d.Error.Refused == nil || len(d.Error.Refused.Hosts) != 2 {
		t.Fatalf("error = %+v; want both refused hosts", d.Error)
	}
	b := e.login()
	page := parseHTML(t, b.get("/servers/needy").Body.String())
	var shown []string
	page.Find(testID("refused-host")).Each(func(_ int, s *goquery.Selection) { shown = append(shown, textOf(s)) })
	if slices.Sort(shown); !slices.Equal(shown, []string{loopback, host}) && !slices.Equal(shown, []string{host, loopback}) {
		t.Errorf("refused hosts shown = %q; want %s and %s", shown, host, loopback)
	}
	var offered []string
	page.Find(`form[action="/servers/needy/sandbox/allow"] input[name="host"]`).Each(func(_ int, s *goquery.Selection) { offered = append(offered, s.AttrOr("value", "")) })
	if !slices.Equal(offered, []string{host}) {
		t.Errorf("hosts the button would allow = %q; want only %s (loopback is never one click away)", offered, host)
	}
	if rec := b.post("/servers/needy/sandbox/allow", url.Values{"host": {loopback}}); rec.Code != http.StatusBadRequest {
		t.Errorf("POST allow of the loopback host = %d; want 400", rec.Code)
	}
	if srv := e.server("needy"); srv.Sandbox != nil && slices.Contains(srv.Sandbox.Allow, loopback) {
		t.Fatalf("loopback was put on the allow-list: %+v", srv.Sandbox)
	}
	rec := b.post("/servers/needy/sandbox/allow", url.Values{"host": {host}})
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("POST allow = %d; want 303\n%s", rec.Code, rec.Body)
	}
	if srv := e.server("needy"); srv.Sandbox == nil || srv.Sandbox.Network != "allow" || !slices.Equal(srv.Sandbox.Allow, []string{host}) {
		t.Errorf("sandbox = %+v; want network allow with %s only", srv.Sandbox, host)
	}
	waitFor(t, 2*time.Minute, "the verification after allowing", func() bool {
		d := e.discovery("needy")
		return d.Error != nil && d.Error.Refused != nil && !slices.ContainsFunc(d.Error.Refused.Hosts, func(h apiRefusedHost) bool {
			return h.Host == "registry.example.com" && h.Reason == "not on the allow-list"
		})
	})
}

// On the launch confirmation, a folder the arguments name can be taken
// out of the grants and put back; the launch it changes is shown again.
func TestConfirmChoosesArgPaths(t *testing.T) {
	e := newEnv(t)
	folder, other := t.TempDir(), t.TempDir()
	body := fixtureServer("args")
	body["args"] = []string{"-tools", "1", folder, other}
	e.createServer(body)
	b := e.login()
	page := parseHTML(t, b.get("/servers/args/confirm").Body.String())
	if n := page.Find(testID("arg-path")).Length(); n != 2 {
		t.Fatalf("%d arg paths on the confirmation; want 2 (%s, %s)", n, folder, other)
	}
	hash := page.Find(`input[name="confirm"]`).AttrOr("value", "")
	rec := b.post("/servers/args/sandbox/arg-paths", url.Values{"path": {folder}})
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/servers/args/confirm" {
		t.Fatalf("POST skip = %d %s; want 303 to the confirmation", rec.Code, rec.Header().Get("Location"))
	}
	if sb := e.server("args").Sandbox; sb == nil || !slices.Equal(sb.SkipArgPaths, []string{folder}) {
		t.Fatalf("sandbox = %+v; want %s not granted", sb, folder)
	}
	page = parseHTML(t, b.get("/servers/args/confirm").Body.String())
	if got := testIDText(t, page, "arg-path"); !strings.Contains(got, other) {
		t.Errorf("granted arg path = %q; want only %s", got, other)
	}
	if got := testIDText(t, page, "skipped-path"); !strings.Contains(got, folder) {
		t.Errorf("not granted = %q; want %s", got, folder)
	}
	if h := page.Find(`input[name="confirm"]`).AttrOr("value", ""); h == "" || h == hash {
		t.Errorf("launch hash %q after taking a path out; want a new one (was %q)", h, hash)
	}
	b.post("/servers/args/sandbox/arg-paths", url.Values{"path": {folder}, "grant": {"1"}})
	if sb := e.server("args").Sandbox; sb == nil || len(sb.SkipArgPaths) != 0 {
		t.Errorf("sandbox = %+v; want every arg path granted again", sb)
	}
	if rec := b.post("/servers/args/sandbox/arg-paths", url.Values{"path": {"/etc"}}); rec.Code != http.StatusBadRequest {
		t.Errorf("POST a path the arguments do not name = %d; want 400", rec.Code)
	}
}

// A profile that may write the home is warned of on the confirmation:
// what runs at the next log-in is in it.
func TestConfirmWarnsOfHomeWritten(t *testing.T) {
	e := newEnv(t)
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home here")
	}
	b := e.login()
	for id, args := range map[string][]string{"homely": {"-tools", "1", home}, "tidy": {"-tools", "1", t.TempDir()}} {
		body := fixtureServer(id)
		body["args"] = args
		e.createServer(body)
		page := parseHTML(t, b.get("/servers/"+id+"/confirm").Body.String())
		if n := page.Find(testID("sandbox-home-written")).Length(); (n == 1) != (id == "homely") {
			t.Errorf("%s (args %q): %d home warnings; want one only when the home is granted", id, args, n)
		}
	}
}
