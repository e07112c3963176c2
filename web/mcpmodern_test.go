package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// modernAgent is the clientInfo of the 2026-07-28 client in these tests.
var modernAgent = mcp.Implementation{Name: "modern-agent", Version: "0.2"}

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
	old := connectMCP(t, m.base, testMCPToken)
	c := connectMCPAs(t, m.base, testMCPToken, mcp.ProtocolVersion20260728, modernAgent)
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
		if names := c.names(t); !slices.Equal(names, old.names(t)) || len(names) != 6 {
			t.Errorf("tools/list at 2026-07-28 = %q; want the 6 tools a session gets, %q", names, old.names(t))
		}
		if list.TTLMs == nil || *list.TTLMs != 0 || list.CacheScope != mcp.CacheScopePrivate || list.ResultType != mcp.ResultTypeComplete {
			t.Errorf("tools/list result fields: ttlMs %v, cacheScope %q, resultType %q; want 0, private, complete", list.TTLMs, list.CacheScope, list.ResultType)
		}
		modern := postModern(t, m.base, "tools/list", nil, nil)
		legacy := postMCP(t, m.base, map[string]string{"Mcp-Session-Id": old.GetSessionId(), "Mcp-Protocol-Version": mcp.ProtocolVersion20251125},
			map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
		if modern.status != http.StatusOK || legacy.status != http.StatusOK || !bytes.Equal(modern.result["tools"], legacy.result["tools"]) {
			t.Errorf("tools/list: 2026-07-28 answered %d %s, a session %d %s; want the same list, byte for byte",
				modern.status, truncate(string(modern.result["tools"])), legacy.status, truncate(string(legacy.result["tools"])))
		}
		if got := string(modern.result["_meta"]); got != `{"io.modelcontextprotocol/serverInfo":{"name":"switchboard","version":"1"}}` {
			t.Errorf("tools/list result _meta = %s; want switchboard's serverInfo", got)
		}
		if _, ok := legacy.result["ttlMs"]; ok {
			t.Errorf("tools/list of a session = %s; want no 2026-07-28 fields", legacy.result)
		}
	}) {
		return
	}

	// The steps below count the calls audited and the requests made so
	// far: a failed step ends the scenario.
	if !t.Run("calls are allowed, denied, not offered, and audited as stateless, by name", func(t *testing.T) {
		e := e.in(t)
		res, err := c.call("alpha__read", map[string]any{"path": "/x"})
		if err != nil || text(res) != `read {"path":"/x"}` {
			t.Fatalf("call alpha__read at 2026-07-28 = %q, %v; want the fixture's echo", text(res), err)
		}
		if call := e.waitCall(1); call.Decision != "allowed" || call.Outcome != "ok" || call.Session != "stateless" || call.Client != "modern-agent 0.2" {
			t.Errorf("audited call = %+v; want allowed, ok, session stateless, client modern-agent 0.2", call)
		}
		if _, err := c.call("alpha__drop", nil); err == nil || !strings.Contains(err.Error(), "policy is deny") {
			t.Errorf("call of a denied tool at 2026-07-28 = %v; want refused, policy deny", err)
		}
		if call := e.waitCall(2); call.Decision != "denied" || call.Outcome != "refused" || call.Session != "stateless" || call.Client != "modern-agent 0.2" {
			t.Errorf("audited refusal = %+v; want denied, refused, session stateless, client modern-agent 0.2", call)
		}
		if _, err := c.call("alpha__nope", nil); err == nil || !strings.Contains(err.Error(), `no tool is offered as "alpha__nope"`) {
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
		modern := postModern(t, m.base, "tools/call", map[string]any{"name": "alpha__read", "arguments": map[string]any{}}, nil)
		legacy := postMCP(t, m.base, map[string]string{"Mcp-Session-Id": old.GetSessionId(), "Mcp-Protocol-Version": mcp.ProtocolVersion20251125},
			map[string]any{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": map[string]any{"name": "alpha__read", "arguments": map[string]any{}}})
		if got := string(modern.result["_meta"]) + " " + string(modern.result["resultType"]); got != `{"io.modelcontextprotocol/serverInfo":{"name":"switchboard","version":"1"}} "complete"` {
			t.Errorf("tools/call result at 2026-07-28: _meta and resultType %s; want switchboard's serverInfo, complete", got)
		}
		if legacy.result["_meta"] != nil || legacy.result["resultType"] != nil || legacy.result["content"] == nil {
			t.Errorf("tools/call result of a session = %s; want content without _meta or resultType", legacy.result)
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
			res, err := c.call("alpha__write", map[string]any{"text": "hello"})
			if err == nil && !strings.HasPrefix(text(res), "write ") {
				err = fmt.Errorf("result %q", text(res))
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
		waitFor(t, 5*time.Second, "the listen stream acknowledged", func() bool { return c.acknowledged.Load() == 1 })
		if got := testIDText(t, parseHTML(t, b.get("/agents").Body.String()), "stateless-agent"); !strings.Contains(got, "listening for changes") {
			t.Errorf("stateless agent while listening = %q; want it listening for changes", got)
		}
		heard, sessionHeard := c.listChanged.Load(), old.listChanged.Load()
		e.setPolicy("alpha", "read", "deny")
		waitFor(t, 5*time.Second, "tools/list_changed on the listen stream", func() bool { return c.listChanged.Load() > heard })
		waitFor(t, 5*time.Second, "tools/list_changed in the session", func() bool { return old.listChanged.Load() > sessionHeard })
		if names := c.names(t); slices.Contains(names, "alpha__read") || len(names) != 5 {
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
		heard, sessionHeard := c.listChanged.Load(), old.listChanged.Load()
		e.setPolicy("alpha", "read", "allow")
		waitFor(t, 5*time.Second, "tools/list_changed in the session", func() bool { return old.listChanged.Load() > sessionHeard })
		// The session heard the change: a listen stream still open would have
		// been sent it at the same time. Its absence is given a quiet period.
		time.Sleep(quietPeriod)
		if n := c.listChanged.Load(); n != heard {
			t.Errorf("%d tools/list_changed after the listen stream closed; want none", n-heard)
		}
	})
}

// squash is s with each run of white space made one space.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// mcpAnswer is an answer of /mcp: its status, and its result or error.
type mcpAnswer struct {
	status int
	id     json.RawMessage
	result map[string]json.RawMessage
	error  *struct {
		Code int             `json:"code"`
		Data json.RawMessage `json:"data"`
	}
}

// postMCP posts a JSON-RPC message to /mcp with the token and headers.
func postMCP(t *testing.T, base string, header map[string]string, msg any) mcpAnswer {
	t.Helper()
	body, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.NewRequest(http.MethodPost, base+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+testMCPToken)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		r.Header.Set(k, v)
	}
	// No connection is kept: none is left open when the tests end.
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(r)
	if err != nil {
		t.Fatalf("POST /mcp %s: %v", body, err)
	}
	defer resp.Body.Close()
	var data bytes.Buffer
	data.ReadFrom(resp.Body)
	a := mcpAnswer{status: resp.StatusCode}
	var envelope struct {
		ID     json.RawMessage            `json:"id"`
		Result map[string]json.RawMessage `json:"result"`
		Error  *struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data.Bytes(), &envelope); err != nil {
		t.Fatalf("POST /mcp %s = %d %q: %v", body, resp.StatusCode, truncate(data.String()), err)
	}
	a.id, a.result, a.error = envelope.ID, envelope.Result, envelope.Error
	return a
}

// modernRequest is a well-formed 2026-07-28 request and its headers; the
// tests break one part of it at a time.
func modernRequest(method string, params map[string]any) (map[string]string, map[string]any) {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: map[string]any{},
		mcp.MetaKeyClientInfo:         modernAgent,
	}
	header := map[string]string{"Mcp-Protocol-Version": mcp.ProtocolVersion20260728, "Mcp-Method": method}
	if name, ok := params["name"].(string); ok {
		header["Mcp-Name"] = name
	}
	return header, map[string]any{"jsonrpc": "2.0", "id": 41, "method": method, "params": params}
}

// postModern posts a well-formed 2026-07-28 request, changed by edit if
// it is not nil.
func postModern(t *testing.T, base, method string, params map[string]any, edit func(header map[string]string, msg map[string]any)) mcpAnswer {
	t.Helper()
	header, msg := modernRequest(method, params)
	if edit != nil {
		edit(header, msg)
	}
	return postMCP(t, base, header, msg)
}
