package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// countingAnswer answers every question Allow once, counting them.
type countingAnswer struct{ asked atomic.Int32 }

func (a *countingAnswer) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.asked.Add(1)
	return answer("allow_once").Elicit(ctx, req)
}

// The first agent session just works (issue 20's "done when"): a fresh
// Switchboard with server-everything and server-filesystem imported from a
// client config and confirmed with the read-only preset serves an agent
// whose read-only calls go through at once, whose destructive call is
// approved in the agent's own client, which is not offered the tool that
// needs MCP tasks; and a stdio-only client reaches the same tools through
// `switchboard mcp`.
func TestFirstAgentSession(t *testing.T) {
	everythingEntry := everything(t)
	fsEntry, _ := filepath.Abs("../../e2e/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
	if _, err := os.Stat(fsEntry); err != nil {
		t.Fatalf("server-filesystem is not installed (%v): run `make deps-e2e`", err)
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("first session\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := liveDashboard{token: strings.Repeat("b", 64), db: filepath.Join(t.TempDir(), "sb.db")}
	base, _, stop := startServe(t, map[string]string{"SWITCHBOARD_DB": d.db, "SWITCHBOARD_TOKEN": d.token, "PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME")})
	t.Cleanup(func() { stop() })
	d.base = base

	config, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{everythingEntry, "stdio"}},
		"filesystem": map[string]any{"command": "node", "args": []string{fsEntry, root}},
	}})
	d.api(t, http.MethodPost, "/api/v1/import", map[string]any{"format": "claude", "text": string(config), "apply": true}, http.StatusOK)
	for _, id := range []string{"everything", "filesystem"} {
		d.api(t, http.MethodPost, "/api/v1/servers/"+id+"/verify", map[string]any{"confirm": true, "preset": "read_only"}, http.StatusAccepted)
	}
	for _, id := range []string{"everything", "filesystem"} {
		deadline := time.Now().Add(60 * time.Second)
		for {
			var srv struct {
				Discovery struct{ Status string } `json:"discovery"`
			}
			json.Unmarshal(d.api(t, http.MethodGet, "/api/v1/servers/"+id, nil, http.StatusOK), &srv)
			if srv.Discovery.Status == "success" {
				break
			}
			if srv.Discovery.Status == "failed" || time.Now().After(deadline) {
				t.Fatalf("%s verification: %s", id, srv.Discovery.Status)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	var connected struct {
		Token string `json:"token"`
	}
	json.Unmarshal(d.api(t, http.MethodPost, "/api/v1/clients", map[string]any{"name": "Claude Code"}, http.StatusCreated), &connected)

	asker := &countingAnswer{}
	tr, err := transport.NewStreamableHTTP(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + connected.Token}))
	if err != nil {
		t.Fatal(err)
	}
	agent := client.NewClient(tr, client.WithElicitationHandler(asker))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if _, err := agent.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20251125,
		ClientInfo: mcp.Implementation{Name: "claude-code", Version: "2"}}}); err != nil {
		t.Fatal(err)
	}
	call := func(c *client.Client, name string, args map[string]any) (string, error) {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
		if err != nil {
			return "", err
		}
		var out []string
		for _, c := range res.Content {
			if tc, ok := c.(mcp.TextContent); ok {
				out = append(out, tc.Text)
			}
		}
		if res.IsError {
			return "", fmt.Errorf("tool error: %s", strings.Join(out, " "))
		}
		return strings.Join(out, " "), nil
	}

	t.Run("the offer", func(t *testing.T) {
		list, err := agent.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range list.Tools {
			names = append(names, tl.Name)
		}
		for _, want := range []string{"everything__echo", "filesystem__read_text_file", "filesystem__write_file"} {
			if !slices.Contains(names, want) {
				t.Errorf("offered %q; want %s among them", names, want)
			}
		}
		// It runs only as an MCP task: Switchboard calls it as one.
		if !slices.Contains(names, "everything__simulate-research-query") {
			t.Errorf("the tool that needs MCP tasks is not offered: %q", names)
		}
	})
	t.Run("read-only calls go through at once", func(t *testing.T) {
		if out, err := call(agent, "filesystem__read_text_file", map[string]any{"path": filepath.Join(root, "notes.txt")}); err != nil || !strings.Contains(out, "first session") {
			t.Errorf("read = %q, %v", out, err)
		}
		if out, err := call(agent, "everything__echo", map[string]any{"message": "hi"}); err != nil || !strings.Contains(out, "hi") {
			t.Errorf("echo = %q, %v", out, err)
		}
		if n := asker.asked.Load(); n != 0 {
			t.Errorf("the person was asked %d times about read-only calls", n)
		}
	})
	t.Run("a destructive call is approved in the agent's client", func(t *testing.T) {
		file := filepath.Join(root, "written.txt")
		if _, err := call(agent, "filesystem__write_file", map[string]any{"path": file, "content": "approved"}); err != nil {
			t.Fatalf("write = %v", err)
		}
		if n := asker.asked.Load(); n != 1 {
			t.Errorf("asked %d times; want once", n)
		}
		if b, err := os.ReadFile(file); err != nil || string(b) != "approved" {
			t.Errorf("written file = %q, %v", b, err)
		}
	})
	t.Run("a stdio-only client through switchboard mcp", func(t *testing.T) {
		stdio, err := bridgeClient(t, d, mcp.ProtocolVersion20251125, []string{"SWITCHBOARD_MCP_TOKEN=" + connected.Token})
		if err != nil {
			t.Fatal(err)
		}
		if out, err := call(stdio, "filesystem__list_directory", map[string]any{"path": root}); err != nil || !strings.Contains(out, "notes.txt") {
			t.Errorf("list through the bridge = %q, %v", out, err)
		}
	})
}
