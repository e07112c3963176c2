package gateway_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/store"
)

// inputRequired is an answer of /mcp asking the agent for input.
type inputRequired struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
}

// A 2026-07-28 server's questions reach a 2026-07-28 agent as the server
// asked them: every question of one input_required together, under the
// server's own keys, and the agent's answers under those keys reach the
// server — for a tool call, and for a prompts/get too. A 2025-era
// agent's session is asked each of them during its call. Each question
// is in the call log with its kind, and the prompt's get is recorded
// once, when it ends.
func TestA2026ServersQuestionsComeTogether(t *testing.T) {
	e := newEnv(t)
	e.conformanceServer()
	e.setPolicy("conf", "test_input_required_result_multiple_inputs", "allow")
	multiple := e.tools("conf")["test_input_required_result_multiple_inputs"].AgentName
	everything := func(_ map[string]string, msg map[string]any) {
		msg["params"].(map[string]any)["_meta"].(map[string]any)[mcp.MetaKeyClientCapabilities] = map[string]any{
			"elicitation": map[string]any{"form": map[string]any{}}, "sampling": map[string]any{}, "roots": map[string]any{}}
	}
	asked := func(t *testing.T, a mcptest.Answer) inputRequired {
		t.Helper()
		var res inputRequired
		raw, _ := json.Marshal(a.Result)
		if a.Error != nil || json.Unmarshal(raw, &res) != nil || res.ResultType != "input_required" {
			t.Fatalf("the answer = %d %s %+v; want input_required", a.Status, raw, a.Error)
		}
		return res
	}
	answers := map[string]any{
		"user_name":    map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}},
		"greeting":     map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "Good day"}, "model": "m"},
		"client_roots": map[string]any{"roots": []any{map[string]any{"uri": "file:///work/ada"}}},
		"user_context": map[string]any{"action": "accept", "content": map[string]any{"context": "tea"}},
	}

	t.Run("a tool call's three questions at once", func(t *testing.T) {
		call := func(retry map[string]any) mcptest.Answer {
			params := map[string]any{"name": multiple, "arguments": map[string]any{}}
			maps.Copy(params, retry)
			return mcptest.PostModern(t, e.base, testMCPToken, "tools/call", params, everything)
		}
		q := asked(t, call(nil))
		if keys := slices.Sorted(maps.Keys(q.InputRequests)); !slices.Equal(keys, []string{"client_roots", "greeting", "user_name"}) {
			t.Fatalf("the questions' keys = %v; want the server's three, together", keys)
		}
		if !strings.HasPrefix(q.RequestState, "relay:") {
			t.Errorf("requestState = %q; want Switchboard's own, not the server's", q.RequestState)
		}
		a := call(map[string]any{"requestState": q.RequestState, "inputResponses": answers})
		var res mcp.CallToolResult
		raw, _ := json.Marshal(a.Result)
		if a.Error != nil || json.Unmarshal(raw, &res) != nil || mcptest.Text(&res) != "Name: Ada; Greeting: Good day; Roots: 1" {
			t.Fatalf("the answered call = %s %+v; want the server's result with the three answers", raw, a.Error)
		}
	})

	t.Run("a prompt's question", func(t *testing.T) {
		get := func(retry map[string]any) mcptest.Answer {
			params := map[string]any{"name": "conf__test_input_required_result_prompt"}
			maps.Copy(params, retry)
			return mcptest.PostModern(t, e.base, testMCPToken, "prompts/get", params, everything)
		}
		q := asked(t, get(nil))
		if _, ok := q.InputRequests["user_context"]; !ok || len(q.InputRequests) != 1 {
			t.Fatalf("the prompt's questions = %v; want user_context", slices.Collect(maps.Keys(q.InputRequests)))
		}
		a := get(map[string]any{"requestState": q.RequestState, "inputResponses": answers})
		raw, _ := json.Marshal(a.Result)
		if a.Error != nil || !strings.Contains(string(raw), "Prompt with context: tea") || strings.Contains(string(raw), "input_required") {
			t.Fatalf("the answered prompts/get = %s %+v; want the prompt with the context", raw, a.Error)
		}
		// Its answer spent the state.
		if a := get(map[string]any{"requestState": q.RequestState, "inputResponses": answers}); a.Error == nil {
			t.Errorf("answering again = %s; want it refused", a.Result)
		}
		// A get that asks is recorded once, as it ended, with its
		// question before it.
		var gets, questions []store.Call
		waitFor(t, 30*time.Second, "the prompt's get recorded", func() bool {
			gets, questions = nil, nil
			for _, c := range e.calls() {
				switch c.Method {
				case store.MethodGetPrompt:
					gets = append(gets, c)
				case string(mcp.MethodElicitationCreate):
					if c.Tool == "test_input_required_result_prompt" {
						questions = append(questions, c)
					}
				}
			}
			return len(gets) > 0
		})
		if len(gets) != 1 || gets[0].Outcome != "ok" || len(questions) != 1 {
			t.Errorf("the call log has gets %+v and questions %+v; want one get, ok, and its one question", gets, questions)
		}
	})

	t.Run("nothing it did not declare", func(t *testing.T) {
		onlyForms := func(_ map[string]string, msg map[string]any) {
			msg["params"].(map[string]any)["_meta"].(map[string]any)[mcp.MetaKeyClientCapabilities] = map[string]any{
				"elicitation": map[string]any{"form": map[string]any{}}}
		}
		a := mcptest.PostModern(t, e.base, testMCPToken, "tools/call", map[string]any{"name": multiple, "arguments": map[string]any{}}, onlyForms)
		raw, _ := json.Marshal(a.Result)
		if strings.Contains(string(raw), "input_required") || !strings.Contains(string(raw)+fmt.Sprint(a.Error), "did not declare") {
			t.Errorf("a call whose server asks for sampling and roots too, of an agent that answers forms only = %s %+v; want it refused, saying so", raw, a.Error)
		}
	})

	t.Run("a 2025-era agent is asked each", func(t *testing.T) {
		c := connectAnswering(t, e.base, mcp.ProtocolVersion20251125, answeringAgent{"bo"})
		res, err := c.Call(multiple, map[string]any{})
		if err != nil || res.IsError || mcptest.Text(res) != "Name: bo; Greeting: sampled Generate a greeting; Roots: 2" {
			t.Fatalf("the 2025-era agent's call = %+v, %v; want the server's result with its three answers", res, err)
		}
	})

	t.Run("an agent that cannot answer a prompt's question", func(t *testing.T) {
		a := mcptest.PostModern(t, e.base, testMCPToken, "prompts/get", map[string]any{"name": "conf__test_input_required_result_prompt"}, nil)
		if a.Error == nil || !strings.Contains(a.Error.Message, "input") {
			t.Errorf("a prompts/get of an agent that declared nothing = %s %+v; want an error saying the server asked for input", a.Result, a.Error)
		}
	})
}

// A prompt (or resource) under ask is asked about in a 2026-07-28 agent's
// client that answers forms, as a tool call is: its prompts/get is
// answered with the question (input_required), and its retry with the
// person's answer gets the prompt. One that cannot ask is left to the
// dashboard (here nobody's: refused at once, saying so).
func TestAPromptUnderAskIsAskedInTheClient(t *testing.T) {
	e := newEnv(t)
	e.fixture("lst", []string{"-tools", "1", "-listed"})
	if _, err := e.db.SetListedPolicy(t.Context(), store.ListedRef{ServerID: "lst", Kind: store.KindPrompt, Key: "test_simple_prompt"}, store.PolicyAsk, "test"); err != nil {
		t.Fatal(err)
	}
	forms := func(_ map[string]string, msg map[string]any) {
		msg["params"].(map[string]any)["_meta"].(map[string]any)[mcp.MetaKeyClientCapabilities] = map[string]any{
			"elicitation": map[string]any{"form": map[string]any{}}}
	}
	get := func(retry map[string]any, edit func(map[string]string, map[string]any)) mcptest.Answer {
		params := map[string]any{"name": "lst__test_simple_prompt"}
		maps.Copy(params, retry)
		return mcptest.PostModern(t, e.base, testMCPToken, "prompts/get", params, edit)
	}
	var q inputRequired
	raw, _ := json.Marshal(get(nil, forms).Result)
	if json.Unmarshal(raw, &q) != nil || q.ResultType != "input_required" || q.InputRequests["switchboard_approval"] == nil {
		t.Fatalf("prompts/get of a prompt under ask = %s; want the approval question", raw)
	}
	a := get(map[string]any{"requestState": q.RequestState, "inputResponses": map[string]any{
		"switchboard_approval": map[string]any{"action": "accept", "content": map[string]any{"answer": "allow_once"}}}}, forms)
	raw, _ = json.Marshal(a.Result)
	if a.Error != nil || !strings.Contains(string(raw), `"messages"`) || strings.Contains(string(raw), "input_required") {
		t.Fatalf("the approved prompts/get = %s %+v; want the prompt", raw, a.Error)
	}
	if a := get(nil, nil); a.Error == nil || !strings.Contains(a.Error.Message, "dashboard") {
		t.Errorf("prompts/get of a client that cannot ask = %s %+v; want refused, for the dashboard", a.Result, a.Error)
	}
}
