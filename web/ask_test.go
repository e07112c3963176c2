package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/web"
)

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
			a := &mcptest.Asker{}
			a.Answer = func(ctx context.Context, _ string) (*mcp.ElicitationResult, error) {
				select {
				case <-release: // the person answers in their client after the card was answered
				case <-a.Withdrawn: // the question is withdrawn
				}
				return mcptest.Answering("deny")(ctx, "")
			}
			c := mcptest.ConnectAsker(t, m.base, testMCPToken, version, a)
			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "alpha__write", Arguments: map[string]any{"text": "first"}}})
				if err == nil && !strings.HasPrefix(mcptest.Text(res), "write ") {
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
			waitFor(t, 5*time.Second, "the question in the client", func() bool { return a.Asked.Load() == 1 })
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
