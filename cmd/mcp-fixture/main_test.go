package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// fixtureBinary is the path of the mcp-fixture binary built by TestMain.
var fixtureBinary string

// TestMain builds the fixture binary once for the tests that need a real
// process (exit statuses, stdio clients).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcp-fixture-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fixtureBinary = filepath.Join(dir, "mcp-fixture")
	build := exec.Command("go", "build", "-o", fixtureBinary, ".")
	build.Stdout = os.Stderr
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building mcp-fixture: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// noEnv is a getenv that sees no environment variables, so the tests do not
// depend on FIXTURE_* variables set by whoever runs them.
func noEnv(string) string { return "" }

// cleanEnv returns the process environment without FIXTURE_* variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envPrefix) {
			env = append(env, kv)
		}
	}
	return env
}

// syncBuffer is a bytes.Buffer that is safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns the buffer contents.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startInProcess runs the fixture in-process with the given flags, waits for
// the "listening <URL>" line and returns the URL. The server is stopped and
// checked for a clean exit when the test ends.
func startInProcess(t *testing.T, args ...string) string {
	t.Helper()
	url, _ := startInProcessStderr(t, args...)
	return url
}

// startInProcessStderr is startInProcess that also returns what the server
// writes to stderr.
func startInProcessStderr(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdoutR, stdoutW := io.Pipe()
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, noEnv, strings.NewReader(""), stdoutW, stderr)
		stdoutW.CloseWithError(io.EOF)
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v; stderr:\n%s", err, stderr.String())
			}
		case <-time.After(5 * time.Second):
			t.Errorf("run did not return after cancellation")
		}
	})

	line, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		t.Fatalf("reading listening line: %v; stderr:\n%s", err, stderr.String())
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if !ok {
		t.Fatalf("first stdout line = %q, want \"listening <URL>\"", line)
	}
	// Nothing else may be written to stdout; keep draining so a stray write
	// would not block the server.
	go func() { _, _ = io.Copy(io.Discard, stdoutR) }()
	return url, stderr
}

// expectedNames returns tool_000 .. tool_<n-1>.
func expectedNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = toolName(i)
	}
	return names
}

// toolNames returns the names of tools in order.
func toolNames(tools []mcp.Tool) []string {
	names := make([]string, len(tools))
	for i, tool := range tools {
		names[i] = tool.Name
	}
	return names
}

// countPages walks tools/list cursors one page at a time and returns the
// number of pages and the tools in order.
func countPages(ctx context.Context, t *testing.T, c *client.Client) (int, []mcp.Tool) {
	t.Helper()
	var (
		pages int
		tools []mcp.Tool
		req   mcp.ListToolsRequest
	)
	for {
		page, err := c.ListToolsByPage(ctx, req)
		if err != nil {
			t.Fatalf("ListToolsByPage (page %d): %v", pages+1, err)
		}
		pages++
		tools = append(tools, page.Tools...)
		if page.NextCursor == "" {
			return pages, tools
		}
		if pages > 100 {
			t.Fatal("tools/list cursors never end")
		}
		req.Params.Cursor = page.NextCursor
	}
}

// initialize runs the client handshake (server/discover or initialize).
func initialize(ctx context.Context, t *testing.T, c *client.Client) *mcp.InitializeResult {
	t.Helper()
	var req mcp.InitializeRequest
	req.Params.ClientInfo = mcp.Implementation{Name: "mcp-fixture-test", Version: "0.0.0"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	return res
}

func TestHTTPListsToolsInPages(t *testing.T) {
	url := startInProcess(t, "-transport", "http", "-addr", "127.0.0.1:0")
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("URL = %q, want http://127.0.0.1:PORT/mcp", url)
	}

	for _, tc := range []struct {
		name        string
		options     []client.ClientOption
		wantVersion string
	}{
		{name: "modern", wantVersion: mcp.ProtocolVersion20260728},
		{name: "legacy", options: []client.ClientOption{client.WithProtocolVersion(mcp.ProtocolVersion20250618)}, wantVersion: mcp.ProtocolVersion20250618},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			trans, err := transport.NewStreamableHTTP(url)
			if err != nil {
				t.Fatal(err)
			}
			c := client.NewClient(trans, tc.options...)
			defer c.Close()
			if err := c.Start(ctx); err != nil {
				t.Fatalf("Start: %v", err)
			}
			res := initialize(ctx, t, c)
			if res.ProtocolVersion != tc.wantVersion {
				t.Errorf("protocol version = %q, want %q", res.ProtocolVersion, tc.wantVersion)
			}
			if res.ServerInfo.Name != "mcp-fixture" || res.ServerInfo.Version != "1.0.0" {
				t.Errorf("serverInfo = %+v, want mcp-fixture 1.0.0", res.ServerInfo)
			}
			if res.Capabilities.Tools == nil || !res.Capabilities.Tools.ListChanged {
				t.Errorf("tools capability = %+v, want listChanged", res.Capabilities.Tools)
			}

			all, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			if got, want := toolNames(all.Tools), expectedNames(25); !reflect.DeepEqual(got, want) {
				t.Errorf("ListTools names = %v, want %v", got, want)
			}

			pages, paged := countPages(ctx, t, c)
			if pages != 3 {
				t.Errorf("pages = %d, want 3", pages)
			}
			if !reflect.DeepEqual(toolNames(paged), expectedNames(25)) {
				t.Errorf("paged names = %v", toolNames(paged))
			}

			var call mcp.CallToolRequest
			call.Params.Name = "tool_003"
			call.Params.Arguments = map[string]any{"id": "rec-1", "force": true}
			result, err := c.CallTool(ctx, call)
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if len(result.Content) != 1 {
				t.Fatalf("CallTool content = %+v", result.Content)
			}
			text, ok := result.Content[0].(mcp.TextContent)
			if !ok || text.Text != `tool_003 {"force":true,"id":"rec-1"}` {
				t.Errorf("CallTool content = %#v", result.Content[0])
			}
		})
	}
}

func TestSSEListsTools(t *testing.T) {
	url := startInProcess(t, "-transport", "sse", "-tools", "7", "-page-size", "0")
	if !strings.HasSuffix(url, "/sse") {
		t.Fatalf("URL = %q, want .../sse", url)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.NewSSEMCPClient(url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	initialize(ctx, t, c)
	pages, tools := countPages(ctx, t, c)
	if pages != 1 || !reflect.DeepEqual(toolNames(tools), expectedNames(7)) {
		t.Errorf("got %d pages with %v, want 1 page with tool_000..tool_006", pages, toolNames(tools))
	}
}

func TestCrashExitsWithStatus3(t *testing.T) {
	cmd := exec.Command(fixtureBinary, "-mode", "crash")
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Fatalf("Run = %v, want exit status 3", err)
	}
	if !strings.Contains(stderr.String(), "mcp-fixture: simulated crash: database unreachable\n") {
		t.Errorf("stderr = %q, want the simulated crash line", stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
}

func TestBadFlagsExitWithStatus2(t *testing.T) {
	cmd := exec.Command(fixtureBinary, "-transport", "carrier-pigeon")
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 {
		t.Fatalf("Run = %v, want exit status 2", err)
	}
	if !strings.Contains(string(out), `invalid -transport "carrier-pigeon"`) {
		t.Errorf("output = %q", out)
	}
}

func TestHangInitStdioNeverAnswers(t *testing.T) {
	cmd := exec.Command(fixtureBinary, "-mode", "hang-init")
	cmd.Env = cleanEnv()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`+"\n")
	time.Sleep(200 * time.Millisecond)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Wait = %v, want a clean exit once stdin closes; stderr:\n%s", err, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
}

func TestChangeOnSecondRunOverStdio(t *testing.T) {
	stateFile := filepath.Join(t.TempDir(), "runs")
	listRun := func() []mcp.Tool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := client.NewStdioMCPClient(fixtureBinary, nil,
			"-transport", "stdio", "-tools", "25", "-page-size", "10", "-startup-delay", "0s",
			"-mode", "change-on-second-run", "-state-file", stateFile)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}()
		initialize(ctx, t, c)
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatalf("ListTools: %v", err)
		}
		return res.Tools
	}

	run1 := listRun()
	run2 := listRun()

	if got, want := toolNames(run1), expectedNames(25); !reflect.DeepEqual(got, want) {
		t.Fatalf("run 1 names = %v, want %v", got, want)
	}
	want2 := append([]string{"extra_tool"}, expectedNames(24)...)
	if got := toolNames(run2); !reflect.DeepEqual(got, want2) {
		t.Fatalf("run 2 names = %v, want %v", got, want2)
	}
	if got, want := run2[1].Description, run1[0].Description+" (changed)"; got != want {
		t.Errorf("run 2 tool_000 description = %q, want %q", got, want)
	}
	// Apart from tool_000's description, the surviving tools are unchanged.
	for i := 1; i < 24; i++ {
		a, _ := json.Marshal(run1[i])
		b, _ := json.Marshal(run2[i+1])
		if !bytes.Equal(a, b) {
			t.Errorf("%s changed between runs:\n%s\n%s", run1[i].Name, a, b)
		}
	}
	data, err := os.ReadFile(stateFile)
	if err != nil || strings.TrimSpace(string(data)) != "2" {
		t.Errorf("state file = %q, %v; want 2", data, err)
	}
}

func TestPaginationPageCounts(t *testing.T) {
	for _, tc := range []struct {
		tools, pageSize, wantPages int
	}{
		{25, 10, 3},
		{30, 10, 3}, // mcp-go alone would return a fourth, empty page.
		{10, 10, 1},
		{11, 10, 2},
		{1, 1, 1},
		{0, 10, 1},
		{30, 0, 1},
	} {
		t.Run(fmt.Sprintf("%d_tools_page_%d", tc.tools, tc.pageSize), func(t *testing.T) {
			cfg := defaultConfig()
			cfg.tools, cfg.pageSize = tc.tools, tc.pageSize
			s := newMCPServer(cfg, generateTools(cfg.tools), nil)
			ctx := context.Background()

			var names []string
			cursor := ""
			pages := 0
			for {
				params := map[string]any{}
				if cursor != "" {
					params["cursor"] = cursor
				}
				msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": pages + 1, "method": "tools/list", "params": params})
				raw, _ := json.Marshal(s.HandleMessage(ctx, msg))
				var resp struct {
					Result mcp.ListToolsResult `json:"result"`
				}
				if err := json.Unmarshal(raw, &resp); err != nil {
					t.Fatalf("decoding %s: %v", raw, err)
				}
				pages++
				names = append(names, toolNames(resp.Result.Tools)...)
				if tc.pageSize > 0 && len(resp.Result.Tools) > tc.pageSize {
					t.Errorf("page %d has %d tools, want at most %d", pages, len(resp.Result.Tools), tc.pageSize)
				}
				cursor = string(resp.Result.NextCursor)
				if cursor == "" || pages > 100 {
					break
				}
			}
			if pages != tc.wantPages {
				t.Errorf("pages = %d, want %d", pages, tc.wantPages)
			}
			if !reflect.DeepEqual(names, expectedNames(tc.tools)) && !(tc.tools == 0 && len(names) == 0) {
				t.Errorf("names = %v", names)
			}
		})
	}
}

func TestToolsAreDeterministicAndVaried(t *testing.T) {
	a, err := json.Marshal(generateTools(25))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(generateTools(25))
	if !bytes.Equal(a, b) {
		t.Fatal("two generations of the tool list differ")
	}

	var readOnly, destructive, openWorld int
	for i, tool := range generateTools(25) {
		if tool.Name != fmt.Sprintf("tool_%03d", i) || tool.Title != fmt.Sprintf("Tool %03d", i) {
			t.Errorf("tool %d is named %q titled %q", i, tool.Name, tool.Title)
		}
		if n := len(tool.InputSchema.Properties); n < 2 || n > 4 {
			t.Errorf("%s has %d properties, want 2 to 4", tool.Name, n)
		}
		if len(tool.InputSchema.Required) == 0 {
			t.Errorf("%s has no required properties", tool.Name)
		}
		if *tool.Annotations.ReadOnlyHint {
			readOnly++
		}
		if *tool.Annotations.DestructiveHint {
			destructive++
		}
		if *tool.Annotations.OpenWorldHint {
			openWorld++
		}
	}
	if readOnly == 0 || destructive == 0 || openWorld == 0 {
		t.Errorf("annotations do not vary: readOnly=%d destructive=%d openWorld=%d", readOnly, destructive, openWorld)
	}
}

func TestConfigFlagsWinOverEnvironment(t *testing.T) {
	env := map[string]string{
		"FIXTURE_TOOLS":         "7",
		"FIXTURE_PAGE_SIZE":     "3",
		"FIXTURE_MODE":          "hang-init",
		"FIXTURE_STARTUP_DELAY": "1s",
	}
	getenv := func(k string) string { return env[k] }
	cfg, err := parseConfig([]string{"-tools", "9"}, getenv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.tools != 9 || cfg.pageSize != 3 || cfg.mode != modeHangInit || cfg.startupDelay != time.Second {
		t.Errorf("config = %+v", cfg)
	}

	env["FIXTURE_PAGE_SIZE"] = "many"
	_, err = parseConfig(nil, getenv, io.Discard)
	var usageErr *usageError
	if !errors.As(err, &usageErr) || !strings.Contains(err.Error(), "FIXTURE_PAGE_SIZE") {
		t.Errorf("bad environment value: err = %v, want a usage error naming FIXTURE_PAGE_SIZE", err)
	}
	if got := exitCode(err, io.Discard); got != 2 {
		t.Errorf("exit code for a usage error = %d, want 2", got)
	}

	if _, err := parseConfig([]string{"-h"}, noEnv, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: err = %v, want flag.ErrHelp", err)
	}
}
