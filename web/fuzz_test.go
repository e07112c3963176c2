package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/store"
)

// Fuzz targets for everything a client sends: the JSON API's bodies, the
// MCP endpoint's JSON-RPC, the dashboard's forms and the import parser.
// Their seed corpora are in testdata/fuzz/<target>; `go test` runs the
// seeds, `make test` fuzzes each target for a few seconds and `make fuzz`
// for longer. Each input goes through the whole application, with one
// verified fixture server ("fz", tools read, write and drop) to act on;
// the invariants are those of docs/architecture.md's API contract: never a 5xx or a
// logged error, errors as JSON (or a page) that say what is wrong, no
// secret in any answer, and what was accepted reads back.

// fuzzEnv is an application with the verified server "fz", shared by
// every input of one fuzz target (an input's changes are undone by reset).
type fuzzEnv struct {
	*env
	fz store.Server
}

func newFuzzEnv(f *testing.F) *fuzzEnv {
	ctx := f.Context()
	e := newEnv(f, func(c *webConfig) {
		c.NoVerifyOnStart = true
		c.MCP.AskTimeout = 100 * time.Millisecond
		c.MCP.CallTimeout = 5 * time.Second
	})
	file := filepath.Join(f.TempDir(), "tools.json")
	writeTools(f, file, "1", "read", "write", "drop")
	e.createServer(map[string]any{"id": "fz", "name": "Fuzz", "transport": "stdio", "command": fixtureBin,
		"args": []string{"-tools-file", file}, "default_policy": "allow"})
	if job := e.verify("fz"); job.Status != "success" {
		f.Fatalf("verify fz = %v", job)
	}
	e.setPolicy("fz", "write", "ask")
	e.setPolicy("fz", "drop", "deny")
	fz, err := e.db.Server(ctx, "fz")
	if err != nil {
		f.Fatal(err)
	}
	return &fuzzEnv{env: e, fz: fz}
}

// reset removes every server but fz and puts fz's settings back. An
// input's own verification (an edit of fz) may still be running: it ends
// with the application.
func (e *fuzzEnv) reset(t *testing.T) {
	ctx := t.Context()
	sums, err := e.db.Summaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sums {
		if s.Server.ID != "fz" {
			if err := e.db.DeleteServer(ctx, s.Server.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.db.UpdateServer(ctx, e.fz); err != nil {
		t.Fatal(err)
	}
}

// check fails t on a 5xx, a logged error or a secret in the answer.
func (e *fuzzEnv) check(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("%s = %d; want no 5xx; body: %s", what, rec.Code, truncate(rec.Body.String()))
	}
	if errs := e.logs.Errors(); len(errs) > 0 {
		e.logs.ForgetErrors()
		t.Fatalf("%s logged errors:\n%s", what, strings.Join(errs, "\n"))
	}
	for _, s := range e.secrets {
		if strings.Contains(rec.Body.String(), s) {
			t.Fatalf("%s: the answer contains the secret %q", what, s)
		}
	}
}

// serveFuzz runs r through the app (env.serve reports through the
// target's F, not the input's T).
func (e *fuzzEnv) serveFuzz(r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	e.app.ServeHTTP(rec, r)
	return rec
}

// fuzzAPIRoutes are the JSON API's routes that read a body and run nothing.
// (Verify and verify-all start the server: a fuzzed body cannot change
// what they run, and they are left out to keep inputs fast.)
var fuzzAPIRoutes = []struct{ method, path string }{
	{http.MethodPost, "/api/v1/servers"},
	{http.MethodPut, "/api/v1/servers/fz"},
	{http.MethodPut, "/api/v1/servers/fz/tools/read/policy"},
	{http.MethodPost, "/api/v1/servers/fz/tools/read/approve"},
	{http.MethodPost, "/api/v1/servers/fz/approve"},
	{http.MethodPost, "/api/v1/approvals/a1"},
	{http.MethodPost, "/api/v1/import"},
}

// FuzzAPI sends any body to each JSON API route. The answer is JSON; an
// error has an "error" message (and "fields", each with a message, for a
// 422); a server that was created or changed reads back as answered.
func FuzzAPI(f *testing.F) {
	e := newFuzzEnv(f)
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		defer e.reset(t)
		rt := fuzzAPIRoutes[int(route)%len(fuzzAPIRoutes)]
		r := newRequest(rt.method, rt.path, bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+testToken)
		r.Header.Set("Content-Type", "application/json")
		rec := e.serveFuzz(r)
		what := rt.method + " " + rt.path + " " + quoted(body)
		e.check(t, what, rec)
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s: Content-Type %q; want JSON", what, ct)
		}
		// Any route's answer, read as its raw shape: the checks below hold
		// for every one, and compare a field as answered and read back.
		var answer map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
			t.Fatalf("%s: the answer is not a JSON object: %v\n%s", what, err, rec.Body)
		}
		if rec.Code >= 400 {
			if msg, _ := answer["error"].(string); msg == "" {
				t.Fatalf("%s = %d without an error message: %s", what, rec.Code, rec.Body)
			}
			if rec.Code == http.StatusUnprocessableEntity && rt.path != "/api/v1/import" {
				fields, _ := answer["fields"].(map[string]any)
				if len(fields) == 0 {
					t.Fatalf("%s = 422 without per-field messages: %s", what, rec.Body)
				}
				for k, v := range fields {
					if s, _ := v.(string); s == "" {
						t.Fatalf("%s: field %q has no message", what, k)
					}
				}
			}
			return
		}
		if rt.path == "/api/v1/servers" || rt.path == "/api/v1/servers/fz" {
			id, _ := answer["id"].(string)
			back := e.serveFuzz(apiRequest(http.MethodGet, "/api/v1/servers/"+url.PathEscape(id)))
			if back.Code != http.StatusOK {
				t.Fatalf("%s answered %d for %q, which then reads back %d", what, rec.Code, id, back.Code)
			}
			var got map[string]any
			if err := json.Unmarshal(back.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"name", "transport", "command", "args", "url", "cwd", "default_policy", "enabled"} {
				if a, b := mustJSON(answer[k]), mustJSON(got[k]); a != b {
					t.Fatalf("%s: %s answered %s, reads back %s", what, k, a, b)
				}
			}
		}
	})
}

// FuzzMCP sends any JSON-RPC body to /mcp, in an initialized session or
// none; outside a session, a body whose _meta names 2026-07-28 or later
// goes with the headers a client of that revision sends (its version,
// Mcp-Method, Mcp-Name). The answer is never a 5xx; a JSON answer is
// JSON-RPC 2.0, and a response to a request carries its id.
func FuzzMCP(f *testing.F) {
	e := newFuzzEnv(f)
	post := func(session string, body []byte) *httptest.ResponseRecorder {
		// A subscriptions/listen stream lasts until its client goes.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		r := newRequest(http.MethodPost, "/mcp", bytes.NewReader(body)).WithContext(ctx)
		r.Header.Set("Authorization", "Bearer "+testMCPToken)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			r.Header.Set("Mcp-Session-Id", session)
			r.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		var req struct {
			Method mcp.MCPMethod   `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		var params struct {
			Meta *mcp.Meta `json:"_meta"`
		}
		if session == "" && json.Unmarshal(body, &req) == nil && json.Unmarshal(req.Params, &params) == nil {
			if version := params.Meta.ProtocolVersion(); mcp.IsModernProtocol(version) {
				r.Header.Set("MCP-Protocol-Version", version)
				for k, v := range mcp.StandardHeaders(version, req.Method, req.Params) {
					r.Header.Set(k, v)
				}
			}
		}
		return e.serveFuzz(r)
	}
	init := post("", []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`))
	session := init.Header().Get("Mcp-Session-Id")
	if init.Code != http.StatusOK || session == "" {
		f.Fatalf("initialize = %d, session %q: %s", init.Code, session, init.Body)
	}
	post(session, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))

	f.Fuzz(func(t *testing.T, inSession bool, body []byte) {
		sid := ""
		if inSession {
			sid = session
		}
		rec := post(sid, body)
		what := "POST /mcp " + quoted(body)
		e.check(t, what, rec)
		ct := rec.Header().Get("Content-Type")
		var msgs [][]byte
		switch {
		case strings.HasPrefix(ct, "application/json"):
			msgs = [][]byte{rec.Body.Bytes()}
		case strings.HasPrefix(ct, "text/event-stream"):
			for _, line := range strings.Split(rec.Body.String(), "\n") {
				if data, ok := strings.CutPrefix(line, "data: "); ok {
					msgs = append(msgs, []byte(data))
				}
			}
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		sentID := json.Unmarshal(body, &req) == nil && len(req.ID) > 0 && string(req.ID) != "null"
		for _, m := range msgs {
			var msg struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Method  string          `json:"method"`
				Result  json.RawMessage `json:"result"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(m, &msg); err != nil {
				// The protocol's errors for an unparsable body are JSON
				// too; an HTTP error is JSON with "error".
				t.Fatalf("%s: an answer that is not one JSON-RPC message: %v\n%s", what, err, m)
			}
			if rec.Code >= 400 && msg.JSONRPC == "" {
				continue // an HTTP error of ours: {"error": "..."}
			}
			if msg.JSONRPC != "2.0" {
				t.Fatalf("%s: answer without jsonrpc 2.0: %s", what, m)
			}
			if msg.Method != "" {
				continue // a notification or request of the server's
			}
			if msg.Error != nil && msg.Error.Message == "" {
				t.Fatalf("%s: a JSON-RPC error without a message: %s", what, m)
			}
			if msg.Error == nil && msg.Result == nil {
				t.Fatalf("%s: a response with neither result nor error: %s", what, m)
			}
			if sentID && msg.Error == nil && !sameID(msg.ID, req.ID) {
				t.Fatalf("%s: the response's id %s is not the request's %s", what, msg.ID, req.ID)
			}
		}
	})
}

// fuzzFormRoutes are the dashboard's form submits that run nothing but a
// store change or a tool call of the fixture (Try it).
var fuzzFormRoutes = []string{
	"/servers",
	"/servers/fz",
	"/servers/fz/policy",
	"/servers/fz/approve",
	"/approvals/a1",
	"/import/preview",
	"/import/apply",
	"/export",
	"/tools/fz__read/try",
}

// FuzzForms posts any form body to each of the dashboard's forms, as a
// logged-in same-origin browser with its CSRF token in the header. A
// refused add or edit form shows the page again with what was typed.
func FuzzForms(f *testing.F) {
	e := newFuzzEnv(f)
	b := e.login()
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		defer e.reset(t)
		path := fuzzFormRoutes[int(route)%len(fuzzFormRoutes)]
		r := b.request(http.MethodPost, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		r.Header.Set("X-CSRF-Token", b.csrf)
		rec := e.serveFuzz(r)
		what := "POST " + path + " " + quoted([]byte(body))
		e.check(t, what, rec)
		if rec.Code != http.StatusUnprocessableEntity || (path != "/servers" && path != "/servers/fz") {
			return
		}
		form, err := url.ParseQuery(body)
		if err != nil {
			t.Fatalf("%s: 422 for a form that does not parse; want 400", what)
		}
		page := parseHTML(t, rec.Body.String())
		if page.Find(`[class="field-error"]`).Length() == 0 {
			t.Fatalf("%s: 422 without a message at a field:\n%s", what, truncate(rec.Body.String()))
		}
		for _, name := range []string{"name", "command", "url", "cwd", "timeout_s"} {
			typed := form.Get(name)
			if !plainText(typed) {
				continue // the HTML parser changes NUL, CR and invalid UTF-8
			}
			inputs := page.Find(`[name="` + name + `"]`)
			if inputs.Length() != 1 || inputs.AttrOr("value", "") != typed {
				t.Fatalf("%s: the form shown again lost %s=%q", what, name, typed)
			}
		}
	})
}

// apiRequest is a bodiless API request with the bearer token.
func apiRequest(method, path string) *http.Request {
	r := newRequest(method, path, nil)
	r.Header.Set("Authorization", "Bearer "+testToken)
	return r
}

func mustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// sameID reports whether two JSON-RPC ids are the same value: equal
// strings, or numbers equal exactly (1.5e300 is 1.5e+300; a large
// integer must not come back rounded).
func sameID(a, b json.RawMessage) bool {
	var sa, sb any
	if json.Unmarshal(a, &sa) != nil || json.Unmarshal(b, &sb) != nil {
		return false
	}
	if _, ok := sa.(float64); ok {
		fa, _, errA := big.ParseFloat(strings.TrimSpace(string(a)), 10, 4096, big.ToNearestEven)
		fb, _, errB := big.ParseFloat(strings.TrimSpace(string(b)), 10, 4096, big.ToNearestEven)
		return errA == nil && errB == nil && fa.Cmp(fb) == 0
	}
	return reflect.DeepEqual(sa, sb)
}

// quoted is an input for a failure message, quoted and cut.
func quoted(data []byte) string {
	return truncate(strconv.Quote(string(data)))
}

// plainText reports whether s survives a round trip through an HTML
// attribute unchanged: valid UTF-8 without control characters.
func plainText(s string) bool {
	return utf8.ValidString(s) && !slices.ContainsFunc([]rune(s), unicode.IsControl)
}
