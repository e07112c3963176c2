package web_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/mark3labs/mcp-go/mcp"
)

// connectWithProfile makes a client token of the profile through the API
// and returns it.
func (e *env) connectWithProfile(name, profile string) string {
	e.t.Helper()
	rec := e.api(http.MethodPost, "/api/v1/clients", map[string]any{"name": name, "profile": profile})
	wantStatus(e.t, rec, http.StatusCreated)
	body := decodeAs[struct {
		Client apiClient `json:"client"`
		Token  string    `json:"token"`
	}](e.t, rec)
	if body.Client.Profile != profile {
		e.t.Fatalf("client made with profile %s = %+v", profile, body.Client)
	}
	return body.Token
}

func (e *env) createProfile(body map[string]any) apiProfile {
	e.t.Helper()
	rec := e.api(http.MethodPost, "/api/v1/profiles", body)
	wantStatus(e.t, rec, http.StatusCreated)
	return decodeAs[profileAnswer](e.t, rec).Profile
}

// Profiles through the API: made, read, listed after the default,
// changed, previewed with agent names and the policy that applies, and
// refused by field when wrong; one that tokens belong to is not deleted.
func TestProfileAPI(t *testing.T) {
	m := newMCPSetup(t)
	e := m.e
	p := e.createProfile(map[string]any{"id": "beta-only", "name": "Beta only", "mode": "servers", "servers": []string{"beta"}})
	if p.ID != "beta-only" || p.Mode != "servers" || !slices.Equal(p.Servers, []string{"beta"}) || p.CreatedAt.IsZero() {
		t.Errorf("created = %+v", p)
	}
	if got := decodeAs[profileAnswer](t, e.api(http.MethodGet, "/api/v1/profiles/beta-only", nil)).Profile; got.Name != "Beta only" {
		t.Errorf("GET = %+v", got)
	}
	list := decodeAs[profilesAnswer](t, e.api(http.MethodGet, "/api/v1/profiles", nil)).Profiles
	if len(list) != 2 || list[0].ID != "default" || list[1].ID != "beta-only" {
		t.Errorf("profiles = %+v; want default, then beta-only", list)
	}
	preview := decodeAs[previewAnswer](t, e.api(http.MethodGet, "/api/v1/profiles/beta-only/preview", nil))
	if len(preview.Tools) != 1 || preview.Tools[0] != (apiOfferedTool{AgentName: "beta__read", ServerID: "beta", Tool: "read", EffectivePolicy: "allow"}) {
		t.Errorf("preview = %+v; want beta__read at allow", preview)
	}

	rec := e.api(http.MethodPut, "/api/v1/profiles/beta-only", map[string]any{"name": "Picked", "mode": "tools",
		"tools":     []map[string]string{{"server_id": "alpha", "tool": "read"}, {"server_id": "alpha", "tool": "write"}},
		"overrides": []map[string]string{{"server_id": "alpha", "tool": "read", "policy": "ask"}}})
	wantStatus(t, rec, http.StatusOK)
	if got := decodeAs[profileAnswer](t, rec).Profile; got.Name != "Picked" || len(got.Tools) != 2 || len(got.Overrides) != 1 || got.CreatedAt != p.CreatedAt {
		t.Errorf("PUT = %+v; want two tools, one override, its creation time kept", got)
	}
	preview = decodeAs[previewAnswer](t, e.api(http.MethodGet, "/api/v1/profiles/beta-only/preview", nil))
	if len(preview.Tools) != 2 || preview.Tools[0].AgentName != "alpha__read" || preview.Tools[0].EffectivePolicy != "ask" || preview.Tools[1].EffectivePolicy != "ask" {
		t.Errorf("preview after PUT = %+v; want alpha__read made ask, alpha__write ask", preview.Tools)
	}

	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
		want  string
	}{
		{"bad slug", map[string]any{"id": "Not A Slug", "name": "x", "mode": "all"}, "id", "an id is"},
		{"default id", map[string]any{"id": "default", "name": "x", "mode": "all"}, "id", "built in"},
		{"taken id", map[string]any{"id": "beta-only", "name": "x", "mode": "all"}, "id", "exists"},
		{"no name", map[string]any{"id": "x", "mode": "all"}, "name", "a name"},
		{"bad mode", map[string]any{"id": "x", "name": "x", "mode": "some"}, "mode", "the mode is"},
		{"unknown server", map[string]any{"id": "x", "name": "x", "mode": "servers", "servers": []string{"gamma"}}, "servers", `no server "gamma"`},
		{"unknown tool", map[string]any{"id": "x", "name": "x", "mode": "tools", "tools": []map[string]string{{"server_id": "alpha", "tool": "nope"}}}, "tools", `no tool "nope"`},
		{"override not stricter", map[string]any{"id": "x", "name": "x", "mode": "all", "overrides": []map[string]string{{"server_id": "alpha", "tool": "write", "policy": "ask"}}}, "overrides", "not stricter"},
		{"override allow", map[string]any{"id": "x", "name": "x", "mode": "all", "overrides": []map[string]string{{"server_id": "alpha", "tool": "read", "policy": "allow"}}}, "overrides", "ask or deny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.in(t).api(http.MethodPost, "/api/v1/profiles", tc.body)
			wantStatus(t, rec, http.StatusUnprocessableEntity)
			if got := decodeAs[apiError](t, rec); !strings.Contains(got.Fields[tc.field], tc.want) || len(got.Fields) != 1 {
				t.Errorf("POST %v = %+v; want %s: …%s…", tc.body, got, tc.field, tc.want)
			}
		})
	}
	wantStatus(t, e.api(http.MethodPost, "/api/v1/profiles", map[string]any{"id": "x", "surprise": 1}), http.StatusBadRequest)
	rec = e.api(http.MethodPost, "/api/v1/clients", map[string]any{"name": "Cursor", "profile": "nope"})
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if got := decodeAs[apiError](t, rec); got.Fields["profile"] == "" {
		t.Errorf("client of an unknown profile = %+v; want a profile field error", got)
	}

	e.connectWithProfile("Cursor", "beta-only")
	rec = e.api(http.MethodDelete, "/api/v1/profiles/beta-only", nil)
	wantStatus(t, rec, http.StatusConflict)
	if got := decodeAs[apiError](t, rec); !strings.Contains(got.Error, "revoke them") {
		t.Errorf("delete of a profile in use = %+v", got)
	}
	wantStatus(t, e.api(http.MethodDelete, "/api/v1/profiles/default", nil), http.StatusConflict)
	wantStatus(t, e.api(http.MethodPut, "/api/v1/profiles/default", map[string]any{"name": "x", "mode": "all"}), http.StatusConflict)
	wantStatus(t, e.api(http.MethodGet, "/api/v1/profiles/nope/preview", nil), http.StatusNotFound)
	e.createProfile(map[string]any{"id": "spare", "name": "Spare", "mode": "all"})
	wantStatus(t, e.api(http.MethodDelete, "/api/v1/profiles/spare", nil), http.StatusNoContent)
	wantStatus(t, e.api(http.MethodGet, "/api/v1/profiles/spare", nil), http.StatusNotFound)
}

// Two clients connected at once with different profiles see different
// offers; a call outside a profile is refused as of an unknown tool, a
// deny override refuses with its reason, an ask override waits for a
// person; the audit names the profile; list_changed reaches only the
// client whose view changed.
func TestProfileOffers(t *testing.T) {
	m := newMCPSetup(t, func(c *webConfig) { c.MCP.AskTimeout = 1500 * time.Millisecond })
	e := m.e
	e.createProfile(map[string]any{"id": "beta-only", "name": "Beta only", "mode": "servers", "servers": []string{"beta"}})
	e.createProfile(map[string]any{"id": "strict", "name": "Strict", "mode": "tools",
		"tools":     []map[string]string{{"server_id": "alpha", "tool": "read"}, {"server_id": "alpha", "tool": "odd.name-v2"}, {"server_id": "beta", "tool": "read"}},
		"overrides": []map[string]string{{"server_id": "alpha", "tool": "read", "policy": "deny"}, {"server_id": "beta", "tool": "read", "policy": "ask"}}})
	betaOnly := connectMCP(t, m.base, e.connectWithProfile("Beta agent", "beta-only"))
	strict := connectMCP(t, m.base, e.connectWithProfile("Strict agent", "strict"))
	all := connectMCP(t, m.base, testMCPToken)
	modern := connectMCPAs(t, m.base, e.connectWithProfile("Modern beta", "beta-only"), mcp.ProtocolVersion20260728, mcp.Implementation{Name: "modern-beta", Version: "1"})

	if got := betaOnly.names(t); !slices.Equal(got, []string{"beta__read"}) {
		t.Errorf("beta-only tools/list = %q; want beta__read", got)
	}
	if got := modern.names(t); !slices.Equal(got, []string{"beta__read"}) {
		t.Errorf("beta-only tools/list (2026-07-28) = %q; want beta__read", got)
	}
	if got := strict.names(t); len(got) != 2 || !slices.Contains(got, "beta__read") || slices.Contains(got, "alpha__read") {
		t.Errorf("strict tools/list = %q; want beta__read and the odd name, alpha__read denied", got)
	}
	if got := all.names(t); len(got) != 6 {
		t.Errorf("the endpoint token's tools/list = %q; want all 6 offered", got)
	}

	t.Run("a call outside the profile is refused as of an unknown tool", func(t *testing.T) {
		e := e.in(t)
		_, err := betaOnly.call("alpha__read", map[string]any{})
		if err == nil || !strings.Contains(err.Error(), `no tool is offered as "alpha__read"`) {
			t.Errorf("beta-only calls alpha__read = %v; want refused as unknown", err)
		}
		if call := e.waitCall(1); call.Profile != "beta-only" || call.Decision != "denied" || call.ConnectedAs != "Beta agent" {
			t.Errorf("audited = %+v; want denied, profile beta-only", call)
		}
		if res, err := betaOnly.call("beta__read", map[string]any{}); err != nil || res.IsError {
			t.Errorf("beta-only calls beta__read = %v, %v; want it through", res, err)
		}
		if call := e.waitCall(2); call.Profile != "beta-only" || call.Outcome != "ok" {
			t.Errorf("audited = %+v; want ok, profile beta-only", call)
		}
		if _, err := all.call("alpha__read", map[string]any{}); err != nil {
			t.Errorf("the default calls alpha__read = %v", err)
		}
		if call := e.waitCall(3); call.Profile != "default" || call.Outcome != "ok" {
			t.Errorf("audited = %+v; want ok, profile default", call)
		}
	})
	t.Run("a deny override refuses with its reason", func(t *testing.T) {
		e := e.in(t)
		_, err := strict.call("alpha__read", map[string]any{})
		if err == nil || !strings.Contains(err.Error(), `the profile "strict" of this client denies the tool`) {
			t.Errorf("strict calls alpha__read = %v; want refused by the profile", err)
		}
		if call := e.waitCall(4); call.Profile != "strict" || call.Decision != "denied" || call.DecidedBy != "policy" {
			t.Errorf("audited = %+v", call)
		}
	})
	t.Run("an ask override waits for a person", func(t *testing.T) {
		e := e.in(t)
		// A program reading the approvals counts as someone to ask: read
		// them before the call, or it may be refused at once for want of
		// anyone (as it is on a busy machine, when the call comes first).
		e.approvals()
		done := make(chan error, 1)
		go func() { _, err := strict.call("beta__read", map[string]any{}); done <- err }()
		var id string
		waitFor(t, 5*time.Second, "the approval waiting", func() bool {
			if a := e.approvals(); len(a) == 1 {
				id = a[0].ID
			}
			return id != ""
		})
		wantStatus(t, e.api(http.MethodPost, "/api/v1/approvals/"+id, map[string]any{"decision": "approve"}), http.StatusOK)
		if err := <-done; err != nil {
			t.Errorf("approved call = %v", err)
		}
		if call := e.waitCall(5); call.Profile != "strict" || call.Decision != "approved" || call.DecidedBy != "api" {
			t.Errorf("audited = %+v; want approved by the API under strict", call)
		}
	})
	t.Run("a call approved after its profile denied the tool is refused", func(t *testing.T) {
		e := e.in(t)
		done := make(chan error, 1)
		go func() { _, err := strict.call("beta__read", map[string]any{}); done <- err }()
		var id string
		waitFor(t, 5*time.Second, "the approval waiting", func() bool {
			if a := e.approvals(); len(a) == 1 {
				id = a[0].ID
			}
			return id != ""
		})
		wantStatus(t, e.api(http.MethodPut, "/api/v1/profiles/strict", map[string]any{"name": "Strict", "mode": "tools",
			"tools":     []map[string]string{{"server_id": "alpha", "tool": "odd.name-v2"}, {"server_id": "beta", "tool": "read"}},
			"overrides": []map[string]string{{"server_id": "beta", "tool": "read", "policy": "deny"}}}), http.StatusOK)
		wantStatus(t, e.api(http.MethodPost, "/api/v1/approvals/"+id, map[string]any{"decision": "approve"}), http.StatusOK)
		if err := <-done; err == nil || !strings.Contains(err.Error(), `while the call waited: the profile "strict" of this client stopped offering the tool`) {
			t.Errorf("call approved after the profile denied it = %v; want refused", err)
		}
		e.waitCall(6)
	})
	t.Run("list_changed reaches only the clients whose view changed", func(t *testing.T) {
		e := e.in(t)
		stop, err := modern.ListenAsync(context.Background(), mcp.SubscriptionFilter{ToolsListChanged: true}, func(err error) { t.Errorf("listen: %v", err) })
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		waitFor(t, 5*time.Second, "the listen stream acknowledged", func() bool { return modern.acknowledged.Load() == 1 })
		time.Sleep(quietPeriod) // the sessions' GET streams open in the background
		b, s, a, mo := betaOnly.listChanged.Load(), strict.listChanged.Load(), all.listChanged.Load(), modern.listChanged.Load()
		// A tool outside beta-only's and strict's views.
		e.setPolicy("alpha", "write", "deny")
		waitFor(t, 5*time.Second, "list_changed for the default", func() bool { return all.listChanged.Load() > a })
		time.Sleep(quietPeriod)
		if betaOnly.listChanged.Load() != b || strict.listChanged.Load() != s || modern.listChanged.Load() != mo {
			t.Errorf("a tool outside their views told beta-only %d, strict %d, modern %d times", betaOnly.listChanged.Load()-b, strict.listChanged.Load()-s, modern.listChanged.Load()-mo)
		}
		// Another profile's change.
		a = all.listChanged.Load()
		wantStatus(t, e.api(http.MethodPut, "/api/v1/profiles/strict", map[string]any{"name": "Strict", "mode": "tools",
			"tools": []map[string]string{{"server_id": "beta", "tool": "read"}}}), http.StatusOK)
		waitFor(t, 5*time.Second, "list_changed for strict", func() bool { return strict.listChanged.Load() > s })
		if got := strict.names(t); !slices.Equal(got, []string{"beta__read"}) {
			t.Errorf("strict after its edit = %q; want beta__read", got)
		}
		time.Sleep(quietPeriod)
		if betaOnly.listChanged.Load() != b || modern.listChanged.Load() != mo || all.listChanged.Load() != a {
			t.Errorf("strict's edit told beta-only %d, modern %d, default %d times", betaOnly.listChanged.Load()-b, modern.listChanged.Load()-mo, all.listChanged.Load()-a)
		}
		// A change in beta-only's view.
		e.setPolicy("beta", "read", "deny")
		waitFor(t, 5*time.Second, "list_changed for beta-only's session", func() bool { return betaOnly.listChanged.Load() > b })
		waitFor(t, 5*time.Second, "list_changed on beta-only's listen stream", func() bool { return modern.listChanged.Load() > mo })
		if got := betaOnly.names(t); len(got) != 0 {
			t.Errorf("beta-only after beta read was denied = %q; want nothing", got)
		}
	})
}

// The Profiles pages: a profile is made, changed and deleted through
// forms with CSRF, its preview shows what its agents see, and the
// new-client form offers it.
func TestProfilePages(t *testing.T) {
	m := newMCPSetup(t)
	e := m.e
	b := e.login()
	doc := parseHTML(t, b.get("/profiles").Body.String())
	if rows := doc.Find(testID("profile-row")); rows.Length() != 1 || textOf(rows.Find(testID("profile-offered"))) != "6 tools" {
		t.Fatalf("profiles page = %d rows (%q); want the default offering 6", rows.Length(), textOf(rows))
	}
	form := parseHTML(t, b.get("/profiles/new").Body.String())
	if n := form.Find(testID("profile-tool")).Length(); n < 8 {
		t.Errorf("new profile form offers %d tools to pick; want each of the catalog's", n)
	}

	bad := b.post("/profiles", url.Values{"id": {"Bad Id"}, "name": {"x"}, "mode": {"all"}})
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	if got := testIDText(t, parseHTML(t, bad.Body.String()), "error-id"); !strings.Contains(got, "an id is") {
		t.Errorf("bad id error = %q", got)
	}
	tab := e.openTab(b)
	rec := b.post("/profiles", url.Values{"id": {"pick"}, "name": {"Picked"}, "mode": {"tools"},
		"tool": {"alpha read", "beta read"}, "override": {"", "ask alpha read"}})
	wantStatus(t, rec, http.StatusSeeOther)
	tab.until(t, 5*time.Second, "the profiles list told to reload", func(ev sseEvent) bool { return ev.name == "profiles" })
	live := parseHTML(t, b.get("/profiles").Body.String())
	if list := mustOne(t, live, "#profiles"); list.AttrOr("hx-trigger", "") != "sse:profiles queue:last" || list.Find(testID("profile-row")).Length() != 2 {
		t.Errorf("profiles list = %q rows %d; want it reloading on the profiles event, with pick", list.AttrOr("hx-trigger", ""), list.Find(testID("profile-row")).Length())
	}
	if loc := rec.Header().Get("Location"); loc != "/profiles/pick" {
		t.Fatalf("created, redirected to %q", loc)
	}
	doc = parseHTML(t, b.get("/profiles/pick").Body.String())
	var names []string
	doc.Find(testID("preview-agent-name")).Each(func(_ int, s *goquery.Selection) { names = append(names, textOf(s)) })
	if !slices.Equal(names, []string{"alpha__read", "beta__read"}) {
		t.Errorf("preview = %q; want alpha__read, beta__read", names)
	}

	wantStatus(t, b.post("/profiles/pick", url.Values{"name": {"Picked"}, "mode": {"servers"}, "server": {"beta"}}), http.StatusSeeOther)
	p := decodeAs[profileAnswer](t, e.api(http.MethodGet, "/api/v1/profiles/pick", nil)).Profile
	if p.Mode != "servers" || !slices.Equal(p.Servers, []string{"beta"}) || len(p.Tools) != 0 {
		t.Errorf("after the edit = %+v; want servers beta", p)
	}
	// Search mode on the form: a pinned tool outside the view is marked
	// on its field; one in it is kept, and the preview says what a
	// search-mode agent is listed.
	bad = b.post("/profiles/pick", url.Values{"name": {"Picked"}, "mode": {"servers"}, "server": {"beta"}, "search": {"on"}, "pinned": {"alpha read"}})
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	if got := testIDText(t, parseHTML(t, bad.Body.String()), "error-pinned"); !strings.Contains(got, "not in the profile's view") {
		t.Errorf("pinned outside the view error = %q", got)
	}
	wantStatus(t, b.post("/profiles/pick", url.Values{"name": {"Picked"}, "mode": {"servers"}, "server": {"beta"}, "search": {"on"}, "pinned": {"beta read"}}), http.StatusSeeOther)
	doc = parseHTML(t, b.get("/profiles/pick").Body.String())
	if got := testIDText(t, doc, "profile-preview-search"); !strings.Contains(got, "search_tools and call_tool, and the pinned beta__read") {
		t.Errorf("search-mode preview = %q; want search_tools, call_tool and the pinned beta__read", got)
	}
	if _, checked := mustOne(t, doc, testID("profile-search")).Attr("checked"); !checked || doc.Find(testID("preview-pinned")).Length() != 1 {
		t.Errorf("search-mode form: search box checked %v, %d pinned in the preview; want checked, 1", checked, doc.Find(testID("preview-pinned")).Length())
	}
	if p := decodeAs[profileAnswer](t, e.api(http.MethodGet, "/api/v1/profiles/pick", nil)).Profile; !p.Search || len(p.Pinned) != 1 || p.Pinned[0] != (apiToolRef{ServerID: "beta", Tool: "read"}) {
		t.Errorf("after the search-mode edit = %+v; want search, beta/read pinned", p)
	}
	e.secrets = slices.DeleteFunc(e.secrets, func(s string) bool { return s == testMCPToken }) // the Agents page shows it
	agents := parseHTML(t, b.get("/agents").Body.String())
	if opts := agents.Find(testID("client-profile") + " option"); opts.Length() != 2 {
		t.Errorf("new-client form profiles = %d; want default and pick", opts.Length())
	}

	noCSRF := b.request(http.MethodPost, "/profiles/pick/delete", strings.NewReader(""))
	noCSRF.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if rec := e.serve(noCSRF); rec.Code != http.StatusForbidden {
		t.Errorf("delete without CSRF = %d; want 403", rec.Code)
	}
	wantStatus(t, b.post("/profiles/pick/delete", nil), http.StatusSeeOther)
	wantStatus(t, e.api(http.MethodGet, "/api/v1/profiles/pick", nil), http.StatusNotFound)
}
