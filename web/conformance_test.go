//go:build linux

package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The MCP conformance suite (@modelcontextprotocol/conformance, pinned in
// e2e/package.json) in server mode against /mcp.

const (
	// conformanceCLI is the suite's command, installed by
	// `npm ci --prefix e2e`, relative to this package.
	conformanceCLI = "../e2e/node_modules/.bin/conformance"
	// conformanceExpected lists the scenarios that do not apply to
	// Switchboard, one per line, each with the reason in a # comment.
	conformanceExpected = "testdata/conformance-expected-failures.txt"
	// conformanceTimeout bounds the whole run of the suite.
	conformanceTimeout = 3 * time.Minute
)

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

// conformanceRequired are the scenarios /mcp must pass; they may never be
// listed as expected failures.
var conformanceRequired = []string{"server-initialize", "tools-list", "ping", "dns-rebinding-protection"}

// TestConformance runs every server scenario of the MCP conformance suite
// against /mcp behind a proxy that adds the endpoint's bearer token (the
// suite cannot send one). It fails when a required scenario fails, when a
// scenario fails that the expected-failures file does not list, and when a
// listed scenario passes (so the file stays honest).
func TestConformance(t *testing.T) {
	cli, err := filepath.Abs(conformanceCLI)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("@modelcontextprotocol/conformance is not installed (%v): run `npm ci --prefix e2e` in the repository root", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not installed: %v", err)
	}
	scenarios := conformanceScenarios(t, cli)
	expected := readExpectedFailures(t, conformanceExpected, scenarios)

	e := newEnv(t)
	srv, client := e.liveServer()
	file := filepath.Join(t.TempDir(), "tools.json")
	tools := `{"version": "1", "tools": [
		{"name": "echo", "description": "Echoes.", "inputSchema": {"type": "object"}},
		{"name": "add", "description": "Adds.", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}},
		{"name": "` + schemaTool + `", "description": "Tool with JSON Schema 2020-12 features", "inputSchema": ` + schema2020 + `}]}`
	if err := os.WriteFile(file, []byte(tools), 0o600); err != nil {
		t.Fatal(err)
	}
	e.createServer(map[string]any{"id": "conf", "name": "Conformance", "transport": "stdio", "command": fixtureBin,
		"args": []string{"-tools-file", file}, "default_policy": "allow"})
	if job := e.verify("conf"); job["status"] != "success" {
		t.Fatalf("verify conf = %v; want success", job)
	}
	for _, tool := range []string{"echo", "add", schemaTool} {
		e.setPolicy("conf", tool, "allow")
	}

	proxy := startTokenProxy(t, srv.URL, testMCPToken)
	checkTokenProxy(t, client, srv.URL, proxy.URL)
	// The suite's json-schema-2020-12 looks for the tool by its bare name;
	// agents see it namespaced, so check the same here.
	checkSchemaKept(t, client, proxy.URL, "conf__"+schemaTool, schema2020)

	results, exitErr := runConformance(t, cli, proxy.URL+"/mcp", expected)

	var problems []string
	asExpected := true
	for _, name := range scenarios {
		res, ran := results[name]
		passed := ran && res.passed()
		if passed == expected[name] {
			asExpected = false
		}
		switch {
		case slices.Contains(conformanceRequired, name) && !passed:
			problems = append(problems, fmt.Sprintf("required scenario %s failed: %s", name, res.failures(ran)))
		case !passed && !expected[name]:
			problems = append(problems, fmt.Sprintf("scenario %s failed and is not listed in %s: %s", name, conformanceExpected, res.failures(ran)))
		case passed && expected[name]:
			problems = append(problems, fmt.Sprintf("scenario %s passes but is listed in %s: remove it", name, conformanceExpected))
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
	if asExpected != (exitErr == nil) {
		t.Errorf("the suite's own baseline check: exit error %v; want one exactly when a scenario is not as expected (all as expected: %v)", exitErr, asExpected)
	}
}

// resultDir is the name of a scenario's result directory:
// server-<scenario>-<ISO time with : and . replaced by ->.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// conformanceScenarios lists the suite's server scenarios.
func conformanceScenarios(t *testing.T, cli string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, "list", "--server").CombinedOutput()
	if err != nil {
		t.Fatalf("%s list --server: %v\n%s", cli, err, out)
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if name, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "- "); ok {
			names = append(names, name)
		}
	}
	for _, name := range conformanceRequired {
		if !slices.Contains(names, name) {
			t.Fatalf("%s list --server = %q; want it to hold %s", cli, names, name)
		}
	}
	return names
}

// readExpectedFailures reads the expected-failures file: a scenario name
// per line, # starts a comment. Every name must be a scenario of the
// suite, and none a required one.
func readExpectedFailures(t *testing.T, file string, scenarios []string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	expected := map[string]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		name := strings.TrimSpace(line)
		switch {
		case name == "":
			continue
		case !slices.Contains(scenarios, name):
			t.Fatalf("%s:%d: %q is not a server scenario of the suite", file, i+1, name)
		case slices.Contains(conformanceRequired, name):
			t.Fatalf("%s:%d: %s is required to pass; it cannot be an expected failure", file, i+1, name)
		case expected[name]:
			t.Fatalf("%s:%d: %s is listed twice", file, i+1, name)
		}
		expected[name] = true
	}
	return expected
}

// startTokenProxy serves a reverse proxy to target on 127.0.0.1:0 that
// adds the bearer token and passes the client's own Host and Origin on
// unchanged, so the endpoint's DNS-rebinding and cross-site checks see
// what the client sent.
func startTokenProxy(t *testing.T, target, token string) *httptest.Server {
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

// conformanceCheck is one check of a scenario, as the suite writes it in
// checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO
	ErrorMessage string `json:"errorMessage"`
}

type conformanceResult []conformanceCheck

// passed is the suite's own verdict for an expected-failures baseline: no
// check failed and none warned.
func (r conformanceResult) passed() bool {
	return !slices.ContainsFunc(r, func(c conformanceCheck) bool { return c.Status == "FAILURE" || c.Status == "WARNING" })
}

// failures describes the failed and warning checks.
func (r conformanceResult) failures(ran bool) string {
	if !ran {
		return "the suite wrote no results for it (see its output above)"
	}
	var out []string
	for _, c := range r {
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			out = append(out, fmt.Sprintf("%s %s: %s", c.ID, c.Status, c.ErrorMessage))
		}
	}
	return strings.Join(out, "; ")
}

// runConformance runs every server scenario against url, bounded by
// conformanceTimeout (the process group is killed then), and returns the
// checks of each scenario by name, and the suite's exit error: the suite
// is handed the expected failures too, so it exits non-zero when its own
// baseline check fails.
func runConformance(t *testing.T, cli, url string, expected map[string]bool) (map[string]conformanceResult, error) {
	t.Helper()
	dir := t.TempDir()
	outDir := filepath.Join(dir, "results")
	baseline := filepath.Join(dir, "expected-failures.yaml")
	names := make([]string, 0, len(expected))
	for name := range expected {
		names = append(names, name)
	}
	slices.Sort(names)
	yaml, err := json.Marshal(map[string][]string{"server": names}) // JSON is YAML
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(baseline, yaml, 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), conformanceTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "server", "--url", url, "--suite", "all",
		"--expected-failures", baseline, "--output-dir", outDir)
	cmd.Env = append(os.Environ(), "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything it left behind
	}
	t.Logf("conformance %s (%s):\n%s", strings.Join(cmd.Args[1:], " "), time.Since(start).Round(time.Millisecond), out.String())
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite did not finish within %s", conformanceTimeout)
	}
	var exitErr *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exitErr) {
		t.Fatalf("run the conformance suite: %v", runErr)
	}

	results := map[string]conformanceResult{}
	files, err := filepath.Glob(filepath.Join(outDir, "server-*", "checks.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var res conformanceResult
		if err := json.Unmarshal(data, &res); err != nil {
			t.Fatalf("decode %s: %v", f, err)
		}
		// The directory is server-<scenario>-<timestamp>.
		m := resultDir.FindStringSubmatch(filepath.Base(filepath.Dir(f)))
		if m == nil {
			t.Fatalf("unexpected result directory %s", f)
		}
		results[m[1]] = res
	}
	return results, runErr
}
