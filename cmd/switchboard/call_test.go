package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// runCall runs `switchboard call ARGS...` and returns its exit code (0,
// or the exitError's), stdout and stderr.
func runCall(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"call"}, args...), os.Getenv, nil, &stdout, &stderr)
	code := 0
	if err != nil {
		var ee *exitError
		if !errors.As(err, &ee) {
			t.Fatalf("call %q = %v; want nil or an *exitError", args, err)
		}
		code = ee.code
		stderr.WriteString(ee.msg)
	}
	return code, stdout.String(), stderr.String()
}

func decodeCall(t *testing.T, stdout string) callOutput {
	t.Helper()
	var out callOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	return out
}

// A stdio server's tool is called with the JSON arguments as typed, and
// the result printed; the server is stopped after.
func TestCallStdio(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tools.json")
	tools := `{"tools": [{"name": "echo", "description": "Says it back.", "inputSchema": {"type": "object"}},
		{"name": "bad name!", "description": "Outside the charset.", "inputSchema": {"type": "object"}}]}`
	if err := os.WriteFile(file, []byte(tools), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCall(t, "--", fixture, "-tools-file", file, "echo", `{"n": 1.50, "s": "x"}`)
	if code != 0 || stdout != `echo {"n":1.5,"s":"x"}`+"\n" {
		t.Fatalf("call = %d, stdout %q, stderr %s; want 0 and the echo", code, stdout, stderr)
	}

	code, stdout, _ = runCall(t, "--json", "--", fixture, "-tools-file", file, "echo")
	out := decodeCall(t, stdout)
	var res mcp.CallToolResult
	if err := json.Unmarshal(out.Result, &res); err != nil || code != 0 || !out.OK || out.Tool != "echo" ||
		out.Server == nil || out.Server.Name != "mcp-fixture" || out.ProtocolVersion != mcp.ProtocolVersion20260728 || len(res.Content) != 1 {
		t.Fatalf("call --json = %d, %+v (result %s); want ok, mcp-fixture on 2026-07-28, one content", code, out, out.Result)
	}

	code, stdout, stderr = runCall(t, "--json", "--", fixture, "-tools-file", file, "nope")
	if out := decodeCall(t, stdout); code != 1 || out.OK || out.Error == nil || !strings.Contains(out.Error.Message, `no tool "nope"`) ||
		!strings.Contains(out.Error.Message, "echo") || !strings.Contains(stderr, `no tool "nope"`) {
		t.Errorf("call of an unlisted tool = %d, %+v, stderr %q; want 1 naming the tool and what is listed", code, out.Error, stderr)
	}
	// A tool Switchboard would never offer is not called either.
	code, _, stderr = runCall(t, "--", fixture, "-tools-file", file, "bad name!")
	if code != 1 || !strings.Contains(stderr, "outside the MCP tool name charset") {
		t.Errorf("call of an invalid tool = %d, stderr %q; want 1 saying why", code, stderr)
	}
}

// A remote 2026-07-28 server, by URL; a tool's error result exits 1.
func TestCallRemote(t *testing.T) {
	s := server.NewMCPServer("remote", "2.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("add", mcp.WithNumber("a"), mcp.WithNumber("b")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.TrimSpace(strings.Repeat("|", int(req.GetFloat("a", 0)+req.GetFloat("b", 0))))), nil
	})
	s.AddTool(mcp.NewTool("fail"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("it went wrong"), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	defer ts.Close()

	code, stdout, stderr := runCall(t, "--json", ts.URL+"/mcp", "add", `{"a": 2, "b": 3}`)
	out := decodeCall(t, stdout)
	if code != 0 || !out.OK || out.Transport != "http" || out.Target != ts.URL+"/mcp" || out.ProtocolVersion != mcp.ProtocolVersion20260728 ||
		!strings.Contains(string(out.Result), `"text":"|||||"`) {
		t.Fatalf("call add = %d, %+v (result %s), stderr %s; want 5 bars over 2026-07-28", code, out, out.Result, stderr)
	}
	code, stdout, stderr = runCall(t, ts.URL+"/mcp", "fail")
	if code != 1 || stdout != "it went wrong\n" || !strings.Contains(stderr, "isError") {
		t.Errorf("call fail = %d, stdout %q, stderr %q; want 1, the text, and isError named", code, stdout, stderr)
	}
}

// The call is bounded: a tool that takes longer than --call-timeout ends
// as a timeout, and the command returns soon after.
func TestCallTimeout(t *testing.T) {
	entry := everything(t)
	start := time.Now()
	code, stdout, stderr := runCall(t, "--json", "--call-timeout", "500ms", "--", "node", entry, "stdio",
		"trigger-long-running-operation", `{"duration": 30, "steps": 3}`)
	took := time.Since(start)
	out := decodeCall(t, stdout)
	if code != 1 || out.Error == nil || out.Error.Class != "timeout" {
		t.Fatalf("call of a 30 s operation with --call-timeout 500ms = %d, %+v, stderr %s; want 1, class timeout", code, out.Error, stderr)
	}
	if took > 15*time.Second {
		t.Errorf("the command took %s; want it to end soon after the call's deadline", took)
	}
}

func TestCallUsageErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing", nil, "needs a server"},
		{"no tool", []string{"http://127.0.0.1:1/mcp"}, "needs a server"},
		{"arguments without a tool", []string{"http://127.0.0.1:1/mcp", `{"a":1}`}, "needs a server"},
		{"arguments not JSON", []string{"http://127.0.0.1:1/mcp", "t", `{"a":`}, "not a JSON object"},
		{"two objects", []string{"http://127.0.0.1:1/mcp", "t", `{} {}`}, "more than one"},
		{"bad transport", []string{"--transport", "ftp", "http://127.0.0.1:1/mcp", "t"}, "--transport"},
		{"bad flag", []string{"--nope", "x", "t"}, "not defined"},
	} {
		code, stdout, stderr := runCall(t, c.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: call %q = %d, stdout %q, stderr %q; want 2 and %q on stderr", c.name, c.args, code, stdout, stderr, c.want)
		}
	}
}
