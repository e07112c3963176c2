package web_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
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
