package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"go.uber.org/goleak"

	"github.com/switchboard-dev/switchboard/cluster"
	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/grants"
	"github.com/switchboard-dev/switchboard/internal/logtest"
	"github.com/switchboard-dev/switchboard/internal/registry"
	"github.com/switchboard-dev/switchboard/internal/secretkey"
	"github.com/switchboard-dev/switchboard/internal/verify"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/sealed"
	"github.com/switchboard-dev/switchboard/web"
	"github.com/switchboard-dev/switchboard/web/gateway"
	"github.com/switchboard-dev/switchboard/web/internal/hub"
)

const (
	testToken = "test-token"
	// testMCPToken is the MCP endpoint's token.
	testMCPToken = "test-mcp-token-0123456789"
	loginCode    = "code123"
	testHost     = "127.0.0.1:7420"
)

// quietPeriod is how long a test waits to see that something does not
// happen, where no event marks the moment it would have (the refresher's
// start-up pass, a notification not sent): well past the 200 ms the
// refresher lets changes settle.
const quietPeriod = 500 * time.Millisecond

// fixtureBin is the mcp-fixture binary built once by TestMain.
var fixtureBin string

// fixtureEnv names a built mcp-fixture for TestMain to use.
const fixtureEnv = "WEB_TEST_FIXTURE"

func TestMain(m *testing.M) {
	bolt.RunChildCheckIfAsked()    // the store checks a damaged file in a child: this binary
	discovery.RunLauncherIfAsked() // and servers start through it (see discovery/launcher.go)
	dir, err := os.MkdirTemp("", "web-test-fixture-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// A copy of this binary run as another user (see
	// TestEscapeThroughTheDashboardAsOrdinaryUser) has no Go build cache:
	// it is given the fixture.
	if fixtureBin = os.Getenv(fixtureEnv); fixtureBin == "" {
		fixtureBin = filepath.Join(dir, "mcp-fixture")
		build := exec.Command("go", "build", "-o", fixtureBin, "github.com/switchboard-dev/switchboard/cmd/mcp-fixture")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build mcp-fixture:", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	// Every test's app, streams and processes must have ended once the
	// tests pass.
	goleak.VerifyTestMain(settling{m}, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// settling runs the tests, then, if they passed, gives the goroutines
// they started up to 5 s to end: an application ends its streams and
// processes after Close returns. goleak's own retries (v1.3.0: under half
// a second, not configurable) are too short for that; VerifyTestMain
// reports the goroutines still running after.
type settling struct{ m *testing.M }

func (s settling) Run() int {
	code := s.m.Run()
	for deadline := time.Now().Add(5 * time.Second); code == 0 && goleak.Find() != nil && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	return code
}

// env is one application with its store and hub.
type env struct {
	t   testing.TB
	app *web.Server
	// stop closes app and what it was built on but its store, once.
	stop func()
	// db is the app's store, its secrets sealed; raw is the file as kept.
	db  *sealed.Store
	raw *bolt.DB
	hub *hub.Hub
	// secrets are values that must never appear in any response body.
	secrets []string
	logs    *logtest.Recorder
}

// in returns e bound to t, a subtest of e's test, so that a scenario's
// steps can be subtests: e's helpers report to t and end t, not the
// parent, when they fail. The copy shares the application, store, hub and
// log recorder. What its helpers register for cleanup (liveServer's
// listener, openEvents' stream, an MCP client) ends with t, so a step
// opens only what it alone uses; and a secret is added to e.secrets
// before the steps, where the parent's check at cleanup sees it.
func (e *env) in(t testing.TB) *env {
	c := *e
	c.t = t
	return &c
}

// webConfig configures a test's application: the web face's Config,
// and the verifications' settings the program gives internal/verify.
type webConfig struct {
	web.Config
	Concurrency       int
	DefaultTTL        time.Duration
	NoVerifyOnStart   bool
	WatchPingInterval time.Duration
	Cluster           cluster.Cluster
	// Registries, if any, are the registries browsed (their copies kept
	// in the app's store).
	Registries []string
}

type appOption func(*webConfig)

// startApp wires an application on st, whose servers v verifies and runs,
// as switchboard serve does (cmd/switchboard/serve.go); stop closes it
// and what it was built on but st.
func startApp(t testing.TB, cfg webConfig, st store.Store, v *discovery.Verifier) (app *web.Server, stop func()) {
	t.Helper()
	keeper := grants.NewKeeper(st, v)
	verifications := verify.New(verify.Config{
		Concurrency: cfg.Concurrency, DefaultTTL: cfg.DefaultTTL, NoVerifyOnStart: cfg.NoVerifyOnStart,
		WatchPingInterval: cfg.WatchPingInterval, Cluster: cfg.Cluster, Logger: cfg.Logger, Now: cfg.Now,
	}, st, v, keeper)
	var copies *registry.Copies
	if len(cfg.Registries) > 0 {
		copies = registry.NewCopies(st, cfg.Registries, 0, cfg.Logger)
	}
	app, err := web.New(cfg.Config, web.Deps{Store: st, Verify: verifications, Verifier: v, Grants: keeper, Cluster: cfg.Cluster, Registry: copies})
	if err != nil {
		verifications.Close()
		t.Fatal(err)
	}
	verifications.Start()
	var once sync.Once
	return app, func() {
		once.Do(func() {
			app.Close()
			verifications.Close()
		})
	}
}

func newEnv(t testing.TB, opts ...appOption) *env {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "sb.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// As serve runs it: the secrets sealed.
	st := sealed.New(db, testRing)
	e := newEnvOn(t, st.Store(), opts...)
	e.db, e.raw = st, db
	return e
}

// testRing seals the test apps' secrets.
var testRing, _ = secretkey.NewRing(secretkey.New())

// newEnvOn is an application on st (closed with it when the test ends),
// such as a replica on etcd.
func newEnvOn(t testing.TB, st store.Store, opts ...appOption) *env {
	t.Helper()
	return newEnvVerifying(t, st, discovery.NewVerifier(discovery.Limits{InitTimeout: 5 * time.Second}, nil), opts...)
}

// newEnvVerifying is an application on st whose servers v verifies and
// runs.
func newEnvVerifying(t testing.TB, st store.Store, v *discovery.Verifier, opts ...appOption) *env {
	t.Helper()
	logs := &logtest.Recorder{}
	cfg := webConfig{Config: web.Config{Token: testToken, LoginCode: loginCode, Logger: slog.New(logs), MCP: gateway.Config{Token: testMCPToken}}}
	for _, o := range opts {
		o(&cfg)
	}
	app, stop := startApp(t, cfg, st, v)
	e := &env{t: t, app: app, stop: stop, hub: web.HubOf(app), secrets: []string{testToken, loginCode, testMCPToken}, logs: logs}
	t.Cleanup(func() {
		stop()
		if errs := logs.Errors(); len(errs) > 0 {
			t.Errorf("the application logged errors:\n%s", strings.Join(errs, "\n"))
		}
		e.checkNoSecrets("the application's log", strings.Join(logs.Texts(slog.LevelDebug), "\n"))
		st.Close()
	})
	return e
}

// newRequest is an httptest request with an allowed Host.
func newRequest(method, target string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.Host = testHost
	return r
}

// serve runs a request through the app and checks that no secret is in
// the answer.
func (e *env) serve(r *http.Request) *httptest.ResponseRecorder {
	e.t.Helper()
	rec := httptest.NewRecorder()
	e.app.ServeHTTP(rec, r)
	e.checkNoSecrets(r.Method+" "+r.URL.String(), rec.Body.String())
	return rec
}

// serverStatus is the server's discovery status from the API.
func (e *env) serverStatus(id string) store.Status {
	e.t.Helper()
	return store.Status(e.discovery(id).Status)
}

// server is the server from the API.
func (e *env) server(id string) apiServer {
	e.t.Helper()
	rec := e.api(http.MethodGet, "/api/v1/servers/"+id, nil)
	wantStatus(e.t, rec, http.StatusOK)
	return decodeAs[apiServer](e.t, rec)
}

// discovery is the server's discovery from the API.
func (e *env) discovery(id string) apiDiscovery {
	e.t.Helper()
	srv := e.server(id)
	if srv.Discovery == nil {
		e.t.Fatalf("server %s without discovery: %+v", id, srv)
	}
	return *srv.Discovery
}

// waitIdle waits until no verification of the server is queued or
// running.
func (e *env) waitIdle(id string) {
	e.t.Helper()
	waitFor(e.t, 20*time.Second, id+" idle", func() bool { return e.discovery(id).JobID == "" })
}

func (e *env) checkNoSecrets(what, body string) {
	e.t.Helper()
	for _, s := range e.secrets {
		if strings.Contains(body, s) {
			e.t.Errorf("%s: response body contains the secret %q", what, s)
		}
	}
}

// api sends a JSON API request with the bearer token. body may be nil, a
// string (sent as is) or a value to encode.
func (e *env) api(method, path string, body any) *httptest.ResponseRecorder {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	r := newRequest(method, path, rd)
	r.Header.Set("Authorization", "Bearer "+testToken)
	if rd != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	return e.serve(r)
}

// decode parses a JSON answer into a generic map: only for the checks of
// an answer's raw shape, such as a key that must be absent (decodeAs
// reads answers otherwise).
func decode(t testing.TB, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type = %q, want JSON; body: %s", ct, rec.Body.String())
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("decode %q: %v", rec.Body.String(), err)
	}
	return m
}

func wantStatus(t testing.TB, rec *httptest.ResponseRecorder, want int) {
	t.Helper()
	if rec.Code != want {
		t.Fatalf("status = %d, want %d; body: %s", rec.Code, want, truncate(rec.Body.String()))
	}
}

func truncate(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// fixtureServer is the API body of a stdio server running the fixture.
func fixtureServer(id string) map[string]any {
	return map[string]any{
		"id":        id,
		"name":      "Fixture " + id,
		"transport": "stdio",
		"command":   fixtureBin,
		"args":      []string{"-tools", "5", "-page-size", "2"},
	}
}

func (e *env) createServer(body map[string]any) apiServer {
	e.t.Helper()
	rec := e.api(http.MethodPost, "/api/v1/servers", body)
	wantStatus(e.t, rec, http.StatusCreated)
	return decodeAs[apiServer](e.t, rec)
}

// confirmed is the body of a Verify that confirms the server's launch
// (see TestVerifyNeedsConfirmedLaunch).
var confirmed = map[string]any{"confirm": true}

// verify starts a verification through the API and waits until its job
// is done; it returns the finished job.
func (e *env) verify(id string) apiJob {
	e.t.Helper()
	rec := e.api(http.MethodPost, "/api/v1/servers/"+id+"/verify", confirmed)
	wantStatus(e.t, rec, http.StatusAccepted)
	return e.waitJob(decodeAs[jobAnswer](e.t, rec).Job.ID)
}

// job is the job from the API.
func (e *env) job(jobID string) apiJob {
	e.t.Helper()
	rec := e.api(http.MethodGet, "/api/v1/jobs/"+jobID, nil)
	wantStatus(e.t, rec, http.StatusOK)
	return decodeAs[jobAnswer](e.t, rec).Job
}

// waitJob waits until the job is done and returns it.
func (e *env) waitJob(jobID string) apiJob {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		job := e.job(jobID)
		if job.FinishedAt != nil {
			return job
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("job %s not done in time: %+v", jobID, job)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// browser is a logged-in browser session.
type browser struct {
	e      *env
	cookie *http.Cookie
	csrf   string
}

// login redeems the one-time login code and reads the CSRF token from the
// servers page.
func (e *env) login() *browser {
	e.t.Helper()
	rec := e.serve(newRequest(http.MethodGet, "/login?code="+loginCode, nil))
	wantStatus(e.t, rec, http.StatusSeeOther)
	return e.browserFrom(rec)
}

// loginWithToken logs in through the token form.
func (e *env) loginWithToken() *browser {
	e.t.Helper()
	r := newRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"token": {testToken}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	rec := e.serve(r)
	wantStatus(e.t, rec, http.StatusSeeOther)
	return e.browserFrom(rec)
}

func (e *env) browserFrom(rec *httptest.ResponseRecorder) *browser {
	e.t.Helper()
	b := &browser{e: e}
	for _, c := range rec.Result().Cookies() {
		if c.Name == "switchboard_session" {
			b.cookie = c
		}
	}
	if b.cookie == nil || b.cookie.Value == "" {
		e.t.Fatalf("login set no session cookie; headers: %v", rec.Header())
	}
	page := b.get("/")
	wantStatus(e.t, page, http.StatusOK)
	b.csrf = mustOne(e.t, parseHTML(e.t, page.Body.String()), `[name="csrf-token"]`).AttrOr("content", "")
	if b.csrf == "" {
		e.t.Fatal("no CSRF token in the page")
	}
	return b
}

// in returns b bound to t, a subtest of its env's test (see env.in): the
// same session, whose helpers report to t.
func (b *browser) in(t testing.TB) *browser {
	c := *b
	c.e = b.e.in(t)
	return &c
}

func (b *browser) request(method, path string, body io.Reader) *http.Request {
	r := newRequest(method, path, body)
	r.AddCookie(b.cookie)
	return r
}

func (b *browser) get(path string) *httptest.ResponseRecorder {
	b.e.t.Helper()
	return b.e.serve(b.request(http.MethodGet, path, nil))
}

// htmx sends a GET as htmx would.
func (b *browser) htmx(method, path string, form url.Values) *httptest.ResponseRecorder {
	b.e.t.Helper()
	r := b.request(method, path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("HX-Request", "true")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set("X-CSRF-Token", b.csrf)
	return b.e.serve(r)
}

// post submits a form the way a same-origin browser does, with the
// session's CSRF token in the _csrf field.
func (b *browser) post(path string, form url.Values) *httptest.ResponseRecorder {
	b.e.t.Helper()
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	f.Set("_csrf", b.csrf)
	r := b.request(http.MethodPost, path, strings.NewReader(f.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set("Origin", "http://"+testHost)
	return b.e.serve(r)
}

// --- HTML helpers (goquery) ---

// parseHTML parses a page.
func parseHTML(t testing.TB, s string) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(s))
	if err != nil {
		t.Fatalf("parse HTML: %v", err)
	}
	return doc
}

// parseFragment parses an htmx fragment in a body context (or a table
// row context for rows).
func parseFragment(t testing.TB, s string) *goquery.Document {
	t.Helper()
	return parseHTML(t, "<!DOCTYPE html><html><body><table><tbody>"+s+"</tbody></table></body></html>")
}

// finder is a document or a selection to search in.
type finder interface {
	Find(selector string) *goquery.Selection
}

// testID is the selector of the elements with the data-testid.
func testID(id string) string { return `[data-testid="` + id + `"]` }

// mustOne is the one element under root that sel matches; it fails the
// test unless exactly one does.
func mustOne(t testing.TB, root finder, sel string) *goquery.Selection {
	t.Helper()
	found := root.Find(sel)
	if n := found.Length(); n != 1 {
		t.Fatalf("found %d %s, want 1", n, sel)
	}
	return found
}

// textOf is the text of the selection's elements, trimmed.
func textOf(s *goquery.Selection) string { return strings.TrimSpace(s.Text()) }

// testIDText is the text of the one element with the data-testid.
func testIDText(t testing.TB, root finder, id string) string {
	t.Helper()
	return textOf(mustOne(t, root, testID(id)))
}

// inputValue is the value of the first form control with the name.
func inputValue(t testing.TB, root finder, name string) string {
	t.Helper()
	in := root.Find(`input[name="` + name + `"], textarea[name="` + name + `"]`).First()
	if in.Length() == 0 {
		t.Fatalf("no input named %q", name)
	}
	if in.Is("textarea") {
		return textOf(in)
	}
	return in.AttrOr("value", "")
}

// loginAs logs in through the token form with token (a personal one).
func (e *env) loginAs(token string) *browser {
	e.t.Helper()
	r := newRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	rec := e.serve(r)
	wantStatus(e.t, rec, http.StatusSeeOther)
	return e.browserFrom(rec)
}

// apiWith calls the API with token and a JSON body ("" for none).
func (e *env) apiWith(token, method, path, body string) *httptest.ResponseRecorder {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := newRequest(method, path, rd)
	r.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return e.serve(r)
}
