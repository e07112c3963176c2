package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/internal/proctest"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/web/gateway"
)

// mcpSetup is an endpoint with two fixture servers, verified, their
// tools served from tools files, with policies allow, ask and deny.
type mcpSetup struct {
	e      *env
	base   string
	marker string
	files  map[string]string // server id → tools file
}

func newMCPSetup(t testing.TB, opts ...func(*gateway.Config)) *mcpSetup {
	t.Helper()
	opts = append([]func(*gateway.Config){func(c *gateway.Config) {
		c.AskTimeout = 3 * time.Second
		c.Pool = discovery.PoolConfig{Idle: 700 * time.Millisecond}
	}}, opts...)
	e := newEnv(t, opts...)
	m := &mcpSetup{e: e, base: e.base, marker: "mcp-marker-" + strings.ReplaceAll(t.Name(), "/", "-"), files: map[string]string{}}
	long := strings.Repeat("very_long_tool_name_", 4)
	for id, tools := range map[string][]string{
		"alpha": {"read", "write", "drop", long + "a", long + "b", "odd.name-v2"},
		"beta":  {"read", "secret"},
	} {
		file := filepath.Join(t.TempDir(), id+".json")
		writeTools(t, file, "1", tools...)
		m.files[id] = file
		e.createServer(map[string]any{"id": id, "name": "Server " + id, "transport": "stdio", "command": fixtureBin,
			"args": []string{"-tools-file", file, "-name", m.marker}, "default_policy": "allow"})
		if status := e.verify(id); status != "success" {
			t.Fatalf("verify %s = %s", id, status)
		}
	}
	for _, tool := range []string{"read", long + "a", long + "b", "odd.name-v2"} {
		e.setPolicy("alpha", tool, "allow")
	}
	e.setPolicy("beta", "read", "allow")
	e.setPolicy("alpha", "write", "ask")
	e.setPolicy("alpha", "drop", "deny")
	e.setPolicy("beta", "secret", "deny")
	// A verification's process is gone once its job ends, or a moment
	// later on a loaded machine: it must not stay.
	waitFor(t, 5*time.Second, "no fixture process left after the verifications", func() bool { return proctest.Count(m.marker) == 0 })
	return m
}

// agentNameSyntax is what MCP clients take as a tool name.
var agentNameSyntax = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// tools/list answers from the catalog: exactly the allow and ask tools,
// with safe, unique, reversible names, as the catalog API names them,
// and without starting any server.
func TestMCPListFromCatalog(t *testing.T) {
	m := newMCPSetup(t)
	e := m.e
	c := mcptest.Connect(t, m.base, testMCPToken)
	t.Run("tools/list is the catalog's allow and ask tools, safely named, nothing started", func(t *testing.T) {
		e := e.in(t)
		names := c.Names(t)
		var want []string
		if _, err := e.db.Catalog(context.Background(), func(_ *store.Summary, tl store.ToolEntry) error {
			if p := tl.Effective; p == store.PolicyAllow || p == store.PolicyAsk {
				want = append(want, tl.AgentName)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		if !slices.Equal(names, want) || len(names) != 6 {
			t.Errorf("tools/list names = %q; want the 6 allow and ask tools the catalog names %q", names, want)
		}
		for _, n := range names {
			if !agentNameSyntax.MatchString(n) {
				t.Errorf("agent name %q is not safe for clients", n)
			}
			for _, denied := range []string{"alpha__drop", "beta__secret"} {
				if n == denied {
					t.Errorf("denied tool %s listed", n)
				}
			}
		}
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "alpha__odd_name-v2_") }) || !slices.Contains(names, "beta__read") {
			t.Errorf("names %q lack alpha__odd_name-v2_<hash> or beta__read", names)
		}
		if n := proctest.Count(m.marker); n != 0 {
			t.Errorf("%d upstream processes running after tools/list; want none started", n)
		}
	})

	// A tool outside MCP's Tool shape, which would fail an agent's whole
	// list, is invalid and never listed, whatever its policy.
	t.Run("a tool outside MCP's Tool shape is never listed", func(t *testing.T) {
		e := e.in(t)
		file := filepath.Join(t.TempDir(), "gamma.json")
		os.WriteFile(file, []byte(`{"tools":[{"name":"good","inputSchema":{"type":"object"}},
		{"name":"bad","inputSchema":{"type":"string"}}]}`), 0o600)
		e.createServer(map[string]any{"id": "gamma", "name": "Gamma", "transport": "stdio", "command": fixtureBin,
			"args": []string{"-tools-file", file}, "default_policy": "allow"})
		e.verify("gamma")
		for _, tool := range []string{"good", "bad"} {
			e.setPolicy("gamma", tool, "allow")
		}
		var gamma []string
		for _, n := range c.Names(t) {
			if strings.HasPrefix(n, "gamma__") {
				gamma = append(gamma, n)
			}
		}
		if !slices.Equal(gamma, []string{"gamma__good"}) {
			t.Errorf("gamma's listed tools = %q; want only gamma__good", gamma)
		}
		if running := e.ep.Running(); len(running) != 0 {
			t.Errorf("upstreams after tools/list = %+v; want none", running)
		}
	})

	t.Run("the definitions are the stored ones, renamed", func(t *testing.T) {
		ctx := context.Background()
		res, _ := c.ListTools(ctx, mcp.ListToolsRequest{})
		for _, tl := range res.Tools {
			if tl.Name == "alpha__read" && tl.Description != "Tool read." {
				t.Errorf("alpha__read description = %q; want the stored %q", tl.Description, "Tool read.")
			}
		}
	})

	t.Run("wrong or missing tokens are refused, the dashboard's too", func(t *testing.T) {
		e := e.in(t)
		for _, tok := range []string{"", "nope", "test-token"} {
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			if tok != "" {
				r.Header.Set("Authorization", "Bearer "+tok)
			}
			r.Header.Set("Content-Type", "application/json")
			if rec := e.serve(r); rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("POST /mcp with token %q = %d; want 401 with WWW-Authenticate", tok, rec.Code)
			}
		}
	})
	t.Run("a list without a session is not answered from the offer", func(t *testing.T) {
		e := e.in(t)
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		r.Header.Set("Authorization", "Bearer "+testMCPToken)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Session-Id", "sb-forged")
		if rec := e.serve(r); rec.Code == http.StatusOK {
			t.Errorf("tools/list with a forged session = %d %s; want refused", rec.Code, truncate(rec.Body.String()))
		}
	})
}

// A call starts the upstream once, the next reuses it, it stops after
// the idle time; deny is refused; every call is audited.
func TestMCPCallRouting(t *testing.T) {
	m := newMCPSetup(t)
	e := m.e
	c := mcptest.Connect(t, m.base, testMCPToken)
	// Each step counts the calls audited so far: a failed step ends the
	// scenario.
	if !t.Run("the first call starts the upstream", func(t *testing.T) {
		res, err := c.Call("alpha__read", map[string]any{"path": "/x"})
		if err != nil || mcptest.Text(res) != `read {"path":"/x"}` {
			t.Fatalf("call alpha__read = %q, %v; want the fixture's echo", mcptest.Text(res), err)
		}
		if n := proctest.Count(m.marker); n != 1 {
			t.Errorf("%d upstream processes after the first call; want 1", n)
		}
	}) {
		return
	}
	if !t.Run("the next call reuses it, and both are audited", func(t *testing.T) {
		e := e.in(t)
		odd := ""
		for _, n := range c.Names(t) {
			if strings.HasPrefix(n, "alpha__odd_name-v2_") {
				odd = n
			}
		}
		if res, err := c.Call(odd, nil); err != nil || !strings.HasPrefix(mcptest.Text(res), "odd.name-v2 ") {
			t.Errorf("call by the shortened name = %q, %v; want the tool called by its own name", mcptest.Text(res), err)
		}
		if n := proctest.Count(m.marker); n != 1 {
			t.Errorf("%d upstream processes after a second call to the same server; want it reused (1)", n)
		}
		call := e.waitCall(2)
		if call.Decision != "allowed" || call.DecidedBy != "policy" || call.Outcome != "ok" || call.ServerID != "alpha" ||
			call.Tool != "odd.name-v2" || !strings.HasPrefix(call.Session, "sb-") || call.Client != "test-agent 0.1" {
			t.Errorf("audited call = %+v", call)
		}
	}) {
		return
	}
	if !t.Run("the idle upstream stops", func(t *testing.T) {
		waitFor(t, 5*time.Second, "the idle upstream stopped", func() bool { return proctest.Count(m.marker) == 0 })
	}) {
		return
	}

	if !t.Run("a denied or unknown tool is refused, and audited", func(t *testing.T) {
		e := e.in(t)
		_, err := c.Call("alpha__drop", nil)
		if err == nil || !strings.Contains(err.Error(), "policy is deny") {
			t.Errorf("call of a denied tool = %v; want refused, policy deny", err)
		}
		if call := e.waitCall(3); call.Decision != "denied" || call.Outcome != "refused" {
			t.Errorf("audited denied call = %+v", call)
		}
		if _, err = c.Call("alpha__nope", nil); err == nil {
			t.Error("call of an unknown tool succeeded")
		}
	}) {
		return
	}
	if !t.Run("a name that is no agent name is refused without being echoed", func(t *testing.T) {
		e := e.in(t)
		long := strings.Repeat("<x>", 1000)
		if _, err := c.Call(long, nil); err == nil || strings.Contains(err.Error(), "<x>") || !strings.Contains(err.Error(), "not the name of a tool") {
			t.Errorf("call by a long hostile name = %v; want refused, not echoed", err)
		}
		if call := e.waitCall(5); len(call.AgentName) > 80 {
			t.Errorf("audited name is %d bytes; want it cut", len(call.AgentName))
		}
	}) {
		return
	}
	t.Run("a request asking for progress is refused and audited the same way", func(t *testing.T) {
		e := e.in(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "alpha__drop"}}
		req.Params.Meta = &mcp.Meta{ProgressToken: "p1"}
		if _, err := c.CallTool(ctx, req); err == nil || !strings.Contains(err.Error(), "policy is deny") {
			t.Errorf("call of a denied tool with _meta = %v; want refused, policy deny", err)
		}
		if call := e.waitCall(6); call.Tool != "drop" || call.Decision != "denied" {
			t.Errorf("audited call with _meta = %+v", call)
		}
		if n := proctest.Count(m.marker); n != 0 {
			t.Errorf("%d upstream processes after refused calls; want none", n)
		}
	})
	// mcp-go dispatches every call to one route tool (the call path
	// decides what is offered): that tool is plumbing, not a tool.
	t.Run("the route tool called by its name is refused, and mcp-go lists no tool of the offer", func(t *testing.T) {
		e := e.in(t)
		if _, err := c.Call("switchboard:route", map[string]any{"path": "/x"}); err == nil || !strings.Contains(err.Error(), "not the name of a tool") {
			t.Errorf("call of switchboard:route = %v; want refused, not the name of a tool", err)
		}
		if call := e.waitCall(7); call.AgentName != "switchboard:route…" || call.Decision != "denied" {
			t.Errorf("audited call of the route tool = %+v", call)
		}
		// A tools/list this endpoint does not read (a params member of
		// the wrong type) is mcp-go's to answer, from what it holds.
		a := mcptest.Post(t, m.base, testMCPToken, map[string]string{"Mcp-Session-Id": c.GetSessionId()},
			map[string]any{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": map[string]any{"name": 5}})
		var tools []mcp.Tool
		if a.Status != http.StatusOK || json.Unmarshal(a.Result["tools"], &tools) != nil {
			t.Fatalf("tools/list with a numeric name = %d %s", a.Status, a.Result)
		}
		for _, tl := range tools {
			if tl.Name != "search_tools" {
				t.Errorf("mcp-go lists %q; want no tool but search_tools (whose handler refuses outside search mode)", tl.Name)
			}
		}
	})
}

// Agents hear tools/list_changed when the catalog changes (a policy
// edit), and then list the new catalog.
func TestMCPListChanged(t *testing.T) {
	m := newMCPSetup(t)
	e := m.e
	c := mcptest.Connect(t, m.base, testMCPToken)
	if !t.Run("a policy edit sends list_changed and unlists the tool", func(t *testing.T) {
		e := e.in(t)
		before := c.Names(t)
		// The client opens its GET stream for notifications in the
		// background, and the server shows no sign of a session's stream.
		time.Sleep(quietPeriod)
		e.setPolicy("alpha", "read", "deny")
		waitFor(t, 5*time.Second, "tools/list_changed", func() bool { return c.ListChanged.Load() >= 1 })
		after := c.Names(t)
		if slices.Contains(after, "alpha__read") || len(after) != len(before)-1 {
			t.Errorf("names after denying alpha read = %q; want %q without alpha__read", after, before)
		}
	}) {
		return
	}
	if !t.Run("a verification that finds a tool gone sends list_changed and unlists it", func(t *testing.T) {
		e := e.in(t)
		n := c.ListChanged.Load()
		writeTools(t, m.files["beta"], "1", "secret")
		if status := e.verify("beta"); status != "success" {
			t.Fatal(status)
		}
		waitFor(t, 5*time.Second, "tools/list_changed after a verification", func() bool { return c.ListChanged.Load() > n })
		if names := c.Names(t); slices.Contains(names, "beta__read") {
			t.Errorf("names after beta read went missing = %q", names)
		}
	}) {
		return
	}
	t.Run("a change that leaves the offer as it was sends nothing", func(t *testing.T) {
		e := e.in(t)
		n := c.ListChanged.Load()
		e.setPolicy("alpha", "write", "ask") // no change to the offer
		// A notification not sent marks no moment (and the endpoint merges a
		// pending rebuild with the next change's, so a later change cannot
		// tell): give it the time one takes.
		time.Sleep(quietPeriod)
		if c.ListChanged.Load() != n {
			t.Errorf("list_changed sent for a change that left the offer as it was")
		}
	})
}

// A server that changes a tool on its second start is caught when the
// call's session connects: the call is refused, never made, and the
// server is re-verified so the change waits for review.
func TestMCPPinMismatchOnRestart(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.Pool = discovery.PoolConfig{Idle: time.Minute} })
	state := filepath.Join(t.TempDir(), "runs")
	e.createServer(map[string]any{"id": "rug", "name": "Rug", "transport": "stdio", "command": fixtureBin,
		"args": []string{"-tools", "3", "-mode", "change-on-second-run", "-unchanged-runs", "2", "-state-file", state}, "default_policy": "allow",
		"cwd": filepath.Dir(state)}) // where its walls let it write its state
	if status := e.verify("rug"); status != "success" {
		t.Fatal(status)
	}
	e.setPolicy("rug", "tool_000", "allow")
	c := mcptest.Connect(t, e.base, testMCPToken)
	err := mcptest.Refused(c.Call("rug__tool_000", nil))
	if err == nil || !strings.Contains(err.Error(), "not the approved one") {
		t.Fatalf("call of a tool changed on the second start = %v; want refused by the pin check", err)
	}
	if call := e.waitCall(1); call.DecidedBy != "pin check" || call.Decision != "denied" {
		t.Errorf("audited = %+v", call)
	}
	waitFor(t, 10*time.Second, "the re-verification marks it changed", func() bool {
		return e.tools("rug")["tool_000"].State == store.ToolChanged
	})
	if names := c.Names(t); slices.Contains(names, "rug__tool_000") {
		t.Errorf("the changed tool is still offered: %q", names)
	}
}

// A tool that can only run as an MCP task is offered like any other:
// Switchboard calls it as a task and answers with the task's result, for
// agents of both eras; an agent that gives up on the call cancels the
// task on the server (tasks/cancel), whose handler sees it end.
func TestTaskRequiredToolRunsAsATask(t *testing.T) {
	up := startTaskServer(t)
	e := newEnv(t)
	e.createServer(map[string]any{"id": "tasks", "name": "Tasks", "transport": "http", "url": up.url, "default_policy": "allow"})
	if status := e.verify("tasks"); status != "success" {
		t.Fatalf("verify = %s", status)
	}
	tools := e.tools("tasks")
	if research := tools["research"]; research.State != store.ToolActive || len(research.Problems) > 0 {
		t.Fatalf("the task-required tool = %+v; want active", research)
	}
	e.setPolicy("tasks", "research", "allow")
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			c := mcptest.ConnectAs(t, e.base, testMCPToken, version, mcp.Implementation{Name: "tasking-agent", Version: "1"})
			if names := c.Names(t); !slices.Contains(names, "tasks__research") || !slices.Contains(names, "tasks__maybe_task") {
				t.Errorf("offered = %q; want both task tools", names)
			}
			res, err := c.Call("tasks__research", map[string]any{"topic": "tides"})
			if err != nil || mcptest.Text(res) != "researched tides" {
				t.Fatalf("call = %q, %v; want the task's result", mcptest.Text(res), err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "tasks__research", Arguments: map[string]any{"wait": true}}})
				done <- err
			}()
			select {
			case <-up.started:
			case err := <-done:
				t.Fatalf("the call ended before its task started: %v", err)
			}
			cancel()
			if err := <-done; err == nil {
				t.Error("the agent's cancelled call answered; want its cancellation")
			}
			select {
			case <-up.stopped: // by the tasks/cancel the server was sent
			case <-time.After(time.Minute):
				t.Fatal("the task was still running a minute after the agent cancelled its call: no tasks/cancel reached the server")
			}
		})
	}
}
