package web_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/mcptest"
)

// A verified remote server that stops answering is not shown healthy:
// once its held session drops, the list and its page say "Unreachable
// since …" in the one health chip, where they said "OK · N tools".
func TestDeadRemoteLooksDead(t *testing.T) {
	e := newEnv(t, func(c *webConfig) { c.WatchPingInterval = 200 * time.Millisecond })
	b := e.login()
	file := filepath.Join(t.TempDir(), "tools.json")
	writeTools(t, file, "1.0.0", "alpha", "beta")
	u, stop := startFixtureHTTP(t, "127.0.0.1:0", "-tools-file", file)
	e.createServer(map[string]any{"id": "remote", "transport": "http", "url": u})
	if job := e.verify("remote"); job.Status != "success" {
		t.Fatalf("verify: %+v", job)
	}
	waitFor(t, 10*time.Second, "the watch to connect", func() bool {
		w := e.discovery("remote").Watch
		return w != nil && w.Connected
	})
	chip := func(path string) (health, text string) {
		s := parseHTML(t, b.get(path).Body.String()).Find(`[data-testid="status"]`).First()
		return s.AttrOr("data-health", ""), strings.TrimSpace(s.Text())
	}
	for _, path := range []string{"/", "/servers/remote"} {
		if health, text := chip(path); health != "ok" || text != "OK · 2 tools" {
			t.Errorf("%s before: %s %q; want ok, OK · 2 tools", path, health, text)
		}
	}

	stop() // the server dies
	waitFor(t, 10*time.Second, "the watch to notice", func() bool {
		w := e.discovery("remote").Watch
		return w != nil && !w.Connected && w.LastError != ""
	})
	for _, path := range []string{"/", "/servers/remote"} {
		health, text := chip(path)
		if health != "unreachable" || !strings.HasPrefix(text, "Unreachable since ") || strings.Contains(text, "success") {
			t.Errorf("%s after the server died: %s %q; want unreachable, since when", path, health, text)
		}
	}
}

// A stdio server nothing re-checks by itself (auto-refresh off, the
// default) stays OK as time passes: its freshness says it is not
// re-checked rather than stale, on its row and its page.
func TestIdleStdioServerIsNotStale(t *testing.T) {
	clock := &testClock{}
	e := newEnv(t, withClock(clock))
	b := e.login()
	e.createServer(fixtureServer("quiet"))
	if job := e.verify("quiet"); job.Status != "success" {
		t.Fatalf("verify: %+v", job)
	}
	clock.Advance(time.Hour) // well past the default fresh-for time
	if f := e.discovery("quiet").Freshness; f.State != "stale" || f.Reason != "ttl" {
		t.Fatalf("freshness an hour later = %+v; want stale by the clock in the API", f)
	}
	for _, path := range []string{"/", "/servers/quiet"} {
		doc := parseHTML(t, b.get(path).Body.String())
		if health := doc.Find(`[data-testid="status"]`).First().AttrOr("data-health", ""); health != "ok" {
			t.Errorf("%s: health %q; want ok", path, health)
		}
		if text := doc.Find(`[data-testid="freshness"]`).First().Text(); !strings.Contains(text, "not re-checked") || strings.Contains(text, "stale") {
			t.Errorf("%s: freshness %q; want not re-checked, not stale", path, text)
		}
	}
}

// A server whose routed calls fail looks failing, though its last
// verification succeeded, until a call gets an answer again (issue 21,
// item 2: the chip combines the last routed call too). Its command is
// taken away after the verification, so the next call cannot start it.
func TestFailingCallsLookFailing(t *testing.T) {
	e := newEnv(t, func(c *webConfig) { c.MCP.Pool = discovery.PoolConfig{Idle: 200 * time.Millisecond} })
	b := e.login()
	srv, hc := e.liveServer()
	bin := filepath.Join(t.TempDir(), "mcp-fixture")
	data, err := os.ReadFile(fixtureBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	e.createServer(map[string]any{"id": "flaky", "transport": "stdio", "command": bin, "args": []string{"-tools", "2"}, "default_policy": "allow"})
	if job := e.verify("flaky"); job.Status != "success" {
		t.Fatalf("verify: %+v", job)
	}
	chip := func() (health, text string) {
		s := parseHTML(t, b.get("/servers/flaky").Body.String()).Find(`[data-testid="status"]`).First()
		return s.AttrOr("data-health", ""), strings.TrimSpace(s.Text())
	}
	c := mcptest.Connect(t, srv.URL, testMCPToken)
	if _, err := c.Call("flaky__tool_000", map[string]any{"query": "x"}); err != nil {
		t.Fatalf("a call while the command is there: %v", err)
	}
	if health, text := chip(); health != "ok" || text != "OK · 2 tools" {
		t.Errorf("after a good call: %s %q; want ok", health, text)
	}
	tab := b.openEvents(srv, hc)
	t.Run("its command gone, a call fails and the chip says so, live", func(t *testing.T) {
		if err := os.Rename(bin, bin+".away"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the idle upstream to end", func() bool {
			return strings.Contains(e.api(http.MethodGet, "/api/v1/upstreams", nil).Body.String(), `"upstreams":[]`)
		})
		before := b.openEvents(srv, hc) // its snapshot, the servers OK, is the one tabs share next
		before.until(t, 10*time.Second, "the snapshot's row", named("row-flaky"))
		if res, err := c.Call("flaky__tool_000", map[string]any{"query": "x"}); err == nil && !res.IsError {
			t.Fatalf("a call without its command succeeded: %+v", res)
		}
		tab.until(t, 10*time.Second, "the list's row to say calls fail", func(ev sseEvent) bool {
			return ev.name == "row-flaky" && strings.Contains(ev.text(), "Calls failing since")
		})
		// The store did not change (a call's record is no change of it),
		// yet a tab opened now gets the failing row in its snapshot: the
		// publication dropped the snapshot tabs share.
		after := b.openEvents(srv, hc)
		seen := after.until(t, 10*time.Second, "the snapshot's row", named("row-flaky"))
		if row := seen[len(seen)-1].text(); !strings.Contains(row, "Calls failing since") {
			t.Errorf("a new tab's row = %q; want it failing, as published", row)
		}
		health, text := chip()
		if health != "unreachable" || !strings.HasPrefix(text, "Calls failing since ") {
			t.Errorf("after a failed call: %s %q; want unreachable, Calls failing since …", health, text)
		}
		page := parseHTML(t, b.get("/servers/flaky").Body.String())
		if got := page.Find(`[data-testid="calls-failing"]`).Text(); !strings.Contains(got, "not_found while starting") {
			t.Errorf("the status panel's failing call = %q; want its error", got)
		}
		if health := parseHTML(t, b.get("/").Body.String()).Find(`[data-server-id="flaky"] [data-testid="status"]`).AttrOr("data-health", ""); health != "unreachable" {
			t.Errorf("the list's chip = %q; want unreachable", health)
		}
	})
	t.Run("its command back, the next call clears it", func(t *testing.T) {
		if err := os.Rename(bin+".away", bin); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Call("flaky__tool_000", map[string]any{"query": "x"}); err != nil {
			t.Fatalf("a call with the command back: %v", err)
		}
		if health, text := chip(); health != "ok" || text != "OK · 2 tools" {
			t.Errorf("after a good call again: %s %q; want ok", health, text)
		}
	})
}
