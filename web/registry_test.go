package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/registry/registrytest"
)

// registryPage is GET /api/v1/registry/servers' answer.
type registryPage struct {
	Servers []struct {
		Server struct {
			Name    string `json:"name"`
			Title   string `json:"title"`
			Version string `json:"version"`
		} `json:"server"`
		Meta struct {
			Registry string   `json:"registry"`
			Status   string   `json:"status"`
			Latest   string   `json:"latest"`
			Versions []string `json:"versions"`
			Added    []string `json:"added"`
		} `json:"_meta"`
	} `json:"servers"`
	Metadata struct {
		NextCursor string `json:"nextCursor"`
		Count      int    `json:"count"`
	} `json:"metadata"`
	Copies []struct {
		Registry    string `json:"registry"`
		PulledAt    string `json:"pulled_at"`
		Entries     int    `json:"entries"`
		ReadThrough bool   `json:"read_through"`
	} `json:"copies"`
}

// The Registry page and API browse a registry from its copy, pages and
// all; a server is added in one step, its launch pinned to the version,
// its required secret refused when missing and kept sealed when given;
// nothing runs before a person confirms the launch; what a registry
// sends is shown as text (issue 39).
func TestBrowseAndAddFromARegistry(t *testing.T) {
	reg := registrytest.Start(t, append(registrytest.Seed(), registrytest.Filler(130)...))
	e := newEnv(t, func(c *webConfig) { c.Registries = []string{reg.URL} })
	wantStatus(t, e.api(http.MethodPost, "/api/v1/registry/refresh", nil), http.StatusOK)

	var page registryPage
	json.Unmarshal(e.api(http.MethodGet, "/api/v1/registry/servers?limit=100", nil).Body.Bytes(), &page)
	if page.Metadata.Count != 100 || page.Metadata.NextCursor == "" || len(page.Copies) != 1 || page.Copies[0].PulledAt == "" || page.Copies[0].Entries < 137 {
		t.Fatalf("the first page = %d servers, next %q, copies %+v", page.Metadata.Count, page.Metadata.NextCursor, page.Copies)
	}
	var next registryPage
	json.Unmarshal(e.api(http.MethodGet, "/api/v1/registry/servers?limit=100&cursor="+url.QueryEscape(page.Metadata.NextCursor), nil).Body.Bytes(), &next)
	if next.Metadata.Count != 36 || next.Metadata.NextCursor != "" {
		t.Errorf("the second page = %d servers, next %q; want the last 36", next.Metadata.Count, next.Metadata.NextCursor)
	}
	rec := e.api(http.MethodGet, "/api/v1/registry/servers?cursor=bogus", nil)
	wantStatus(t, rec, http.StatusBadRequest)

	// A required secret, missing: refused on its field, nothing added.
	rec = e.api(http.MethodPost, "/api/v1/registry/add", map[string]any{"name": "io.github.switchboard-test/ledger", "version": "1.7.2"})
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if !strings.Contains(rec.Body.String(), `"env.LEDGER_API_KEY"`) {
		t.Errorf("the refusal = %s; want the secret's field", rec.Body.String())
	}
	// Given: the server, pinned, through the launch confirmation.
	rec = e.api(http.MethodPost, "/api/v1/registry/add", map[string]any{"name": "io.github.switchboard-test/ledger", "version": "latest",
		"env": map[string]string{"LEDGER_API_KEY": "pat-registry-secret"}})
	wantStatus(t, rec, http.StatusCreated)
	e.secrets = append(e.secrets, "pat-registry-secret")
	srv := e.server("ledger")
	if srv.Command != "npx" || strings.Join(srv.Args, " ") != "-y ledger-mcp-server@1.7.2" || srv.Env["LEDGER_API_KEY"] == "pat-registry-secret" {
		t.Errorf("added = %+v; want npx -y ledger-mcp-server@1.7.2, its secret masked", srv)
	}
	if srv.FromRegistry == nil || srv.FromRegistry.Name != "io.github.switchboard-test/ledger" || srv.FromRegistry.Version != "1.7.2" || srv.FromRegistry.Kind != "npm" {
		t.Errorf("from_registry = %+v", srv.FromRegistry)
	}
	if srv.ConfirmedBy != "" {
		t.Error("a server added from a registry runs without a person confirming its launch")
	}
	e.checkNoSecrets("the added server", rec.Body.String())
	// The remote, its URL and header filled; a second add gets an id of
	// its own.
	rec = e.api(http.MethodPost, "/api/v1/registry/add", map[string]any{"name": "com.example/weather", "arguments": map[string]string{"tenant": "acme"},
		"headers": map[string]string{"Authorization.token": "weather-token-1"}})
	wantStatus(t, rec, http.StatusCreated)
	e.secrets = append(e.secrets, "weather-token-1")
	if w := e.server("weather"); w.Transport != "http" || w.URL != "https://acme.weather.example.com/mcp" {
		t.Errorf("the remote = %+v", w)
	}
	json.Unmarshal(e.api(http.MethodGet, "/api/v1/registry/servers?search=ledger", nil).Body.Bytes(), &page)
	if len(page.Servers) != 1 || strings.Join(page.Servers[0].Meta.Added, ",") != "ledger" {
		t.Errorf("the registry's ledger = %+v; want it marked added as ledger", page.Servers)
	}

	// The page: hostile markup shown as text, the deprecated marked.
	b := e.loginWithToken()
	body := b.get("/registry?search=markup").Body.String()
	if strings.Contains(body, "<img src=x") || !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Errorf("the registry's markup is not escaped on the page")
	}
	doc := parseHTML(t, b.get("/registry?search=legacy").Body.String())
	if got := testIDText(t, doc, "registry-status"); got != "deprecated" {
		t.Errorf("the deprecated server's status shown = %q", got)
	}
	// The add form asks for the secret, and refuses without it, the
	// other input kept.
	form := b.get("/registry/add?" + url.Values{"registry": {reg.URL}, "name": {"io.github.switchboard-test/ledger"}}.Encode())
	if form.Code != http.StatusOK || !strings.Contains(form.Body.String(), `name="env.LEDGER_API_KEY"`) {
		t.Fatalf("the add form = %d", form.Code)
	}
	rec = b.post("/registry/add", url.Values{"registry": {reg.URL}, "name": {"io.github.switchboard-test/ledger"}, "version": {"1.7.2"}})
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), `data-testid="field-error-env.LEDGER_API_KEY"`) {
		t.Errorf("the form without the secret = %d", rec.Code)
	}
	rec = b.post("/registry/add", url.Values{"registry": {reg.URL}, "name": {"io.github.switchboard-test/ledger"}, "version": {"1.7.2"},
		"env.LEDGER_API_KEY": {"pat-registry-secret"}})
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/servers/ledger-2/confirm" {
		t.Errorf("the form with the secret = %d to %q; want the new server's confirmation", rec.Code, rec.Header().Get("Location"))
	}
}

// A newer version in the registry changes nothing by itself: the list
// and the server's page say an update is available; updating changes the
// launch to the new version, which waits for a person's confirmation
// (the page shows the launch that changes) before anything runs.
func TestARegistryUpdateIsOfferedNeverApplied(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Seed())
	e := newEnv(t, func(c *webConfig) { c.Registries = []string{reg.URL} })
	wantStatus(t, e.api(http.MethodPost, "/api/v1/registry/refresh", nil), http.StatusOK)
	wantStatus(t, e.api(http.MethodPost, "/api/v1/registry/add", map[string]any{"name": "io.github.switchboard-test/everything", "version": "2026.7.1"}), http.StatusCreated)
	// Its launch confirmed as it was added (as a person would, without
	// running it here).
	added, err := e.db.Server(t.Context(), "everything")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.ConfirmLaunch(t.Context(), "everything", added.LaunchHash(), "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	if srv := e.server("everything"); srv.ConfirmedBy == "" {
		t.Fatalf("the launch was not confirmed: %+v", srv)
	}

	b := e.loginWithToken()
	list := parseHTML(t, b.get("/").Body.String())
	if got := testIDText(t, list, "update-available"); got != "update available 2026.7.1 → 2026.8.31" {
		t.Errorf("the list says %q", got)
	}
	if got := testIDText(t, parseHTML(t, b.get("/servers/everything").Body.String()), "registry-update"); !strings.Contains(got, "2026.7.1 → 2026.8.31") {
		t.Errorf("the server's page says %q", got)
	}
	if srv := e.server("everything"); strings.Join(srv.Args, " ") != "-y @modelcontextprotocol/server-everything@2026.7.1" {
		t.Errorf("the launch changed by itself: %v", srv.Args)
	}

	rec := b.post("/servers/everything/registry-update", url.Values{"version": {"2026.8.31"}})
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/servers/everything/confirm" {
		t.Fatalf("update = %d to %q; want on to the confirmation", rec.Code, rec.Header().Get("Location"))
	}
	srv := e.server("everything")
	if strings.Join(srv.Args, " ") != "-y @modelcontextprotocol/server-everything@2026.8.31" || srv.FromRegistry.Version != "2026.8.31" || srv.ConfirmedBy != "" {
		t.Errorf("after the update = %v from %+v, confirmed by %q; want 2026.8.31, waiting for confirmation", srv.Args, srv.FromRegistry, srv.ConfirmedBy)
	}
	confirm := b.get("/servers/everything/confirm").Body.String()
	if !strings.Contains(confirm, "server-everything@2026.8.31") || !strings.Contains(confirm, "server-everything@2026.7.1") {
		t.Errorf("the confirmation does not show the launch that changes (old and new)")
	}
	if body := b.get("/").Body.String(); strings.Contains(body, `data-testid="update-available"`) {
		t.Errorf("the list still offers an update once updated")
	}
}
