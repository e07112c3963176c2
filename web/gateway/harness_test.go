package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/fixturetest"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/grants"
	"github.com/switchboard-dev/switchboard/internal/logtest"
	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/internal/verify"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/web/gateway"
)

// The scenario tests of this package run the gateway as Switchboard
// does, on real parts: a bolt store in t.TempDir(), a discovery.Verifier
// that starts the real fixture server (cmd/mcp-fixture), the
// verifications of internal/verify, and the Endpoint served over HTTP
// with httptest, reached by mcp-go's client (internal/mcptest). What a
// person does on the dashboard (create and verify a server, set a
// policy, answer an approval) is done here on the store, the
// verifications and the Endpoint, as the web package's handlers do it.

// testMCPToken is the endpoint's token.
const testMCPToken = "test-mcp-token-0123456789"

// quietPeriod is how long a test waits to see that something does not
// happen, where no event marks the moment it would have.
const quietPeriod = 500 * time.Millisecond

// fixtureBin is the mcp-fixture binary built once by TestMain.
var fixtureBin string

func TestMain(m *testing.M) {
	bolt.RunChildCheckIfAsked()    // the store checks a damaged file in a child: this binary
	discovery.RunLauncherIfAsked() // and servers start through it (see discovery/launcher.go)
	dir, err := os.MkdirTemp("", "gateway-test-fixture-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fixtureBin = filepath.Join(dir, "mcp-fixture")
	build := exec.Command("go", "build", "-o", fixtureBin, "github.com/switchboard-dev/switchboard/cmd/mcp-fixture")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build mcp-fixture:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one endpoint on its own store, served at base.
type env struct {
	t  testing.TB
	db *bolt.DB
	ep *gateway.Endpoint
	// verifications verifies the servers and records the outcomes, as
	// Switchboard's do.
	verifications *verify.Service
	base          string
	// h serves /mcp as web's handleMCP does.
	h http.Handler
	// approvers is how many dashboard tabs the endpoint is told are open
	// (Deps.Approvers).
	approvers *atomic.Int32
	logs      *logtest.Recorder
}

// in returns e bound to t, a subtest of e's test, so that a scenario's
// steps can be subtests: e's helpers report to t and end t.
func (e *env) in(t testing.TB) *env {
	c := *e
	c.t = t
	return &c
}

// newEnv is an endpoint configured by opts, on a new store, served until
// the test ends. It is wired as switchboard serve wires it
// (cmd/switchboard/serve.go): servers are verified by an internal/verify
// Service, which the endpoint asks for verifications and which tells it
// how servers are reached.
func newEnv(t testing.TB, opts ...func(*gateway.Config)) *env {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "sb.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Recorder{}
	log := slog.New(logs)
	v := discovery.NewVerifier(discovery.Limits{InitTimeout: 5 * time.Second}, nil)
	verifications := verify.New(verify.Config{Logger: log}, db, v, grants.NewKeeper(db, v))
	e := &env{t: t, db: db, verifications: verifications, approvers: &atomic.Int32{}, logs: logs}
	cfg := gateway.Config{Token: testMCPToken}
	for _, o := range opts {
		o(&cfg)
	}
	ep, err := gateway.New(cfg, gateway.Deps{
		Store:    db,
		Verifier: v,
		Target:   verifications.Target,
		Verify: func(srv store.Server, trigger string) error {
			_, err := verifications.Submit(srv, trigger)
			return err
		},
		Approvers: func() int { return int(e.approvers.Load()) },
		Logger:    log,
	})
	if err != nil {
		verifications.Close()
		db.Close()
		t.Fatal(err)
	}
	verifications.Start()
	e.ep = ep
	unsubscribe := db.Subscribe(ep.StoreChanged)
	e.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// As web's handleMCP answers what Serve refuses.
		err := ep.Serve(w, r)
		var he *gateway.HTTPError
		switch {
		case errors.As(err, &he):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(he.Status)
			json.NewEncoder(w).Encode(map[string]string{"error": he.Message})
		case err != nil:
			e.logs.Handle(context.Background(), slog.NewRecord(time.Now(), slog.LevelError, "serve /mcp: "+err.Error(), 0))
			http.Error(w, `{"error":"internal error"}`, http.StatusInternalServerError)
		}
	})
	ts := httptest.NewServer(e.h)
	e.base = ts.URL
	t.Cleanup(func() {
		unsubscribe()
		ep.Close()
		verifications.Close() // after the endpoint, whose calls may ask for one
		ts.CloseClientConnections()
		ts.Close()
		db.Close()
		if errs := logs.Errors(); len(errs) > 0 {
			t.Errorf("the endpoint or the verifications logged errors:\n%s", strings.Join(errs, "\n"))
		}
	})
	return e
}

// serve runs a request through the endpoint's handler.
func (e *env) serve(r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, r)
	return rec
}

// createServer validates body (as the API's server JSON) and creates the
// server, as POST /api/v1/servers does.
func (e *env) createServer(body map[string]any) store.Server {
	e.t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	var j serverconfig.JSON
	if err := json.Unmarshal(data, &j); err != nil {
		e.t.Fatal(err)
	}
	srv, errs := serverconfig.Validate(j.Input(), nil)
	if len(errs) > 0 {
		e.t.Fatalf("server %v: %v", body, errs)
	}
	if err := e.db.CreateServer(context.Background(), srv); err != nil {
		e.t.Fatal(err)
	}
	return srv
}

// verify confirms the server's launch and verifies it, as a person's
// Verify does; once the job is done (its outcome recorded), it returns
// the job's status ("success", "failed", ...), logging the error of one
// that failed.
// fixture registers the stdio fixture with args as server id (every
// tool allowed by default), verifies it, and allows tools, which may
// otherwise wait for a person's review.
func (e *env) fixture(id string, args []string, tools ...string) {
	e.t.Helper()
	e.createServer(map[string]any{"id": id, "name": id, "transport": "stdio", "command": fixtureBin, "args": args, "default_policy": "allow"})
	if status := e.verify(id); status != "success" {
		e.t.Fatalf("verify %s = %s", id, status)
	}
	for _, tool := range tools {
		e.setPolicy(id, tool, "allow")
	}
}

// conformanceServer registers the fixture's -conformance tools as server
// "conf", over HTTP: a 2026-07-28 server for sure (a stdio server's
// server/discover probe may give up on a loaded machine, and the session
// fall back to 2025-11-25, where a server's questions come one by one).
func (e *env) conformanceServer() {
	e.t.Helper()
	url := fixturetest.MCP(fixturetest.Start(e.t, fixtureBin, "http", "-addr", "127.0.0.1:0", "-conformance"))
	e.createServer(map[string]any{"id": "conf", "name": "Conformance", "transport": "http", "url": url, "default_policy": "allow"})
	if status := e.verify("conf"); status != "success" {
		e.t.Fatalf("verify conf = %s", status)
	}
}

func (e *env) verify(id string) string {
	e.t.Helper()
	ctx := context.Background()
	srv, err := e.db.Server(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	if !srv.LaunchConfirmedNow() {
		if err := e.db.ConfirmLaunch(ctx, id, srv.LaunchHash(), ""); err != nil {
			e.t.Fatal(err)
		}
		if srv, err = e.db.Server(ctx, id); err != nil {
			e.t.Fatal(err)
		}
	}
	// The server's jobs that end, heard from before Submit: the job
	// submitted may end before Submit returns.
	done := make(chan discovery.Job, 16)
	defer e.verifications.Subscribe(func(ev verify.Event) {
		if ev.ServerID == id && ev.Job != nil && ev.Job.Done() {
			select {
			case done <- *ev.Job:
			default: // only a burst of other jobs' ends fills it
			}
		}
	})()
	j, err := e.verifications.Submit(srv, store.TriggerManual)
	if err != nil {
		e.t.Fatalf("verify %s: %v", id, err)
	}
	timeout := time.After(30 * time.Second)
	for !j.Done() {
		select {
		case d := <-done:
			if d.ID == j.ID {
				j = d
			}
		case <-timeout:
			e.t.Fatalf("verify %s: job %s not done after 30s", id, j.ID)
		}
	}
	if j.Error != nil {
		e.t.Logf("verify %s: %s: %s", id, j.Status, j.Error.Message)
	}
	return j.Status
}

// setPolicy sets a tool's policy, as a person does, and returns the
// tool's entry.
func (e *env) setPolicy(id, tool, policy string) store.ToolEntry {
	e.t.Helper()
	entry, err := e.db.SetPolicy(context.Background(), store.ToolRef{ServerID: id, Tool: tool}, store.Policy(policy), "api")
	if err != nil {
		e.t.Fatalf("set the policy of %s %s: %v", id, tool, err)
	}
	return entry
}

// tools is the server's tools, by name.
func (e *env) tools(id string) map[string]store.ToolEntry {
	e.t.Helper()
	list, err := e.db.Tools(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]store.ToolEntry{}
	for _, t := range list {
		out[t.Name] = t
	}
	return out
}

// policyOf is the tool's policy and who set it.
func (e *env) policyOf(id, tool string) (policy, setBy string) {
	e.t.Helper()
	entry, _, err := e.db.ToolVersions(context.Background(), store.ToolRef{ServerID: id, Tool: tool})
	if err != nil {
		e.t.Fatal(err)
	}
	return string(entry.Policy.Policy), entry.Policy.SetBy
}

// calls is the call log, newest first.
func (e *env) calls() []store.Call {
	e.t.Helper()
	calls, _, err := e.db.Calls(context.Background(), 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return calls
}

// waitCall waits for the call log to hold n calls and returns the newest.
func (e *env) waitCall(n int) store.Call {
	e.t.Helper()
	return e.waitCalls(n)[0]
}

// waitCalls waits for the call log to hold n calls and returns them,
// newest first.
func (e *env) waitCalls(n int) []store.Call {
	e.t.Helper()
	var calls []store.Call
	waitFor(e.t, 5*time.Second, "the calls audited", func() bool { calls = e.calls(); return len(calls) >= n })
	return calls
}

// waitApproval waits for one call waiting for a person and returns its
// id.
func (e *env) waitApproval() string {
	e.t.Helper()
	var id string
	waitFor(e.t, 5*time.Second, "a call waiting for a person", func() bool {
		if list := e.ep.Approvals(); len(list) == 1 {
			id = list[0].ID
		}
		return id != ""
	})
	return id
}

// decide answers an approval as the API does ("approve", "deny",
// "allow_once", "always_allow").
func (e *env) decide(id, decision string) {
	e.t.Helper()
	a, ok := gateway.ParseAnswer(decision)
	if !ok {
		e.t.Fatalf("no answer %q", decision)
	}
	if err := e.ep.Decide(id, a, gateway.ByAPI, ""); err != nil {
		e.t.Fatalf("decide %s %s: %v", id, decision, err)
	}
}

// connectWithProfile makes a connected client's token of the profile and
// returns it.
func (e *env) connectWithProfile(name, profile string) string {
	e.t.Helper()
	token, ct, err := e.ep.Connect(context.Background(), name, profile, "test")
	want := profile
	if want == store.DefaultProfile {
		want = ""
	}
	if err != nil || ct.Profile != want {
		e.t.Fatalf("connect %s with profile %s = %+v, %v", name, profile, ct, err)
	}
	return token
}

// saveProfile creates or updates a profile, checked as the API checks it.
func (e *env) saveProfile(p store.Profile) {
	e.t.Helper()
	ctx := context.Background()
	if fields, err := e.ep.CheckProfile(ctx, p); err != nil || len(fields) > 0 {
		e.t.Fatalf("profile %s: %v, %v", p.ID, fields, err)
	}
	if _, err := e.db.Profile(ctx, p.ID); errors.Is(err, store.ErrProfileNotFound) {
		err = e.db.CreateProfile(ctx, p)
		if err != nil {
			e.t.Fatal(err)
		}
		return
	}
	if err := e.db.UpdateProfile(ctx, p); err != nil {
		e.t.Fatal(err)
	}
}

// writeTools writes a tools file for the fixture's -tools-file.
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

func truncate(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}
