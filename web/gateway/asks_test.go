package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/fixturetest"
	"github.com/switchboard-dev/switchboard/internal/mcptest"
)

// answeringAgent is a 2025-era agent's answers to what servers ask: a
// model, a person who fills forms and visits URLs, and its roots.
type answeringAgent struct{ name string }

func (a answeringAgent) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	prompt, _ := req.Messages[0].Content.(mcp.TextContent)
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

// connectAnswering connects a 2025-11-25 agent that declares sampling,
// elicitation (form and URL) and roots, answering as a does.
func connectAnswering(t *testing.T, base string, a answeringAgent) *mcptest.Client {
	t.Helper()
	caps := mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{},
		Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}},
		Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{}}
	return mcptest.ConnectAs(t, base, testMCPToken, mcp.ProtocolVersion20251125, mcp.Implementation{Name: a.name, Version: "1"},
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
	ada, bob := connectAnswering(t, e.base, answeringAgent{"ada"}), connectAnswering(t, e.base, answeringAgent{"bob"})
	plain := mcptest.Connect(t, e.base, testMCPToken)
	for _, id := range servers {
		t.Run(id, func(t *testing.T) {
			for _, c := range []struct {
				agent *mcptest.Client
				name  string
			}{{ada, "ada"}, {bob, "bob"}} {
				for tool, want := range map[string]string{
					"ask_model":  c.name + "-model: sampled tell me a joke",
					"ask_person": `accept {"name":"` + c.name + `"}`,
					"ask_url":    "accept",
					"list_roots": "file:///work/" + c.name + "\nfile:///tmp",
				} {
					res, err := c.agent.Call(id+"__"+tool, map[string]any{"prompt": "tell me a joke"})
					if err != nil || res.IsError || mcptest.Text(res) != want {
						t.Errorf("%s calls %s = %+v, %v; want %q", c.name, tool, res, err, want)
					}
				}
			}
			// Together: each call's questions reach its own agent.
			var wg sync.WaitGroup
			for _, c := range []struct {
				agent *mcptest.Client
				name  string
			}{{ada, "ada"}, {bob, "bob"}, {ada, "ada"}, {bob, "bob"}} {
				wg.Go(func() {
					// Each asks after a while: the calls overlap.
					res, err := c.agent.Call(id+"__ask_person", map[string]any{"delay_ms": 200})
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
