//go:build linux

package web_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/conformance"
)

// The MCP conformance suite (@modelcontextprotocol/conformance, pinned in
// e2e/package.json) in server mode against /mcp, once per protocol
// revision /mcp speaks as its own era: 2026-07-28 (stateless) and
// 2025-11-25 (the last with sessions).

// conformanceRevisions are the requirement sets run against /mcp, each
// with its expected-failures file and the scenarios that must pass: every
// one a gateway of approved tools can pass. (A check of a required
// scenario may still be listed, with its reason, when the check needs
// something a gateway cannot have, such as a test tool of a bare name.)
var conformanceRevisions = []struct {
	revision, expected string
	required           []string
}{
	{
		revision: "2026-07-28",
		expected: "testdata/conformance-2026-07-28.txt",
		required: append([]string{"server-stateless", "tools-list", "dns-rebinding-protection", "caching",
			"http-header-validation", "http-custom-header-server-validation", "server-sse-multiple-streams",
			"prompts-list", "resources-list", "input-required-result-unsupported-methods", "sep-2164-resource-not-found"}, listedScenarios...),
	},
	{
		revision: "2025-11-25",
		expected: "testdata/conformance-2025-11-25.txt",
		required: append([]string{"server-initialize", "tools-list", "ping", "dns-rebinding-protection", "server-sse-multiple-streams",
			"prompts-list", "resources-list", "server-session-lifecycle"}, listedScenarios...),
	},
}

// listedScenarios read the resources, get the prompts and complete the
// arguments of the fixture's -listed, which TestConformance's server serves: through /mcp, by their
// names and URIs on that server (the only one), as the suite knows them.
var listedScenarios = []string{"resources-read-text", "resources-read-binary", "resources-templates-read",
	"prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image", "completion-complete"}

// schemaTool and schema2020 are the tool of the suite's json-schema-2020-12
// scenario (SEP-1613): $schema, $defs and additionalProperties must reach
// the agent as the server wrote them.
const (
	schemaTool = "json_schema_2020_12_tool"
	schema2020 = `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
		"$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
		"properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
		"additionalProperties": false}`
)

// testToolServer is the server that TestConformance registers: the fixture,
// which serves the suite's test tools too.
const testToolServer = "conf"

// conformanceTools are the fixture's -conformance tools: the test tools
// the suite calls by their bare names (see renameTestTools).
var conformanceTools = []string{"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
	"test_multiple_content_types", "test_error_handling", "test_tool_with_logging", "test_tool_with_progress", "test_logging_tool",
	"test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums", "test_streaming_elicitation",
	"test_input_required_result_elicitation", "test_input_required_result_sampling", "test_input_required_result_list_roots",
	"test_input_required_result_request_state", "test_input_required_result_multiple_inputs", "test_input_required_result_multi_round",
	"test_input_required_result_tampered_state", "test_input_required_result_capabilities",
	// The tasks extension's: greet, slow_compute, … (see task_tools.go).
	"greet", "slow_compute", "failing_job", "protocol_error_job", "confirm_delete", "multi_input", "test_tool_with_task"}

// TestConformance runs the server scenarios of each revision's
// requirement set against /mcp behind a proxy that adds the endpoint's
// bearer token (the suite cannot send one) and names the suite's test
// tools as /mcp offers them (see renameTestTools), judged by the revision's
// expected-failures file (see internal/conformance): a scenario that
// fails unlisted, a listed one that passes, and a required one listed
// all fail the test.
func TestConformance(t *testing.T) {
	e := newEnv(t)
	srv, client := e.liveServer()
	file := filepath.Join(t.TempDir(), "tools.json")
	// The offer lists a server's tools by name, so conf__add comes first:
	// http-header-validation calls the first tool listed with no
	// arguments, and the fixture answers any. region has the string
	// parameter with an x-mcp-header that http-custom-header-server-
	// validation sends in Mcp-Param-Region.
	tools := `{"version": "1", "tools": [
		{"name": "echo", "description": "Echoes.", "inputSchema": {"type": "object"}},
		{"name": "add", "description": "Adds.", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}},
		{"name": "region", "description": "Answers for a region.", "inputSchema": {"type": "object",
			"properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}}, "required": ["region"]}},
		{"name": "` + schemaTool + `", "description": "Tool with JSON Schema 2020-12 features", "inputSchema": ` + schema2020 + `}]}`
	if err := os.WriteFile(file, []byte(tools), 0o600); err != nil {
		t.Fatal(err)
	}
	e.createServer(map[string]any{"id": testToolServer, "name": "Conformance", "transport": "stdio", "command": fixtureBin,
		"args": []string{"-tools-file", file, "-listed", "-conformance"}, "default_policy": "allow"})
	if job := e.verify(testToolServer); job.Status != "success" {
		t.Fatalf("verify conf = %v; want success", job)
	}
	for _, tool := range []string{"echo", "add", "region", schemaTool} {
		e.setPolicy(testToolServer, tool, "allow")
	}
	// The names /mcp offers the test tools by, which the proxy calls them
	// by: conf__<name>, or for a name too long for that a shorter one.
	offered := map[string]string{}
	for _, tool := range conformanceTools {
		offered[tool] = e.setPolicy(testToolServer, tool, "allow").AgentName
	}

	proxy := startTokenProxy(t, srv.URL, testMCPToken, offered)
	checkTokenProxy(t, client, srv.URL, proxy.URL)
	// The suite's json-schema-2020-12 looks for the tool by its bare name;
	// agents see it namespaced, so check the same here.
	checkSchemaKept(t, client, proxy.URL, "conf__"+schemaTool, schema2020)

	for _, rev := range conformanceRevisions {
		t.Run(rev.revision, func(t *testing.T) {
			rep, err := conformance.Run(context.Background(), conformance.Options{Mode: conformance.Server, URL: proxy.URL + "/mcp",
				Requirements: rev.revision, ExpectedFailures: rev.expected, Required: rev.required, Timeout: 4 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(rep.Summary())
			problems := rep.Problems()
			if len(problems) > 0 {
				t.Logf("conformance server --requirements %s:\n%s", rev.revision, rep.Output)
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// startTokenProxy serves a reverse proxy to target on 127.0.0.1:0 that
// adds the bearer token and passes the client's own Host and Origin on
// unchanged, so the endpoint's DNS-rebinding and cross-site checks see
// what the client sent. It names the suite's test tools as /mcp offers
// them, by offered (see renameTestTools).
func startTokenProxy(t *testing.T, target, token string, offered map[string]string) *httptest.Server {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host // SetURL would send the target's
			pr.Out.Header.Set("Authorization", "Bearer "+token)
			renameTestTools(pr.Out, offered)
		},
		Transport:     tr,
		FlushInterval: -1, // SSE streams pass through at once
	}
	proxy := httptest.NewServer(rp)
	t.Cleanup(func() {
		proxy.CloseClientConnections()
		proxy.Close()
		tr.CloseIdleConnections()
	})
	return proxy
}

// renameTestTools renames, in a tools/call request r, a tool of the
// suite's test names (test_simple_text, test_sampling, …, and the tasks
// scenarios' greet, slow_compute, …) to the name
// /mcp offers it by, in the body and in the Mcp-Name header a 2026-07-28
// request carries: offered's, else conf__<name>. The suite calls its
// test tools by bare names, which is its own convention: a conformance
// server serves them itself. Switchboard offers the tools of upstream
// servers, each under its server's namespace, so the fixture's
// test_simple_text is conf__test_simple_text on /mcp (and a name too long
// for that gets a shorter one). Nothing else is renamed: a request whose
// name is none of them passes as it came, and an Mcp-Name
// header that does not match the body is left so, for the endpoint to
// refuse as it would have.
func renameTestTools(r *http.Request, offered map[string]string) {
	if r.Method != http.MethodPost || r.Body == nil {
		return
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return // sent on as read: the endpoint says what is wrong
	}
	var msg, params map[string]json.RawMessage
	var method, name string
	if json.Unmarshal(body, &msg) != nil || json.Unmarshal(msg["method"], &method) != nil || method != "tools/call" ||
		json.Unmarshal(msg["params"], &params) != nil || json.Unmarshal(params["name"], &name) != nil ||
		!strings.HasPrefix(name, "test_") && offered[name] == "" {
		return
	}
	as := cmp.Or(offered[name], testToolServer+"__"+name)
	params["name"], _ = json.Marshal(as)
	msg["params"], _ = json.Marshal(params)
	renamed, err := json.Marshal(msg)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(renamed))
	r.ContentLength = int64(len(renamed))
	r.Header.Del("Content-Length")
	if r.Header.Get("Mcp-Name") == name {
		r.Header.Set("Mcp-Name", as)
	}
}

// checkTokenProxy checks that the endpoint wants a token the proxy adds,
// and that the proxy keeps the client's Host and Origin: a foreign one
// through it is still refused.
func checkTokenProxy(t *testing.T, client *http.Client, app, proxy string) {
	t.Helper()
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"proxy-check","version":"1"}}}`
	for _, tc := range []struct {
		name, base, host, origin string
		want                     int
	}{
		{name: "app without token", base: app, want: http.StatusUnauthorized},
		// The Origin names the proxy: accepted only if the Host the app
		// sees is the proxy's too.
		{name: "proxy adds the token", base: proxy, origin: proxy, want: http.StatusOK},
		{name: "proxy keeps a foreign Host", base: proxy, host: "evil.example", want: http.StatusForbidden},
		{name: "proxy keeps a foreign Origin", base: proxy, origin: "http://evil.example", want: http.StatusForbidden},
	} {
		r, err := http.NewRequest(http.MethodPost, tc.base+"/mcp", strings.NewReader(initialize))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if tc.host != "" {
			r.Host = tc.host
		}
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		resp, err := client.Do(r)
		if err != nil {
			t.Fatalf("%s: POST /mcp: %v", tc.name, err)
		}
		body := new(bytes.Buffer)
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Fatalf("%s: POST %s/mcp (Host %q, Origin %q) = %d; want %d; body: %s",
				tc.name, tc.base, tc.host, tc.origin, resp.StatusCode, tc.want, truncate(body.String()))
		}
	}
}

// checkSchemaKept lists the tools through /mcp at base (the proxy) and
// checks that the tool's inputSchema is the one the server wrote.
func checkSchemaKept(t *testing.T, client *http.Client, base, tool, schema string) {
	t.Helper()
	var sid string
	// A JSON-RPC answer as it came: the schema is compared as the server
	// wrote it.
	rpc := func(body string) map[string]any {
		t.Helper()
		r, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
			r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := client.Do(r)
		if err != nil {
			t.Fatalf("POST /mcp %s: %v", body, err)
		}
		defer resp.Body.Close()
		data := new(bytes.Buffer)
		data.ReadFrom(resp.Body)
		if sid == "" {
			sid = resp.Header.Get("Mcp-Session-Id")
		}
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST /mcp %s = %d; want 2xx; body: %s", body, resp.StatusCode, truncate(data.String()))
		}
		var m map[string]any
		if data.Len() > 0 {
			if err := json.Unmarshal(data.Bytes(), &m); err != nil {
				t.Fatalf("POST /mcp %s: decode %q: %v", body, truncate(data.String()), err)
			}
		}
		return m
	}
	rpc(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"schema-check","version":"1"}}}`)
	if sid == "" {
		t.Fatal("initialize answered no Mcp-Session-Id")
	}
	rpc(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	list := rpc(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var want any
	if err := json.Unmarshal([]byte(schema), &want); err != nil {
		t.Fatal(err)
	}
	res, _ := list["result"].(map[string]any)
	tools, _ := res["tools"].([]any)
	for _, tl := range tools {
		if tl, _ := tl.(map[string]any); tl["name"] == tool {
			if got := tl["inputSchema"]; !reflect.DeepEqual(got, want) {
				t.Fatalf("tools/list: %s inputSchema = %v; want %v", tool, got, want)
			}
			return
		}
	}
	t.Fatalf("tools/list = %v; want a tool %s", list, tool)
}
