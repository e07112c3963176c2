package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/secretkey"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/sealed"
)

// The CLI imports with a dry run first, overwrites only what it is told
// to, exports without secrets unless asked, and its export imports back
// as no change.
func TestImportExportCLI(t *testing.T) {
	ctx := context.Background()
	db := seedDB(t) // holds "files": true
	dir := t.TempDir()
	cfg := filepath.Join(dir, "claude.json")
	os.WriteFile(cfg, []byte(`{"mcpServers": {
  "files": {"command": "npx", "args": ["-y", "files-server"]},
  "Notes ✎": {"command": "notes-mcp", "env": {"NOTES_TOKEN": "tok-0123456789abcdefghijklmnop"}}
}}`), 0o600)
	cli := func(stdin string, args ...string) (string, string, error) {
		var out, errb bytes.Buffer
		err := run(context.Background(), args, env(nil), strings.NewReader(stdin), &out, &errb)
		return out.String(), errb.String(), err
	}

	out, _, err := cli("", "import", "--db", db, "--dry-run", cfg)
	if err != nil || !strings.Contains(out, "Dry run: nothing changed.") || !strings.Contains(out, `"Notes ✎"  notes`) ||
		!strings.Contains(out, "env.NOTES_TOKEN looks like a secret") || !strings.Contains(out, "command: true → npx") {
		t.Fatalf("dry run = %v\n%s", err, out)
	}
	out, _, err = cli("", "import", "--db", db, cfg)
	if err != nil || !strings.Contains(out, "1 added, 0 updated, 1 skipped") {
		t.Fatalf("import = %v\n%s", err, out)
	}
	if _, _, err := cli("", "import", "--db", db, "--update", "nope", cfg); err == nil {
		t.Error("--update of an entry that is not an update succeeded")
	}
	out, _, err = cli("", "import", "--db", db, "--update", "files", cfg)
	if err != nil || !strings.Contains(out, "0 added, 1 updated") {
		t.Fatalf("import --update files = %v\n%s", err, out)
	}
	raw, err := bolt.Open(db, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if kept, _ := raw.Server(ctx, "notes"); !store.IsSealed(kept.Env["NOTES_TOKEN"]) {
		t.Errorf("import kept the env value %q; want it sealed", kept.Env["NOTES_TOKEN"])
	}
	st := sealedWithKeyFile(t, raw, db)
	files, _ := st.Server(ctx, "files")
	notes, _ := st.Server(ctx, "notes")
	raw.Close()
	if files.Command != "npx" || files.Name != "Files" || notes.Env["NOTES_TOKEN"] != "tok-0123456789abcdefghijklmnop" || notes.LaunchConfirmedNow() {
		t.Errorf("after import: files %+v, notes %+v", files, notes)
	}

	exported, _, err := cli("", "export", "--db", db, "--format", "codex")
	if err != nil || strings.Contains(exported, "tok-0123456789") || !strings.Contains(exported, "NOTES_TOKEN") {
		t.Fatalf("export = %v\n%s", err, exported)
	}
	out, _, err = cli(exported, "import", "--db", db, "--dry-run", "--format", "codex", "-")
	if err != nil || strings.Count(out, " same ") != 2 {
		t.Errorf("export imported back = %v\n%s; want both rows the same", err, out)
	}
	withSecrets, _, _ := cli("", "export", "--db", db, "--format", "claude", "--include-secrets", "--server", "notes")
	if !strings.Contains(withSecrets, "tok-0123456789abcdefghijklmnop") || strings.Contains(withSecrets, "files-server") {
		t.Errorf("export --include-secrets --server notes = %s", withSecrets)
	}

	// Errors: on stderr, non-zero exit, line and column for a broken file.
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, []byte("{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"\n  }\n}"), 0o600)
	var ee *exitError
	if _, _, err := cli("", "import", "--db", db, broken); err == nil || !strings.Contains(err.Error(), "line ") {
		t.Errorf("import of a broken file = %v; want an error with its line", err)
	}
	if _, _, err := cli("", "export", "--db", db); !errors.As(err, &ee) || ee.code != 2 {
		t.Errorf("export without --format = %v; want usage exit 2", err)
	}
	if _, _, err := cli("", "export", "--db", db, "--format", "claude", "--server", "ghost"); err == nil {
		t.Error("export of an unknown server succeeded")
	}
}

// sealedWithKeyFile is db (the file at path) with its secrets opened by
// the key serve and the other commands keep beside it where no keychain
// answers.
func sealedWithKeyFile(t *testing.T, db *bolt.DB, path string) *sealed.Store {
	t.Helper()
	k, err := secretkey.Load(secretkey.Options{DefaultFile: secretkey.DefaultFile(path)})
	if err != nil {
		t.Fatal(err)
	}
	ring, err := secretkey.NewRing(k.Current)
	if err != nil {
		t.Fatal(err)
	}
	return sealed.New(db, ring)
}

// While the dashboard runs it holds the database: `switchboard export`
// asks it for the export through its API (with the API token kept beside
// the database) instead of refusing.
func TestExportWhileTheDashboardRuns(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sb.db")
	base, _, stop := startServe(t, map[string]string{"SWITCHBOARD_DB": db})
	t.Cleanup(func() { stop() })
	b, err := os.ReadFile(apiTokenPath(db))
	if err != nil {
		t.Fatal(err)
	}
	d := liveDashboard{base: base, token: strings.TrimSpace(string(b)), db: db}
	d.api(t, http.MethodPost, "/api/v1/servers", map[string]any{"id": "notes", "name": "Notes", "transport": "stdio", "command": "notes-mcp",
		"env": map[string]string{"NOTES_TOKEN": "tok-while-running"}}, http.StatusCreated)
	var out, errb bytes.Buffer
	err = run(context.Background(), []string{"export", "--format", "claude"},
		env(map[string]string{"SWITCHBOARD_DB": db, "SWITCHBOARD_ADDR": strings.TrimPrefix(base, "http://")}), nil, &out, &errb)
	if err != nil || !strings.Contains(out.String(), `"notes"`) || !strings.Contains(out.String(), "notes-mcp") || strings.Contains(out.String(), "tok-while-running") {
		t.Fatalf("export while the dashboard runs = %v\nstdout: %s\nstderr: %s; want the servers, without secret values", err, out.String(), errb.String())
	}
}
