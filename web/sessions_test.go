package web_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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

// startAt starts an application on the database at path, as a run of
// switchboard serve does; stop ends it (the test's cleanup does if the
// test has not).
func startAt(t *testing.T, path string) (e *env, stop func()) {
	t.Helper()
	db, err := bolt.Open(path, bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Recorder{}
	cfg := webConfig{Config: web.Config{Token: testToken, LoginCode: loginCode, Logger: slog.New(logs), MCP: gateway.Config{Token: testMCPToken}}}
	st := sealed.New(db, testRing)
	app, closeApp := startApp(t, cfg, st.Store(), discovery.NewVerifier(discovery.Limits{InitTimeout: 5 * time.Second}, nil))
	e = &env{t: t, app: app, stop: closeApp, db: st, raw: db, hub: web.HubOf(app), secrets: []string{testToken, loginCode, testMCPToken}, logs: logs}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		closeApp()
		if errs := logs.Errors(); len(errs) > 0 {
			t.Errorf("the application logged errors:\n%s", strings.Join(errs, "\n"))
		}
		e.checkNoSecrets("the application's log", strings.Join(logs.Texts(slog.LevelDebug), "\n"))
		db.Close()
	}
	t.Cleanup(stop)
	return e, stop
}

// A restart logs nobody out: the session cookie of the run before, and
// its CSRF token, work with the next run on the same database, which
// keeps only the session's hash. "Log out everywhere" then ends every
// session, the caller's own too.
func TestSessionSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sb.db")
	first, stop := startAt(t, path)
	b := first.login()
	other := first.loginWithToken()
	stop()

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), b.cookie.Value) || !strings.Contains(string(raw), store.HashToken(b.cookie.Value)) {
		t.Error("the database holds the session's secret, or not its hash; want the hash only")
	}

	second, _ := startAt(t, path)
	b.e, other.e = second, second
	t.Run("the session goes on after a restart", func(t *testing.T) {
		b := b.in(t)
		page := b.get("/")
		wantStatus(t, page, http.StatusOK)
		csrf := mustOne(t, parseHTML(t, page.Body.String()), `[name="csrf-token"]`).AttrOr("content", "")
		if csrf != b.csrf {
			t.Errorf("CSRF token after a restart = %q; want the same as before, %q", csrf, b.csrf)
		}
		mustOne(t, parseHTML(t, page.Body.String()), `[data-testid="logout-everywhere"]`)
		// A state change with the CSRF token of the run before.
		wantStatus(t, b.htmx(http.MethodPost, "/verify-all", nil), http.StatusAccepted)
	})
	t.Run("log out everywhere ends every session", func(t *testing.T) {
		b := b.in(t)
		rec := b.post("/logout/everywhere", nil)
		wantStatus(t, rec, http.StatusSeeOther)
		if loc := rec.Header().Get("Location"); loc != "/login" {
			t.Errorf("Location = %q; want /login", loc)
		}
		for name, br := range map[string]*browser{"this browser": b, "the other browser": other.in(t)} {
			if rec := br.get("/"); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/login" {
				t.Errorf("%s: GET / = %d %q; want 303 to /login", name, rec.Code, rec.Header().Get("Location"))
			}
			if rec := br.htmx(http.MethodPost, "/verify-all", nil); rec.Code != http.StatusUnauthorized {
				t.Errorf("%s: htmx POST = %d; want 401", name, rec.Code)
			}
		}
	})
	t.Run("log out everywhere needs the CSRF token", func(t *testing.T) {
		e := second.in(t)
		c := e.loginWithToken()
		c.csrf = "wrong"
		wantStatus(t, c.post("/logout/everywhere", nil), http.StatusForbidden)
		wantStatus(t, c.get("/"), http.StatusOK)
	})
	t.Run("DELETE /api/v1/sessions ends every session", func(t *testing.T) {
		e := second.in(t)
		c, d := e.login(), e.loginWithToken() // the code is this run's own
		rec := e.api(http.MethodDelete, "/api/v1/sessions", nil)
		wantStatus(t, rec, http.StatusOK)
		// The CSRF subtest's session, and these two.
		if got := decodeAs[sessionsEndedAnswer](t, rec); got.Ended != 3 {
			t.Errorf("DELETE /api/v1/sessions = %+v; want ended 3", got)
		}
		for _, br := range []*browser{c, d} {
			if rec := br.get("/"); rec.Code != http.StatusSeeOther {
				t.Errorf("GET / after DELETE /api/v1/sessions = %d; want 303", rec.Code)
			}
		}
		if rec := e.serve(newRequest(http.MethodDelete, "/api/v1/sessions", nil)); rec.Code != http.StatusUnauthorized {
			t.Errorf("DELETE /api/v1/sessions without the token = %d; want 401", rec.Code)
		}
	})
}

// Log out everywhere ends the event streams of every session at once.
func TestLogoutEverywhereEndsStreams(t *testing.T) {
	e := newEnv(t)
	srv, hc := e.liveServer()
	mine, other := e.login(), e.loginWithToken()
	tabs := []*sseStream{mine.openEvents(srv, hc), other.openEvents(srv, hc)}
	waitFor(t, 5*time.Second, "two streams", func() bool { return e.hub.Connections() == 2 })
	wantStatus(t, mine.post("/logout/everywhere", nil), http.StatusSeeOther)
	for i, tab := range tabs {
		tab.waitEnded(t, 5*time.Second, fmt.Sprintf("session %d, after logging out everywhere", i+1))
	}
}
