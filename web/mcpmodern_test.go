package web_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
)

// A 2026-07-28 client gets what a session-based one gets: the same offer
// (the same bytes, with the revision's caching fields), the same calls,
// refusals, approvals and audit, named by its clientInfo; and it hears of a
// change to the offer on its subscriptions/listen stream.
func TestMCPModernClient(t *testing.T) {
	m := newMCPSetup(t)
	e := m.e
	// The Agents page shows the endpoint's token: that is what it is for.
	e.secrets = slices.DeleteFunc(e.secrets, func(s string) bool { return s == testMCPToken })
	// The stream and the clients are opened here, not in a step, as
	// several steps use them.
	b := e.login()
	srv, hc := e.liveServer()
	events := b.openEvents(srv, hc)
	events.until(t, 5*time.Second, "snapshot", named("approvals"))
	old := mcptest.Connect(t, m.base, testMCPToken)
	c := mcptest.ConnectAs(t, m.base, testMCPToken, mcp.ProtocolVersion20260728, mcptest.ModernAgent)
	if id := c.GetSessionId(); id != "" {
		t.Errorf("the 2026-07-28 client has session %q; want none", id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	if !t.Run("the offer is the same tools, as the same bytes, private and not to be reused", func(t *testing.T) {
		list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatalf("tools/list at 2026-07-28: %v", err)
		}
		if names := c.Names(t); !slices.Equal(names, old.Names(t)) || len(names) != 6 {
			t.Errorf("tools/list at 2026-07-28 = %q; want the 6 tools a session gets, %q", names, old.Names(t))
		}
		if list.TTLMs == nil || *list.TTLMs != 0 || list.CacheScope != mcp.CacheScopePrivate || list.ResultType != mcp.ResultTypeComplete {
			t.Errorf("tools/list result fields: ttlMs %v, cacheScope %q, resultType %q; want 0, private, complete", list.TTLMs, list.CacheScope, list.ResultType)
		}
		modern := mcptest.PostModern(t, m.base, testMCPToken, "tools/list", nil, nil)
		legacy := mcptest.Post(t, m.base, testMCPToken, map[string]string{"Mcp-Session-Id": old.GetSessionId(), "Mcp-Protocol-Version": mcp.ProtocolVersion20251125},
			map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
		if modern.Status != http.StatusOK || legacy.Status != http.StatusOK || !bytes.Equal(modern.Result["tools"], legacy.Result["tools"]) {
			t.Errorf("tools/list: 2026-07-28 answered %d %s, a session %d %s; want the same list, byte for byte",
				modern.Status, truncate(string(modern.Result["tools"])), legacy.Status, truncate(string(legacy.Result["tools"])))
		}
		if got := string(modern.Result["_meta"]); got != `{"io.modelcontextprotocol/serverInfo":{"name":"switchboard","version":"1"}}` {
			t.Errorf("tools/list result _meta = %s; want switchboard's serverInfo", got)
		}
		if _, ok := legacy.Result["ttlMs"]; ok {
			t.Errorf("tools/list of a session = %s; want no 2026-07-28 fields", legacy.Result)
		}
	}) {
		return
	}

	// The steps below count the calls audited and the requests made so
	// far: a failed step ends the scenario.
	if !t.Run("calls are allowed, denied, not offered, and audited as stateless, by name", func(t *testing.T) {
		e := e.in(t)
		res, err := c.Call("alpha__read", map[string]any{"path": "/x"})
		if err != nil || mcptest.Text(res) != `read {"path":"/x"}` {
			t.Fatalf("call alpha__read at 2026-07-28 = %q, %v; want the fixture's echo", mcptest.Text(res), err)
		}
		if call := e.waitCall(1); call.Decision != "allowed" || call.Outcome != "ok" || call.Session != "stateless" || call.Client != "modern-agent 0.2" {
			t.Errorf("audited call = %+v; want allowed, ok, session stateless, client modern-agent 0.2", call)
		}
		if _, err := c.Call("alpha__drop", nil); err == nil || !strings.Contains(err.Error(), "policy is deny") {
			t.Errorf("call of a denied tool at 2026-07-28 = %v; want refused, policy deny", err)
		}
		if call := e.waitCall(2); call.Decision != "denied" || call.Outcome != "refused" || call.Session != "stateless" || call.Client != "modern-agent 0.2" {
			t.Errorf("audited refusal = %+v; want denied, refused, session stateless, client modern-agent 0.2", call)
		}
		if _, err := c.Call("alpha__nope", nil); err == nil || !strings.Contains(err.Error(), `no tool is offered as "alpha__nope"`) {
			t.Errorf("call of a tool not offered at 2026-07-28 = %v; want refused, not offered", err)
		}
		e.waitCall(3)
	}) {
		return
	}
	// A result is Switchboard's answer: its serverInfo at 2026-07-28, none
	// for a session, whatever the upstream server's own answer said.
	if !t.Run("a result carries Switchboard's serverInfo at 2026-07-28 only", func(t *testing.T) {
		e := e.in(t)
		modern := mcptest.PostModern(t, m.base, testMCPToken, "tools/call", map[string]any{"name": "alpha__read", "arguments": map[string]any{}}, nil)
		legacy := mcptest.Post(t, m.base, testMCPToken, map[string]string{"Mcp-Session-Id": old.GetSessionId(), "Mcp-Protocol-Version": mcp.ProtocolVersion20251125},
			map[string]any{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": map[string]any{"name": "alpha__read", "arguments": map[string]any{}}})
		if got := string(modern.Result["_meta"]) + " " + string(modern.Result["resultType"]); got != `{"io.modelcontextprotocol/serverInfo":{"name":"switchboard","version":"1"}} "complete"` {
			t.Errorf("tools/call result at 2026-07-28: _meta and resultType %s; want switchboard's serverInfo, complete", got)
		}
		if legacy.Result["_meta"] != nil || legacy.Result["resultType"] != nil || legacy.Result["content"] == nil {
			t.Errorf("tools/call result of a session = %s; want content without _meta or resultType", legacy.Result)
		}
		e.waitCall(5)
	}) {
		return
	}

	if !t.Run("an ask call waits for a person, whose card names the client", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		done := make(chan error, 1)
		e.approvals() // someone to ask (see TestProfileOffers), before the call
		go func() {
			res, err := c.Call("alpha__write", map[string]any{"text": "hello"})
			if err == nil && !strings.HasPrefix(mcptest.Text(res), "write ") {
				err = fmt.Errorf("result %q", mcptest.Text(res))
			}
			done <- err
		}()
		var approval apiApproval
		waitFor(t, 5*time.Second, "the approval waiting", func() bool {
			if approvals := e.approvals(); len(approvals) == 1 {
				approval = approvals[0]
			}
			return approval.ID != ""
		})
		if approval.Session != "stateless" || approval.Client != "modern-agent 0.2" {
			t.Errorf("approval = %+v; want session stateless, client modern-agent 0.2", approval)
		}
		seen := events.until(t, 5*time.Second, "the card pushed", func(ev sseEvent) bool {
			return ev.name == "approvals" && strings.Contains(ev.text(), `data-testid="approval-card"`)
		})
		card := mustOne(t, parseFragment(t, seen[len(seen)-1].text()), testID("approval-card"))
		if got := squash(textOf(card)); !strings.Contains(got, "no session (MCP 2026-07-28) · modern-agent 0.2") {
			t.Errorf("approval card = %q; want it to say the client has no session, and its name", got)
		}
		wantStatus(t, b.htmx(http.MethodPost, "/approvals/"+approval.ID, url.Values{"decision": {"approve"}}), http.StatusNoContent)
		if err := <-done; err != nil {
			t.Errorf("call approved in the dashboard = %v; want it through", err)
		}
		if call := e.waitCall(6); call.Decision != "approved" || call.DecidedBy != "dashboard" || call.Session != "stateless" {
			t.Errorf("audited approved call = %+v; want approved by the dashboard, session stateless", call)
		}
	}) {
		return
	}

	if !t.Run("the Agents page lists it by name apart from the sessions", func(t *testing.T) {
		b := b.in(t)
		doc := parseHTML(t, b.get("/agents").Body.String())
		agents := doc.Find(testID("stateless-agent"))
		if agents.Length() != 1 || !strings.HasPrefix(squash(textOf(agents)), "modern-agent 0.2 · 9 requests · last ") || strings.Contains(textOf(agents), "listening") {
			t.Fatalf("stateless agents on the Agents page = %d, %q; want modern-agent 0.2 after 9 requests, not listening", agents.Length(), textOf(agents))
		}
		if sessions := testIDText(t, doc, "agent-sessions"); !strings.Contains(sessions, "test-agent 0.1") {
			t.Errorf("connected agents = %q; want the session of test-agent 0.1 too", sessions)
		}
	}) {
		return
	}

	if !t.Run("a policy change is heard on the listen stream and in the session", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		stop, err := c.ListenAsync(context.Background(), mcp.SubscriptionFilter{ToolsListChanged: true}, func(err error) { t.Errorf("listen: %v", err) })
		if err != nil {
			t.Fatal(err)
		}
		// stop waits for the stream's goroutine, so that its error is
		// reported within this step even when the step fails before it
		// stops the stream itself.
		defer stop()
		waitFor(t, 5*time.Second, "the listen stream acknowledged", func() bool { return c.Acknowledged.Load() == 1 })
		if got := testIDText(t, parseHTML(t, b.get("/agents").Body.String()), "stateless-agent"); !strings.Contains(got, "listening for changes") {
			t.Errorf("stateless agent while listening = %q; want it listening for changes", got)
		}
		heard, sessionHeard := c.ListChanged.Load(), old.ListChanged.Load()
		e.setPolicy("alpha", "read", "deny")
		waitFor(t, 5*time.Second, "tools/list_changed on the listen stream", func() bool { return c.ListChanged.Load() > heard })
		waitFor(t, 5*time.Second, "tools/list_changed in the session", func() bool { return old.ListChanged.Load() > sessionHeard })
		if names := c.Names(t); slices.Contains(names, "alpha__read") || len(names) != 5 {
			t.Errorf("tools/list after alpha read was denied = %q; want the 5 others", names)
		}
		stop()
		waitFor(t, 5*time.Second, "the listen stream closed", func() bool {
			return !strings.Contains(testIDText(t, parseHTML(t, b.get("/agents").Body.String()), "stateless-agent"), "listening")
		})
	}) {
		return
	}
	t.Run("a closed listen stream hears nothing more", func(t *testing.T) {
		e := e.in(t)
		heard, sessionHeard := c.ListChanged.Load(), old.ListChanged.Load()
		e.setPolicy("alpha", "read", "allow")
		waitFor(t, 5*time.Second, "tools/list_changed in the session", func() bool { return old.ListChanged.Load() > sessionHeard })
		// The session heard the change: a listen stream still open would have
		// been sent it at the same time. Its absence is given a quiet period.
		time.Sleep(quietPeriod)
		if n := c.ListChanged.Load(); n != heard {
			t.Errorf("%d tools/list_changed after the listen stream closed; want none", n-heard)
		}
	})
}

// squash is s with each run of white space made one space.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
