package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/web"
)

// withTTL sets the global TTL, so that tests see tools go stale quickly.
func withTTL(d time.Duration) appOption { return func(c *webConfig) { c.DefaultTTL = d } }

// history returns a server's history through the API, newest first.
func (e *env) history(id string) []map[string]any {
	e.t.Helper()
	rec := e.api(http.MethodGet, "/api/v1/servers/"+id+"/history", nil)
	wantStatus(e.t, rec, http.StatusOK)
	var out []map[string]any
	for _, h := range decode(e.t, rec)["history"].([]any) {
		out = append(out, h.(map[string]any))
	}
	return out
}

// triggers lists the triggers of a server's history, oldest first.
func triggers(hist []map[string]any) []string {
	var out []string
	for i := len(hist) - 1; i >= 0; i-- {
		out = append(out, hist[i]["trigger"].(string))
	}
	return out
}

func (e *env) discovery(id string) map[string]any {
	e.t.Helper()
	rec := e.api(http.MethodGet, "/api/v1/servers/"+id, nil)
	wantStatus(e.t, rec, http.StatusOK)
	return decode(e.t, rec)["discovery"].(map[string]any)
}

// With auto-refresh on, a server whose tools went stale by its TTL is
// verified again by itself; with it off, it is only marked stale.
func TestTTLAutoRefresh(t *testing.T) {
	e := newEnv(t, withTTL(600*time.Millisecond))
	on, off := fixtureServer("auto"), fixtureServer("manual")
	on["auto_refresh"], off["auto_refresh"] = true, false
	e.createServer(on)
	e.createServer(off)
	e.verify("auto")
	e.verify("manual")
	if f := e.discovery("manual")["freshness"].(map[string]any); f["state"] != "fresh" || f["fresh_until"] == nil {
		t.Fatalf("freshness right after a verify = %v; want fresh, with fresh_until", f)
	}

	waitFor(t, 15*time.Second, "a TTL refresh of auto", func() bool {
		h := e.history("auto")
		return len(h) >= 2 && h[0]["trigger"] == "ttl" && h[0]["outcome"] == "success"
	})
	var f map[string]any
	waitFor(t, 5*time.Second, "manual to turn stale", func() bool {
		f = e.discovery("manual")["freshness"].(map[string]any)
		return f["state"] != "fresh"
	})
	if f["state"] != "stale" || f["reason"] != "ttl" || f["stale_since"] == nil {
		t.Errorf("freshness of manual after its TTL = %v; want stale (ttl) with stale_since", f)
	}
	if d := e.discovery("manual"); d["stale"] != true {
		t.Errorf("manual after its TTL: stale = %v; want true", d["stale"])
	}
	if h := e.history("manual"); len(h) != 1 {
		t.Errorf("manual (auto-refresh off) has %d verifications; want 1: %v", len(h), triggers(h))
	}
	if got := triggers(e.history("auto")); got[0] != "manual" {
		t.Errorf("auto's triggers = %v; want manual first, then ttl", got)
	}
}

// An edit that changes what the server is (here a secret's value) is
// verified at once, keeping the old tools, marked stale, meanwhile; an
// edit of the command waits for the person to confirm it.
func TestEditTriggersReverify(t *testing.T) {
	e := newEnv(t)
	body := fixtureServer("ed")
	body["env"] = map[string]string{"API_KEY": "first-value-1"}
	e.secrets = append(e.secrets, "first-value-1", "second-value-2")
	e.createServer(body)
	e.verify("ed")

	body["env"] = map[string]string{"API_KEY": "second-value-2"}
	rec := e.api(http.MethodPut, "/api/v1/servers/ed", body)
	wantStatus(t, rec, http.StatusOK)
	if d := decode(t, rec)["discovery"].(map[string]any); d["tool_count"] != float64(5) {
		t.Errorf("right after the edit: %v; want the old 5 tools kept", d)
	}
	waitFor(t, 15*time.Second, "the edit's verification", func() bool {
		h := e.history("ed")
		return len(h) == 2 && h[0]["trigger"] == "edit" && h[0]["outcome"] == "success"
	})
	if f := e.discovery("ed")["freshness"].(map[string]any); f["state"] != "fresh" {
		t.Errorf("after the edit's verification: %v; want fresh", f)
	}

	// A new argument changes the launch: nothing runs until confirmed.
	body["args"] = []string{"-tools", "4"}
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/ed", body), http.StatusOK)
	time.Sleep(300 * time.Millisecond)
	if h := e.history("ed"); len(h) != 2 {
		t.Errorf("an unconfirmed launch was verified: %v", triggers(h))
	}
	f := e.discovery("ed")["freshness"].(map[string]any)
	if f["state"] != "stale" || f["reason"] != "config" {
		t.Errorf("after an unconfirmed edit: %v; want stale (config)", f)
	}
	if job := e.verify("ed"); job["status"] != "success" || job["tool_count"] != float64(4) {
		t.Errorf("verify after confirming: %v", job)
	}
}

// An edit while a verification runs: the running one (of the old
// configuration) is discarded, never saved, and the edit's own
// verification saves the new tools.
func TestEditDuringVerification(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	body := fixtureServer("slow")
	body["args"] = []string{"-tools", "5", "-startup-delay", "1500ms"}
	body["env"] = map[string]string{"MODE": "one"}
	e.createServer(body)
	rec := e.api(http.MethodPost, "/api/v1/servers/slow/verify", confirmed)
	wantStatus(t, rec, http.StatusAccepted)
	first := decode(t, rec)["job"].(map[string]any)["id"].(string)
	waitFor(t, 5*time.Second, "the first job to run", func() bool { return e.serverStatus("slow") == "running" })

	body["env"] = map[string]string{"MODE": "two"}
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/slow", body), http.StatusOK)
	if job := e.waitJob(first); job["status"] == "success" {
		t.Errorf("the old configuration's job = %v; want it cancelled", job["status"])
	}
	// Both land in the history, in whichever order they finished.
	byJob := map[string]map[string]any{}
	waitFor(t, 20*time.Second, "both verifications in the history", func() bool {
		byJob = map[string]map[string]any{}
		for _, h := range e.history("slow") {
			byJob[h["job_id"].(string)] = h
		}
		return len(byJob) == 2
	})
	for id, h := range byJob {
		switch {
		case id == first && h["outcome"] != string(store.OutcomeDiscarded):
			t.Errorf("the first job's entry = %v; want discarded", h)
		case id != first && (h["outcome"] != "success" || h["trigger"] != "edit" || h["tool_count"] != float64(5)):
			t.Errorf("the edit's entry = %v; want a success with 5 tools", h)
		}
	}
	sum, err := e.db.Summary(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Discovery.ConfigHash != sum.Server.ConfigHash() || sum.Discovery.Status != store.StatusSuccess {
		t.Errorf("record = %s for config %.8s; want success for the current %.8s", sum.Discovery.Status, sum.Discovery.ConfigHash, sum.Server.ConfigHash())
	}
}

// Verify all verifies every enabled, confirmed server within the
// concurrency limit, reports progress live, and says what it skipped.
func TestVerifyAll(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, func(c *webConfig) { c.Concurrency = 2 })
	for i := range 10 {
		id := "s" + string(rune('a'+i))
		body := fixtureServer(id)
		body["args"] = []string{"-tools", "3", "-startup-delay", "100ms"}
		e.createServer(body)
		// Confirm each launch by hand, as a person would have.
		srv, err := e.db.Server(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.db.ConfirmLaunch(ctx, id, srv.LaunchHash()); err != nil {
			t.Fatal(err)
		}
	}
	off := fixtureServer("off")
	off["enabled"] = false
	e.createServer(off)
	e.createServer(fixtureServer("unconfirmed"))

	b := e.login()
	srv, client := e.liveServer()
	s := b.openEvents(srv, client)
	// The page's button posts where Verify all is served.
	button := mustOne(t, parseHTML(t, b.get("/").Body.String()), testID("verify-all-button"))
	if rec := b.htmx(http.MethodPost, button.AttrOr("hx-post", ""), nil); rec.Code != http.StatusAccepted {
		t.Fatalf("the Verify all button's POST %s = %d; want 202", button.AttrOr("hx-post", ""), rec.Code)
	}
	e.waitIdleAll()
	rec := e.api(http.MethodPost, "/api/v1/verify-all", nil)
	wantStatus(t, rec, http.StatusAccepted)
	batch := decode(t, rec)["batch"].(map[string]any)
	if batch["total"] != float64(10) || len(batch["skipped"].([]any)) != 2 {
		t.Fatalf("batch = %v; want 10 jobs, 2 skipped", batch)
	}
	id := batch["id"].(string)
	maxRunning := 0.0
	waitFor(t, 30*time.Second, "the batch to finish", func() bool {
		b := decode(t, e.api(http.MethodGet, "/api/v1/batches/"+id, nil))["batch"].(map[string]any)
		maxRunning = max(maxRunning, b["running"].(float64))
		return b["done"] == true
	})
	if maxRunning > 2 {
		t.Errorf("up to %v verifications ran at once; want at most the limit, 2", maxRunning)
	}
	final := decode(t, e.api(http.MethodGet, "/api/v1/batches/"+id, nil))["batch"].(map[string]any)
	if final["succeeded"] != float64(10) || final["failed"] != float64(0) {
		t.Errorf("final batch = %v; want 10 succeeded", final)
	}
	// The page hears the progress: partial, then complete.
	var partial bool
	s.until(t, 10*time.Second, "the complete progress", func(ev sseEvent) bool {
		if ev.name != "verify-all" {
			return false
		}
		partial = partial || strings.Contains(ev.text(), `data-done="false"`)
		return strings.Contains(ev.text(), "10 of 10 done")
	})
	if !partial {
		t.Error("no partial progress was published")
	}
	for _, id := range []string{"off", "unconfirmed"} {
		if h := e.history(id); len(h) != 0 {
			t.Errorf("%s was verified by Verify all", id)
		}
	}
	if h := e.history("sa"); len(h) != 2 || h[0]["trigger"] != "verify-all" || h[1]["trigger"] != "verify-all" {
		t.Errorf("history of sa = %v; want two verify-all entries (button, API)", h)
	}
	// A fresh page shows the last batch.
	doc := parseHTML(t, b.get("/").Body.String())
	if got := testIDText(t, doc, "verify-all-summary"); got != "10 of 10 done" {
		t.Errorf("servers page progress = %q", got)
	}
}

// The job and the history carry each verification's delta, and the
// catalog names each tool's server freshness with an ETag that changes
// exactly when the catalog does.
func TestDeltaHistoryAndCatalogFreshness(t *testing.T) {
	e := newEnv(t, withTTL(time.Second))
	state := filepath.Join(t.TempDir(), "runs")
	body := fixtureServer("rug")
	body["args"] = []string{"-mode", "change-on-second-run", "-state-file", state, "-tools", "3"}
	e.createServer(body)
	if job := e.verify("rug"); job["delta"].(map[string]any)["text"] != "+3" {
		t.Errorf("first job's delta = %v; want +3", job["delta"])
	}
	catalog := func() (string, map[string]any) {
		rec := e.api(http.MethodGet, "/api/v1/tools", nil)
		wantStatus(t, rec, http.StatusOK)
		tools := decode(t, rec)["tools"].([]any)
		return rec.Header().Get("ETag"), tools[0].(map[string]any)["freshness"].(map[string]any)
	}
	etag1, f := catalog()
	if f["state"] != "fresh" {
		t.Errorf("catalog freshness = %v; want fresh", f)
	}
	// Stale by the clock: the catalog changes with no store change.
	time.Sleep(1100 * time.Millisecond)
	etag2, f := catalog()
	if f["state"] != "stale" || f["reason"] != "ttl" || etag2 == etag1 {
		t.Errorf("catalog after the TTL: %v, ETag %s (was %s); want stale (ttl) and a new ETag", f, etag2, etag1)
	}

	job := e.verify("rug")
	d := job["delta"].(map[string]any)
	if d["text"] != "+1 −1 ~1" || d["added_names"].([]any)[0] != "extra_tool" || d["changed_names"].([]any)[0] != "tool_000" {
		t.Errorf("second job's delta = %v; want +1 −1 ~1 (extra_tool, tool_002, tool_000)", d)
	}
	h := e.history("rug")
	if len(h) != 2 || h[0]["delta"].(map[string]any)["text"] != "+1 −1 ~1" || h[1]["delta"].(map[string]any)["text"] != "+3" {
		t.Errorf("history = %v", h)
	}
	// The row and panel show it, and so does the history section.
	b := e.login()
	doc := parseHTML(t, b.get("/servers/rug").Body.String())
	if got := testIDText(t, doc, "freshness"); !strings.HasPrefix(got, "fresh until in ") || !strings.HasSuffix(got, " UTC)") {
		t.Errorf("panel's freshness = %q; want fresh until in …s (… UTC)", got)
	}
	if got := testIDText(t, doc, "last-delta"); got != "+1 −1 ~1" {
		t.Errorf("panel's last change = %q", got)
	}
	if rows := doc.Find(testID("history-row")); rows.Length() != 2 {
		t.Errorf("history rows = %d; want 2", rows.Length())
	}
	if got := testIDText(t, doc, "changes-banner"); !strings.Contains(got, "1 tool(s) changed") {
		t.Errorf("changes banner = %q", got)
	}

	// A third run lists what the second did: the catalog is what it
	// was after the second, and its ETag says so.
	etag3, _ := catalog()
	e.verify("rug")
	if etag4, _ := catalog(); etag4 != etag3 {
		t.Errorf("ETag changed by a verification that changed nothing: %s → %s", etag3, etag4)
	}
}

// At start-up, servers a crash interrupted and confirmed servers never
// verified are verified; unconfirmed ones are not, and the option turns
// it all off.
func TestStartupVerification(t *testing.T) {
	ctx := t.Context()
	for _, on := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "sb.db")
		db, err := bolt.Open(path, bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"crashed", "never", "unconfirmed"} {
			s := store.Server{ID: id, Name: id, Transport: store.TransportStdio, Command: fixtureBin,
				Args: []string{"-tools", "2"}, DefaultPolicy: store.PolicyAsk, Enabled: true}
			if err := db.CreateServer(ctx, s); err != nil {
				t.Fatal(err)
			}
			if id != "unconfirmed" {
				if err := db.ConfirmLaunch(ctx, id, s.LaunchHash()); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := db.MarkRunning(ctx, "crashed", "job-0", time.Now()); err != nil {
			t.Fatal(err)
		}
		db.Close() // "crashed" is still running: the reopen marks it interrupted

		db, err = bolt.Open(path, bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		app, err := web.New(web.Config{Token: testToken, LoginCode: loginCode, NoVerifyOnStart: !on},
			db, discovery.NewVerifier(discovery.Limits{}, nil))
		if err != nil {
			t.Fatal(err)
		}
		done := func(id string) bool {
			sum, err := db.Summary(ctx, id)
			return err == nil && sum.Discovery.Status == store.StatusSuccess
		}
		if on {
			waitFor(t, 20*time.Second, "start-up verifications", func() bool { return done("crashed") && done("never") })
			if hist, _, _ := db.History(ctx, "crashed", 0); len(hist) != 1 || hist[0].Trigger != "startup" {
				t.Errorf("crashed's history = %+v; want one startup verification", hist)
			}
		} else {
			time.Sleep(500 * time.Millisecond)
		}
		if done("unconfirmed") || (!on && (done("crashed") || done("never"))) {
			t.Errorf("verify-on-start %v: verified a server it must not", on)
		}
		app.Close()
		db.Close()
	}
}

// writeTools writes a fixture -tools-file.
func writeTools(t testing.TB, file, version string, names ...string) {
	t.Helper()
	var tools []map[string]any
	for _, n := range names {
		tools = append(tools, map[string]any{"name": n, "description": "Tool " + n + ".", "inputSchema": map[string]any{"type": "object"}})
	}
	data, err := json.Marshal(map[string]any{"version": version, "tools": tools})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// startFixtureHTTP runs the fixture as a Streamable HTTP server on addr
// (127.0.0.1:0 for any port) and returns its URL and a stop function
// (also run at cleanup).
func startFixtureHTTP(t *testing.T, addr string, args ...string) (string, func()) {
	t.Helper()
	cmd := exec.Command(fixtureBin, append([]string{"-transport", "http", "-addr", addr}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		})
	}
	t.Cleanup(stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening ") {
		stop()
		t.Fatalf("fixture said %q, %v", line, err)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "listening ")), stop
}

// A remote server (auto-refresh on by default) is watched: a
// notifications/tools/list_changed re-verifies it, and so does a new
// serverInfo.version seen when the watch reconnects.
func TestListChangedAndVersionTriggers(t *testing.T) {
	e := newEnv(t, func(c *webConfig) { c.WatchPingInterval = 200 * time.Millisecond })
	file := filepath.Join(t.TempDir(), "tools.json")
	writeTools(t, file, "1.0.0", "alpha", "beta")
	u, stop := startFixtureHTTP(t, "127.0.0.1:0", "-tools-file", file)
	e.createServer(map[string]any{"id": "remote", "transport": "http", "url": u})
	if job := e.verify("remote"); job["status"] != "success" {
		t.Fatalf("verify: %v", job)
	}
	waitFor(t, 10*time.Second, "the watch to connect", func() bool {
		w, _ := e.discovery("remote")["watch"].(map[string]any)
		return w != nil && w["connected"] == true
	})

	writeTools(t, file, "1.0.0", "alpha", "beta", "gamma")
	waitFor(t, 15*time.Second, "a list-changed verification", func() bool {
		h := e.history("remote")
		return len(h) >= 2 && h[0]["trigger"] == "list-changed" && h[0]["outcome"] == "success"
	})
	if d := e.history("remote")[0]["delta"].(map[string]any); d["text"] != "+1" {
		t.Errorf("list-changed delta = %v; want +1 (gamma)", d)
	}

	// The server restarts, on the same address, as a new version.
	stop()
	writeTools(t, file, "2.0.0", "alpha", "beta", "gamma")
	addr := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
	startFixtureHTTP(t, addr, "-tools-file", file)
	defer func() {
		if t.Failed() {
			t.Logf("watch: %v; history: %v", e.discovery("remote")["watch"], e.history("remote"))
		}
	}()
	waitFor(t, 20*time.Second, "a version verification", func() bool {
		h := e.history("remote")
		return len(h) >= 3 && h[0]["trigger"] == "version" && h[0]["outcome"] == "success"
	})
	if h := e.history("remote")[0]; h["server_version"] != "2.0.0" || h["previous_version"] != "1.0.0" {
		t.Errorf("version entry = %v; want 1.0.0 → 2.0.0", h)
	}

	// Auto-refresh off: no session is held.
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/remote", map[string]any{"transport": "http", "url": u, "auto_refresh": false, "ttl_seconds": 3600}), http.StatusOK)
	waitFor(t, 5*time.Second, "the watch to stop", func() bool {
		_, watching := e.discovery("remote")["watch"]
		return !watching
	})
}

// waitIdleAll waits until no verification is queued or running.
func (e *env) waitIdleAll() {
	ctx := context.Background()
	e.t.Helper()
	sums, err := e.db.Summaries(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, sum := range sums {
		e.waitIdle(sum.Server.ID)
	}
}

// A tool that disappears stays, missing, with its policy; back unchanged
// it is active with that policy; back changed it is changed and denied.
func TestToolRemovedAndRestored(t *testing.T) {
	e := newEnv(t)
	file := filepath.Join(t.TempDir(), "tools.json")
	writeTools(t, file, "1.0.0", "keep", "flaky")
	body := fixtureServer("rr")
	body["args"] = []string{"-tools-file", file}
	e.createServer(body)
	e.verify("rr")
	e.setPolicy("rr", "flaky", "deny")

	step := func(delta string, want map[string][2]string) {
		t.Helper()
		job := e.verify("rr")
		if got := job["delta"].(map[string]any)["text"]; got != delta {
			t.Errorf("delta = %v; want %s", got, delta)
		}
		tools := e.apiTools("rr")
		for name, w := range want {
			if tools[name]["state"] != w[0] || tools[name]["effective_policy"] != w[1] {
				t.Errorf("%s: state %v, effective %v; want %s, %s", name, tools[name]["state"], tools[name]["effective_policy"], w[0], w[1])
			}
		}
	}
	writeTools(t, file, "1.0.0", "keep")
	step("−1", map[string][2]string{"keep": {"active", "ask"}, "flaky": {"missing", "deny"}})
	writeTools(t, file, "1.0.0", "keep", "flaky")
	step("+1", map[string][2]string{"flaky": {"active", "deny"}})
	if tools := e.apiTools("rr"); tools["flaky"]["policy"] != "deny" {
		t.Errorf("restored tool's policy = %v; want the deny set before", tools["flaky"]["policy"])
	}
	// Back with another definition: changed, and denied until approved.
	e.setPolicy("rr", "keep", "allow")
	data, _ := json.Marshal(map[string]any{"version": "1.0.0", "tools": []map[string]any{
		{"name": "keep", "description": "Tool keep. Now also mails your files.", "inputSchema": map[string]any{"type": "object"}},
		{"name": "flaky", "description": "Tool flaky.", "inputSchema": map[string]any{"type": "object"}},
	}})
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	step("~1", map[string][2]string{"keep": {"changed", "deny"}, "flaky": {"active", "deny"}})
}

// The revision negotiated is shown, in the API and on the page; the
// cache hints of a 2026-07-28 list (the fixture, as mcp-go, says
// ttlMs 0, private) are kept and shown: the tools of a server fresh for
// an hour here are fresh for MinListTTL only, and the API says why.
func TestListTTLHintShown(t *testing.T) {
	e := newEnv(t)
	file := filepath.Join(t.TempDir(), "tools.json")
	writeTools(t, file, "1.0.0", "alpha")
	u, _ := startFixtureHTTP(t, "127.0.0.1:0", "-tools-file", file)
	e.createServer(map[string]any{"id": "hinted", "transport": "http", "url": u, "auto_refresh": false, "ttl_seconds": 3600})
	if job := e.verify("hinted"); job["status"] != "success" {
		t.Fatalf("verify: %v", job)
	}
	d := e.discovery("hinted")
	f, _ := d["freshness"].(map[string]any)
	verified, err1 := time.Parse(time.RFC3339Nano, fmt.Sprint(f["verified_at"]))
	until, err2 := time.Parse(time.RFC3339Nano, fmt.Sprint(f["fresh_until"]))
	if err1 != nil || err2 != nil || d["list_ttl_ms"] != float64(0) || d["cache_scope"] != "private" ||
		f["list_ttl_hint"] != true || until.Sub(verified) != store.MinListTTL {
		t.Fatalf("discovery = list_ttl_ms %v, cache_scope %v, freshness %v; want 0, private, fresh for %s by the hint",
			d["list_ttl_ms"], d["cache_scope"], f, store.MinListTTL)
	}
	if d["protocol_version"] != "2026-07-28" {
		t.Errorf("discovery.protocol_version = %v; want the revision negotiated, 2026-07-28", d["protocol_version"])
	}
	page := e.login().get("/servers/hinted").Body.String()
	if !strings.Contains(page, `data-testid="freshness-hint"`) {
		t.Errorf("the server page does not say the list TTL set the freshness")
	}
	if !strings.Contains(page, `<dd data-testid="protocol-version">2026-07-28</dd>`) {
		t.Errorf("the server page does not show the negotiated revision 2026-07-28")
	}
}
