package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestAPIServersCRUD(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	const secret = "api-secret-value-1"
	// The secrets are added before the steps, where the check at the
	// test's end sees them (see env.in).
	e.secrets = append(e.secrets, secret, "header-secret-2", "replaced-value-3")

	if !t.Run("a create masks the env value and stores it", func(t *testing.T) {
		e := e.in(t)
		body := fixtureServer("crud")
		body["env"] = map[string]string{"API_KEY": secret}
		body["timeout_ms"] = 4000
		body["memory_mb"] = 512
		rec := e.api(http.MethodPost, "/api/v1/servers", body)
		wantStatus(t, rec, http.StatusCreated)
		got := decodeAs[apiServer](t, rec)
		want := apiServer{UpdatedBy: "api", ID: "crud", Name: "Fixture crud", Transport: "stdio", Command: fixtureBin, Args: []string{"-tools", "5", "-page-size", "2"},
			Env: map[string]string{"API_KEY": "********"}, TimeoutMS: 4000, MemoryMB: 512, DefaultPolicy: "ask", Enabled: ptr(true), RecordArgs: ptr(false),
			Discovery: &apiDiscovery{Status: "never", Freshness: apiFreshness{State: "never"}},
			Sandbox:   &apiSandbox{Files: "default", Network: "none"},
			Asks:      map[string]string{"sampling": "allow", "elicitation": "allow", "roots": "allow"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("created (-want +got), the env value masked, never verified:\n%s", diff)
		}
		if srv, _ := e.db.Server(ctx, "crud"); srv.Env["API_KEY"] != secret {
			t.Errorf("stored env = %v", srv.Env)
		}
	}) {
		return
	}

	t.Run("an invalid body gets one message per field", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodPost, "/api/v1/servers", map[string]any{
			"id": "Bad Id", "transport": "stdio", "command": "", "timeout_ms": 5, "default_policy": "sometimes",
			"env": map[string]string{"1X": "v"}, "cwd": "relative/dir", "memory_mb": 8,
		})
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		m := decodeAs[apiError](t, rec)
		for _, f := range []string{"id", "command", "timeout_ms", "default_policy", "env", "cwd", "memory_mb"} {
			if m.Fields[f] == "" {
				t.Errorf("no message for field %s in %+v", f, m)
			}
		}
		if m.Error == "" {
			t.Error("422 without error")
		}
	})
	t.Run("TTL and auto-refresh round-trip, null meaning the default", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodPost, "/api/v1/servers", map[string]any{
			"id": "tuned", "transport": "http", "url": "http://127.0.0.1:9/mcp", "ttl_seconds": 60, "auto_refresh": false,
		})
		wantStatus(t, rec, http.StatusCreated)
		if got := decodeAs[apiServer](t, rec); !cmp.Equal(got.TTLSeconds, ptr(60)) || !cmp.Equal(got.AutoRefresh, ptr(false)) {
			t.Errorf("created = ttl %v, auto_refresh %v; want 60, false", got.TTLSeconds, got.AutoRefresh)
		}
		rec = e.api(http.MethodPut, "/api/v1/servers/tuned", map[string]any{"transport": "http", "url": "http://127.0.0.1:9/mcp", "auto_refresh": nil})
		wantStatus(t, rec, http.StatusOK)
		if got := decodeAs[apiServer](t, rec); got.TTLSeconds != nil || got.AutoRefresh != nil {
			t.Errorf("updated = ttl %v, auto_refresh %v; want both back to the defaults", got.TTLSeconds, got.AutoRefresh)
		}
		wantStatus(t, e.api(http.MethodDelete, "/api/v1/servers/tuned", nil), http.StatusNoContent)
		rec = e.api(http.MethodPost, "/api/v1/servers", map[string]any{"id": "too-quick", "command": "x", "transport": "stdio", "ttl_seconds": 3})
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		if f := decodeAs[apiError](t, rec).Fields; f["ttl_seconds"] == "" || len(f) != 1 {
			t.Errorf("fields = %v, want only ttl_seconds", f)
		}
	})
	t.Run("a memory cap is for processes Switchboard starts", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodPost, "/api/v1/servers", map[string]any{
			"id": "remote-capped", "transport": "http", "url": "http://127.0.0.1:9/mcp", "memory_mb": 512,
		})
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		if diff := cmp.Diff(map[string]string{"memory_mb": "A memory cap applies to stdio servers only."}, decodeAs[apiError](t, rec).Fields); diff != "" {
			t.Errorf("fields (-want +got), only memory_mb:\n%s", diff)
		}
	})
	t.Run("a metadata URL and an unknown transport are refused", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodPost, "/api/v1/servers", map[string]any{"id": "remote", "transport": "http", "url": "http://169.254.169.254/"})
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		if f := decodeAs[apiError](t, rec).Fields; f["url"] == "" {
			t.Errorf("fields = %v", f)
		}
		rec = e.api(http.MethodPost, "/api/v1/servers", map[string]any{"id": "tp", "transport": "carrier-pigeon"})
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		if f := decodeAs[apiError](t, rec).Fields; f["transport"] == "" {
			t.Errorf("fields = %v", f)
		}
	})

	// Unknown fields, bad JSON, trailing data: 400.
	for _, c := range []struct{ name, raw string }{
		{"an unknown field", `{"id":"x1","transport":"stdio","command":"true","colour":"red"}`},
		{"bad JSON", `{"id":"x1",`},
		{"trailing data", `{"id":"x1","transport":"stdio","command":"true"} {"id":"x2"}`},
		{"not an object", `["x1"]`},
		{"an empty body", ``},
	} {
		t.Run(c.name+" is a bad request", func(t *testing.T) {
			e := e.in(t)
			rec := e.api(http.MethodPost, "/api/v1/servers", c.raw)
			wantStatus(t, rec, http.StatusBadRequest)
			if decodeAs[apiError](t, rec).Error == "" {
				t.Errorf("400 for %q without error", c.raw)
			}
		})
	}
	if _, err := e.db.Server(ctx, "x1"); err == nil {
		t.Error("a refused body created a server")
	}

	t.Run("a duplicate is a conflict that changes nothing", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodPost, "/api/v1/servers", fixtureServer("crud"))
		wantStatus(t, rec, http.StatusConflict)
		if f := decodeAs[apiError](t, rec).Fields; f["id"] == "" {
			t.Errorf("409 without id field")
		}
		if srv, _ := e.db.Server(ctx, "crud"); srv.Env["API_KEY"] != secret {
			t.Error("a duplicate create overwrote the server")
		}
	})

	if !t.Run("a remote server's headers are masked", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodPost, "/api/v1/servers", map[string]any{
			"id": "remote", "transport": "http", "url": "http://127.0.0.1:1/mcp",
			"headers": map[string]string{"Authorization": "header-secret-2"}, "enabled": false, "default_policy": "deny",
		})
		wantStatus(t, rec, http.StatusCreated)
		got := decodeAs[apiServer](t, rec)
		if got.Headers["Authorization"] != "********" || !cmp.Equal(got.Enabled, ptr(false)) || got.DefaultPolicy != "deny" {
			t.Errorf("remote = %+v", got)
		}
	}) {
		return
	}

	t.Run("list and get", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodGet, "/api/v1/servers", nil)
		wantStatus(t, rec, http.StatusOK)
		list := decodeAs[serversAnswer](t, rec).Servers
		var ids []string
		for _, s := range list {
			ids = append(ids, s.ID)
			if s.Discovery == nil {
				t.Errorf("list entry without discovery: %+v", s)
			}
		}
		if diff := cmp.Diff([]string{"crud", "remote"}, ids); diff != "" {
			t.Errorf("listed ids (-want +got):\n%s", diff)
		}
		if g := e.server("crud"); g.ID != "crud" || g.Env["API_KEY"] != "********" {
			t.Errorf("get = %+v", g)
		}
	})

	// The PUT body is the answer of a GET sent back as it came, so it is
	// the raw map; the next step sends it again.
	var put map[string]any
	if !t.Run("PUT keeps the secret under its mask and replaces it with a new value", func(t *testing.T) {
		e := e.in(t)
		put = decode(t, e.api(http.MethodGet, "/api/v1/servers/crud", nil))
		delete(put, "discovery")
		put["name"] = "Renamed"
		rec := e.api(http.MethodPut, "/api/v1/servers/crud", put)
		wantStatus(t, rec, http.StatusOK)
		if g := decodeAs[apiServer](t, rec); g.Name != "Renamed" || g.Env["API_KEY"] != "********" {
			t.Errorf("put = %+v", g)
		}
		if srv, _ := e.db.Server(ctx, "crud"); srv.Env["API_KEY"] != secret || srv.Name != "Renamed" {
			t.Errorf("after PUT with mask: %+v", srv)
		}
		// A new value replaces it.
		put["env"] = map[string]string{"API_KEY": "replaced-value-3"}
		wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/crud", put), http.StatusOK)
		if srv, _ := e.db.Server(ctx, "crud"); srv.Env["API_KEY"] != "replaced-value-3" {
			t.Errorf("after PUT with a new value: %v", srv.Env)
		}
	}) {
		return
	}
	t.Run("the id cannot change and an invalid PUT changes nothing", func(t *testing.T) {
		e := e.in(t)
		put["id"] = "other"
		rec := e.api(http.MethodPut, "/api/v1/servers/crud", put)
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		if f := decodeAs[apiError](t, rec).Fields; f["id"] == "" {
			t.Errorf("fields = %v", f)
		}
		put["id"] = "crud"
		put["command"] = ""
		wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/crud", put), http.StatusUnprocessableEntity)
		if srv, _ := e.db.Server(ctx, "crud"); srv.Command != fixtureBin {
			t.Error("an invalid PUT changed the server")
		}
		wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/crud", `{"id":"crud","bogus":1}`), http.StatusBadRequest)
		wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/nope", fixtureServer("nope")), http.StatusNotFound)
		if _, err := e.db.Server(ctx, "other"); err == nil {
			t.Error("PUT created a server under a new id")
		}
	})

	t.Run("DELETE removes the server and its routes", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodDelete, "/api/v1/servers/crud", nil)
		wantStatus(t, rec, http.StatusNoContent)
		if rec.Body.Len() != 0 {
			t.Errorf("204 with body %q", rec.Body.String())
		}
		wantStatus(t, e.api(http.MethodDelete, "/api/v1/servers/crud", nil), http.StatusNotFound)
		wantStatus(t, e.api(http.MethodGet, "/api/v1/servers/crud", nil), http.StatusNotFound)
		wantStatus(t, e.api(http.MethodGet, "/api/v1/servers/crud/tools", nil), http.StatusNotFound)
		wantStatus(t, e.api(http.MethodPost, "/api/v1/servers/crud/verify", confirmed), http.StatusNotFound)
	})
}

func TestAPIVerifyAndTools(t *testing.T) {
	e := newEnv(t)
	const secret = "verify-secret-4"
	e.secrets = append(e.secrets, secret)
	body := fixtureServer("vt")
	body["env"] = map[string]string{"FIXTURE_SECRET": secret}
	e.createServer(body)

	var id string
	if !t.Run("verify answers its job, and a second verify joins it", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodPost, "/api/v1/servers/vt/verify", confirmed)
		wantStatus(t, rec, http.StatusAccepted)
		job := decodeAs[jobAnswer](t, rec).Job
		id = job.ID
		if id == "" || job.ServerID != "vt" || (job.Status != "queued" && job.Status != "running") || job.QueuedAt.IsZero() {
			t.Errorf("job = %+v", job)
		}
		// The fields a job always has, even null: the raw answer.
		raw := decode(t, rec)["job"].(map[string]any)
		for _, k := range []string{"phase", "started_at", "finished_at", "timings", "error"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("job lacks %q: %v", k, raw)
			}
		}
		rec = e.api(http.MethodPost, "/api/v1/servers/vt/verify", confirmed)
		wantStatus(t, rec, http.StatusAccepted)
		if j2 := decodeAs[jobAnswer](t, rec).Job; j2.ID != id {
			if first := e.job(id); first.FinishedAt == nil {
				t.Errorf("second verify started job %v while %s was still running", j2.ID, id)
			}
		}
	}) {
		return
	}

	if !t.Run("the job succeeds with the timings of its phases", func(t *testing.T) {
		e := e.in(t)
		job := e.waitJob(id)
		if job.Status != "success" || job.Phase != "success" || job.Error != nil || job.ToolCount != 5 {
			t.Fatalf("job = %+v", job)
		}
		if job.StartedAt == nil || job.FinishedAt == nil {
			t.Errorf("job times: %+v", job)
		}
		var phases []string
		for _, tm := range job.Timings {
			phases = append(phases, tm.Phase)
		}
		if diff := cmp.Diff([]string{"starting", "initializing", "listing", "listing tools that ask agents"}, phases); diff != "" {
			t.Errorf("timings phases (-want +got):\n%s", diff)
		}
		wantStatus(t, e.api(http.MethodGet, "/api/v1/jobs/job_nope", nil), http.StatusNotFound)
		wantStatus(t, e.api(http.MethodPost, "/api/v1/jobs/"+id+"/cancel", nil), http.StatusNotFound)
		wantStatus(t, e.api(http.MethodPost, "/api/v1/servers/nope/verify", confirmed), http.StatusNotFound)
	}) {
		return
	}

	// tools is the server's tools, read through e, bound to the step.
	tools := func(e *env) []apiTool {
		e.t.Helper()
		rec := e.api(http.MethodGet, "/api/v1/servers/vt/tools", nil)
		wantStatus(e.t, rec, http.StatusOK)
		return decodeAs[toolsAnswer](e.t, rec).Tools
	}
	if !t.Run("the discovery and the server's tools hold what was listed", func(t *testing.T) {
		e := e.in(t)
		if d := e.discovery("vt"); d.Status != "success" || d.ToolCount != 5 || d.VerifiedAt == nil || d.Stale || d.Error != nil {
			t.Errorf("discovery = %+v", d)
		}
		ts := tools(e)
		if len(ts) != 5 {
			t.Fatalf("%d tools", len(ts))
		}
		for i, tl := range ts {
			name := tl.Name
			if want := "tool_00" + string(rune('0'+i)); name != want {
				t.Errorf("tool %d name %q, want %q", i, name, want)
			}
			if tl.AgentName != "vt__"+name || tl.State != "active" || tl.Policy != "ask" || tl.EffectivePolicy != "ask" {
				t.Errorf("tool %+v", tl)
			}
			if !hex64.MatchString(tl.Pin) {
				t.Errorf("pin %q", tl.Pin)
			}
			var schema struct{ Type string }
			if err := json.Unmarshal(tl.InputSchema, &schema); err != nil || schema.Type != "object" {
				t.Errorf("input_schema = %s", tl.InputSchema)
			}
			if tl.Description == "" || tl.Title == "" {
				t.Errorf("tool without description/title: %+v", tl)
			}
		}
	}) {
		return
	}

	// catalog reads the catalog with an If-None-Match through e, bound to
	// the step.
	catalog := func(e *env, inm string) (int, string, []apiTool) {
		t := e.t
		t.Helper()
		r := newRequest(http.MethodGet, "/api/v1/tools", nil)
		r.Header.Set("Authorization", "Bearer "+testToken)
		if inm != "" {
			r.Header.Set("If-None-Match", inm)
		}
		rec := e.serve(r)
		if rec.Code == http.StatusNotModified {
			if rec.Body.Len() != 0 {
				t.Errorf("304 with a body")
			}
			return rec.Code, rec.Header().Get("ETag"), nil
		}
		return rec.Code, rec.Header().Get("ETag"), decodeAs[toolsAnswer](t, rec).Tools
	}
	var etag string
	if !t.Run("the catalog answers 304 to its ETag", func(t *testing.T) {
		e := e.in(t)
		var code int
		var all []apiTool
		code, etag, all = catalog(e, "")
		if code != http.StatusOK || etag == "" || len(all) != 5 {
			t.Fatalf("catalog: %d %q %d tools", code, etag, len(all))
		}
		if code, _, _ := catalog(e, etag); code != http.StatusNotModified {
			t.Errorf("If-None-Match with the current ETag: %d, want 304", code)
		}
		if code, _, _ := catalog(e, `"stale"`); code != http.StatusOK {
			t.Errorf("If-None-Match with another ETag: %d, want 200", code)
		}
		if code, _, _ := catalog(e, `"stale", W/`+etag); code != http.StatusNotModified {
			t.Errorf("If-None-Match with a list holding the weak ETag: %d, want 304", code)
		}
	}) {
		return
	}

	serverTools := func(e *env, inm string) (int, string) {
		r := newRequest(http.MethodGet, "/api/v1/servers/vt/tools", nil)
		r.Header.Set("Authorization", "Bearer "+testToken)
		if inm != "" {
			r.Header.Set("If-None-Match", inm)
		}
		rec := e.serve(r)
		return rec.Code, rec.Header().Get("ETag")
	}
	var serverETag string
	if !t.Run("one server's tools are cached the same way", func(t *testing.T) {
		e := e.in(t)
		var code0 int
		code0, serverETag = serverTools(e, "")
		if code0 != http.StatusOK || serverETag == "" {
			t.Fatalf("GET server tools: %d, ETag %q", code0, serverETag)
		}
		if code, _ := serverTools(e, serverETag); code != http.StatusNotModified {
			t.Errorf("server tools with If-None-Match: %d, want 304", code)
		}
		wantStatus(t, e.api(http.MethodGet, "/api/v1/servers/nope/tools", nil), http.StatusNotFound)
	}) {
		return
	}

	if !t.Run("a tool's policy is set, and a bad one refused", func(t *testing.T) {
		e := e.in(t)
		setPolicy := func(tool string, body any) *httptest.ResponseRecorder {
			return e.api(http.MethodPut, "/api/v1/servers/vt/tools/"+tool+"/policy", body)
		}
		rec := setPolicy("tool_002", map[string]string{"policy": "deny"})
		wantStatus(t, rec, http.StatusOK)
		if tl := decodeAs[toolAnswer](t, rec).Tool; tl.Name != "tool_002" || tl.Policy != "deny" || tl.EffectivePolicy != "deny" {
			t.Errorf("policy answer = %+v", tl)
		}
		wantStatus(t, setPolicy("tool_002", map[string]string{"policy": "sometimes"}), http.StatusUnprocessableEntity)
		wantStatus(t, setPolicy("tool_002", `{"policy":"allow","by":"me"}`), http.StatusBadRequest)
		wantStatus(t, setPolicy("no_such_tool", map[string]string{"policy": "deny"}), http.StatusNotFound)
		wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/nope/tools/tool_002/policy", map[string]string{"policy": "deny"}), http.StatusNotFound)
	}) {
		return
	}

	var etag2 string
	if !t.Run("the cached bodies follow the change", func(t *testing.T) {
		e := e.in(t)
		if code, etag := serverTools(e, serverETag); code != http.StatusOK || etag == serverETag {
			t.Errorf("server tools after a policy change: %d, ETag %q (was %q)", code, etag, serverETag)
		}
		var code int
		var all []apiTool
		code, etag2, all = catalog(e, etag)
		if code != http.StatusOK || etag2 == etag {
			t.Errorf("after a policy change: %d, ETag %q (was %q)", code, etag2, etag)
		}
		for _, tl := range all {
			if tl.Name == "tool_002" && tl.EffectivePolicy != "deny" {
				t.Errorf("catalog after the policy change: %+v", tl)
			}
		}
	}) {
		return
	}

	t.Run("the policy survives a second verify and nothing else changes", func(t *testing.T) {
		e := e.in(t)
		if job := e.verify("vt"); job.Status != "success" {
			t.Fatalf("second verify: %+v", job)
		}
		for _, tl := range tools(e) {
			want := "ask"
			if tl.Name == "tool_002" {
				want = "deny"
			}
			if tl.Policy != want || tl.State != "active" {
				t.Errorf("after re-verify: %+v", tl)
			}
		}
		if _, etag3, _ := catalog(e, ""); etag3 != etag2 {
			t.Errorf("ETag changed by a re-verify that changed nothing: %q → %q", etag2, etag3)
		}
	})
}

func TestAPIPolicyToolNamesInPath(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	e.createServer(fixtureServer("odd"))
	srv, _ := e.db.Server(ctx, "odd")
	names := []string{"50%off", "a/b", "sp ace", "a%41", "ümlaut", "q?x"}
	var tools []store.Tool
	for i, n := range names {
		tools = append(tools, store.Tool{Name: n, Raw: json.RawMessage(`{}`), Pin: strings.Repeat(string(rune('a'+i)), 64)})
	}
	now := time.Now()
	if err := e.db.RecordSuccess(ctx, "odd", store.Verification{JobID: "j", ConfigHash: srv.ConfigHash(), StartedAt: now, FinishedAt: now, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		path := "/api/v1/servers/odd/tools/" + url.PathEscape(n) + "/policy"
		rec := e.api(http.MethodPut, path, map[string]string{"policy": "deny"})
		if rec.Code != http.StatusOK {
			t.Errorf("PUT %s: %d %s", path, rec.Code, rec.Body.String())
			continue
		}
		if got := decodeAs[toolAnswer](t, rec).Tool.Name; got != n {
			t.Errorf("PUT %s set the policy of %q, want %q", path, got, n)
		}
	}
	all, _ := e.db.Tools(ctx, "odd")
	for _, tl := range all {
		if tl.Policy.Policy != "deny" {
			t.Errorf("tool %q policy %q", tl.Name, tl.Policy.Policy)
		}
	}
	// Agent names of odd tools are safe and distinct.
	rec := e.api(http.MethodGet, "/api/v1/servers/odd/tools", nil)
	seen := map[string]bool{}
	safe := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	for _, x := range decodeAs[toolsAnswer](t, rec).Tools {
		an := x.AgentName
		if !safe.MatchString(an) || !strings.HasPrefix(an, "odd__") || seen[an] {
			t.Errorf("agent name %q", an)
		}
		seen[an] = true
	}
}

// TestAPIBackup: the running dashboard hands out a consistent copy of its
// database, which opens as a store with the same servers, tools and
// policies.
func TestAPIBackup(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	e.createServer(fixtureServer("bk"))
	if job := e.verify("bk"); job.Status != "success" {
		t.Fatalf("verify: %+v", job)
	}
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/bk/tools/tool_001/policy", map[string]string{"policy": "deny"}), http.StatusOK)

	rec := e.api(http.MethodGet, "/api/v1/backup", nil)
	wantStatus(t, rec, http.StatusOK)
	if ct, cd := rec.Header().Get("Content-Type"), rec.Header().Get("Content-Disposition"); ct != "application/octet-stream" || !strings.HasPrefix(cd, `attachment; filename="switchboard-`) {
		t.Errorf("Content-Type %q, Content-Disposition %q", ct, cd)
	}
	path := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(path, rec.Body.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatalf("the backup does not open: %v", err)
	}
	defer db.Close()
	tools, err := db.Tools(ctx, "bk")
	if err != nil || len(tools) != 5 {
		t.Fatalf("backup has %d tools of bk, %v", len(tools), err)
	}
	for _, tl := range tools {
		if tl.Name == "tool_001" && tl.Policy.Policy != store.PolicyDeny {
			t.Errorf("backup lost the policy: %+v", tl.Policy)
		}
	}
}

// A create sent again with the same body (its answer lost, as when a
// team's store did not answer in time) finds the server it made: 201
// again, one server; another body under the same id is a conflict
// (issue 38: creates idempotent on retry).
func TestACreateSentAgainIsTheSameCreate(t *testing.T) {
	e := newEnv(t)
	body := fixtureServer("again")
	body["env"] = map[string]string{"API_KEY": "sk-again-0123456789"}
	e.secrets = append(e.secrets, "sk-again-0123456789")
	first := e.api(http.MethodPost, "/api/v1/servers", body)
	wantStatus(t, first, http.StatusCreated)
	second := e.api(http.MethodPost, "/api/v1/servers", body)
	wantStatus(t, second, http.StatusCreated)
	if a, b := decodeAs[apiServer](t, first), decodeAs[apiServer](t, second); a.ID != b.ID || a.Name != b.Name {
		t.Errorf("the second answer %+v differs from the first %+v", b, a)
	}
	if n := len(e.listServers()); n != 1 {
		t.Errorf("%d servers after the create sent twice; want 1", n)
	}
	other := fixtureServer("again")
	other["args"] = []string{"-tools", "9"}
	wantStatus(t, e.api(http.MethodPost, "/api/v1/servers", other), http.StatusConflict)
}
