package web_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/registry/registrytest"
)

// A server added from a registry really runs, pinned: the npm package
// of the entry's version, through npx against the npm registry, under
// the npx preset of its walls (issue 39).
func TestARegistryServerRunsPinnedThroughNpx(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Seed())
	e := npxEnv(t, "@modelcontextprotocol/server-everything", func(c *webConfig) { c.Registries = []string{reg.URL} })
	rec := e.api(http.MethodPost, "/api/v1/registry/add", map[string]any{"name": "io.github.switchboard-test/everything", "version": "2026.8.31"})
	wantStatus(t, rec, http.StatusCreated)
	srv := e.server("everything")
	if srv.Command != "npx" || strings.Join(srv.Args, " ") != "-y @modelcontextprotocol/server-everything@2026.8.31" {
		t.Fatalf("the launch = %s %v; want the package pinned to 2026.8.31", srv.Command, srv.Args)
	}
	if srv.Sandbox == nil || srv.Sandbox.Runner != "npx" {
		t.Errorf("walls = %+v; want the npx preset", srv.Sandbox)
	}
	// npm's cache in a folder of the test's, which the walls let it write.
	cwd := t.TempDir()
	cache := filepath.Join(cwd, ".npm")
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/everything", map[string]any{"name": srv.Name, "transport": "stdio", "command": srv.Command,
		"args": srv.Args, "cwd": cwd, "env": map[string]string{"npm_config_cache": cache}, "default_policy": "ask"}), http.StatusOK)
	j := e.waitJob(e.verify("everything").ID)
	if j.Status != "success" {
		t.Fatalf("the verification of the added server = %s %+v", j.Status, j.Error)
	}
	if d := e.discovery("everything"); d.ToolCount < 5 {
		t.Errorf("the server verified with %d tools; want server-everything's", d.ToolCount)
	}
	// What ran is recorded: the package's version and integrity.
	srv = e.server("everything")
	if f := srv.FromRegistry; f == nil || !strings.HasPrefix(f.Artifact, "npm @modelcontextprotocol/server-everything@2026.8.31 sha512-") {
		t.Fatalf("recorded artifact = %+v; want the package's integrity", srv.FromRegistry)
	}
	recorded := srv.FromRegistry.Artifact

	// The same launch runs another artifact (a tampered cache): caught,
	// the server held until a person confirms its launch again, the page
	// showing both.
	locks, _ := filepath.Glob(filepath.Join(cache, "_npx", "*", "package-lock.json"))
	if len(locks) != 1 {
		t.Fatalf("npx's locks = %v", locks)
	}
	lock, err := os.ReadFile(locks[0])
	if err != nil {
		t.Fatal(err)
	}
	old := recorded[strings.LastIndex(recorded, " ")+1:]
	if err := os.WriteFile(locks[0], []byte(strings.ReplaceAll(string(lock), old, "sha512-TAMPERED0000")), 0o644); err != nil {
		t.Fatal(err)
	}
	again := e.waitJob(e.verify("everything").ID)
	if again.Status != "success" {
		t.Fatalf("the second verification = %s %+v", again.Status, again.Error)
	}
	srv = e.server("everything")
	if f := srv.FromRegistry; f.Artifact != recorded || !strings.HasSuffix(f.Held, "sha512-TAMPERED0000") || srv.ConfirmedBy != "" {
		t.Errorf("after another artifact ran = %+v, confirmed by %q; want it held, the launch waiting for a person", f, srv.ConfirmedBy)
	}
	page := e.loginWithToken().get("/servers/everything/confirm").Body.String()
	if !strings.Contains(page, "What it ran") || !strings.Contains(page, "sha512-TAMPERED0000") || !strings.Contains(page, old) {
		t.Errorf("the confirmation does not show the recorded and the new artifact side by side")
	}
}
