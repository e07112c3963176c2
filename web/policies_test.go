package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"
)

// annotatedServer registers a fixture serving tools with the annotations
// given (by tool name), unverified.
func (e *env) annotatedServer(id string, tools map[string]string) {
	e.t.Helper()
	var list []map[string]any
	for name, ann := range tools {
		tool := map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}}
		if ann != "" {
			tool["annotations"] = json.RawMessage(ann)
		}
		list = append(list, tool)
	}
	data, _ := json.Marshal(map[string]any{"version": "1", "tools": list})
	file := filepath.Join(e.t.TempDir(), id+".json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		e.t.Fatal(err)
	}
	e.createServer(map[string]any{"id": id, "transport": "stdio", "command": fixtureBin, "args": []string{"-tools-file", file}})
}

var annotated = map[string]string{
	"read":   `{"readOnlyHint":true,"openWorldHint":false}`,
	"search": `{"readOnlyHint":true}`,
	"write":  `{"destructiveHint":false,"openWorldHint":false}`,
	"rm":     `{"destructiveHint":true}`,
	"bare":   ``,
}

// policies is each tool's policy and its reason, by name.
func (e *env) policies(id string) map[string]string {
	e.t.Helper()
	out := map[string]string{}
	for name, tl := range e.apiTools(id) {
		out[name] = tl.Policy + " / " + tl.PolicyReason
	}
	return out
}

// The preset chosen with the launch confirmation decides the new tools'
// policies from their annotations, each with its reason; a later preset
// leaves the tools as they are unless applied to them.
func TestPresetAtConfirmation(t *testing.T) {
	e := newEnv(t)
	e.annotatedServer("files", annotated)

	t.Run("a preset needs the confirmation and a known name", func(t *testing.T) {
		for _, body := range []map[string]any{{"confirm": true, "preset": "everything"}, {"preset": "read_only"}} {
			rec := e.api(http.MethodPost, "/api/v1/servers/files/verify", body)
			wantStatus(t, rec, http.StatusUnprocessableEntity)
			if !strings.Contains(rec.Body.String(), `"preset"`) {
				t.Errorf("%v: %s; want a field error on preset", body, rec.Body)
			}
		}
	})

	t.Run("read-only preset", func(t *testing.T) {
		rec := e.api(http.MethodPost, "/api/v1/servers/files/verify", map[string]any{"confirm": true, "preset": "read_only"})
		wantStatus(t, rec, http.StatusAccepted)
		if job := e.waitJob(decodeAs[struct{ Job apiJob }](t, rec).Job.ID); job.Status != "success" {
			t.Fatalf("verify = %+v", job)
		}
		if srv := e.server("files"); srv.Preset != "read_only" {
			t.Errorf("preset = %q; want read_only", srv.Preset)
		}
		want := map[string]string{
			"read":   "allow / allow: preset read-only (declared read-only and closed-world)",
			"search": "ask / ask: may reach outside systems (preset read-only)",
			"write":  "ask / ask: not declared read-only (preset read-only)",
			"rm":     "ask / ask: may be destructive (preset read-only)",
			"bare":   "ask / ask: may be destructive (preset read-only)",
		}
		if diff := cmp.Diff(want, e.policies("files")); diff != "" {
			t.Errorf("policies (-want +got):\n%s", diff)
		}
	})

	t.Run("a new preset leaves the tools unless applied", func(t *testing.T) {
		rec := e.api(http.MethodPut, "/api/v1/servers/files/preset", map[string]any{"preset": "allow_all"})
		wantStatus(t, rec, http.StatusOK)
		if got := e.policies("files")["rm"]; got != "ask / ask: may be destructive (preset read-only)" {
			t.Errorf("rm after a preset change = %q; want it untouched", got)
		}
		rec = e.api(http.MethodPut, "/api/v1/servers/files/preset", map[string]any{"preset": "allow_all", "apply": true})
		wantStatus(t, rec, http.StatusOK)
		for name, got := range e.policies("files") {
			if got != "allow / allow: preset allow all" {
				t.Errorf("%s after applying allow all = %q", name, got)
			}
		}
		if tl := e.apiTools("files")["rm"]; tl.PolicySetBy != "api" {
			t.Errorf("set by %q; want api", tl.PolicySetBy)
		}
		wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/files/preset", map[string]any{"preset": "some"}), http.StatusUnprocessableEntity)
	})

	t.Run("an edit keeps the preset", func(t *testing.T) {
		srv := e.server("files")
		body := map[string]any{"id": "files", "name": "Files renamed", "transport": "stdio", "command": srv.Command, "args": srv.Args}
		wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/files", body), http.StatusOK)
		if got := e.server("files"); got.Preset != "allow_all" || got.Name != "Files renamed" {
			t.Errorf("after an edit: %q, %q; want the preset kept", got.Name, got.Preset)
		}
	})
}

// Several tools' policies are set at once, by name or by what their
// annotations claim, all or none, with per-field errors.
func TestBulkPolicies(t *testing.T) {
	e := newEnv(t)
	e.annotatedServer("files", annotated)
	if job := e.verify("files"); job.Status != "success" {
		t.Fatalf("verify = %+v", job)
	}
	set := func(body map[string]any) *apiError {
		rec := e.api(http.MethodPost, "/api/v1/servers/files/policies", body)
		if rec.Code != http.StatusOK {
			err := decodeAs[apiError](t, rec)
			return &err
		}
		return nil
	}
	policyOf := func() map[string]string {
		out := map[string]string{}
		for name, tl := range e.apiTools("files") {
			out[name] = tl.Policy
		}
		return out
	}

	t.Run("by selection", func(t *testing.T) {
		if err := set(map[string]any{"policy": "allow", "select": "all"}); err != nil {
			t.Fatal(err)
		}
		if err := set(map[string]any{"policy": "deny", "select": "may_change"}); err != nil {
			t.Fatal(err)
		}
		if err := set(map[string]any{"policy": "ask", "select": "open_world"}); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"read": "allow", "search": "ask", "write": "deny", "rm": "ask", "bare": "ask"}
		if diff := cmp.Diff(want, policyOf()); diff != "" {
			t.Errorf("policies (-want +got):\n%s", diff)
		}
	})

	t.Run("by name, all or none", func(t *testing.T) {
		before := policyOf()
		rec := e.api(http.MethodPost, "/api/v1/servers/files/policies", map[string]any{"policy": "deny", "tools": []string{"read", "nope"}})
		wantStatus(t, rec, http.StatusNotFound)
		if diff := cmp.Diff(before, policyOf()); diff != "" {
			t.Errorf("a refused bulk change changed policies (-before +after):\n%s", diff)
		}
		if err := set(map[string]any{"policy": "deny", "tools": []string{"read", "search"}}); err != nil {
			t.Fatal(err)
		}
		if got := policyOf(); got["read"] != "deny" || got["search"] != "deny" || got["rm"] != "ask" {
			t.Errorf("after denying read and search: %v", got)
		}
	})

	t.Run("errors per field", func(t *testing.T) {
		for _, c := range []struct {
			body   map[string]any
			fields []string
		}{
			{map[string]any{"policy": "maybe", "select": "all"}, []string{"policy"}},
			{map[string]any{"policy": "allow"}, []string{"tools"}},
			{map[string]any{"policy": "allow", "select": "everything"}, []string{"select"}},
			{map[string]any{"policy": "allow", "select": "all", "tools": []string{"read"}}, []string{"select"}},
		} {
			err := set(c.body)
			if err == nil {
				t.Errorf("%v: accepted", c.body)
				continue
			}
			for _, f := range c.fields {
				if err.Fields[f] == "" {
					t.Errorf("%v: fields %v; want one on %s", c.body, err.Fields, f)
				}
			}
		}
	})
}

// In the dashboard: the confirmation offers the presets, explains that
// annotations are the server's claims, and records the one chosen; the
// tools section sets the checked tools' policy in one go and shows each
// policy's reason.
func TestPresetAndBulkInTheDashboard(t *testing.T) {
	e := newEnv(t)
	e.annotatedServer("files", annotated)
	b := e.login()

	page := parseHTML(t, b.get("/servers/files/confirm").Body.String())
	if n := page.Find(`[data-testid="confirm-presets"] input[type="radio"][name="preset"]`).Length(); n != 3 {
		t.Errorf("%d preset choices on the confirmation; want 3", n)
	}
	if checked, _ := page.Find(`input[name="preset"][checked]`).Attr("value"); checked != "ask_all" {
		t.Errorf("preset chosen beforehand = %q; want ask_all (the default policy is ask)", checked)
	}
	if !strings.Contains(page.Find(`[data-testid="confirm-presets"]`).Text(), "Switchboard cannot check them") {
		t.Errorf("the confirmation does not say annotations are the server's claims")
	}
	hash, _ := page.Find(`input[name="confirm"]`).Attr("value")
	rec := b.post("/servers/files/verify", url.Values{"confirm": {hash}, "preset": {"read_only"}})
	wantStatus(t, rec, http.StatusSeeOther)
	waitFor(t, 20*time.Second, "the verification", func() bool { return e.discovery("files").Status == "success" })

	server := parseHTML(t, b.get("/servers/files").Body.String())
	if got := strings.TrimSpace(server.Find(`[data-testid="server-preset"]`).Text()); !strings.HasPrefix(got, "Allow tools that declare themselves read-only") {
		t.Errorf("the server page's preset = %q", got)
	}
	rows := server.Find(`[data-testid="tool-row"][data-tool-name="read"] [data-testid="policy-reason"]`)
	if got := strings.TrimSpace(rows.Text()); got != "allow: preset read-only (declared read-only and closed-world)" {
		t.Errorf("read's reason on the page = %q", got)
	}

	// The rows carry what the search and filters match (app.js), and
	// show the hints the server states as chips, nothing assumed.
	for name, want := range map[string]struct{ hints, chips string }{
		"read":  {"read-only closed-world", "read-onlyclosed world"},
		"write": {"closed-world", "closed world"},
		"rm":    {"destructive", "destructive"},
		"bare":  {"", ""},
	} {
		row := server.Find(`[data-testid="tool-row"][data-tool-name="` + name + `"]`)
		if got, _ := row.Attr("data-hints"); got != want.hints {
			t.Errorf("%s: data-hints = %q; want %q", name, got, want.hints)
		}
		if got := row.Find(`[data-testid="tool-hints"] .chip`).Text(); got != want.chips {
			t.Errorf("%s: chips = %q; want %q", name, got, want.chips)
		}
		if got, _ := row.Find(`select[name="policy"] option[selected]`).Attr("value"); got != e.apiTools("files")[name].Policy {
			t.Errorf("%s: the policy select shows %q; want the tool's policy %q", name, got, e.apiTools("files")[name].Policy)
		}
	}
	if got := server.Find(`[data-testid="filter-state"] option`).Map(func(_ int, o *goquery.Selection) string { return o.Text() }); !slices.Equal(got, []string{"any state", "active"}) {
		t.Errorf("state filter = %q; want only the states present", got)
	}
	if server.Find(`[data-testid="policy-saved"], [data-testid="policies-saved"]`).Length() != 0 {
		t.Errorf("the page says saved before anything was changed")
	}

	// One tool's policy: the row answers, saying it was saved.
	rec = b.htmx(http.MethodPost, "/servers/files/policy", url.Values{"tool": {"write"}, "key": {"3"}, "policy": {"deny"}})
	wantStatus(t, rec, http.StatusOK)
	row := parseFragment(t, rec.Body.String())
	if got := row.Find(`[data-testid="policy-saved"][role="status"]`).Text(); got != "saved" {
		t.Errorf("the row after a policy change says %q; want saved", got)
	}
	if got := e.apiTools("files")["write"].Policy; got != "deny" {
		t.Errorf("write's policy after the row's form = %s; want deny", got)
	}
	rec = b.htmx(http.MethodPost, "/servers/files/policy", url.Values{"tool": {"write"}, "key": {"3"}, "policy": {"ask"}})
	wantStatus(t, rec, http.StatusOK)

	rec = b.htmx(http.MethodPost, "/servers/files/policies", url.Values{"policy": {"deny"}, "select": {"checked"}, "tool": {"rm", "bare"}})
	wantStatus(t, rec, http.StatusOK)
	body := parseFragment(t, rec.Body.String())
	if got := body.Find(`[data-testid="policies-saved"][role="status"]`).Text(); got != "saved" {
		t.Errorf("the section after the bulk form says %q; want saved", got)
	}
	for _, name := range []string{"rm", "bare"} {
		if v, _ := body.Find(`[data-tool-name="` + name + `"] select[name="policy"] option[selected]`).Attr("value"); v != "deny" {
			t.Errorf("%s after the bulk form = %q; want deny", name, v)
		}
	}
	if got := e.apiTools("files")["write"].Policy; got != "ask" {
		t.Errorf("an unchecked tool changed to %s", got)
	}
	rec = b.htmx(http.MethodPost, "/servers/files/policies", url.Values{"policy": {"deny"}, "select": {"checked"}})
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if !strings.Contains(rec.Body.String(), "check the tools") {
		t.Errorf("bulk form with nothing checked = %s", rec.Body)
	}
}
