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

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestAPIServersCRUD(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	const secret = "api-secret-value-1"
	e.secrets = append(e.secrets, secret, "header-secret-2")

	body := fixtureServer("crud")
	body["env"] = map[string]string{"API_KEY": secret}
	body["timeout_ms"] = 4000
	body["memory_mb"] = 512
	rec := e.api(http.MethodPost, "/api/v1/servers", body)
	wantStatus(t, rec, http.StatusCreated)
	got := decode(t, rec)
	if got["id"] != "crud" || got["name"] != "Fixture crud" || got["transport"] != "stdio" || got["command"] != fixtureBin ||
		got["default_policy"] != "ask" || got["enabled"] != true || got["timeout_ms"] != float64(4000) || got["memory_mb"] != float64(512) {
		t.Errorf("created = %v", got)
	}
	if env := got["env"].(map[string]any); len(env) != 1 || env["API_KEY"] != "********" {
		t.Errorf("env = %v, want the value masked", env)
	}
	d := got["discovery"].(map[string]any)
	if d["status"] != "never" || d["stale"] != false || d["verified_at"] != nil || d["tool_count"] != float64(0) {
		t.Errorf("discovery = %v", d)
	}
	if srv, _ := e.db.Server(ctx, "crud"); srv.Env["API_KEY"] != secret {
		t.Errorf("stored env = %v", srv.Env)
	}

	// Invalid: one message per field.
	rec = e.api(http.MethodPost, "/api/v1/servers", map[string]any{
		"id": "Bad Id", "transport": "stdio", "command": "", "timeout_ms": 5, "default_policy": "sometimes",
		"env": map[string]string{"1X": "v"}, "cwd": "relative/dir", "memory_mb": 8,
	})
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	m := decode(t, rec)
	fields, _ := m["fields"].(map[string]any)
	for _, f := range []string{"id", "command", "timeout_ms", "default_policy", "env", "cwd", "memory_mb"} {
		if s, _ := fields[f].(string); s == "" {
			t.Errorf("no message for field %s in %v", f, m)
		}
	}
	// TTL and auto-refresh round-trip; null means the default.
	rec = e.api(http.MethodPost, "/api/v1/servers", map[string]any{
		"id": "tuned", "transport": "http", "url": "http://127.0.0.1:9/mcp", "ttl_seconds": 60, "auto_refresh": false,
	})
	wantStatus(t, rec, http.StatusCreated)
	if got := decode(t, rec); got["ttl_seconds"] != float64(60) || got["auto_refresh"] != false {
		t.Errorf("created = ttl %v, auto_refresh %v; want 60, false", got["ttl_seconds"], got["auto_refresh"])
	}
	rec = e.api(http.MethodPut, "/api/v1/servers/tuned", map[string]any{"transport": "http", "url": "http://127.0.0.1:9/mcp", "auto_refresh": nil})
	wantStatus(t, rec, http.StatusOK)
	if got := decode(t, rec); got["ttl_seconds"] != nil || got["auto_refresh"] != nil {
		t.Errorf("updated = ttl %v, auto_refresh %v; want both back to the defaults", got["ttl_seconds"], got["auto_refresh"])
	}
	wantStatus(t, e.api(http.MethodDelete, "/api/v1/servers/tuned", nil), http.StatusNoContent)
	rec = e.api(http.MethodPost, "/api/v1/servers", map[string]any{"id": "too-quick", "command": "x", "transport": "stdio", "ttl_seconds": 3})
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if f := decode(t, rec)["fields"].(map[string]any); f["ttl_seconds"] == nil || len(f) != 1 {
		t.Errorf("fields = %v, want only ttl_seconds", f)
	}
	// A memory cap is for processes Switchboard starts.
	rec = e.api(http.MethodPost, "/api/v1/servers", map[string]any{
		"id": "remote-capped", "transport": "http", "url": "http://127.0.0.1:9/mcp", "memory_mb": 512,
	})
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if f := decode(t, rec)["fields"].(map[string]any); f["memory_mb"] != "A memory cap applies to stdio servers only." || len(f) != 1 {
		t.Errorf("fields = %v, want only memory_mb", f)
	}
	if m["error"] == nil {
		t.Error("422 without error")
	}
	rec = e.api(http.MethodPost, "/api/v1/servers", map[string]any{"id": "remote", "transport": "http", "url": "http://169.254.169.254/"})
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if f := decode(t, rec)["fields"].(map[string]any); f["url"] == nil {
		t.Errorf("fields = %v", f)
	}
	rec = e.api(http.MethodPost, "/api/v1/servers", map[string]any{"id": "tp", "transport": "carrier-pigeon"})
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if f := decode(t, rec)["fields"].(map[string]any); f["transport"] == nil {
		t.Errorf("fields = %v", f)
	}

	// Unknown fields, bad JSON, trailing data: 400.
	for _, raw := range []string{
		`{"id":"x1","transport":"stdio","command":"true","colour":"red"}`,
		`{"id":"x1",`,
		`{"id":"x1","transport":"stdio","command":"true"} {"id":"x2"}`,
		`["x1"]`,
		``,
	} {
		rec = e.api(http.MethodPost, "/api/v1/servers", raw)
		wantStatus(t, rec, http.StatusBadRequest)
		if decode(t, rec)["error"] == nil {
			t.Errorf("400 for %q without error", raw)
		}
	}
	if _, err := e.db.Server(ctx, "x1"); err == nil {
		t.Error("a refused body created a server")
	}

	// Duplicate.
	rec = e.api(http.MethodPost, "/api/v1/servers", fixtureServer("crud"))
	wantStatus(t, rec, http.StatusConflict)
	if f, _ := decode(t, rec)["fields"].(map[string]any); f["id"] == nil {
		t.Errorf("409 without id field")
	}
	if srv, _ := e.db.Server(ctx, "crud"); srv.Env["API_KEY"] != secret {
		t.Error("a duplicate create overwrote the server")
	}

	// A remote server with headers.
	rec = e.api(http.MethodPost, "/api/v1/servers", map[string]any{
		"id": "remote", "transport": "http", "url": "http://127.0.0.1:1/mcp",
		"headers": map[string]string{"Authorization": "header-secret-2"}, "enabled": false, "default_policy": "deny",
	})
	wantStatus(t, rec, http.StatusCreated)
	got = decode(t, rec)
	if got["headers"].(map[string]any)["Authorization"] != "********" || got["enabled"] != false || got["default_policy"] != "deny" {
		t.Errorf("remote = %v", got)
	}

	// List and get.
	rec = e.api(http.MethodGet, "/api/v1/servers", nil)
	wantStatus(t, rec, http.StatusOK)
	list := decode(t, rec)["servers"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["id"] != "crud" || list[1].(map[string]any)["id"] != "remote" {
		t.Errorf("list = %v", list)
	}
	for _, s := range list {
		if s.(map[string]any)["discovery"] == nil {
			t.Errorf("list entry without discovery: %v", s)
		}
	}
	rec = e.api(http.MethodGet, "/api/v1/servers/crud", nil)
	wantStatus(t, rec, http.StatusOK)
	if g := decode(t, rec); g["id"] != "crud" || g["env"].(map[string]any)["API_KEY"] != "********" {
		t.Errorf("get = %v", g)
	}

	// PUT: the masked value keeps the secret.
	put := decode(t, e.api(http.MethodGet, "/api/v1/servers/crud", nil))
	delete(put, "discovery")
	put["name"] = "Renamed"
	rec = e.api(http.MethodPut, "/api/v1/servers/crud", put)
	wantStatus(t, rec, http.StatusOK)
	if g := decode(t, rec); g["name"] != "Renamed" || g["env"].(map[string]any)["API_KEY"] != "********" {
		t.Errorf("put = %v", g)
	}
	if srv, _ := e.db.Server(ctx, "crud"); srv.Env["API_KEY"] != secret || srv.Name != "Renamed" {
		t.Errorf("after PUT with mask: %+v", srv)
	}
	// A new value replaces it.
	put["env"] = map[string]string{"API_KEY": "replaced-value-3"}
	e.secrets = append(e.secrets, "replaced-value-3")
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/crud", put), http.StatusOK)
	if srv, _ := e.db.Server(ctx, "crud"); srv.Env["API_KEY"] != "replaced-value-3" {
		t.Errorf("after PUT with a new value: %v", srv.Env)
	}
	// The id cannot change; an invalid PUT changes nothing.
	put["id"] = "other"
	rec = e.api(http.MethodPut, "/api/v1/servers/crud", put)
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if f := decode(t, rec)["fields"].(map[string]any); f["id"] == nil {
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

	// DELETE.
	rec = e.api(http.MethodDelete, "/api/v1/servers/crud", nil)
	wantStatus(t, rec, http.StatusNoContent)
	if rec.Body.Len() != 0 {
		t.Errorf("204 with body %q", rec.Body.String())
	}
	wantStatus(t, e.api(http.MethodDelete, "/api/v1/servers/crud", nil), http.StatusNotFound)
	wantStatus(t, e.api(http.MethodGet, "/api/v1/servers/crud", nil), http.StatusNotFound)
	wantStatus(t, e.api(http.MethodGet, "/api/v1/servers/crud/tools", nil), http.StatusNotFound)
	wantStatus(t, e.api(http.MethodPost, "/api/v1/servers/crud/verify", confirmed), http.StatusNotFound)
}

func TestAPIVerifyAndTools(t *testing.T) {
	e := newEnv(t)
	const secret = "verify-secret-4"
	e.secrets = append(e.secrets, secret)
	body := fixtureServer("vt")
	body["env"] = map[string]string{"FIXTURE_SECRET": secret}
	e.createServer(body)

	rec := e.api(http.MethodPost, "/api/v1/servers/vt/verify", confirmed)
	wantStatus(t, rec, http.StatusAccepted)
	job := decode(t, rec)["job"].(map[string]any)
	id, _ := job["id"].(string)
	if id == "" || job["server_id"] != "vt" || (job["status"] != "queued" && job["status"] != "running") || job["queued_at"] == nil {
		t.Errorf("job = %v", job)
	}
	for _, k := range []string{"phase", "started_at", "finished_at", "timings", "error"} {
		if _, ok := job[k]; !ok {
			t.Errorf("job lacks %q: %v", k, job)
		}
	}
	// A second verify while it runs joins the same job.
	rec = e.api(http.MethodPost, "/api/v1/servers/vt/verify", confirmed)
	wantStatus(t, rec, http.StatusAccepted)
	if j2 := decode(t, rec)["job"].(map[string]any); j2["id"] != id {
		first := decode(t, e.api(http.MethodGet, "/api/v1/jobs/"+id, nil))["job"].(map[string]any)
		if first["finished_at"] == nil {
			t.Errorf("second verify started job %v while %s was still running", j2["id"], id)
		}
	}

	job = e.waitJob(id)
	if job["status"] != "success" || job["phase"] != "success" || job["error"] != nil || job["tool_count"] != float64(5) {
		t.Fatalf("job = %v", job)
	}
	if job["started_at"] == nil || job["finished_at"] == nil {
		t.Errorf("job times: %v", job)
	}
	var phases []string
	for _, tm := range job["timings"].([]any) {
		phases = append(phases, tm.(map[string]any)["phase"].(string))
	}
	if strings.Join(phases, ",") != "starting,initializing,listing" {
		t.Errorf("timings phases = %v", phases)
	}
	wantStatus(t, e.api(http.MethodGet, "/api/v1/jobs/job_nope", nil), http.StatusNotFound)
	wantStatus(t, e.api(http.MethodPost, "/api/v1/jobs/"+id+"/cancel", nil), http.StatusNotFound)
	wantStatus(t, e.api(http.MethodPost, "/api/v1/servers/nope/verify", confirmed), http.StatusNotFound)

	srv := decode(t, e.api(http.MethodGet, "/api/v1/servers/vt", nil))
	d := srv["discovery"].(map[string]any)
	if d["status"] != "success" || d["tool_count"] != float64(5) || d["verified_at"] == nil || d["stale"] != false || d["error"] != nil {
		t.Errorf("discovery = %v", d)
	}

	tools := func() []map[string]any {
		t.Helper()
		rec := e.api(http.MethodGet, "/api/v1/servers/vt/tools", nil)
		wantStatus(t, rec, http.StatusOK)
		var out []map[string]any
		for _, x := range decode(t, rec)["tools"].([]any) {
			out = append(out, x.(map[string]any))
		}
		return out
	}
	ts := tools()
	if len(ts) != 5 {
		t.Fatalf("%d tools", len(ts))
	}
	for i, tl := range ts {
		name := tl["name"].(string)
		if want := "tool_00" + string(rune('0'+i)); name != want {
			t.Errorf("tool %d name %q, want %q", i, name, want)
		}
		if tl["agent_name"] != "vt__"+name || tl["state"] != "active" || tl["policy"] != "ask" || tl["effective_policy"] != "ask" {
			t.Errorf("tool %v", tl)
		}
		if pin, _ := tl["pin"].(string); !hex64.MatchString(pin) {
			t.Errorf("pin %q", tl["pin"])
		}
		if s, _ := tl["input_schema"].(map[string]any); s["type"] != "object" {
			t.Errorf("input_schema = %v", tl["input_schema"])
		}
		if tl["description"] == "" || tl["title"] == nil {
			t.Errorf("tool without description/title: %v", tl)
		}
	}

	// Catalog with ETag.
	catalog := func(inm string) (int, string, []any) {
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
		return rec.Code, rec.Header().Get("ETag"), decode(t, rec)["tools"].([]any)
	}
	code, etag, all := catalog("")
	if code != http.StatusOK || etag == "" || len(all) != 5 {
		t.Fatalf("catalog: %d %q %d tools", code, etag, len(all))
	}
	if code, _, _ := catalog(etag); code != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag: %d, want 304", code)
	}
	if code, _, _ := catalog(`"stale"`); code != http.StatusOK {
		t.Errorf("If-None-Match with another ETag: %d, want 200", code)
	}
	if code, _, _ := catalog(`"stale", W/` + etag); code != http.StatusNotModified {
		t.Errorf("If-None-Match with a list holding the weak ETag: %d, want 304", code)
	}

	// One server's tools are cached the same way.
	serverTools := func(inm string) (int, string) {
		r := newRequest(http.MethodGet, "/api/v1/servers/vt/tools", nil)
		r.Header.Set("Authorization", "Bearer "+testToken)
		if inm != "" {
			r.Header.Set("If-None-Match", inm)
		}
		rec := e.serve(r)
		return rec.Code, rec.Header().Get("ETag")
	}
	code0, serverETag := serverTools("")
	if code0 != http.StatusOK || serverETag == "" {
		t.Fatalf("GET server tools: %d, ETag %q", code0, serverETag)
	}
	if code, _ := serverTools(serverETag); code != http.StatusNotModified {
		t.Errorf("server tools with If-None-Match: %d, want 304", code)
	}
	wantStatus(t, e.api(http.MethodGet, "/api/v1/servers/nope/tools", nil), http.StatusNotFound)

	// Policy.
	setPolicy := func(tool string, body any) *httptest.ResponseRecorder {
		return e.api(http.MethodPut, "/api/v1/servers/vt/tools/"+tool+"/policy", body)
	}
	rec = setPolicy("tool_002", map[string]string{"policy": "deny"})
	wantStatus(t, rec, http.StatusOK)
	tl := decode(t, rec)["tool"].(map[string]any)
	if tl["name"] != "tool_002" || tl["policy"] != "deny" || tl["effective_policy"] != "deny" {
		t.Errorf("policy answer = %v", tl)
	}
	wantStatus(t, setPolicy("tool_002", map[string]string{"policy": "sometimes"}), http.StatusUnprocessableEntity)
	wantStatus(t, setPolicy("tool_002", `{"policy":"allow","by":"me"}`), http.StatusBadRequest)
	wantStatus(t, setPolicy("no_such_tool", map[string]string{"policy": "deny"}), http.StatusNotFound)
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/nope/tools/tool_002/policy", map[string]string{"policy": "deny"}), http.StatusNotFound)

	// The cached bodies follow the change.
	if code, etag := serverTools(serverETag); code != http.StatusOK || etag == serverETag {
		t.Errorf("server tools after a policy change: %d, ETag %q (was %q)", code, etag, serverETag)
	}
	code, etag2, all := catalog(etag)
	if code != http.StatusOK || etag2 == etag {
		t.Errorf("after a policy change: %d, ETag %q (was %q)", code, etag2, etag)
	}
	for _, tl := range all {
		if tl := tl.(map[string]any); tl["name"] == "tool_002" && tl["effective_policy"] != "deny" {
			t.Errorf("catalog after the policy change: %v", tl)
		}
	}

	// The policy survives a second verify; nothing else changes.
	if job := e.verify("vt"); job["status"] != "success" {
		t.Fatalf("second verify: %v", job)
	}
	for _, tl := range tools() {
		want := "ask"
		if tl["name"] == "tool_002" {
			want = "deny"
		}
		if tl["policy"] != want || tl["state"] != "active" {
			t.Errorf("after re-verify: %v", tl)
		}
	}
	if _, etag3, _ := catalog(""); etag3 != etag2 {
		t.Errorf("ETag changed by a re-verify that changed nothing: %q → %q", etag2, etag3)
	}
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
		if got := decode(t, rec)["tool"].(map[string]any)["name"]; got != n {
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
	for _, x := range decode(t, rec)["tools"].([]any) {
		an := x.(map[string]any)["agent_name"].(string)
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
	if job := e.verify("bk"); job["status"] != "success" {
		t.Fatalf("verify: %v", job)
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
