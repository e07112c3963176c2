package web_test

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/internal/proctest"
)

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

// A refused Host gets a JSON error at /mcp, as an MCP client expects.
// (What /mcp answers through the gateway is tested in web/gateway.)
func TestMCPRefusedHostIsJSON(t *testing.T) {
	e := newEnv(t)
	r := newRequest(http.MethodPost, "/mcp", strings.NewReader(`{}`))
	r.Host = "evil.example"
	r.Header.Set("Authorization", "Bearer "+testMCPToken)
	if rec := e.serve(r); rec.Code != http.StatusForbidden || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Errorf("POST /mcp with a foreign Host = %d %s; want 403 in JSON", rec.Code, rec.Header().Get("Content-Type"))
	}
}

// ask: the call waits for a person; approval from the API lets it
// through, a denial from the dashboard refuses it, and no answer denies
// it after the timeout.
func TestMCPAsk(t *testing.T) {
	m := newMCPSetup(t, func(c *webConfig) { c.MCP.AskTimeout = 1500 * time.Millisecond })
	e := m.e
	c := mcptest.Connect(t, m.base, testMCPToken)
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
			res, err := c.Call("alpha__write", map[string]any{"text": "<script>alert(1)</script>"})
			done <- outcome{res, mcptest.Refused(res, err)} // a refusal is the tool's error
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
		if o := <-done; o.err != nil || !strings.HasPrefix(mcptest.Text(o.res), "write ") {
			t.Errorf("approved call = %q, %v; want it through", mcptest.Text(o.res), o.err)
		}
		if call := e.waitCall(1); call.Decision != "approved" || call.DecidedBy != "api" || call.Outcome != "ok" {
			t.Errorf("audited approved call = %+v", call)
		}
		// A second answer is told which one counted (issue 38).
		again := e.api(http.MethodPost, "/api/v1/approvals/"+id, map[string]any{"decision": "deny"})
		if again.Code != http.StatusConflict || !strings.Contains(again.Body.String(), "api answered this call first") {
			t.Errorf("a second answer = %d %s; want 409 naming the first", again.Code, again.Body.String())
		}
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
	c := mcptest.Connect(t, m.base, testMCPToken)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.Call("alpha__write", map[string]any{"html": "<img src=x onerror=alert(1)>"})
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
	mcptest.Connect(t, srv.URL, token)
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
