package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/web"
)

// asker is an agent's client that can ask its person (MCP elicitation):
// answer answers each question, seeing its message.
type asker struct {
	answer func(ctx context.Context, message string) (*mcp.ElicitationResult, error)
	asked  atomic.Int32
	// choices are the answers the last question offered.
	choices atomic.Value // []string
	// withdrawn hears the questions Switchboard withdrew
	// (notifications/cancelled).
	withdrawn chan struct{}
}

func (a *asker) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.asked.Add(1)
	var schema struct {
		Properties struct {
			Answer struct {
				Enum []string `json:"enum"`
			} `json:"answer"`
		} `json:"properties"`
	}
	b, _ := json.Marshal(req.Params.RequestedSchema)
	json.Unmarshal(b, &schema)
	a.choices.Store(schema.Properties.Answer.Enum)
	return a.answer(ctx, req.Params.Message)
}

// answering is an asker's answer: accept with the choice, or the action
// (decline, cancel) without content.
func answering(choice string) func(context.Context, string) (*mcp.ElicitationResult, error) {
	return func(context.Context, string) (*mcp.ElicitationResult, error) {
		switch choice {
		case "decline", "cancel":
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseAction(choice)}}, nil
		}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
			Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"answer": choice}}}, nil
	}
}

// connectAsker connects an agent whose client can ask its person, at
// the protocol version.
func connectAsker(t *testing.T, base, version string, a *asker) *mcpClient {
	t.Helper()
	return connectAskerWith(t, base, testMCPToken, version, a)
}

// connectAskerWith is connectAsker with the MCP token given.
func connectAskerWith(t *testing.T, base, token, version string, a *asker) *mcpClient {
	t.Helper()
	c := connectMCPAs(t, base, token, version, mcp.Implementation{Name: "asking-agent", Version: "1"}, client.WithElicitationHandler(a))
	a.withdrawn = make(chan struct{}, 10)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationCancelled) {
			a.withdrawn <- struct{}{}
		}
	})
	return c
}

// lastCall waits for the call log to hold n calls and returns the newest.
func (e *env) lastCall(n int) apiCall {
	e.t.Helper()
	return e.waitCall(n)
}

// callOutcome is what a call's log entry says of its decision.
type callOutcome struct{ Tool, Decision, DecidedBy, Outcome, Client string }

func outcomeOf(c apiCall) callOutcome {
	return callOutcome{c.Tool, c.Decision, c.DecidedBy, c.Outcome, c.Client}
}

// policyOf is a tool's policy as the store holds it, and who set it.
func (e *env) policyOf(id, tool string) (policy, setBy string) {
	e.t.Helper()
	entry, _, err := e.db.ToolVersions(context.Background(), store.ToolRef{ServerID: id, Tool: tool})
	if err != nil {
		e.t.Fatal(err)
	}
	return string(entry.Policy.Policy), entry.Policy.SetBy
}

// openTab opens a logged-in dashboard tab's live updates and waits until
// the app counts it, so that calls to ask tools have someone to ask.
func (e *env) openTab(b *browser) *sseStream {
	e.t.Helper()
	srv, hc := e.liveServer()
	s := b.openEvents(srv, hc)
	waitFor(e.t, 5*time.Second, "the tab counted", func() bool { return web.HubOf(e.app).Connections() > 0 })
	return s
}

// An ask call is asked in the agent's own client when it can ask its
// person (elicitation), in a session (2025-11-25) and in a 2026-07-28
// client (an input_required result, answered by calling again), with no
// dashboard tab open: Allow once lets it through, Deny and a dismissal
// refuse it. On the endpoint's shared token Always allow is not offered,
// and sent all the same allows the call once (see
// TestInClientAlwaysAllowIsPerClient for a client's own token).
func TestAskInTheAgentsClient(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			m := newMCPSetup(t)
			e := m.e
			a := &asker{}
			c := connectAsker(t, m.base, version, a)
			n := 0
			callWrite := func() (*mcp.CallToolResult, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				n++
				return c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "alpha__write", Arguments: map[string]any{"text": "hi"}}})
			}

			t.Run("allow once", func(t *testing.T) {
				var message string
				a.answer = func(ctx context.Context, msg string) (*mcp.ElicitationResult, error) {
					message = msg
					return answering("allow_once")(ctx, msg)
				}
				res, err := callWrite()
				if err != nil || !strings.HasPrefix(text(res), "write ") {
					t.Fatalf("call answered Allow once = %q, %v; want it through", text(res), err)
				}
				if !strings.Contains(message, "Allow Server alpha to run write with these arguments?") || !strings.Contains(message, `"text": "hi"`) {
					t.Errorf("the question = %q; want the server, the tool and the arguments", message)
				}
				want := callOutcome{Tool: "write", Decision: "approved", DecidedBy: "client", Outcome: "ok", Client: "asking-agent 1"}
				if diff := cmp.Diff(want, outcomeOf(e.lastCall(n))); diff != "" {
					t.Errorf("audited (-want +got):\n%s", diff)
				}
				if p, _ := e.policyOf("alpha", "write"); p != "ask" {
					t.Errorf("policy after Allow once = %s; want ask", p)
				}
			})
			t.Run("deny", func(t *testing.T) {
				for _, choice := range []string{"deny", "decline", "cancel"} {
					a.answer = answering(choice)
					if _, err := callWrite(); err == nil || !strings.Contains(err.Error(), "in the agent's client") {
						t.Errorf("call answered %s = %v; want refused, saying the person answered in their client", choice, err)
					}
					if got := e.lastCall(n); got.Decision != "denied" || got.DecidedBy != "client" || got.Outcome != "refused" {
						t.Errorf("audited %s = %+v; want denied by the client", choice, got)
					}
				}
			})
			t.Run("always allow is not offered on the shared token, and sent anyway allows once", func(t *testing.T) {
				a.answer = answering("always_allow")
				res, err := callWrite()
				if err != nil || !strings.HasPrefix(text(res), "write ") {
					t.Fatalf("call answered Always allow = %q, %v; want it through", text(res), err)
				}
				if got, _ := a.choices.Load().([]string); strings.Join(got, " ") != "allow_once deny" {
					t.Errorf("the question offered %v; want allow_once and deny only", got)
				}
				if got := e.lastCall(n); got.Decision != "approved" || got.DecidedBy != "client" || !strings.HasPrefix(got.Reason, "allowed once") {
					t.Errorf("audited = %+v; want approved by the client, once", got)
				}
				if p, _ := e.policyOf("alpha", "write"); p != "ask" {
					t.Errorf("policy after Always allow in the client = %s; want ask still", p)
				}
				asked := a.asked.Load()
				if res, err := callWrite(); err != nil || !strings.HasPrefix(text(res), "write ") || a.asked.Load() != asked+1 {
					t.Errorf("next call = %q, %v, asked %d more times; want it asked again", text(res), err, a.asked.Load()-asked)
				}
			})
		})
	}
}

// With a dashboard tab open too, the card says the person is asked in
// the agent's client as well, and the first answer wins: a card answered
// first closes the client's question (session) or is what the client's
// next call collects (2026-07-28), whatever the client answers later.
func TestAskFirstAnswerWins(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			m := newMCPSetup(t)
			e := m.e
			b := e.login()
			events := e.openTab(b)
			release := make(chan struct{})
			a := &asker{}
			a.answer = func(ctx context.Context, _ string) (*mcp.ElicitationResult, error) {
				select {
				case <-release: // the person answers in their client after the card was answered
				case <-a.withdrawn: // the question is withdrawn
				}
				return answering("deny")(ctx, "")
			}
			c := connectAsker(t, m.base, version, a)
			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "alpha__write", Arguments: map[string]any{"text": "first"}}})
				if err == nil && !strings.HasPrefix(text(res), "write ") {
					err = &url.Error{Op: "call", Err: context.Canceled}
				}
				done <- err
			}()
			var card sseEvent
			events.until(t, 10*time.Second, "the card, saying the client asks too", func(ev sseEvent) bool {
				card = ev
				return ev.name == "approvals" && strings.Contains(ev.text(), `data-testid="approval-in-client"`)
			})
			id := between(card.text(), `data-approval="`, `"`)
			waitFor(t, 5*time.Second, "the question in the client", func() bool { return a.asked.Load() == 1 })
			wantStatus(t, b.htmx(http.MethodPost, "/approvals/"+id, url.Values{"decision": {"allow_once"}}), http.StatusNoContent)
			if mcp.IsModernProtocol(version) {
				// Its question cannot be withdrawn: the client calls again
				// with its answer, and gets the card's.
				close(release)
			}
			if err := <-done; err != nil {
				t.Fatalf("call approved on the card = %v; want it through", err)
			}
			if got := e.lastCall(1); got.Decision != "approved" || got.DecidedBy != "dashboard" {
				t.Errorf("audited = %+v; want approved on the dashboard", got)
			}
		})
	}
}

// between is the text of s after the first before, up to after.
func between(s, before, after string) string {
	_, rest, _ := strings.Cut(s, before)
	v, _, _ := strings.Cut(rest, after)
	return v
}

// With no dashboard tab open and a client that cannot ask, an ask call
// is refused at once, saying what to do, instead of waiting out the ask
// timeout; Always allow on a card (through the API here) lets the call
// through and sets the policy.
func TestAskNobodyToAsk(t *testing.T) {
	m := newMCPSetup(t, func(c *webConfig) { c.MCP.AskTimeout = time.Minute })
	e := m.e
	c := connectMCP(t, m.base, testMCPToken)
	start := time.Now()
	_, err := c.call("alpha__write", map[string]any{"text": "x"})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "nobody can approve this call now") || !strings.Contains(err.Error(), "Open the Switchboard dashboard") {
		t.Fatalf("call with nobody to ask = %v; want refused, saying what to do", err)
	}
	t.Logf("refused with nobody to ask after %v", took)
	if took > 10*time.Second { // the ask timeout is a minute
		t.Errorf("refused after %v; want at once", took)
	}
	if got := e.lastCall(1); got.Decision != "denied" || got.DecidedBy != "switchboard" {
		t.Errorf("audited = %+v; want denied by switchboard", got)
	}

	// A program that reads the waiting calls through the API may answer
	// there: a call then waits for it.
	answerThroughAPI := func(decision string) error {
		done := make(chan error, 1)
		go func() { _, err := c.call("alpha__write", map[string]any{"text": decision}); done <- err }()
		wantStatus(t, e.api(http.MethodPost, "/api/v1/approvals/"+e.waitApproval(), map[string]any{"decision": decision}), http.StatusOK)
		return <-done
	}
	e.approvals()
	if err := answerThroughAPI("allow_once"); err != nil {
		t.Fatalf("call answered through the API = %v", err)
	}
	if err := answerThroughAPI("always_allow"); err != nil {
		t.Fatalf("call answered Always allow through the API = %v", err)
	}
	if p, by := e.policyOf("alpha", "write"); p != "allow" || by != "api (always allow)" {
		t.Errorf("policy = %s by %q; want allow by api (always allow)", p, by)
	}
}

// waitApproval waits for one call to wait for a person, and returns its
// id as the API lists it.
func (e *env) waitApproval() string {
	e.t.Helper()
	var id string
	waitFor(e.t, 5*time.Second, "a call waiting for a person", func() bool {
		if list := e.approvals(); len(list) == 1 {
			id = list[0].ID
		}
		return id != ""
	})
	return id
}
