package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/web/gateway"
)

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
			a := &mcptest.Asker{}
			c := mcptest.ConnectAsker(t, m.base, testMCPToken, version, a)
			n := 0
			callWrite := func() (*mcp.CallToolResult, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				n++
				return c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "alpha__write", Arguments: map[string]any{"text": "hi"}}})
			}

			t.Run("allow once", func(t *testing.T) {
				var message string
				a.Answer = func(ctx context.Context, msg string) (*mcp.ElicitationResult, error) {
					message = msg
					return mcptest.Answering("allow_once")(ctx, msg)
				}
				res, err := callWrite()
				if err != nil || !strings.HasPrefix(mcptest.Text(res), "write ") {
					t.Fatalf("call answered Allow once = %q, %v; want it through", mcptest.Text(res), err)
				}
				if !strings.Contains(message, "Allow Server alpha to run write with these arguments?") || !strings.Contains(message, `"text": "hi"`) {
					t.Errorf("the question = %q; want the server, the tool and the arguments", message)
				}
				want := callOutcome{Tool: "write", Decision: "approved", DecidedBy: "client", Outcome: "ok", Client: "asking-agent 1"}
				if diff := cmp.Diff(want, outcomeOf(e.waitCall(n))); diff != "" {
					t.Errorf("audited (-want +got):\n%s", diff)
				}
				if p, _ := e.policyOf("alpha", "write"); p != "ask" {
					t.Errorf("policy after Allow once = %s; want ask", p)
				}
			})
			t.Run("deny", func(t *testing.T) {
				for _, choice := range []string{"deny", "decline", "cancel"} {
					a.Answer = mcptest.Answering(choice)
					if err := mcptest.Refused(callWrite()); err == nil || !strings.Contains(err.Error(), "in the agent's client") {
						t.Errorf("call answered %s = %v; want refused, saying the person answered in their client", choice, err)
					}
					if got := e.waitCall(n); got.Decision != "denied" || got.DecidedBy != "client" || got.Outcome != "refused" {
						t.Errorf("audited %s = %+v; want denied by the client", choice, got)
					}
				}
			})
			t.Run("always allow is not offered on the shared token, and sent anyway allows once", func(t *testing.T) {
				a.Answer = mcptest.Answering("always_allow")
				res, err := callWrite()
				if err != nil || !strings.HasPrefix(mcptest.Text(res), "write ") {
					t.Fatalf("call answered Always allow = %q, %v; want it through", mcptest.Text(res), err)
				}
				if got, _ := a.Choices.Load().([]string); strings.Join(got, " ") != "allow_once deny" {
					t.Errorf("the question offered %v; want allow_once and deny only", got)
				}
				if got := e.waitCall(n); got.Decision != "approved" || got.DecidedBy != "client" || !strings.HasPrefix(got.Reason, "allowed once") {
					t.Errorf("audited = %+v; want approved by the client, once", got)
				}
				if p, _ := e.policyOf("alpha", "write"); p != "ask" {
					t.Errorf("policy after Always allow in the client = %s; want ask still", p)
				}
				asked := a.Asked.Load()
				if res, err := callWrite(); err != nil || !strings.HasPrefix(mcptest.Text(res), "write ") || a.Asked.Load() != asked+1 {
					t.Errorf("next call = %q, %v, asked %d more times; want it asked again", mcptest.Text(res), err, a.Asked.Load()-asked)
				}
			})
		})
	}
}

// With no dashboard tab open and a client that cannot ask, an ask call
// is refused at once, saying what to do, instead of waiting out the ask
// timeout; Always allow on a card (through the API here) lets the call
// through and sets the policy.
func TestAskNobodyToAsk(t *testing.T) {
	m := newMCPSetup(t, func(c *gateway.Config) { c.AskTimeout = time.Minute })
	e := m.e
	c := mcptest.Connect(t, m.base, testMCPToken)
	start := time.Now()
	err := mcptest.Refused(c.Call("alpha__write", map[string]any{"text": "x"}))
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "nobody can approve this call now") || !strings.Contains(err.Error(), "Open the Switchboard dashboard") {
		t.Fatalf("call with nobody to ask = %v; want refused, saying what to do", err)
	}
	t.Logf("refused with nobody to ask after %v", took)
	if took > 10*time.Second { // the ask timeout is a minute
		t.Errorf("refused after %v; want at once", took)
	}
	if got := e.waitCall(1); got.Decision != "denied" || got.DecidedBy != "switchboard" {
		t.Errorf("audited = %+v; want denied by switchboard", got)
	}

	// A program that reads the waiting calls through the API may answer
	// there: a call then waits for it. (web counts such a reader among
	// the approvers; here the endpoint is told of one.)
	answerThroughAPI := func(decision string) error {
		done := make(chan error, 1)
		go func() { _, err := c.Call("alpha__write", map[string]any{"text": decision}); done <- err }()
		e.decide(e.waitApproval(), decision)
		return <-done
	}
	e.approvers.Store(1)
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

// callOutcome is what a call's log entry says of its decision.
type callOutcome struct{ Tool, Decision, DecidedBy, Outcome, Client string }

func outcomeOf(c store.Call) callOutcome {
	return callOutcome{c.Tool, c.Decision, c.DecidedBy, c.Outcome, c.Client}
}

// A call waiting for a person says so, as progress under the agent's own
// token, to an agent built on the official TypeScript SDK, and goes on
// when the person answers; denied, it is the tool's error result, a
// sentence the model can act on, not a protocol error (which agents take
// for a crash). The ask timeout is below that SDK's default request
// timeout (60 s), so a call nobody answers is denied, with its reason,
// before the agent's client gives up on it.
func TestAWaitingCallSaysSoToTheAgent(t *testing.T) {
	if gateway.DefaultAskTimeout >= time.Minute {
		t.Errorf("DefaultAskTimeout = %s; want it below the 60 s agents' clients commonly give a request", gateway.DefaultAskTimeout)
	}
	needNPM(t, tsClientPkg)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: %v", err)
	}
	m := newMCPSetup(t, func(c *gateway.Config) { c.AskTimeout = time.Minute })
	e := m.e
	e.approvers.Store(1) // a dashboard tab, here the test, answers
	agentJS, _ := filepath.Abs("../../e2e/mcp/waiting-agent.mjs")
	type heard struct {
		Progress []struct {
			Token    string  `json:"token"`
			Progress float64 `json:"progress"`
			Message  string  `json:"message"`
		} `json:"progress"`
		Text    string `json:"text"`
		IsError bool   `json:"isError"`
		Error   string `json:"error"`
	}
	// answered runs the agent's call of alpha__write, which waits for a
	// person: the test, who answers decision.
	answered := func(t *testing.T, decision string) heard {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, agentJS, m.base+"/mcp", testMCPToken, "alpha__write")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		e.decide(e.waitApproval(), decision)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("waiting-agent.mjs: %v\nstdout: %s\nstderr: %s", err, truncate(stdout.String()), truncate(stderr.String()))
		}
		var out heard
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("waiting-agent.mjs printed %q: %v", truncate(stdout.String()), err)
		}
		return out
	}
	t.Run("allowed", func(t *testing.T) {
		out := answered(t, "allow_once")
		if out.Error != "" || out.IsError || out.Text == "" {
			t.Errorf("the approved call = %+v; want the tool's result", out)
		}
		if len(out.Progress) == 0 || out.Progress[0].Token != "waiting-agent-progress" || !strings.Contains(out.Progress[0].Message, "waiting for a person to approve") {
			t.Errorf("progress heard while the call waited = %+v; want one saying it waits for a person, under the agent's token", out.Progress)
		}
	})
	t.Run("denied", func(t *testing.T) {
		out := answered(t, "deny")
		if out.Error != "" || !out.IsError || !strings.Contains(out.Text, "denied the call") {
			t.Errorf("the denied call = %+v; want the tool's error result saying a person denied it, no protocol error", out)
		}
	})
}
