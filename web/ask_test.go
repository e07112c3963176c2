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
