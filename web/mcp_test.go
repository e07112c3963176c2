package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/proctest"
)

// mcpClient connects a real MCP client to the app's /mcp, listening for
// server notifications, and counts tools/list_changed.
type mcpClient struct {
	*client.Client
	listChanged atomic.Int32
	// acknowledged counts the subscriptions/listen streams the server
	// acknowledged (2026-07-28).
	acknowledged atomic.Int32
}

// connectMCP connects as a session-based client (2025-11-25) with its
// stream for server notifications open.
func connectMCP(t testing.TB, base, token string) *mcpClient {
	t.Helper()
	return connectMCPAs(t, base, token, mcp.ProtocolVersion20251125, mcp.Implementation{Name: "test-agent", Version: "0.1"})
}

// connectMCPAs connects a client of the protocol version: session-based
// with its notification stream open before 2026-07-28; from it
// stateless, discovering the server, and hearing notifications only on a
// subscriptions/listen stream it opens (Listen).
func connectMCPAs(t testing.TB, base, token, version string, info mcp.Implementation, copts ...client.ClientOption) *mcpClient {
	t.Helper()
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token})}
	if !mcp.IsModernProtocol(version) {
		//lint:ignore SA1019 an agent of 2025-11-25 or earlier hears notifications on the GET stream
		opts = append(opts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(base+"/mcp", opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, copts...)
	mc := &mcpClient{Client: c}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case string(mcp.MethodNotificationToolsListChanged):
			mc.listChanged.Add(1)
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			mc.acknowledged.Add(1)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: version, ClientInfo: info}})
	if err != nil {
		t.Fatalf("initialize at %s: %v", version, err)
	}
	if res.ServerInfo.Name != "switchboard" || res.Capabilities.Tools == nil || !res.Capabilities.Tools.ListChanged {
		t.Fatalf("initialize = %+v; want switchboard with tools.listChanged", res)
	}
	if got := c.ProtocolVersion(); got != version {
		t.Fatalf("the client speaks %s to /mcp; want %s", got, version)
	}
	return mc
}

func (c *mcpClient) names(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

func (c *mcpClient) call(name string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
}

func text(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	tc, _ := res.Content[0].(mcp.TextContent)
	return tc.Text
}

func (e *env) calls() []apiCall {
	e.t.Helper()
	rec := e.api(http.MethodGet, "/api/v1/calls", nil)
	wantStatus(e.t, rec, http.StatusOK)
	return decodeAs[callsAnswer](e.t, rec).Calls
}

// approvals are the calls waiting for a person.
func (e *env) approvals() []apiApproval {
	e.t.Helper()
	rec := e.api(http.MethodGet, "/api/v1/approvals", nil)
	wantStatus(e.t, rec, http.StatusOK)
	return decodeAs[approvalsAnswer](e.t, rec).Approvals
}

// waitCall waits for the audit log to hold n calls and returns the newest.
func (e *env) waitCall(n int) apiCall {
	e.t.Helper()
	return e.waitCalls(n)[0]
}

// waitCalls waits for the audit log to hold n calls and returns them,
// newest first.
func (e *env) waitCalls(n int) []apiCall {
	e.t.Helper()
	var calls []apiCall
	waitFor(e.t, 5*time.Second, "the calls audited", func() bool { calls = e.calls(); return len(calls) >= n })
	return calls
}

var agentNameSyntax = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// mcpSetup is an app with two fixture servers, verified, their tools
// served from tools files, with policies allow, ask and deny.
type mcpSetup struct {
	e      *env
	base   string
	marker string
	files  map[string]string // server id → tools file
}

func newMCPSetup(t testing.TB, opts ...appOption) *mcpSetup {
	t.Helper()
	opts = append([]appOption{func(c *webConfig) {
		c.MCP.AskTimeout = 3 * time.Second
		c.MCP.Pool = discovery.PoolConfig{Idle: 700 * time.Millisecond}
	}}, opts...)
	e := newEnv(t, opts...)
	srv, _ := e.liveServer()
	m := &mcpSetup{e: e, base: srv.URL, marker: "mcp-marker-" + strings.ReplaceAll(t.Name(), "/", "-"), files: map[string]string{}}
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
		if job := e.verify(id); job.Status != "success" {
			t.Fatalf("verify %s = %v", id, job)
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

// tools/list answers from the catalog: exactly the allow and ask tools,
// with safe, unique, reversible names, as the catalog API names them,
// and without starting any server.
func TestMCPListFromCatalog(t *testing.T) {
	m := newMCPSetup(t)
	e := m.e
	c := connectMCP(t, m.base, testMCPToken)
	t.Run("tools/list is the catalog's allow and ask tools, safely named, nothing started", func(t *testing.T) {
		e := e.in(t)
		names := c.names(t)
		rec := e.api(http.MethodGet, "/api/v1/tools", nil)
		wantStatus(t, rec, http.StatusOK)
		var want []string
		for _, tl := range decodeAs[toolsAnswer](t, rec).Tools {
			if p := tl.EffectivePolicy; p == "allow" || p == "ask" {
				want = append(want, tl.AgentName)
			}
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
		for _, n := range c.names(t) {
			if strings.HasPrefix(n, "gamma__") {
				gamma = append(gamma, n)
			}
		}
		if !slices.Equal(gamma, []string{"gamma__good"}) {
			t.Errorf("gamma's listed tools = %q; want only gamma__good", gamma)
		}
		if rec := e.api(http.MethodGet, "/api/v1/upstreams", nil); !strings.Contains(rec.Body.String(), `"upstreams":[]`) {
			t.Errorf("upstreams after tools/list = %s; want none", rec.Body.String())
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

	t.Run("wrong or missing tokens are refused, the API token too", func(t *testing.T) {
		e := e.in(t)
		for _, tok := range []string{"", "nope", testToken} {
			r := newRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			if tok != "" {
				r.Header.Set("Authorization", "Bearer "+tok)
			}
			r.Header.Set("Content-Type", "application/json")
			if rec := e.serve(r); rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("POST /mcp with token %q = %d; want 401 with WWW-Authenticate", tok, rec.Code)
			}
		}
	})
	t.Run("a refused Host gets a JSON error, as an MCP client expects", func(t *testing.T) {
		e := e.in(t)
		r := newRequest(http.MethodPost, "/mcp", strings.NewReader(`{}`))
		r.Host = "evil.example"
		r.Header.Set("Authorization", "Bearer "+testMCPToken)
		if rec := e.serve(r); rec.Code != http.StatusForbidden || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			t.Errorf("POST /mcp with a foreign Host = %d %s; want 403 in JSON", rec.Code, rec.Header().Get("Content-Type"))
		}
	})
	t.Run("a list without a session is not answered from the offer", func(t *testing.T) {
		e := e.in(t)
		r := newRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
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
	c := connectMCP(t, m.base, testMCPToken)
	// Each step counts the calls audited so far: a failed step ends the
	// scenario.
	if !t.Run("the first call starts the upstream", func(t *testing.T) {
		res, err := c.call("alpha__read", map[string]any{"path": "/x"})
		if err != nil || text(res) != `read {"path":"/x"}` {
			t.Fatalf("call alpha__read = %q, %v; want the fixture's echo", text(res), err)
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
		for _, n := range c.names(t) {
			if strings.HasPrefix(n, "alpha__odd_name-v2_") {
				odd = n
			}
		}
		if res, err := c.call(odd, nil); err != nil || !strings.HasPrefix(text(res), "odd.name-v2 ") {
			t.Errorf("call by the shortened name = %q, %v; want the tool called by its own name", text(res), err)
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
		_, err := c.call("alpha__drop", nil)
		if err == nil || !strings.Contains(err.Error(), "policy is deny") {
			t.Errorf("call of a denied tool = %v; want refused, policy deny", err)
		}
		if call := e.waitCall(3); call.Decision != "denied" || call.Outcome != "refused" {
			t.Errorf("audited denied call = %+v", call)
		}
		if _, err = c.call("alpha__nope", nil); err == nil {
			t.Error("call of an unknown tool succeeded")
		}
	}) {
		return
	}
	if !t.Run("a name that is no agent name is refused without being echoed", func(t *testing.T) {
		e := e.in(t)
		long := strings.Repeat("<x>", 1000)
		if _, err := c.call(long, nil); err == nil || strings.Contains(err.Error(), "<x>") || !strings.Contains(err.Error(), "not the name of a tool") {
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
		if _, err := c.call("switchboard:route", map[string]any{"path": "/x"}); err == nil || !strings.Contains(err.Error(), "not the name of a tool") {
			t.Errorf("call of switchboard:route = %v; want refused, not the name of a tool", err)
		}
		if call := e.waitCall(7); call.AgentName != "switchboard:route…" || call.Decision != "denied" {
			t.Errorf("audited call of the route tool = %+v", call)
		}
		// A tools/list this endpoint does not read (a params member of
		// the wrong type) is mcp-go's to answer, from what it holds.
		a := postMCP(t, m.base, map[string]string{"Mcp-Session-Id": c.GetSessionId()},
			map[string]any{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": map[string]any{"name": 5}})
		var tools []mcp.Tool
		if a.status != http.StatusOK || json.Unmarshal(a.result["tools"], &tools) != nil {
			t.Fatalf("tools/list with a numeric name = %d %s", a.status, a.result)
		}
		for _, tl := range tools {
			if tl.Name != "search_tools" {
				t.Errorf("mcp-go lists %q; want no tool but search_tools (whose handler refuses outside search mode)", tl.Name)
			}
		}
	})
}

// ask: the call waits for a person; approval from the API lets it
// through, a denial from the dashboard refuses it, and no answer denies
// it after the timeout.
func TestMCPAsk(t *testing.T) {
	m := newMCPSetup(t, func(c *webConfig) { c.MCP.AskTimeout = 1500 * time.Millisecond })
	e := m.e
	c := connectMCP(t, m.base, testMCPToken)
	b := e.login()
	e.openTab(b) // someone to ask

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	// ask calls the ask tool in the background and waits, through e
	// (bound to the step), for its approval to be asked.
	ask := func(e *env) (string, chan outcome) {
		t := e.t
		t.Helper()
		e.approvals() // someone to ask (see TestProfileOffers), before the call
		done := make(chan outcome, 1)
		go func() {
			res, err := c.call("alpha__write", map[string]any{"text": "<script>alert(1)</script>"})
			done <- outcome{res, err}
		}()
		var id string
		waitFor(t, 5*time.Second, "the approval waiting", func() bool {
			if approvals := e.approvals(); len(approvals) == 1 {
				id = approvals[0].ID
				if !strings.Contains(approvals[0].Arguments, `"text": "<script>alert(1)</script>"`) {
					t.Errorf("approval arguments = %q", approvals[0].Arguments)
				}
			}
			return id != ""
		})
		return id, done
	}

	// Each step counts the calls audited so far: a failed step ends the
	// scenario.
	if !t.Run("approved from the API, the call goes through", func(t *testing.T) {
		e := e.in(t)
		id, done := ask(e)
		rec := e.api(http.MethodPost, "/api/v1/approvals/"+id, map[string]any{"decision": "approve"})
		wantStatus(t, rec, http.StatusOK)
		if o := <-done; o.err != nil || !strings.HasPrefix(text(o.res), "write ") {
			t.Errorf("approved call = %q, %v; want it through", text(o.res), o.err)
		}
		if call := e.waitCall(1); call.Decision != "approved" || call.DecidedBy != "api" || call.Outcome != "ok" {
			t.Errorf("audited approved call = %+v", call)
		}
		wantStatus(t, e.api(http.MethodPost, "/api/v1/approvals/"+id, map[string]any{"decision": "deny"}), http.StatusNotFound)
	}) {
		return
	}

	if !t.Run("denied in the dashboard, the call is refused", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		id, done := ask(e)
		wantStatus(t, b.htmx(http.MethodPost, "/approvals/"+id, url.Values{"decision": {"deny"}}), http.StatusNoContent)
		if o := <-done; o.err == nil || !strings.Contains(o.err.Error(), "denied the call in the dashboard") {
			t.Errorf("call denied in the dashboard = %v; want a clear refusal", o.err)
		}
		if call := e.waitCall(2); call.Decision != "denied" || call.DecidedBy != "dashboard" {
			t.Errorf("audited dashboard denial = %+v", call)
		}
	}) {
		return
	}

	// A person who denies the tool while a call waits, then approves the
	// card: the call is refused. The last step sends its card a bad
	// decision.
	var decided string
	if !t.Run("a tool denied while its call waits refuses the call approved after", func(t *testing.T) {
		e := e.in(t)
		id, done := ask(e)
		decided = id
		e.setPolicy("alpha", "write", "deny")
		wantStatus(t, e.api(http.MethodPost, "/api/v1/approvals/"+id, map[string]any{"decision": "approve"}), http.StatusOK)
		if o := <-done; o.err == nil || !strings.Contains(o.err.Error(), "while the call waited: the tool's policy is deny") {
			t.Errorf("call approved after its tool was denied = %v; want refused", o.err)
		}
		e.setPolicy("alpha", "write", "ask")
		e.waitCall(3)
	}) {
		return
	}

	t.Run("unanswered, the call is denied after the timeout", func(t *testing.T) {
		e := e.in(t)
		_, done := ask(e)
		if o := <-done; o.err == nil || !strings.Contains(o.err.Error(), "nobody approved the call within 1.5s") {
			t.Errorf("unanswered call = %v; want denied after the timeout", o.err)
		}
		if call := e.waitCall(4); call.DecidedBy != "timeout" {
			t.Errorf("audited timeout = %+v", call)
		}
		wantStatus(t, e.api(http.MethodPost, "/api/v1/approvals/"+decided, map[string]any{"decision": "maybe"}), http.StatusUnprocessableEntity)
	})
}

// The card shows on every tab over SSE, arguments escaped.
func TestMCPAskCardLive(t *testing.T) {
	m := newMCPSetup(t)
	e := m.e
	srv, hc := e.liveServer()
	b := e.login()
	s := b.openEvents(srv, hc)
	s.until(t, 5*time.Second, "snapshot", named("approvals"))
	c := connectMCP(t, m.base, testMCPToken)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.call("alpha__write", map[string]any{"html": "<img src=x onerror=alert(1)>"})
	}()
	seen := s.until(t, 5*time.Second, "card pushed", func(ev sseEvent) bool {
		return ev.name == "approvals" && strings.Contains(ev.text(), `data-testid="approval-card"`)
	})
	card := seen[len(seen)-1].text()
	if strings.Contains(card, "<img") || !strings.Contains(card, "&lt;img src=x onerror=alert(1)&gt;") || !strings.Contains(card, "alpha__write") {
		t.Errorf("card = %s; want the tool and the escaped arguments", truncate(card))
	}
	approvals := e.approvals()
	if len(approvals) != 1 {
		t.Fatalf("approvals = %+v; want the waiting call", approvals)
	}
	wantStatus(t, e.api(http.MethodPost, "/api/v1/approvals/"+approvals[0].ID, map[string]any{"decision": "approve"}), http.StatusOK)
	s.until(t, 5*time.Second, "card gone", func(ev sseEvent) bool {
		return ev.name == "approvals" && !strings.Contains(ev.text(), "approval-card")
	})
	wg.Wait()
}

// Agents hear tools/list_changed when the catalog changes (a policy
// edit), and then list the new catalog.
func TestMCPListChanged(t *testing.T) {
	m := newMCPSetup(t)
	e := m.e
	c := connectMCP(t, m.base, testMCPToken)
	if !t.Run("a policy edit sends list_changed and unlists the tool", func(t *testing.T) {
		e := e.in(t)
		before := c.names(t)
		// The client opens its GET stream for notifications in the
		// background, and the server shows no sign of a session's stream.
		time.Sleep(quietPeriod)
		e.setPolicy("alpha", "read", "deny")
		waitFor(t, 5*time.Second, "tools/list_changed", func() bool { return c.listChanged.Load() >= 1 })
		after := c.names(t)
		if slices.Contains(after, "alpha__read") || len(after) != len(before)-1 {
			t.Errorf("names after denying alpha read = %q; want %q without alpha__read", after, before)
		}
	}) {
		return
	}
	if !t.Run("a verification that finds a tool gone sends list_changed and unlists it", func(t *testing.T) {
		e := e.in(t)
		n := c.listChanged.Load()
		writeTools(t, m.files["beta"], "1", "secret")
		if job := e.verify("beta"); job.Status != "success" {
			t.Fatal(job)
		}
		waitFor(t, 5*time.Second, "tools/list_changed after a verification", func() bool { return c.listChanged.Load() > n })
		if names := c.names(t); slices.Contains(names, "beta__read") {
			t.Errorf("names after beta read went missing = %q", names)
		}
	}) {
		return
	}
	t.Run("a change that leaves the offer as it was sends nothing", func(t *testing.T) {
		e := e.in(t)
		n := c.listChanged.Load()
		e.setPolicy("alpha", "write", "ask") // no change to the offer
		// A notification not sent marks no moment (and the endpoint merges a
		// pending rebuild with the next change's, so a later change cannot
		// tell): give it the time one takes.
		time.Sleep(quietPeriod)
		if c.listChanged.Load() != n {
			t.Errorf("list_changed sent for a change that left the offer as it was")
		}
	})
}

// A server that changes a tool on its second start is caught when the
// call's session connects: the call is refused, never made, and the
// server is re-verified so the change waits for review.
func TestMCPPinMismatchOnRestart(t *testing.T) {
	e := newEnv(t, func(c *webConfig) { c.MCP.Pool = discovery.PoolConfig{Idle: time.Minute} })
	srv, _ := e.liveServer()
	state := filepath.Join(t.TempDir(), "runs")
	e.createServer(map[string]any{"id": "rug", "name": "Rug", "transport": "stdio", "command": fixtureBin,
		"args": []string{"-tools", "3", "-mode", "change-on-second-run", "-state-file", state}, "default_policy": "allow",
		"cwd": filepath.Dir(state)}) // where its walls let it write its state
	if job := e.verify("rug"); job.Status != "success" {
		t.Fatal(job)
	}
	e.setPolicy("rug", "tool_000", "allow")
	c := connectMCP(t, srv.URL, testMCPToken)
	_, err := c.call("rug__tool_000", nil)
	if err == nil || !strings.Contains(err.Error(), "not the approved one") {
		t.Fatalf("call of a tool changed on the second start = %v; want refused by the pin check", err)
	}
	if call := e.waitCall(1); call.DecidedBy != "pin check" || call.Decision != "denied" {
		t.Errorf("audited = %+v", call)
	}
	waitFor(t, 10*time.Second, "the re-verification marks it changed", func() bool {
		rec := e.api(http.MethodGet, "/api/v1/servers/rug/tools/tool_000", nil)
		return strings.Contains(rec.Body.String(), `"state":"changed"`)
	})
	if names := c.names(t); slices.Contains(names, "rug__tool_000") {
		t.Errorf("the changed tool is still offered: %q", names)
	}
}

// Try it calls the tool through the same path, approved by the person
// who pressed the button, and shows the result; a denied tool is
// refused; bad input keeps what was typed.
func TestTryIt(t *testing.T) {
	m := newMCPSetup(t)
	e := m.e
	b := e.login()
	page := b.get("/tools/alpha__write")
	wantStatus(t, page, http.StatusOK)
	doc := parseHTML(t, page.Body.String())
	mustOne(t, doc, testID("try-form"))
	rec := b.post("/tools/alpha__write/try", url.Values{})
	wantStatus(t, rec, http.StatusOK)
	out := testIDText(t, parseHTML(t, rec.Body.String()), "try-output")
	if !strings.Contains(out, `write {}`) {
		t.Errorf("Try it output = %q; want the fixture's echo", out)
	}
	if call := e.waitCall(1); call.Decision != "approved" || call.DecidedBy != "dashboard" || call.Session != "dashboard" {
		t.Errorf("audited Try it call = %+v", call)
	}
	rec = b.post("/tools/alpha__drop/try", url.Values{})
	if out := testIDText(t, parseHTML(t, rec.Body.String()), "try-output"); !strings.Contains(out, "policy is deny") {
		t.Errorf("Try it of a denied tool = %q; want refused", out)
	}
	wantStatus(t, b.get("/tools/alpha__nope"), http.StatusNotFound)
}

// The Agents page shows the endpoint and its token; rotating it refuses
// the old one.
func TestAgentsPageAndTokenRotation(t *testing.T) {
	e := newEnv(t, func(c *webConfig) { c.MCP.Token = "" })
	srv, _ := e.liveServer()
	b := e.login()
	rec := b.get("/agents")
	wantStatus(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	token := testIDText(t, doc, "mcp-token")
	if !strings.HasPrefix(token, "sbmcp_") || !strings.HasSuffix(testIDText(t, doc, "mcp-url"), "/mcp") {
		t.Fatalf("agents page token %q, url %q", token, testIDText(t, doc, "mcp-url"))
	}
	e.secrets = append(e.secrets, token)
	connectMCP(t, srv.URL, token)
	wantStatus(t, b.post("/agents/token", url.Values{}), http.StatusSeeOther)
	e.secrets = e.secrets[:len(e.secrets)-1]
	rotated := testIDText(t, parseHTML(t, b.get("/agents").Body.String()), "mcp-token")
	if rotated == token || rotated == "" {
		t.Errorf("token after rotation = %q; want a new one", rotated)
	}
	r := newRequest(http.MethodPost, "/mcp", strings.NewReader(`{}`))
	r.Header.Set("Authorization", "Bearer "+token)
	if rec := e.serve(r); rec.Code != http.StatusUnauthorized {
		t.Errorf("the old token after rotation = %d; want 401", rec.Code)
	}
}
