package web_test

import (
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/logtest"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/sealed"
	"github.com/switchboard-dev/switchboard/web"
	"github.com/switchboard-dev/switchboard/web/gateway"
)

// newEnvFull is newEnv on a store whose writes fail with ENOSPC, as on a
// full disk, while diskFull says so for them; it returns the store's path.
func newEnvFull(t *testing.T, diskFull func([]store.Change) bool) (*env, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sb.db")
	db, err := bolt.Open(path, bolt.Options{
		BeforeCommit: func(changes []store.Change) error {
			if diskFull(changes) {
				return syscall.ENOSPC
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Recorder{}
	cfg := webConfig{Config: web.Config{Token: testToken, LoginCode: loginCode, Logger: slog.New(logs), MCP: gateway.Config{Token: testMCPToken}}}
	st := sealed.New(db, testRing)
	app, closeApp := startApp(t, cfg, st.Store(), discovery.NewVerifier(discovery.Limits{InitTimeout: 5 * time.Second}, nil))
	e := &env{t: t, app: app, stop: closeApp, db: st, raw: db, hub: web.HubOf(app), secrets: []string{testToken, loginCode, testMCPToken}, logs: logs}
	t.Cleanup(func() {
		closeApp()
		if errs := logs.Errors(); len(errs) > 0 {
			t.Errorf("the application logged errors:\n%s", strings.Join(errs, "\n"))
		}
		db.Close()
	})
	return e, path
}

// A verification whose result cannot be saved because the disk is full
// ends failed — in the job, the API, the page and the live fragments —
// saying so, never "running" or "success"; once the disk has room again
// the store writes that failure in place of the record left running,
// without a restart.
func TestVerifyResultNotSavedOnFullDisk(t *testing.T) {
	ctx := t.Context()
	tests := []struct {
		name string
		// full says which writes fail while the disk is full: the result
		// only (the job was marked running), or every write (it was not).
		full func([]store.Change) bool
	}{
		{"result", func(cs []store.Change) bool { return len(cs) == 1 && cs[0].History }},
		{"every write", func([]store.Change) bool { return true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var full atomic.Bool
			e, path := newEnvFull(t, func(cs []store.Change) bool { return full.Load() && tt.full(cs) })
			e.createServer(fixtureServer("full"))
			if job := e.verify("full"); job.Status != discovery.JobSuccess {
				t.Fatalf("first verification = %v; want success", job)
			}
			b := e.login()
			srv, client := e.liveServer()
			s := b.openEvents(srv, client)
			s.until(t, 5*time.Second, "snapshot", named("status-full"))

			full.Store(true)
			job := e.verify("full")
			jobID := job.ID
			jerr := job.Error
			if jerr == nil {
				jerr = &apiVerifyError{}
			}
			if job.Status != discovery.JobFailed || jerr.Message != "could not save: disk full" || jerr.Phase != discovery.PhaseSaving {
				t.Errorf("job on a full disk = %+v, error %+v; want failed in saving with \"could not save: disk full\"", job, jerr)
			}
			if !strings.Contains(jerr.Suggestion, "Free some disk space") {
				t.Errorf("job suggestion = %q; want it to say to free disk space", jerr.Suggestion)
			}
			e.logs.ForgetErrors() // the cause is logged, as it should be

			// The API, the page and the live fragments say the same.
			d := e.discovery("full")
			if d.Status != string(store.StatusFailed) || d.Error == nil || d.Error.Message != "could not save: disk full" {
				t.Errorf("GET /api/v1/servers/full discovery = %+v, error %+v; want failed, \"could not save: disk full\"", d, d.Error)
			}
			if d.ToolCount != 5 {
				t.Errorf("discovery tool_count = %v; want 5, the last good tools kept", d.ToolCount)
			}
			page := b.get("/servers/full")
			wantStatus(t, page, http.StatusOK)
			doc := parseHTML(t, page.Body.String())
			if got := doc.Find(testID("status")).First().AttrOr("data-status", ""); got != string(store.StatusFailed) {
				t.Errorf("page status = %q; want failed", got)
			}
			if got := testIDText(t, doc, "error-message"); got != "could not save: disk full" {
				t.Errorf("page error message = %q; want \"could not save: disk full\"", got)
			}
			var status, row bool
			s.until(t, 10*time.Second, "status-full and row-full failed", func(ev sseEvent) bool {
				switch failed := strings.Contains(ev.text(), `data-status="failed"`); ev.name {
				case "status-full":
					status = failed && strings.Contains(ev.text(), "could not save: disk full")
				case "row-full":
					row = failed
				}
				return status && row
			})
			// Nothing of this job is written yet.
			if h, _, err := e.db.History(ctx, "full", 1); err != nil || len(h) != 1 || h[0].JobID == jobID {
				t.Fatalf("History(full) while the disk is full = %+v, %v; want the first job's entry still the newest", h, err)
			}

			// Room again: the failure is written without a restart.
			full.Store(false)
			waitFor(t, 20*time.Second, "the failure written", func() bool {
				h, _, err := e.db.History(ctx, "full", 1)
				return err == nil && len(h) == 1 && h[0].JobID == jobID
			})
			h, _, err := e.db.History(ctx, "full", 1)
			if err != nil || h[0].Outcome != store.StatusFailed || h[0].Error == nil || h[0].Error.Message != "could not save: disk full" {
				t.Errorf("History(full)[0] once written = %+v, %v; want failed, \"could not save: disk full\"", h, err)
			}
			s.until(t, 10*time.Second, "history-full changed", named("history-full"))

			// The file itself holds the failure: opened again, the record
			// is not a verification left running (which Open would mark
			// interrupted).
			e.stop()
			if err := e.db.Close(); err != nil {
				t.Fatalf("Close() = %v; want nil", err)
			}
			db, err := bolt.Open(path, bolt.Options{})
			if err != nil {
				t.Fatalf("bolt.Open(%q) = %v; want nil", path, err)
			}
			defer db.Close()
			sum, err := db.Summary(ctx, "full")
			if err != nil || sum.Discovery.Status != store.StatusFailed || sum.Discovery.JobID != jobID ||
				sum.Discovery.Error == nil || sum.Discovery.Error.Message != "could not save: disk full" || sum.Discovery.ToolCount != 5 {
				t.Errorf("Summary(full) from the file = %+v, %v; want job %s failed, \"could not save: disk full\", 5 tools", sum.Discovery, err, jobID)
			}
		})
	}
}

// A create the store cannot write for a full disk is answered 507 saying
// so, not a generic 500, and nothing is created (issue 34, L11).
func TestCreateOnFullDisk(t *testing.T) {
	var full atomic.Bool
	e, _ := newEnvFull(t, func([]store.Change) bool { return full.Load() })
	full.Store(true)
	rec := e.api(http.MethodPost, "/api/v1/servers", fixtureServer("full"))
	wantStatus(t, rec, http.StatusInsufficientStorage)
	if m := decodeAs[apiError](t, rec); !strings.Contains(m.Error, "disk") || !strings.Contains(m.Error, "full") {
		t.Errorf("error = %q; want it to say the disk is full", m.Error)
	}
	full.Store(false)
	wantStatus(t, e.api(http.MethodGet, "/api/v1/servers/full", nil), http.StatusNotFound)
	e.logs.ForgetErrors() // the 507 was logged, on purpose
}
