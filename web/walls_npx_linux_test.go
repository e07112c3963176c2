package web_test

import (
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/sealed"
)

// Learn mode the whole way, through the dashboard, with a real package
// runner: npx -y @modelcontextprotocol/server-memory under network none
// fails naming the npm registry; "Allow and verify again" puts it on the
// allow-list, and npx fetches the server through the egress proxy and
// verifies.
func TestAllowAndVerifyAgainWithNpx(t *testing.T) {
	e := npxEnv(t, "@modelcontextprotocol/server-memory")
	cwd := t.TempDir()
	e.createServer(map[string]any{
		"id": "memory", "name": "Memory", "transport": "stdio", "command": "npx", "cwd": cwd,
		"args": []string{"-y", "@modelcontextprotocol/server-memory"},
		// npm's cache in the folder it may write; no preset, no network.
		"env":     map[string]string{"npm_config_cache": filepath.Join(cwd, ".npm"), "MEMORY_FILE_PATH": filepath.Join(cwd, "memory.jsonl")},
		"sandbox": map[string]any{"network": "none", "runner": "none"},
	})
	if srv := e.server("memory"); srv.Sandbox == nil || srv.Sandbox.Network != "none" {
		t.Fatalf("sandbox = %+v; want network none", srv.Sandbox)
	}
	if j := e.waitJob(e.verify("memory").ID); j.Status != "failed" {
		t.Fatalf("verification under network none = %s; want failed", j.Status)
	}
	d := e.discovery("memory")
	if d.Error == nil || d.Error.Refused == nil || !slices.ContainsFunc(d.Error.Refused.Hosts, func(h apiRefusedHost) bool { return h.Host == "registry.npmjs.org" }) {
		t.Fatalf("error = %+v; want registry.npmjs.org refused", d.Error)
	}
	b := e.login()
	if rec := b.post("/servers/memory/sandbox/allow", url.Values{"host": {"registry.npmjs.org"}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("POST allow = %d; want 303\n%s", rec.Code, rec.Body)
	}
	waitFor(t, 6*time.Minute, "npx to fetch and verify through the proxy", func() bool {
		d = e.discovery("memory")
		return d.Status == "success" || d.Status == "failed" && !slices.ContainsFunc(d.Error.Refused.Hosts, func(h apiRefusedHost) bool { return h.Host == "registry.npmjs.org" })
	})
	if d.Status != "success" {
		t.Fatalf("verification after allowing = %s: %+v", d.Status, d.Error)
	}
	if d.ToolCount == 0 || !strings.Contains(d.Isolation, "landlock") || !strings.Contains(d.Isolation, "netns") {
		t.Errorf("verified with %d tools, isolation %q; want server-memory's tools, in its walls", d.ToolCount, d.Isolation)
	}
}

// npxEnv is an application whose verifier gives npx minutes to fetch a
// package (not the seconds the other tests' allows), once npx and the
// npm registry's pkg are there (the test is skipped without the npm
// registry, failed without npx).
func npxEnv(t *testing.T, pkg string, opts ...appOption) *env {
	t.Helper()
	if _, err := exec.LookPath("npx"); err != nil {
		t.Fatalf("npx is not installed: %v", err)
	}
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("https://registry.npmjs.org/" + strings.ReplaceAll(pkg, "/", "%2f"))
	if err != nil {
		t.Skipf("the npm registry is unreachable from this machine (%v)", err)
	}
	resp.Body.Close()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "sb.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := sealed.New(db, testRing)
	e := newEnvVerifying(t, st.Store(), discovery.NewVerifier(discovery.Limits{InitTimeout: 5 * time.Minute}, nil), opts...)
	e.db, e.raw = st, db
	return e
}
