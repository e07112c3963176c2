package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/fixturetest"
	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/web/gateway"
)

// answeringAgent is a 2025-era agent's answers to what servers ask: a
// model, a person who fills forms and visits URLs, and its roots.
type answeringAgent struct{ name string }

func (a answeringAgent) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	// mcp-go's client hands the content over as its transport decoded it
	// (a TextContent, or a map): its text is read from its JSON.
	var prompt struct{ Text string }
	raw, _ := json.Marshal(req.Messages[0].Content)
	_ = json.Unmarshal(raw, &prompt)
	return &mcp.CreateMessageResult{Model: a.name + "-model", SamplingMessage: mcp.SamplingMessage{
		Role: mcp.RoleAssistant, Content: mcp.NewTextContent("sampled " + prompt.Text)}}, nil
}

func (a answeringAgent) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if req.Params.Mode == mcp.ElicitationModeURL {
		if req.Params.URL != "https://example.com/sign" {
			return nil, fmt.Errorf("asked to visit %q", req.Params.URL)
		}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": a.name}}}, nil
}

func (a answeringAgent) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///work/" + a.name, Name: a.name}, {URI: "file:///tmp"}}}, nil
}

// connectAnswering connects an agent of the protocol version that
// declares sampling, elicitation (form and URL) and roots, answering as a
// does: asked during a 2025-era session's call, or answering a
// 2026-07-28 call's input_required and calling again (mcp-go's client
// does both).
func connectAnswering(t *testing.T, base, version string, a answeringAgent) *mcptest.Client {
	t.Helper()
	caps := mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{},
		Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}},
		Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{}}
	return mcptest.ConnectAs(t, base, testMCPToken, version, mcp.Implementation{Name: a.name, Version: "1"},
		client.WithClientCapabilities(caps), client.WithSamplingHandler(a), client.WithElicitationHandler(a), client.WithRootsHandler(a))
}

// What a server asks during an agent's call — a model's message, a
// person's form or visit, the roots — reaches that agent, and its answer
// reaches the server, over stdio and HTTP, as a 2026-07-28 server's
// input_required and as a 2025-era server's request; two agents calling
// the same server each answer their own calls, together too. An agent
// that declared none of it gets a refusal at once, never a hang.
func TestWhatAServerAsksReachesTheCallingAgent(t *testing.T) {
	e := newEnv(t)
	// Each server asks over stdio and Streamable HTTP, as a 2026-07-28
	// server does (an input_required result) and, -legacy, as a
	// 2025-era one does (a request of its own: on the call's stream over
	// HTTP, on the one stream there is over stdio).
	var servers []string
	for _, legacy := range []bool{false, true} {
		args, prefix := []string{"-mode", "asks"}, ""
		if legacy {
			args, prefix = append(args, "-legacy"), "old"
		}
		e.createServer(map[string]any{"id": prefix + "stdask", "name": "Asks over stdio", "transport": "stdio", "command": fixtureBin,
			"args": args, "default_policy": "allow"})
		url := fixturetest.MCP(fixturetest.Start(t, fixtureBin, "http", append([]string{"-addr", "127.0.0.1:0"}, args...)...))
		e.createServer(map[string]any{"id": prefix + "httpask", "name": "Asks over HTTP", "transport": "http", "url": url, "default_policy": "allow"})
		servers = append(servers, prefix+"stdask", prefix+"httpask")
	}
	for _, id := range servers {
		if status := e.verify(id); status != "success" {
			t.Fatalf("verify %s = %s", id, status)
		}
		for _, tool := range []string{"ask_model", "ask_person", "ask_url", "list_roots"} {
			e.setPolicy(id, tool, "allow")
		}
	}
	type agent struct {
		*mcptest.Client
		name string
	}
	// ada and bob have 2025-11-25 sessions; cy and di speak 2026-07-28.
	var agents []agent
	for name, version := range map[string]string{"ada": mcp.ProtocolVersion20251125, "bob": mcp.ProtocolVersion20251125,
		"cy": mcp.ProtocolVersion20260728, "di": mcp.ProtocolVersion20260728} {
		agents = append(agents, agent{connectAnswering(t, e.base, version, answeringAgent{name}), name})
	}
	plain := mcptest.Connect(t, e.base, testMCPToken)
	for _, id := range servers {
		t.Run(id, func(t *testing.T) {
			for _, c := range agents {
				for tool, want := range map[string]string{
					"ask_model":  c.name + "-model: sampled tell me a joke",
					"ask_person": `accept {"name":"` + c.name + `"}`,
					"ask_url":    "accept",
					"list_roots": "file:///work/" + c.name + "\nfile:///tmp",
				} {
					res, err := c.Call(id+"__"+tool, map[string]any{"prompt": "tell me a joke"})
					if err != nil || res.IsError || mcptest.Text(res) != want {
						t.Errorf("%s calls %s = %+v, %v; want %q", c.name, tool, res, err, want)
					}
				}
			}
			// Together: each call's questions reach its own agent.
			var wg sync.WaitGroup
			for _, c := range append(agents, agents...) {
				wg.Go(func() {
					// Each asks after a while: the calls overlap.
					res, err := c.Call(id+"__ask_person", map[string]any{"delay_ms": 200})
					if want := `accept {"name":"` + c.name + `"}`; err != nil || res.IsError || mcptest.Text(res) != want {
						t.Errorf("%s calls ask_person with others = %+v, %v; want %q", c.name, res, err, want)
					}
				})
			}
			wg.Wait()
			start := time.Now()
			res, err := plain.Call(id+"__ask_model", map[string]any{"prompt": "tell me a joke"})
			if err == nil && !res.IsError {
				t.Errorf("an agent that cannot sample calls ask_model = %+v; want a refusal", res)
			}
			if waited := time.Since(start); waited > 20*time.Second {
				t.Errorf("the refusal took %s; want it at once", waited)
			}
		})
	}
}

// A 2026-07-28 agent's call whose server asks is parked while the agent
// answers: only the token that made the call can answer it (the
// requestState is bound to it), and a call whose agent never comes back
// is ended upstream after the ask timeout, recorded as such, and its
// state answers nothing after.
func TestAParkedCallIsItsTokensAndEnds(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.AskTimeout = 2 * time.Second })
	e.createServer(map[string]any{"id": "asks", "name": "Asks", "transport": "stdio", "command": fixtureBin,
		"args": []string{"-mode", "asks"}, "default_policy": "allow"})
	if status := e.verify("asks"); status != "success" {
		t.Fatalf("verify asks = %s", status)
	}
	e.setPolicy("asks", "ask_person", "allow")
	mine, theirs := e.connectWithProfile("mine", store.DefaultProfile), e.connectWithProfile("theirs", store.DefaultProfile)
	// A 2026-07-28 agent that declares form elicitation.
	withElicitation := func(_ map[string]string, msg map[string]any) {
		msg["params"].(map[string]any)["_meta"].(map[string]any)[mcp.MetaKeyClientCapabilities] = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	}
	call := func(token string, retry map[string]any) mcptest.Answer {
		params := map[string]any{"name": "asks__ask_person", "arguments": map[string]any{}}
		for k, v := range retry {
			params[k] = v
		}
		return mcptest.PostModern(t, e.base, token, "tools/call", params, withElicitation)
	}
	stateOf := func(a mcptest.Answer) (state, question string) {
		t.Helper()
		var res struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		}
		raw, _ := json.Marshal(a.Result)
		if a.Error != nil || json.Unmarshal(raw, &res) != nil || res.ResultType != "input_required" || len(res.InputRequests) != 1 {
			t.Fatalf("the call's answer = %d %s %+v; want input_required with the server's question", a.Status, a.Result, a.Error)
		}
		for id := range res.InputRequests {
			question = id
		}
		return res.RequestState, question
	}
	// The tool calls in the call log, newest first (each question of the
	// server's is there too, as its own method).
	toolCalls := func() []store.Call {
		return slices.DeleteFunc(e.calls(), func(c store.Call) bool { return c.Method != "" && c.Method != store.MethodCallTool })
	}
	answer := func(question string) map[string]any {
		return map[string]any{question: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}
	}

	t.Run("only its token answers", func(t *testing.T) {
		state, q := stateOf(call(mine, nil))
		retry := map[string]any{"requestState": state, "inputResponses": answer(q)}
		if a := call(theirs, retry); a.Error == nil {
			t.Errorf("another token's answer = %s; want it refused", a.Result)
		}
		other := map[string]any{"requestState": state, "inputResponses": answer(q), "arguments": map[string]any{"delay_ms": 1}}
		if a := call(mine, other); a.Error == nil {
			t.Errorf("an answer with other arguments = %s; want it refused", a.Result)
		}
		a := call(mine, retry)
		var res mcp.CallToolResult
		raw, _ := json.Marshal(a.Result)
		if a.Error != nil || json.Unmarshal(raw, &res) != nil || res.IsError || mcptest.Text(&res) != `accept {"name":"Ada"}` {
			t.Errorf("its own token's answer = %s %+v; want the server's result with Ada", raw, a.Error)
		}
		if a := call(mine, retry); a.Error == nil {
			t.Errorf("answering again = %s; want it refused", a.Result)
		}
		var rec store.Call
		waitFor(t, 30*time.Second, "the call recorded", func() bool {
			calls := toolCalls()
			if len(calls) > 0 {
				rec = calls[0]
			}
			return len(calls) == 1
		})
		if rec.Tool != "ask_person" || rec.Outcome != "ok" {
			t.Errorf("the call's record = %+v; want it ok", rec)
		}
	})
	t.Run("an agent that never answers", func(t *testing.T) {
		state, q := stateOf(call(mine, nil))
		var rec store.Call
		waitFor(t, 30*time.Second, "the unanswered call recorded", func() bool {
			calls := toolCalls()
			if len(calls) < 2 {
				return false
			}
			rec = calls[0]
			return true
		})
		if rec.Tool != "ask_person" || rec.Outcome == "ok" || !strings.Contains(rec.Error, "did not answer") {
			t.Errorf("the call's record = %+v; want it ended, the agent not answering", rec)
		}
		if a := call(mine, map[string]any{"requestState": state, "inputResponses": answer(q)}); a.Error == nil {
			t.Errorf("an answer after the timeout = %s; want it refused", a.Result)
		}
	})
}

// What a server may ask is its policy's to allow, per kind: deny refuses
// the question before the agent hears it, ask waits for a person on the
// dashboard (whose Always allow lets the server ask that from now on),
// and every question is in the call log with its kind, server and
// decision — in both eras.
func TestWhatAServerMayAskIsItsPolicys(t *testing.T) {
	e := newEnv(t)
	e.createServer(map[string]any{"id": "asks", "name": "Asks", "transport": "stdio", "command": fixtureBin,
		"args": []string{"-mode", "asks"}, "default_policy": "allow"})
	if status := e.verify("asks"); status != "success" {
		t.Fatalf("verify asks = %s", status)
	}
	for _, tool := range []string{"ask_model", "ask_person", "list_roots"} {
		e.setPolicy("asks", tool, "allow")
	}
	setAsks := func(kind string, p store.Policy) {
		t.Helper()
		srv, err := e.db.Server(t.Context(), "asks")
		if err != nil {
			t.Fatal(err)
		}
		srv.Asks.Set(kind, p)
		if err := e.db.UpdateServer(t.Context(), srv); err != nil {
			t.Fatal(err)
		}
	}
	lastAsk := func(method string) store.Call {
		t.Helper()
		var found store.Call
		waitFor(t, 30*time.Second, "the question in the call log", func() bool {
			for _, c := range e.calls() {
				if c.Method == method {
					found = c
					return true
				}
			}
			return false
		})
		return found
	}
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			e := e.in(t)
			if _, _, err := e.db.Calls(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			agent := connectAnswering(t, e.base, version, answeringAgent{"ada"})

			setAsks(store.AskSampling, store.PolicyDeny)
			res, err := agent.Call("asks__ask_model", map[string]any{"prompt": "hi"})
			if err == nil && !res.IsError {
				t.Errorf("ask_model under deny = %+v; want the question refused", res)
			}
			if c := lastAsk("sampling/createMessage"); c.Decision != store.DecisionDenied || c.DecidedBy != "policy" || c.ServerID != "asks" || c.Tool != "ask_model" || c.Outcome != "refused" {
				t.Errorf("the refused question's record = %+v; want denied by policy, during ask_model", c)
			}
			setAsks(store.AskSampling, store.PolicyAllow)

			setAsks(store.AskElicitation, store.PolicyAsk)
			e.approvers.Store(1)
			done := make(chan string, 1)
			go func() {
				res, err := agent.Call("asks__ask_person", nil)
				if err != nil {
					done <- err.Error()
					return
				}
				done <- mcptest.Text(res)
			}()
			id := e.waitApproval()
			if list := e.ep.Approvals(); len(list) != 1 || list[0].Request != store.AskElicitation || list[0].Tool != "ask_person" {
				t.Errorf("the card = %+v; want the server's elicitation during ask_person", list)
			}
			e.decide(id, "always_allow")
			if got := <-done; got != `accept {"name":"ada"}` {
				t.Errorf("ask_person once allowed = %q; want the agent's answer", got)
			}
			if c := lastAsk("elicitation/create"); c.Decision != store.DecisionApproved || c.DecidedBy != gateway.ByAPI || c.Outcome != "ok" {
				t.Errorf("the allowed question's record = %+v; want approved by a person (the API), ok", c)
			}
			if srv, _ := e.db.Server(t.Context(), "asks"); srv.Asks.Of(store.AskElicitation) != store.PolicyAllow {
				t.Errorf("after Always allow, the server's elicitation policy = %s; want allow", srv.Asks.Of(store.AskElicitation))
			}
			e.approvers.Store(0)
		})
	}
}

// slowAgent answers a form after a person's pause.
type slowAgent struct {
	answeringAgent
	pause time.Duration
}

func (a slowAgent) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(a.pause):
	}
	return a.answeringAgent.Elicit(ctx, req)
}

// A person may take their time: an answer that comes after several
// seconds (more than a server's request is otherwise given, 5 s) still
// reaches a 2025-era server over stdio, for either era of agent.
func TestASlowAnswerStillReachesTheServer(t *testing.T) {
	e := newEnv(t)
	e.fixture("slow", []string{"-mode", "asks", "-legacy"}, "ask_person")
	caps := mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}}
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			a := slowAgent{answeringAgent{"ada"}, 6 * time.Second}
			c := mcptest.ConnectAs(t, e.base, testMCPToken, version, mcp.Implementation{Name: "slow-agent", Version: "1"},
				client.WithClientCapabilities(caps), client.WithElicitationHandler(a))
			res, err := c.Call("slow__ask_person", nil)
			if err != nil || res.IsError || mcptest.Text(res) != `accept {"name":"ada"}` {
				t.Errorf("ask_person answered after %s = %+v, %v; want the answer", a.pause, res, err)
			}
		})
	}
}

// A tool its server defines otherwise to a client that answers what it
// asks (its verification warns so) is called, for such an agent, as the
// definition a person reviewed, on a session that declares nothing:
// not refused as changed, call after call, while its verification
// finds nothing new.
func TestAToolDefinedOtherwiseForAskingAgentsRunsAsReviewed(t *testing.T) {
	e := newEnv(t)
	e.fixture("variant", []string{"-mode", "asks", "-variant"}, "log_steps")
	c := connectAnswering(t, e.base, mcp.ProtocolVersion20251125, answeringAgent{"sam"})
	for range 2 {
		if res, err := c.Call("variant__log_steps", nil); err != nil || res.IsError || mcptest.Text(res) != "done" {
			t.Fatalf("an agent that samples calls log_steps = %+v, %v; want it done", res, err)
		}
	}
	if tool := e.tools("variant")["log_steps"]; tool.State != store.ToolActive || tool.Pin != tool.Policy.Pin {
		t.Errorf("log_steps after the calls = %+v; want it active at its approved pin", tool)
	}
}
