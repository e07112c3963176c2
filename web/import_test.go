package web_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"
)

// claudeConfig is a Claude Desktop config as people have them: a local
// server with a token in its env, one whose args differ from a server
// Switchboard has, a remote one with a header.
const claudeConfig = `{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/ana/Documents"]
    },
    "GitHub Server": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_0123456789abcdefghijklmnopqrstuvwxyz"}
    },
    "remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer abc.def.ghi"}}
  }
}
`

func (e *env) importAPI(body map[string]any) (int, apiImport) {
	e.t.Helper()
	rec := e.api(http.MethodPost, "/api/v1/import", body)
	return rec.Code, decodeAs[apiImport](e.t, rec)
}

func entryByName(t *testing.T, a apiImport, name string) apiImportEntry {
	t.Helper()
	for _, r := range a.Entries {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no entry %q in %+v", name, a.Entries)
	return apiImportEntry{}
}

// diffFields are the fields an import entry would update.
func diffFields(r apiImportEntry) []string {
	var out []string
	for _, d := range r.Diff {
		out = append(out, d.Field)
	}
	return out
}

// The dry run says what would be added, updated (with the fields) or is
// identical, flags secrets, changes nothing; applying adds the new
// servers, overwrites only what was chosen, and verifies nothing.
func TestImportDryRunAndApply(t *testing.T) {
	e := newEnv(t)
	e.secrets = append(e.secrets, "ghp_0123456789abcdefghijklmnopqrstuvwxyz", "abc.def.ghi")
	e.createServer(map[string]any{"id": "filesystem", "name": "My files", "transport": "stdio", "command": "npx",
		"args": []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"}})

	if !t.Run("the dry run says what would change, flags secrets, and changes nothing", func(t *testing.T) {
		e := e.in(t)
		code, a := e.importAPI(map[string]any{"text": claudeConfig})
		if code != http.StatusOK || a.Format != "claude" || len(a.Entries) != 3 {
			t.Fatalf("dry run = %d %+v", code, a)
		}
		fs := entryByName(t, a, "filesystem")
		if fs.Action != "update" || fs.ID != "filesystem" || fs.Choice != "skip" || !slices.Contains(diffFields(fs), "args") {
			t.Errorf("filesystem row = %+v; want an update of args, skipped by default", fs)
		}
		gh := entryByName(t, a, "GitHub Server")
		if gh.Action != "add" || gh.ID != "github-server" || !strings.Contains(strings.Join(gh.Secrets, "\n"), "env.GITHUB_PERSONAL_ACCESS_TOKEN") {
			t.Errorf("GitHub row = %+v; want added as github-server with its token flagged", gh)
		}
		if r := entryByName(t, a, "remote"); r.Action != "add" || !strings.Contains(strings.Join(r.Secrets, "\n"), "headers.Authorization") {
			t.Errorf("remote row = %+v", r)
		}
		if n := len(e.listServers()); n != 1 {
			t.Fatalf("%d servers after a dry run; want it to change nothing", n)
		}
	}) {
		return
	}

	if !t.Run("applying adds the new servers, verifies nothing and overwrites nothing unchosen", func(t *testing.T) {
		e := e.in(t)
		code, a := e.importAPI(map[string]any{"text": claudeConfig, "apply": true})
		if code != http.StatusOK || a.Result == nil || a.Result.Added != 2 || a.Result.Updated != 0 {
			t.Fatalf("apply = %d %+v", code, a.Result)
		}
		for _, id := range []string{"github-server", "remote"} {
			if d := e.discovery(id); d.Status != "never" {
				t.Errorf("%s was verified: %+v", id, d)
			}
			// Its launch waits for a person's confirmation.
			wantStatus(t, e.api(http.MethodPost, "/api/v1/servers/"+id+"/verify", nil), http.StatusConflict)
		}
		if env := e.server("github-server").Env; env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "********" {
			t.Errorf("imported token shown as %v; want masked", env)
		}
		// A client's config has no walls: an imported server gets the
		// default profile of its command (docker: the runner's preset).
		if sb := e.server("github-server").Sandbox; sb == nil || sb.Runner != "docker" || !slices.Contains(sb.Write, "/var/run/docker.sock") {
			t.Errorf("imported docker server's sandbox = %+v; want the docker preset (its engine's socket)", sb)
		}
		if diff := cmp.Diff([]string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"}, e.server("filesystem").Args); diff != "" {
			t.Errorf("filesystem overwritten without being chosen, args (-want +got):\n%s", diff)
		}
	}) {
		return
	}

	if !t.Run("overwriting is an explicit choice, and the display name stays", func(t *testing.T) {
		e := e.in(t)
		_, a := e.importAPI(map[string]any{"text": claudeConfig, "apply": true, "choices": map[string]string{"filesystem": "update"}})
		if a.Result == nil || a.Result.Updated != 1 {
			t.Fatalf("apply with an update = %+v", a.Result)
		}
		fsNow := e.server("filesystem")
		if !slices.Equal(fsNow.Args, []string{"-y", "@modelcontextprotocol/server-filesystem", "/home/ana/Documents"}) || fsNow.Name != "My files" {
			t.Errorf("filesystem after the chosen update = %q %q", fsNow.Args, fsNow.Name)
		}
	}) {
		return
	}
	t.Run("now everything is the same", func(t *testing.T) {
		e := e.in(t)
		_, a := e.importAPI(map[string]any{"text": claudeConfig})
		for _, r := range a.Entries {
			if r.Action != "same" {
				t.Errorf("row %+v after importing everything; want same", r)
			}
		}
	})
}

// One bad entry does not block the others; a text that is no config at
// all points at the line and column.
func TestImportErrors(t *testing.T) {
	e := newEnv(t)
	_, a := e.importAPI(map[string]any{"text": `{"mcpServers": {
  "good": {"command": "node", "args": ["x.js"]},
  "bad": {"args": ["no command"]}
}}`})
	if good := entryByName(t, a, "good"); good.Action != "add" {
		t.Errorf("good row = %+v", good)
	}
	if bad := entryByName(t, a, "bad"); bad.Action != "error" || bad.Line != 3 {
		t.Errorf("bad row = %+v; want an error at line 3", bad)
	}
	code, a := e.importAPI(map[string]any{"text": "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n    \"b\": {}\n  }\n}"})
	if code != http.StatusUnprocessableEntity || a.Line != 4 || a.Column == 0 || !strings.Contains(a.Error, "line 4") {
		t.Errorf("syntax error = %d %+v; want 422 at line 4", code, a)
	}
}

// An export imported back changes nothing, in every format, and carries
// no secret value unless asked for.
func TestExportRoundTrip(t *testing.T) {
	e := newEnv(t)
	const secret = "sk-live-0123456789abcdefghijklmnop"
	e.secrets = append(e.secrets, secret)
	e.createServer(map[string]any{"id": "local", "name": "Lokal ✓", "transport": "stdio", "command": "node",
		"args": []string{"server.js", "--name", `quote " and \ back`}, "env": map[string]string{"API_KEY": secret}, "cwd": "/srv/mcp"})
	e.createServer(map[string]any{"id": "web", "name": "Web", "transport": "http", "url": "https://mcp.example.com/mcp",
		"headers": map[string]string{"Authorization": "Bearer " + secret}})
	e.createServer(map[string]any{"id": "legacy", "name": "Legacy", "transport": "sse", "url": "https://old.example.com/sse", "enabled": false})
	for _, format := range []string{"claude", "cursor", "vscode", "codex"} {
		t.Run(format+" export imported back changes nothing", func(t *testing.T) {
			e := e.in(t)
			rec := e.api(http.MethodGet, "/api/v1/export?format="+format, nil)
			wantStatus(t, rec, http.StatusOK)
			text := rec.Body.String()
			if strings.Contains(text, secret) {
				t.Errorf("%s export holds a secret value", format)
			}
			_, a := e.importAPI(map[string]any{"text": text, "format": format})
			if len(a.Entries) != 3 {
				t.Errorf("%s: %d entries imported back from\n%s", format, len(a.Entries), text)
			}
			for _, r := range a.Entries {
				if r.Action != "same" {
					t.Errorf("%s: row %+v; want no change after exporting and importing back\n%s", format, r, text)
				}
			}
		})
	}
	// The secret may be shown from here on, where it is asked for; the
	// check at the test's end no longer looks for it (see env.in).
	e.secrets = e.secrets[:len(e.secrets)-1]
	t.Run("secrets asked for through the API are exported", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodGet, "/api/v1/export?format=claude&secrets=true&server=local", nil)
		if body := rec.Body.String(); !strings.Contains(body, secret) || strings.Contains(body, "mcp.example.com") {
			t.Errorf("export of local with secrets = %s", body)
		}
	})
	t.Run("in the dashboard secrets need the API token typed again", func(t *testing.T) {
		b := e.in(t).login()
		wantStatus(t, b.post("/export", url.Values{"format": {"claude"}, "token": {"wrong"}}), http.StatusForbidden)
		wantStatus(t, b.get("/export?format=nope"), http.StatusUnprocessableEntity)
		wantStatus(t, b.get("/export?format=claude&server=ghost"), http.StatusNotFound)
	})
	t.Run("its own page, in the navigation", func(t *testing.T) {
		b := e.in(t).loginWithToken()
		rec := b.get("/export")
		wantStatus(t, rec, http.StatusOK)
		page := parseHTML(t, rec.Body.String())
		if page.Find(`[data-testid="export-form"]`).Length() != 1 || page.Find(`[data-testid="nav-export"]`).AttrOr("href", "") != "/export" {
			t.Errorf("the Export page has no export form, or the navigation no Export item")
		}
	})
}

// The Import page previews pasted text, a file found on this machine, and
// applies the choices made on the rows.
func TestImportPage(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".cursor"), 0o700)
	os.WriteFile(filepath.Join(home, ".cursor", "mcp.json"), []byte(`{"mcpServers": {"from-cursor": {"url": "https://c.example.com/mcp"}}}`), 0o600)
	e := newEnv(t, func(c *webConfig) { c.ImportHome, c.ImportCwd = home, t.TempDir() })
	e.secrets = append(e.secrets, "ghp_0123456789abcdefghijklmnopqrstuvwxyz", "abc.def.ghi")
	b := e.login()
	t.Run("a file found on this machine is previewed", func(t *testing.T) {
		b := b.in(t)
		page := parseHTML(t, b.get("/import").Body.String())
		if known := page.Find(testID("known-file")); known.Length() != 1 || !strings.Contains(textOf(mustOne(t, page, testID("known-files"))), ".cursor/mcp.json") {
			t.Fatalf("known files = %d", known.Length())
		}
		key := mustOne(t, page, `[name="known"]`).AttrOr("value", "")
		rec := b.post("/import/preview", url.Values{"known": {key}})
		wantStatus(t, rec, http.StatusOK)
		if src := testIDText(t, parseHTML(t, rec.Body.String()), "import-source"); !strings.HasSuffix(src, ".cursor/mcp.json") {
			t.Errorf("source shown = %q", src)
		}
		if ids := parseHTML(t, rec.Body.String()).Find(testID("import-id")); ids.Length() != 1 || textOf(ids) != "from-cursor" {
			t.Errorf("preview of the cursor file: %d rows", ids.Length())
		}
	})

	// The config is held by the server, not sent back (it holds secrets):
	// the next step applies what this one previewed.
	var held string
	if !t.Run("pasted text is previewed, its secrets flagged", func(t *testing.T) {
		b := b.in(t)
		rec := b.post("/import/preview", url.Values{"text": {claudeConfig}})
		wantStatus(t, rec, http.StatusOK)
		doc := parseHTML(t, rec.Body.String())
		if rows := doc.Find(testID("import-row")); rows.Length() != 3 {
			t.Fatalf("%d rows", rows.Length())
		}
		if flagged := doc.Find(testID("import-secret")); flagged.Length() != 2 {
			t.Errorf("%d secrets flagged; want the token and the header", flagged.Length())
		}
		held = mustOne(t, doc, `[name="held"]`).AttrOr("value", "")
	}) {
		return
	}
	t.Run("the choices made on the rows are applied, once", func(t *testing.T) {
		b := b.in(t)
		// Skip the second row, apply the rest.
		form := url.Values{"held": {held}, "choice-1": {"skip"}}
		rec := b.post("/import/apply", form)
		// The servers added wait for the confirmation of their launches,
		// on one page.
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/launches/confirm?imported=2.0.1&server=filesystem&server=remote" {
			t.Fatalf("apply = %d to %q", rec.Code, rec.Header().Get("Location"))
		}
		list := b.get(rec.Header().Get("Location"))
		if flash := testIDText(t, parseHTML(t, list.Body.String()), "flash"); !strings.Contains(flash, "2 added") {
			t.Errorf("flash = %q", flash)
		}
		wantStatus(t, b.post("/import/apply", form), http.StatusGone) // applied once
	})
	t.Run("a syntax error keeps the text and points at the line", func(t *testing.T) {
		b := b.in(t)
		bad := "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\" \"args\": []}\n  }\n}"
		rec := b.post("/import/preview", url.Values{"text": {bad}, "format": {"claude"}})
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		doc := parseHTML(t, rec.Body.String())
		if msg := testIDText(t, doc, "import-error"); !strings.Contains(msg, "line 3") {
			t.Errorf("error = %q; want line 3", msg)
		}
		if kept := textOf(mustOne(t, doc, testID("import-text"))); kept != strings.TrimSpace(bad) {
			t.Errorf("text kept = %q", kept)
		}
	})
}

// A file found on this machine that cannot be read is reported by line
// and column without its text (it may hold secrets); choices and
// fingerprints go by row, so two entries of one name, a plan that changed
// since the preview, and "add as new" all do what the page showed.
func TestImportPageRows(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".codex"), 0o700)
	os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte("[mcp_servers.x]\ncommand = \"x\"\nenv = { TOKEN = \"tok-never-shown-123456\" }\nbroken = \n"), 0o600)
	e := newEnv(t, func(c *webConfig) { c.ImportHome, c.ImportCwd = home, t.TempDir() })
	e.secrets = append(e.secrets, "tok-never-shown-123456")
	b := e.login()
	t.Run("a broken found file is reported by path and line, without its text", func(t *testing.T) {
		b := b.in(t)
		page := parseHTML(t, b.get("/import").Body.String())
		key := mustOne(t, page, `[name="known"]`).AttrOr("value", "")
		rec := b.post("/import/preview", url.Values{"known": {key}})
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		if msg := testIDText(t, parseHTML(t, rec.Body.String()), "import-error"); !strings.Contains(msg, "config.toml") || !strings.Contains(msg, "line 4") {
			t.Errorf("error for a broken found file = %q; want its path and line", msg)
		}
	})

	e.createServer(map[string]any{"id": "gh", "name": "GH", "transport": "stdio", "command": "old"})
	text := `{"mcpServers": {"gh": {"command": "new"}}, "projects": {"/p": {"mcpServers": {"gh": {"command": "other"}}}}}`
	// addAsNew is the preview's form with its first row added as new.
	addAsNew := func(doc *goquery.Document) url.Values {
		form := url.Values{}
		for _, in := range doc.Find(`input[type="hidden"]`).EachIter() {
			form.Set(in.AttrOr("name", ""), in.AttrOr("value", ""))
		}
		form.Set("choice-0", "new")
		return form
	}
	// The next step applies the form of this step's preview.
	var form url.Values
	if !t.Run("two entries of one name are a row each", func(t *testing.T) {
		b := b.in(t)
		rec := b.post("/import/preview", url.Values{"text": {text}})
		wantStatus(t, rec, http.StatusOK)
		doc := parseHTML(t, rec.Body.String())
		rows := doc.Find(testID("import-row"))
		if rows.Length() != 2 || rows.Eq(0).AttrOr("data-action", "") != "update" || rows.Eq(1).AttrOr("data-action", "") != "error" {
			t.Fatalf("rows = %d", rows.Length())
		}
		form = addAsNew(doc)
	}) {
		return
	}
	// The server changes between the preview and the apply: nothing is
	// applied, and the new plan is shown.
	if !t.Run("a plan that changed since the preview applies nothing", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		e.api(http.MethodPut, "/api/v1/servers/gh", map[string]any{"id": "gh", "name": "GH", "transport": "stdio", "command": "newer"})
		wantStatus(t, b.post("/import/apply", form), http.StatusConflict)
		if n := len(e.listServers()); n != 1 {
			t.Fatalf("%d servers after a refused apply", n)
		}
	}) {
		return
	}
	t.Run("add as new adds the row under a new id", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		rec := b.post("/import/preview", url.Values{"text": {text}})
		if rec := b.post("/import/apply", addAsNew(parseHTML(t, rec.Body.String()))); rec.Code != http.StatusSeeOther {
			t.Fatalf("apply add-as-new = %d %s", rec.Code, truncate(rec.Body.String()))
		}
		if srv := e.server("gh-2"); srv.Command != "new" || srv.Name != "gh" {
			t.Errorf("added as new = %+v; want the file's entry under gh-2, named from the file", srv)
		}
		if gh := e.server("gh"); gh.Command != "newer" {
			t.Errorf("gh changed: %v", gh.Command)
		}
	})

	t.Run("secrets in an export with the API token typed again", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		e.createServer(map[string]any{"id": "s", "name": "S", "transport": "stdio", "command": "x", "env": map[string]string{"K": "v-0123456789-secret"}})
		rec := b.post("/export", url.Values{"format": {"claude"}, "token": {testToken}})
		wantStatus(t, rec, http.StatusOK)
		if !strings.Contains(rec.Body.String(), "v-0123456789-secret") {
			t.Errorf("export with the token = %s", rec.Body.String())
		}
	})
}

func (e *env) listServers() []apiServer {
	e.t.Helper()
	rec := e.api(http.MethodGet, "/api/v1/servers", nil)
	wantStatus(e.t, rec, http.StatusOK)
	return decodeAs[serversAnswer](e.t, rec).Servers
}
