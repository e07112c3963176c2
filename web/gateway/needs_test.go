package gateway_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/store"
)

// A tool a server lists only to a client that declares what it asks is
// offered, found and called only by an agent that declared it too, in
// both eras; any other agent does not see it, and is told why a call of
// it is refused. (The fixture's -gated lists ask_model only to a client
// that declares sampling, list_roots only to one that declares roots,
// sample_roots only to one that declares both.)
func TestToolsThatAskAreOfferedOnlyToAgentsThatAnswer(t *testing.T) {
	e := newEnv(t)
	e.createServer(map[string]any{"id": "gated", "name": "Gated asks", "transport": "stdio", "command": fixtureBin,
		"args": []string{"-mode", "asks", "-gated"}, "default_policy": "allow"})
	if status := e.verify("gated"); status != "success" {
		t.Fatalf("verify = %s", status)
	}
	tools := e.tools("gated")
	if got := tools["ask_model"].Needs; !slices.Equal(got, []string{"sampling"}) {
		t.Fatalf("ask_model needs %q, want [sampling]", got)
	}
	for _, tool := range []string{"ask_model", "ask_person", "ask_url", "list_roots", "sample_roots"} {
		e.setPolicy("gated", tool, "allow")
	}
	samples := mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}
	roots := mcp.ClientCapabilities{Roots: &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{}}
	both := samples
	both.Roots = roots.Roots
	a := answeringAgent{"ada"}
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			connect := func(name string, caps mcp.ClientCapabilities) *mcptest.Client {
				// mcp-go's client declares what it has a handler for.
				opts := []client.ClientOption{client.WithClientCapabilities(caps)}
				if caps.Sampling != nil {
					opts = append(opts, client.WithSamplingHandler(a))
				}
				if caps.Roots != nil {
					opts = append(opts, client.WithRootsHandler(a))
				}
				return mcptest.ConnectAs(t, e.base, testMCPToken, version, mcp.Implementation{Name: name, Version: "1"}, opts...)
			}
			for _, c := range []struct {
				name            string
				client          *mcptest.Client
				offered, hidden []string
			}{
				{"plain", mcptest.ConnectAs(t, e.base, testMCPToken, version, mcp.Implementation{Name: "plain", Version: "1"}),
					nil, []string{"ask_model", "ask_person", "ask_url", "list_roots", "sample_roots"}},
				{"sampler", connect("sampler", samples), []string{"ask_model"}, []string{"ask_person", "ask_url", "list_roots", "sample_roots"}},
				{"rooted", connect("rooted", roots), []string{"list_roots"}, []string{"ask_model", "sample_roots"}},
			} {
				names := c.client.Names(t)
				if !slices.Contains(names, "gated__log_steps") {
					t.Errorf("%s is not offered log_steps, which needs nothing: %v", c.name, names)
				}
				for _, tool := range c.offered {
					if !slices.Contains(names, "gated__"+tool) {
						t.Errorf("%s is not offered %s: %v", c.name, tool, names)
					}
				}
				for _, tool := range c.hidden {
					if slices.Contains(names, "gated__"+tool) {
						t.Errorf("%s is offered %s, which it cannot answer: %v", c.name, tool, names)
					}
				}
				_, err := c.client.Call("gated__"+c.hidden[0], map[string]any{"prompt": "hi"})
				if err == nil || !strings.Contains(err.Error(), "only to an agent that answers") {
					t.Errorf("%s's call of %s: %v, want a refusal saying what it needs", c.name, c.hidden[0], err)
				}
			}
			res, err := connect("sampler", samples).Call("gated__ask_model", map[string]any{"prompt": "a joke"})
			if err != nil || mcptest.Text(res) != "ada-model: sampled a joke" {
				t.Errorf("sampler's call of ask_model: %q, %v", mcptest.Text(res), err)
			}
			res, err = connect("both", both).Call("gated__list_roots", nil)
			if err != nil || mcptest.Text(res) != "file:///work/ada\nfile:///tmp" {
				t.Errorf("a call of list_roots: %q, %v", mcptest.Text(res), err)
			}
		})
	}

	// In search mode, search_tools finds a tool that asks only for an
	// agent that answers, as tools/list would list it; log_steps, pinned,
	// needs nothing and is listed to all.
	e.saveProfile(store.Profile{ID: "finder", Name: "Finder", Mode: store.ProfileAll, Search: true,
		Pinned: []store.ToolRef{{ServerID: "gated", Tool: "log_steps"}}})
	token := e.connectWithProfile("finder-agent", "finder")
	found := func(c *mcptest.Client) string {
		res, err := c.Call("search_tools", map[string]any{"query": "model prompt complete", "limit": 20})
		if err != nil {
			t.Fatal(err)
		}
		return mcptest.Text(res)
	}
	plain := mcptest.ConnectAs(t, e.base, token, mcp.ProtocolVersion20251125, mcp.Implementation{Name: "plain-finder", Version: "1"})
	sampler := mcptest.ConnectAs(t, e.base, token, mcp.ProtocolVersion20251125, mcp.Implementation{Name: "sampling-finder", Version: "1"},
		client.WithClientCapabilities(samples), client.WithSamplingHandler(a))
	if got := found(plain); strings.Contains(got, "gated__ask_model") {
		t.Errorf("search_tools found ask_model for an agent that does not answer sampling: %s", got)
	}
	if got := found(sampler); !strings.Contains(got, "gated__ask_model") {
		t.Errorf("search_tools did not find ask_model for an agent that answers sampling: %s", got)
	}
}
