package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// asMainEnv makes the test binary run as switchboard itself (see
// TestMain): a real stdio client spawns it as `switchboard mcp`.
const asMainEnv = "SWITCHBOARD_TEST_AS_MAIN"

// liveDashboard is a running `switchboard serve` with one verified fixture
// server whose tools are allow (read), ask (write) and deny (drop).
type liveDashboard struct {
	base, token, db string
}

func startLiveDashboard(t *testing.T) liveDashboard {
	t.Helper()
	d := liveDashboard{token: strings.Repeat("a", 64), db: filepath.Join(t.TempDir(), "sb.db")}
	base, _, stop := startServe(t, map[string]string{"SWITCHBOARD_DB": d.db, "SWITCHBOARD_TOKEN": d.token})
	t.Cleanup(func() { stop() })
	d.base = base
	d.addFixture(t)
	return d
}

// addFixture registers fx and verifies it, with tools allow (read), ask
// (write) and deny (drop).
func (d liveDashboard) addFixture(t *testing.T) {
	t.Helper()
	tools := filepath.Join(t.TempDir(), "tools.json")
	var list []map[string]any
	for _, n := range []string{"read", "write", "drop"} {
		list = append(list, map[string]any{"name": n, "inputSchema": map[string]any{"type": "object"}})
	}
	data, _ := json.Marshal(map[string]any{"version": "1", "tools": list})
	if err := os.WriteFile(tools, data, 0o600); err != nil {
		t.Fatal(err)
	}
	d.api(t, http.MethodPost, "/api/v1/servers", map[string]any{"id": "fx", "transport": "stdio", "command": fixture,
		"args": []string{"-tools-file", tools}, "default_policy": "allow"}, http.StatusCreated)
	d.verified(t, "fx")
	for tool, policy := range map[string]string{"read": "allow", "write": "ask", "drop": "deny"} {
		d.api(t, http.MethodPut, "/api/v1/servers/fx/tools/"+tool+"/policy", map[string]any{"policy": policy}, http.StatusOK)
	}
}

// verified confirms the server's launch, verifies it, and waits for its
// success.
func (d liveDashboard) verified(t *testing.T, id string) {
	t.Helper()
	d.api(t, http.MethodPost, "/api/v1/servers/"+id+"/verify", map[string]any{"confirm": true}, http.StatusAccepted)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var body struct {
			Discovery struct {
				Status string `json:"status"`
			} `json:"discovery"`
		}
		json.Unmarshal(d.api(t, http.MethodGet, "/api/v1/servers/"+id, nil, http.StatusOK), &body)
		if body.Discovery.Status == "success" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not verified: %+v", id, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// When the dashboard restarts under a running switchboard mcp, the
// session the client opened is gone: the bridge starts it again by
// itself, and the client's next call goes through.
func TestMCPBridgeOutlivesARestart(t *testing.T) {
	d := liveDashboard{token: strings.Repeat("c", 64), db: filepath.Join(t.TempDir(), "sb.db")}
	vars := map[string]string{"SWITCHBOARD_DB": d.db, "SWITCHBOARD_TOKEN": d.token}
	base, _, stop := startServe(t, vars)
	d.base = base
	d.addFixture(t)
	c, err := bridgeClient(t, d, mcp.ProtocolVersion20251125, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fx__read"}})
		return err
	}
	if err := call(); err != nil {
		t.Fatalf("call before the restart: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	base2, _, stop2 := startServeAt(t, strings.TrimPrefix(base, "http://"), vars)
	t.Cleanup(func() { stop2() })
	if base2 != base {
		t.Fatalf("restarted at %s; want %s", base2, base)
	}
	if err := call(); err != nil {
		t.Errorf("call after the restart: %v; want the bridge to start the session again", err)
	}
}

func (d liveDashboard) api(t *testing.T, method, path string, body any, want int) []byte {
	t.Helper()
	var r *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	} else {
		r = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, d.base+path, r)
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s = %d %s; want %d", method, path, resp.StatusCode, buf.String(), want)
	}
	return buf.Bytes()
}

// bridgeClient spawns `switchboard mcp` for the liveDashboard, with env, and
// connects a stdio client to it at the protocol version.
func bridgeClient(t *testing.T, d liveDashboard, version string, env []string, opts ...client.ClientOption) (*client.Client, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(d.base, "http://")
	env = append([]string{asMainEnv + "=1", "SWITCHBOARD_MCP_TOKEN="}, env...)
	c := client.NewClient(transport.NewStdioWithOptions(self, env, []string{"mcp", "-addr", addr, "-db", d.db}), opts...)
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: version,
		ClientInfo: mcp.Implementation{Name: "stdio-agent", Version: "1"}}})
	return c, err
}

// answer is an elicitation handler giving one answer.
type answer string

func (a answer) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"answer": string(a)}}}, nil
}

// A stdio-only client reaches the liveDashboard through `switchboard mcp`,
// which it starts itself, with the token the liveDashboard keeps beside its
// database: it lists and calls the approved tools, is asked about an ask
// tool in its own client (both protocol eras), hears list changes, and a
// wrong token is refused saying what to do.
func TestMCPBridge(t *testing.T) {
	d := startLiveDashboard(t)
	call := func(c *client.Client, name string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: map[string]any{"x": 1}}})
		if err != nil {
			return "", err
		}
		if len(res.Content) == 0 {
			return "", fmt.Errorf("no content: %+v", res)
		}
		tc, _ := res.Content[0].(mcp.TextContent)
		return tc.Text, nil
	}
	names := func(c *client.Client) []string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatalf("tools/list through the bridge: %v", err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		slices.Sort(out)
		return out
	}

	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			c, err := bridgeClient(t, d, version, nil, client.WithElicitationHandler(answer("allow_once")))
			if err != nil {
				t.Fatalf("initialize through the bridge: %v", err)
			}
			if got := c.ProtocolVersion(); got != version {
				t.Errorf("protocol version through the bridge = %s; want %s", got, version)
			}
			if got, want := names(c), []string{"fx__read", "fx__write"}; !slices.Equal(got, want) {
				t.Errorf("tools = %q; want %q", got, want)
			}
			if out, err := call(c, "fx__read"); err != nil || out != `read {"x":1}` {
				t.Errorf("call of an allow tool = %q, %v", out, err)
			}
			if out, err := call(c, "fx__write"); err != nil || out != `write {"x":1}` {
				t.Errorf("call of an ask tool answered Allow once in the client = %q, %v", out, err)
			}
			if _, err := call(c, "fx__drop"); err == nil || !strings.Contains(err.Error(), "no tool is offered") && !strings.Contains(err.Error(), "policy is deny") {
				t.Errorf("call of a deny tool = %v; want refused", err)
			}
		})
	}

	t.Run("list changes", func(t *testing.T) {
		c, err := bridgeClient(t, d, mcp.ProtocolVersion20251125, nil)
		if err != nil {
			t.Fatal(err)
		}
		changed := make(chan struct{}, 10)
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == string(mcp.MethodNotificationToolsListChanged) {
				changed <- struct{}{}
			}
		})
		names(c) // the session is live, its stream open
		deadline := time.After(10 * time.Second)
		for i := 0; ; i++ {
			// Flip a policy until the client hears of it: the session's
			// stream may open just after the first change.
			d.api(t, http.MethodPut, "/api/v1/servers/fx/tools/drop/policy", map[string]any{"policy": []string{"allow", "deny"}[i%2]}, http.StatusOK)
			select {
			case <-changed:
			case <-time.After(300 * time.Millisecond):
				continue
			case <-deadline:
				t.Fatal("no tools/list_changed through the bridge")
			}
			break
		}
	})

	t.Run("wrong token", func(t *testing.T) {
		_, err := bridgeClient(t, d, mcp.ProtocolVersion20251125, []string{"SWITCHBOARD_MCP_TOKEN=" + strings.Repeat("x", 32)})
		if err == nil || !strings.Contains(err.Error(), "refused the MCP token") {
			t.Errorf("initialize with a wrong token = %v; want refused, saying what to do", err)
		}
	})
}

// A message over the bridge's bound is refused with an error the client
// can match to its request, and the next one is read whole.
func TestBridgeReadsBoundedMessages(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"x":"` + strings.Repeat("a", maxBridgeMessage) + `"}}}`
	in := bufio.NewReaderSize(strings.NewReader(big+"\n"+`{"jsonrpc":"2.0","id":8,"method":"ping"}`+"\n"), 64<<10)
	head, err := readMessage(in)
	if !errors.Is(err, errTooLong) || string(leadingID(head)) != "7" {
		t.Fatalf("readMessage of an over-long message = %q…, %v; want errTooLong with its id 7", head[:min(len(head), 40)], err)
	}
	next, err := readMessage(in)
	if err != nil || !strings.Contains(string(next), `"id":8`) {
		t.Fatalf("the next message = %q, %v", next, err)
	}
	if id := leadingID([]byte(`{"jsonrpc":"2.0","id":"abc","method":"x"}`)); string(id) != `"abc"` {
		t.Errorf("leadingID of a string id = %s", id)
	}
}

// An agent's session outlives a restart of the dashboard (issue 37 #5):
// an agent on the official TypeScript SDK, which never opens a new
// session by itself (it took the old 404 "Invalid session ID" for a
// crash), lists and calls on the same session after `switchboard serve`
// stopped and started again on the same database; a session its agent
// ended stays ended, and another token cannot take a kept one over.
func TestAnAgentsSessionSurvivesARestart(t *testing.T) {
	agentJS, _ := filepath.Abs("../../e2e/mcp/restart-agent.mjs")
	if _, err := os.Stat(filepath.Join(filepath.Dir(agentJS), "..", "node_modules", "@modelcontextprotocol", "client", "package.json")); err != nil {
		t.Fatalf("the e2e npm packages are not installed (%v): run `make deps-e2e`", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: %v", err)
	}
	d := liveDashboard{token: strings.Repeat("e", 64), db: filepath.Join(t.TempDir(), "sb.db")}
	vars := map[string]string{"SWITCHBOARD_DB": d.db, "SWITCHBOARD_TOKEN": d.token}
	base, _, stop := startServe(t, vars)
	d.base = base
	d.addFixture(t)
	var list struct {
		Token string `json:"token"`
	}
	json.Unmarshal(d.api(t, http.MethodPost, "/api/v1/clients", map[string]any{"name": "Restart agent"}, http.StatusCreated), &list)
	clientToken := list.Token

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, agentJS, base+"/mcp", clientToken, "fx__read")
	stdin, _ := cmd.StdinPipe()
	stdoutPipe, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdoutPipe)
	type heard struct {
		Session string   `json:"session"`
		Tools   []string `json:"tools"`
		Text    string   `json:"text"`
		IsError bool     `json:"isError"`
		Error   string   `json:"error"`
	}
	next := func() heard {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("restart-agent.mjs printed nothing more: %v\nstderr: %s", lines.Err(), stderr.String())
		}
		var h heard
		if err := json.Unmarshal(lines.Bytes(), &h); err != nil {
			t.Fatalf("restart-agent.mjs printed %q: %v", lines.Text(), err)
		}
		return h
	}
	before := next()
	if before.Session == "" || !slices.Contains(before.Tools, "fx__read") {
		t.Fatalf("before the restart: %+v", before)
	}

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	base2, _, stop2 := startServeAt(t, strings.TrimPrefix(base, "http://"), vars)
	if base2 != base {
		stop2()
		t.Fatalf("restarted at %s; want %s", base2, base)
	}
	// Another client's token does not get the kept session: as if it did
	// not exist.
	var other struct {
		Token string `json:"token"`
	}
	json.Unmarshal(d.api(t, http.MethodPost, "/api/v1/clients", map[string]any{"name": "Other agent"}, http.StatusCreated), &other)
	if got := postOnSession(t, base, other.Token, before.Session); got != http.StatusNotFound {
		t.Errorf("the kept session with another token: %d; want 404", got)
	}

	fmt.Fprintln(stdin)
	after := next()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("restart-agent.mjs: %v\nstderr: %s", err, stderr.String())
	}
	if after.Error != "" || after.IsError || after.Text == "" || !slices.Contains(after.Tools, "fx__read") {
		t.Fatalf("after the restart: %+v; want the same session listing and calling\nstderr: %s", after, stderr.String())
	}
	if after.Session != before.Session {
		t.Errorf("the agent's session changed: %s → %s", before.Session, after.Session)
	}
	// The agent ended its session (a DELETE): it stays ended, after
	// another restart too.
	if got := postOnSession(t, base, clientToken, before.Session); got != http.StatusNotFound {
		t.Errorf("the ended session: %d; want 404", got)
	}
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	_, _, stop3 := startServeAt(t, strings.TrimPrefix(base, "http://"), vars)
	t.Cleanup(func() { stop3() })
	if got := postOnSession(t, base, clientToken, before.Session); got != http.StatusNotFound {
		t.Errorf("the ended session after another restart: %d; want 404", got)
	}
}

// postOnSession is the status /mcp at base answers a tools/list on
// session id with token.
func postOnSession(t *testing.T, base, token, id string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
