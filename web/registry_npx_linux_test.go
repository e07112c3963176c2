package web_test

import (
	"net/http"
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
	j := e.waitJob(e.verify("everything").ID)
	if j.Status != "success" {
		t.Fatalf("the verification of the added server = %s %+v", j.Status, j.Error)
	}
	if d := e.discovery("everything"); d.ToolCount < 5 {
		t.Errorf("the server verified with %d tools; want server-everything's", d.ToolCount)
	}
}
