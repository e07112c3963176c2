package web_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
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
