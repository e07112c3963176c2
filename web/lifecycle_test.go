package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/web"
)

// withTTL sets the global TTL, so that tests see tools go stale quickly.
func withTTL(d time.Duration) appOption { return func(c *webConfig) { c.DefaultTTL = d } }

// testClock is the wall clock moved on by Advance: its times keep their
// order with those of the processes and jobs, and a TTL passes at once.
type testClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock on by d.
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// withClock has the application judge freshness by c.
func withClock(c *testClock) appOption { return func(cfg *webConfig) { cfg.Now = c.Now } }

// history returns a server's history through the API, newest first.
func (e *env) history(id string) []apiHistoryEntry {
	e.t.Helper()
	rec := e.api(http.MethodGet, "/api/v1/servers/"+id+"/history", nil)
	wantStatus(e.t, rec, http.StatusOK)
	return decodeAs[historyAnswer](e.t, rec).History
}

// triggers lists the triggers of a server's history, oldest first.
func triggers(hist []apiHistoryEntry) []string {
	var out []string
	for i := len(hist) - 1; i >= 0; i-- {
		out = append(out, hist[i].Trigger)
	}
	return out
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
	if !t.Run("fresh right after a verify", func(t *testing.T) {
		e := e.in(t)
		if f := e.discovery("manual").Freshness; f.State != "fresh" || f.FreshUntil == nil {
			t.Fatalf("freshness right after a verify = %v; want fresh, with fresh_until", f)
		}
	}) {
		return
	}

	t.Run("auto-refresh on verifies again at the TTL", func(t *testing.T) {
		e := e.in(t)
		waitFor(t, 15*time.Second, "a TTL refresh of auto", func() bool {
			h := e.history("auto")
			return len(h) >= 2 && h[0].Trigger == "ttl" && h[0].Outcome == "success"
		})
		if got := triggers(e.history("auto")); got[0] != "manual" {
			t.Errorf("auto's triggers = %v; want manual first, then ttl", got)
		}
	})
	t.Run("auto-refresh off marks the tools stale at the TTL", func(t *testing.T) {
		e := e.in(t)
		var f apiFreshness
		waitFor(t, 5*time.Second, "manual to turn stale", func() bool {
			f = e.discovery("manual").Freshness
			return f.State != "fresh"
		})
		if f.State != "stale" || f.Reason != "ttl" || f.StaleSince == nil {
			t.Errorf("freshness of manual after its TTL = %+v; want stale (ttl) with stale_since", f)
		}
		if d := e.discovery("manual"); !d.Stale {
			t.Errorf("manual after its TTL: stale = %v; want true", d.Stale)
		}
		if h := e.history("manual"); len(h) != 1 {
			t.Errorf("manual (auto-refresh off) has %d verifications; want 1: %v", len(h), triggers(h))
		}
	})
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

	if !t.Run("a secret's new value is verified at once, the old tools kept meanwhile", func(t *testing.T) {
		e := e.in(t)
		body["env"] = map[string]string{"API_KEY": "second-value-2"}
		rec := e.api(http.MethodPut, "/api/v1/servers/ed", body)
		wantStatus(t, rec, http.StatusOK)
		if d := decodeAs[apiServer](t, rec).Discovery; d == nil || d.ToolCount != 5 || d.JobID == "" {
			t.Errorf("right after the edit: %+v; want the old 5 tools kept, and the edit's job", d)
		}
		waitFor(t, 15*time.Second, "the edit's verification", func() bool {
			h := e.history("ed")
			return len(h) == 2 && h[0].Trigger == "edit" && h[0].Outcome == "success"
		})
		if f := e.discovery("ed").Freshness; f.State != "fresh" {
			t.Errorf("after the edit's verification: %+v; want fresh", f)
		}
	}) {
		return
	}

	// A new argument changes the launch: nothing runs until confirmed. An
	// edit's verification is started before the PUT answers (as the
	// answer above shows, with its job), so this answer without a job
	// says none was; and the history checked after the confirmed Verify
	// below holds whatever ran between the edit and the confirmation.
	t.Run("a new argument waits for the launch to be confirmed", func(t *testing.T) {
		e := e.in(t)
		body["args"] = []string{"-tools", "4"}
		rec := e.api(http.MethodPut, "/api/v1/servers/ed", body)
		wantStatus(t, rec, http.StatusOK)
		if d := decodeAs[apiServer](t, rec).Discovery; d == nil || d.JobID != "" {
			t.Errorf("an unconfirmed launch was verified: the edit answered %+v", d)
		}
		if h := e.history("ed"); len(h) != 2 {
			t.Errorf("an unconfirmed launch was verified: %v", triggers(h))
		}
		f := e.discovery("ed").Freshness
		if f.State != "stale" || f.Reason != "config" {
			t.Errorf("after an unconfirmed edit: %+v; want stale (config)", f)
		}
		if job := e.verify("ed"); job.Status != "success" || job.ToolCount != 4 {
			t.Errorf("verify after confirming: %+v", job)
		}
		if got := triggers(e.history("ed")); !slices.Equal(got, []string{"manual", "edit", "manual"}) {
			t.Errorf("history = %v; want manual, edit, manual: nothing between the unconfirmed edit and its confirmation", got)
		}
	})
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
	first := decodeAs[jobAnswer](t, rec).Job.ID
	waitFor(t, 5*time.Second, "the first job to run", func() bool { return e.serverStatus("slow") == "running" })

	body["env"] = map[string]string{"MODE": "two"}
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/slow", body), http.StatusOK)
	if job := e.waitJob(first); job.Status == "success" {
		t.Errorf("the old configuration's job = %v; want it cancelled", job.Status)
	}
	// Both land in the history, in whichever order they finished.
	byJob := map[string]apiHistoryEntry{}
	waitFor(t, 20*time.Second, "both verifications in the history", func() bool {
		byJob = map[string]apiHistoryEntry{}
		for _, h := range e.history("slow") {
			byJob[h.JobID] = h
		}
		return len(byJob) == 2
	})
	for id, h := range byJob {
		switch {
		case id == first && h.Outcome != string(store.OutcomeDiscarded):
			t.Errorf("the first job's entry = %+v; want discarded", h)
		case id != first && (h.Outcome != "success" || h.Trigger != "edit" || h.ToolCount != 5):
			t.Errorf("the edit's entry = %+v; want a success with 5 tools", h)
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
		if err := e.db.ConfirmLaunch(ctx, id, srv.LaunchHash(), ""); err != nil {
			t.Fatal(err)
		}
	}
	off := fixtureServer("off")
	off["enabled"] = false
	e.createServer(off)
	e.createServer(fixtureServer("unconfirmed"))

	// The stream is opened here, not in a step, as the last step reads it.
	b := e.login()
	srv, client := e.liveServer()
	s := b.openEvents(srv, client)
	if !t.Run("the page's button posts where Verify all is served", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		button := mustOne(t, parseHTML(t, b.get("/").Body.String()), testID("verify-all-button"))
		if rec := b.htmx(http.MethodPost, button.AttrOr("hx-post", ""), nil); rec.Code != http.StatusAccepted {
			t.Fatalf("the Verify all button's POST %s = %d; want 202", button.AttrOr("hx-post", ""), rec.Code)
		}
		e.waitIdleAll()
	}) {
		return
	}
	var batch apiBatch
	if !t.Run("the API's batch verifies within the concurrency limit", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodPost, "/api/v1/verify-all", nil)
		wantStatus(t, rec, http.StatusAccepted)
		batch = decodeAs[batchAnswer](t, rec).Batch
		if batch.Total != 10 || len(batch.Skipped) != 2 {
			t.Fatalf("batch = %+v; want 10 jobs, 2 skipped", batch)
		}
		getBatch := func() apiBatch {
			t.Helper()
			rec := e.api(http.MethodGet, "/api/v1/batches/"+batch.ID, nil)
			wantStatus(t, rec, http.StatusOK)
			return decodeAs[batchAnswer](t, rec).Batch
		}
		maxRunning := 0
		waitFor(t, 30*time.Second, "the batch to finish", func() bool {
			b := getBatch()
			maxRunning = max(maxRunning, b.Running)
			return b.Done
		})
		if maxRunning > 2 {
			t.Errorf("up to %v verifications ran at once; want at most the limit, 2", maxRunning)
		}
		if final := getBatch(); final.Succeeded != 10 || final.Failed != 0 {
			t.Errorf("final batch = %+v; want 10 succeeded", final)
		}
	}) {
		return
	}
	t.Run("the page hears the progress, partial then complete", func(t *testing.T) {
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
	})
	t.Run("disabled and unconfirmed servers are skipped", func(t *testing.T) {
		e := e.in(t)
		for _, id := range []string{"off", "unconfirmed"} {
			if h := e.history(id); len(h) != 0 {
				t.Errorf("%s was verified by Verify all", id)
			}
		}
		if h := e.history("sa"); !slices.Equal(triggers(h), []string{"verify-all", "verify-all"}) {
			t.Errorf("history of sa = %+v; want two verify-all entries (button, API)", h)
		}
	})
	t.Run("a fresh page shows the last batch", func(t *testing.T) {
		b := b.in(t)
		doc := parseHTML(t, b.get("/").Body.String())
		if got := testIDText(t, doc, "verify-all-summary"); got != "10 of 10 done" {
			t.Errorf("servers page progress = %q", got)
		}
	})
}

// The job and the history carry each verification's delta, and the
// catalog names each tool's server freshness with an ETag that changes
// exactly when the catalog does.
func TestDeltaHistoryAndCatalogFreshness(t *testing.T) {
	clock := &testClock{}
	e := newEnv(t, withTTL(time.Minute), withClock(clock)) // under store.MinListTTL: no hint
	state := filepath.Join(t.TempDir(), "runs")
	body := fixtureServer("rug")
	body["args"] = []string{"-mode", "change-on-second-run", "-unchanged-runs", "2", "-state-file", state, "-tools", "3"}
	body["cwd"] = filepath.Dir(state) // where its walls let it write its state
	e.createServer(body)
	// catalog reads the catalog's ETag and its first tool's freshness
	// through e, bound to the step that calls it.
	catalog := func(e *env) (string, apiFreshness) {
		t := e.t
		t.Helper()
		rec := e.api(http.MethodGet, "/api/v1/tools", nil)
		wantStatus(t, rec, http.StatusOK)
		tools := decodeAs[toolsAnswer](t, rec).Tools
		if len(tools) == 0 || tools[0].Freshness == nil {
			t.Fatalf("catalog = %+v; want tools with their server's freshness", tools)
		}
		return rec.Header().Get("ETag"), *tools[0].Freshness
	}
	if !t.Run("the first verification's delta adds every tool, fresh in the catalog", func(t *testing.T) {
		e := e.in(t)
		if job := e.verify("rug"); job.Delta == nil || job.Delta.Text != "+3" {
			t.Errorf("first job's delta = %+v; want +3", job.Delta)
		}
		etag1, f := catalog(e)
		if f.State != "fresh" {
			t.Errorf("catalog freshness = %+v; want fresh", f)
		}
		// Stale by the clock: the catalog changes with no store change.
		clock.Advance(time.Minute + time.Second)
		etag2, f := catalog(e)
		if f.State != "stale" || f.Reason != "ttl" || etag2 == etag1 {
			t.Errorf("catalog after the TTL: %+v, ETag %s (was %s); want stale (ttl) and a new ETag", f, etag2, etag1)
		}
	}) {
		return
	}

	if !t.Run("the second verification's delta is in the job and the history", func(t *testing.T) {
		e := e.in(t)
		job := e.verify("rug")
		wantDelta := &apiDelta{Added: 1, Removed: 1, Changed: 1, AddedNames: []string{"extra_tool"}, RemovedNames: []string{"tool_002"},
			ChangedNames: []string{"tool_000"}, Text: "+1 −1 ~1"}
		if diff := cmp.Diff(wantDelta, job.Delta); diff != "" {
			t.Errorf("second job's delta (-want +got):\n%s", diff)
		}
		h := e.history("rug")
		if len(h) != 2 || h[0].Delta == nil || h[0].Delta.Text != "+1 −1 ~1" || h[1].Delta == nil || h[1].Delta.Text != "+3" {
			t.Errorf("history = %+v", h)
		}
	}) {
		return
	}
	t.Run("the row, panel and history section show it", func(t *testing.T) {
		b := e.in(t).login()
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
		if got := testIDText(t, doc, "changes-banner"); !strings.Contains(got, "1 change(s) awaiting review") {
			t.Errorf("changes banner = %q", got)
		}
	})

	// A third run lists what the second did: the catalog is what it
	// was after the second, and its ETag says so.
	t.Run("a verification that changes nothing keeps the ETag", func(t *testing.T) {
		e := e.in(t)
		etag3, _ := catalog(e)
		e.verify("rug")
		if etag4, _ := catalog(e); etag4 != etag3 {
			t.Errorf("ETag changed by a verification that changed nothing: %s → %s", etag3, etag4)
		}
	})
}

// At start-up, servers a crash interrupted and confirmed servers never
// verified are verified; unconfirmed ones are not, and the option turns
// it all off.
func TestStartupVerification(t *testing.T) {
	ctx := t.Context()
	for _, on := range []bool{true, false} {
		name := "verify on start"
		if !on {
			name = "no verify on start"
		}
		t.Run(name, func(t *testing.T) {
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
					if err := db.ConfirmLaunch(ctx, id, s.LaunchHash(), ""); err != nil {
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
			_, closeApp := startApp(t, webConfig{Config: web.Config{Token: testToken, LoginCode: loginCode}, NoVerifyOnStart: !on},
				db, discovery.NewVerifier(discovery.Limits{}, nil))
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
				// Nothing to wait for: whatever would start verifications
				// starts none; the quiet period gives it the time it would
				// take, so that its absence means something.
				time.Sleep(quietPeriod)
			}
			if done("unconfirmed") || (!on && (done("crashed") || done("never"))) {
				t.Errorf("verify-on-start %v: verified a server it must not", on)
			}
			closeApp()
			db.Close()
		})
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
	if !t.Run("a verified remote server is watched", func(t *testing.T) {
		e := e.in(t)
		if job := e.verify("remote"); job.Status != "success" {
			t.Fatalf("verify: %+v", job)
		}
		waitFor(t, 10*time.Second, "the watch to connect", func() bool {
			w := e.discovery("remote").Watch
			return w != nil && w.Connected
		})
	}) {
		return
	}

	if !t.Run("a list_changed notification verifies again", func(t *testing.T) {
		e := e.in(t)
		writeTools(t, file, "1.0.0", "alpha", "beta", "gamma")
		waitFor(t, 15*time.Second, "a list-changed verification", func() bool {
			h := e.history("remote")
			return len(h) >= 2 && h[0].Trigger == "list-changed" && h[0].Outcome == "success"
		})
		if d := e.history("remote")[0].Delta; d == nil || d.Text != "+1" {
			t.Errorf("list-changed delta = %+v; want +1 (gamma)", d)
		}
	}) {
		return
	}

	// The server restarts, on the same address, as a new version. It is
	// started here, by the test, as it runs until the test ends.
	stop()
	writeTools(t, file, "2.0.0", "alpha", "beta", "gamma")
	addr := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
	startFixtureHTTP(t, addr, "-tools-file", file)
	defer func() {
		if t.Failed() {
			t.Logf("watch: %+v; history: %+v", e.discovery("remote").Watch, e.history("remote"))
		}
	}()
	if !t.Run("a new version seen as the watch reconnects verifies again", func(t *testing.T) {
		e := e.in(t)
		waitFor(t, 20*time.Second, "a version verification", func() bool {
			h := e.history("remote")
			return len(h) >= 3 && h[0].Trigger == "version" && h[0].Outcome == "success"
		})
		if h := e.history("remote")[0]; h.ServerVersion != "2.0.0" || h.PreviousVersion != "1.0.0" {
			t.Errorf("version entry = %+v; want 1.0.0 → 2.0.0", h)
		}
	}) {
		return
	}

	t.Run("with auto-refresh off no session is held", func(t *testing.T) {
		e := e.in(t)
		wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/remote", map[string]any{"transport": "http", "url": u, "auto_refresh": false, "ttl_seconds": 3600}), http.StatusOK)
		waitFor(t, 5*time.Second, "the watch to stop", func() bool { return e.discovery("remote").Watch == nil })
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

	// step verifies again through e, bound to the step, and checks the
	// delta and the tools' states and effective policies.
	step := func(e *env, delta string, want map[string][2]string) {
		t := e.t
		t.Helper()
		job := e.verify("rr")
		if job.Delta == nil || job.Delta.Text != delta {
			t.Errorf("delta = %+v; want %s", job.Delta, delta)
		}
		tools := e.apiTools("rr")
		for name, w := range want {
			if tools[name].State != w[0] || tools[name].EffectivePolicy != w[1] {
				t.Errorf("%s: state %v, effective %v; want %s, %s", name, tools[name].State, tools[name].EffectivePolicy, w[0], w[1])
			}
		}
	}
	if !t.Run("a tool that disappears stays, missing, with its policy", func(t *testing.T) {
		writeTools(t, file, "1.0.0", "keep")
		step(e.in(t), "−1", map[string][2]string{"keep": {"active", "ask"}, "flaky": {"missing", "deny"}})
	}) {
		return
	}
	if !t.Run("back unchanged it is active with that policy", func(t *testing.T) {
		e := e.in(t)
		writeTools(t, file, "1.0.0", "keep", "flaky")
		step(e, "+1", map[string][2]string{"flaky": {"active", "deny"}})
		if tools := e.apiTools("rr"); tools["flaky"].Policy != "deny" {
			t.Errorf("restored tool's policy = %v; want the deny set before", tools["flaky"].Policy)
		}
	}) {
		return
	}
	t.Run("back with another definition it is changed, and denied until approved", func(t *testing.T) {
		e := e.in(t)
		e.setPolicy("rr", "keep", "allow")
		data, _ := json.Marshal(map[string]any{"version": "1.0.0", "tools": []map[string]any{
			{"name": "keep", "description": "Tool keep. Now also mails your files.", "inputSchema": map[string]any{"type": "object"}},
			{"name": "flaky", "description": "Tool flaky.", "inputSchema": map[string]any{"type": "object"}},
		}})
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		step(e, "~1", map[string][2]string{"keep": {"changed", "deny"}, "flaky": {"active", "deny"}})
	})
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
	if job := e.verify("hinted"); job.Status != "success" {
		t.Fatalf("verify: %+v", job)
	}
	d := e.discovery("hinted")
	f := d.Freshness
	if f.VerifiedAt == nil || f.FreshUntil == nil || d.ListTTLMS == nil || *d.ListTTLMS != 0 || d.CacheScope != "private" ||
		!f.ListTTLHint || f.FreshUntil.Sub(*f.VerifiedAt) != store.MinListTTL {
		t.Fatalf("discovery = list_ttl_ms %v, cache_scope %v, freshness %+v; want 0, private, fresh for %s by the hint",
			d.ListTTLMS, d.CacheScope, f, store.MinListTTL)
	}
	if d.ProtocolVersion != "2026-07-28" {
		t.Errorf("discovery.protocol_version = %v; want the revision negotiated, 2026-07-28", d.ProtocolVersion)
	}
	page := e.login().get("/servers/hinted").Body.String()
	if !strings.Contains(page, `data-testid="freshness-hint"`) {
		t.Errorf("the server page does not say the list TTL set the freshness")
	}
	if !strings.Contains(page, `<dd data-testid="protocol-version">2026-07-28</dd>`) {
		t.Errorf("the server page does not show the negotiated revision 2026-07-28")
	}
}
