package gateway_test

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/internal/toolsearch/toolsearchtest"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/web/gateway"
)

// Two clients connected at once with different profiles see different
// offers; a call outside a profile is refused as of an unknown tool, a
// deny override refuses with its reason, an ask override waits for a
// person; the audit names the profile; list_changed reaches only the
// client whose view changed.
func TestProfileOffers(t *testing.T) {
	m := newMCPSetup(t, func(c *gateway.Config) { c.AskTimeout = 1500 * time.Millisecond })
	e := m.e
	alphaRead, alphaOdd, betaRead := store.ToolRef{ServerID: "alpha", Tool: "read"}, store.ToolRef{ServerID: "alpha", Tool: "odd.name-v2"}, store.ToolRef{ServerID: "beta", Tool: "read"}
	e.saveProfile(store.Profile{ID: "beta-only", Name: "Beta only", Mode: store.ProfileServers, Servers: []string{"beta"}})
	e.saveProfile(store.Profile{ID: "strict", Name: "Strict", Mode: store.ProfileTools, Tools: []store.ToolRef{alphaRead, alphaOdd, betaRead},
		Overrides: map[store.ToolRef]store.Policy{alphaRead: store.PolicyDeny, betaRead: store.PolicyAsk}})
	betaOnly := mcptest.Connect(t, m.base, e.connectWithProfile("Beta agent", "beta-only"))
	strict := mcptest.Connect(t, m.base, e.connectWithProfile("Strict agent", "strict"))
	all := mcptest.Connect(t, m.base, testMCPToken)
	modern := mcptest.ConnectAs(t, m.base, e.connectWithProfile("Modern beta", "beta-only"), mcp.ProtocolVersion20260728, mcp.Implementation{Name: "modern-beta", Version: "1"})

	if got := betaOnly.Names(t); !slices.Equal(got, []string{"beta__read"}) {
		t.Errorf("beta-only tools/list = %q; want beta__read", got)
	}
	if got := modern.Names(t); !slices.Equal(got, []string{"beta__read"}) {
		t.Errorf("beta-only tools/list (2026-07-28) = %q; want beta__read", got)
	}
	if got := strict.Names(t); len(got) != 2 || !slices.Contains(got, "beta__read") || slices.Contains(got, "alpha__read") {
		t.Errorf("strict tools/list = %q; want beta__read and the odd name, alpha__read denied", got)
	}
	if got := all.Names(t); len(got) != 6 {
		t.Errorf("the endpoint token's tools/list = %q; want all 6 offered", got)
	}

	t.Run("a call outside the profile is refused as of an unknown tool", func(t *testing.T) {
		e := e.in(t)
		_, err := betaOnly.Call("alpha__read", map[string]any{})
		if err == nil || !strings.Contains(err.Error(), `no tool is offered as "alpha__read"`) {
			t.Errorf("beta-only calls alpha__read = %v; want refused as unknown", err)
		}
		if call := e.waitCall(1); call.Profile != "beta-only" || call.Decision != "denied" || call.ConnectedAs != "Beta agent" {
			t.Errorf("audited = %+v; want denied, profile beta-only", call)
		}
		if res, err := betaOnly.Call("beta__read", map[string]any{}); err != nil || res.IsError {
			t.Errorf("beta-only calls beta__read = %v, %v; want it through", res, err)
		}
		if call := e.waitCall(2); call.Profile != "beta-only" || call.Outcome != "ok" {
			t.Errorf("audited = %+v; want ok, profile beta-only", call)
		}
		if _, err := all.Call("alpha__read", map[string]any{}); err != nil {
			t.Errorf("the default calls alpha__read = %v", err)
		}
		if call := e.waitCall(3); call.Profile != "default" || call.Outcome != "ok" {
			t.Errorf("audited = %+v; want ok, profile default", call)
		}
	})
	t.Run("a deny override refuses with its reason", func(t *testing.T) {
		e := e.in(t)
		_, err := strict.Call("alpha__read", map[string]any{})
		if err == nil || !strings.Contains(err.Error(), `the profile "strict" of this client denies the tool`) {
			t.Errorf("strict calls alpha__read = %v; want refused by the profile", err)
		}
		if call := e.waitCall(4); call.Profile != "strict" || call.Decision != "denied" || call.DecidedBy != "policy" {
			t.Errorf("audited = %+v", call)
		}
	})
	t.Run("an ask override waits for a person", func(t *testing.T) {
		e := e.in(t)
		// Someone to ask (in web, a program reading the approvals), before
		// the call, or it is refused at once for want of anyone.
		e.approvers.Store(1)
		done := make(chan error, 1)
		go func() { done <- mcptest.Refused(strict.Call("beta__read", map[string]any{})) }()
		e.decide(e.waitApproval(), "approve")
		if err := <-done; err != nil {
			t.Errorf("approved call = %v", err)
		}
		if call := e.waitCall(5); call.Profile != "strict" || call.Decision != "approved" || call.DecidedBy != "api" {
			t.Errorf("audited = %+v; want approved by the API under strict", call)
		}
	})
	t.Run("a call approved after its profile denied the tool is refused", func(t *testing.T) {
		e := e.in(t)
		done := make(chan error, 1)
		go func() { done <- mcptest.Refused(strict.Call("beta__read", map[string]any{})) }()
		id := e.waitApproval()
		e.saveProfile(store.Profile{ID: "strict", Name: "Strict", Mode: store.ProfileTools, Tools: []store.ToolRef{alphaOdd, betaRead},
			Overrides: map[store.ToolRef]store.Policy{betaRead: store.PolicyDeny}})
		e.decide(id, "approve")
		if err := <-done; err == nil || !strings.Contains(err.Error(), `while the call waited: the profile "strict" of this client stopped offering the tool`) {
			t.Errorf("call approved after the profile denied it = %v; want refused", err)
		}
		e.waitCall(6)
	})
	t.Run("list_changed reaches only the clients whose view changed", func(t *testing.T) {
		e := e.in(t)
		stop, err := modern.ListenAsync(context.Background(), mcp.SubscriptionFilter{ToolsListChanged: true}, func(err error) { t.Errorf("listen: %v", err) })
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		waitFor(t, 5*time.Second, "the listen stream acknowledged", func() bool { return modern.Acknowledged.Load() == 1 })
		time.Sleep(quietPeriod) // the sessions' GET streams open in the background
		b, s, a, mo := betaOnly.ListChanged.Load(), strict.ListChanged.Load(), all.ListChanged.Load(), modern.ListChanged.Load()
		// A tool outside beta-only's and strict's views.
		e.setPolicy("alpha", "write", "deny")
		waitFor(t, 5*time.Second, "list_changed for the default", func() bool { return all.ListChanged.Load() > a })
		time.Sleep(quietPeriod)
		if betaOnly.ListChanged.Load() != b || strict.ListChanged.Load() != s || modern.ListChanged.Load() != mo {
			t.Errorf("a tool outside their views told beta-only %d, strict %d, modern %d times", betaOnly.ListChanged.Load()-b, strict.ListChanged.Load()-s, modern.ListChanged.Load()-mo)
		}
		// Another profile's change.
		a = all.ListChanged.Load()
		e.saveProfile(store.Profile{ID: "strict", Name: "Strict", Mode: store.ProfileTools, Tools: []store.ToolRef{betaRead}})
		waitFor(t, 5*time.Second, "list_changed for strict", func() bool { return strict.ListChanged.Load() > s })
		if got := strict.Names(t); !slices.Equal(got, []string{"beta__read"}) {
			t.Errorf("strict after its edit = %q; want beta__read", got)
		}
		time.Sleep(quietPeriod)
		if betaOnly.ListChanged.Load() != b || modern.ListChanged.Load() != mo || all.ListChanged.Load() != a {
			t.Errorf("strict's edit told beta-only %d, modern %d, default %d times", betaOnly.ListChanged.Load()-b, modern.ListChanged.Load()-mo, all.ListChanged.Load()-a)
		}
		// A change in beta-only's view.
		e.setPolicy("beta", "read", "deny")
		waitFor(t, 5*time.Second, "list_changed for beta-only's session", func() bool { return betaOnly.ListChanged.Load() > b })
		waitFor(t, 5*time.Second, "list_changed on beta-only's listen stream", func() bool { return modern.ListChanged.Load() > mo })
		if got := betaOnly.Names(t); len(got) != 0 {
			t.Errorf("beta-only after beta read was denied = %q; want nothing", got)
		}
	})
}

// synthServer registers the fixture serving the synthetic 1,000-tool
// catalog as the server "synth" (each tool named domain_tool, so agents
// see synth__domain_tool), verified, every tool active at allow (the server's default). It
// returns the agent name of a synthetic catalog's agent name.
func synthServer(t *testing.T, e *env) func(string) string {
	t.Helper()
	var tools []map[string]any
	for _, st := range toolsearchtest.Synthetic() {
		domain, _, _ := strings.Cut(st.AgentName, "__")
		tools = append(tools, map[string]any{"name": domain + "_" + st.Name, "title": st.Title, "description": st.Description, "inputSchema": st.InputSchema,
			"annotations": map[string]any{"readOnlyHint": true, "openWorldHint": false}}) // so that the default, allow, applies
	}
	data, err := json.Marshal(map[string]any{"version": "1", "tools": tools})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "synth.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	e.createServer(map[string]any{"id": "synth", "name": "Synthetic", "transport": "stdio", "command": fixtureBin,
		"args": []string{"-tools-file", file}, "default_policy": "allow"})
	if status := e.verify("synth"); status != "success" {
		t.Fatalf("verify synth = %s", status)
	}
	allowed := 0
	for _, tl := range e.tools("synth") {
		if tl.State == store.ToolActive && tl.Effective == store.PolicyAllow {
			allowed++
		}
	}
	if allowed != 1000 {
		t.Fatalf("synth has %d active tools at allow; want 1000", allowed)
	}
	return func(name string) string { return "synth__" + strings.Replace(name, "__", "_", 1) }
}

// A search-mode agent among 1,000 tools: its list is search_tools,
// call_tool and the pinned tool; search_tools finds the tool a labelled
// query wants in the top 5 with its full definition, call_tool calls it
// (audited under its own agent name and the profile), a tool outside
// the view is refused, and nonsense finds nothing.
func TestSearchModeProfile(t *testing.T) {
	e := newEnv(t)
	agentName := synthServer(t, e)
	qs, err := toolsearchtest.Queries("synthetic")
	if err != nil {
		t.Fatal(err)
	}
	pinned := store.ToolRef{ServerID: "synth", Tool: "tracker_list_nope"}

	bad, err := e.ep.CheckProfile(context.Background(), store.Profile{ID: "finder", Name: "Finder", Mode: store.ProfileAll, Search: true,
		Pinned: []store.ToolRef{pinned}})
	if err != nil || !strings.Contains(bad["pinned"], "not in the profile's view") {
		t.Errorf("a pinned tool outside the view = %v, %v; want a pinned field error", bad, err)
	}
	pin := strings.TrimPrefix(agentName("tracker__list_issue"), "synth__")
	e.saveProfile(store.Profile{ID: "finder", Name: "Finder", Mode: store.ProfileAll, Search: true,
		Pinned: []store.ToolRef{{ServerID: "synth", Tool: pin}}})
	c := mcptest.Connect(t, e.base, e.connectWithProfile("Finder agent", "finder"))
	if got, wantList := c.Names(t), []string{"call_tool", "search_tools", "synth__" + pin}; !slices.Equal(got, wantList) {
		t.Fatalf("tools/list = %v; want %v", got, wantList)
	}

	// search is the agent names search_tools finds for a query, checking
	// that each comes with its full definition.
	search := func(query string) []string {
		t.Helper()
		res, err := c.Call("search_tools", map[string]any{"query": query})
		if err != nil || res.IsError {
			t.Fatalf("search_tools(%q) = %v, %v", query, res, err)
		}
		var found struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		}
		if err := json.Unmarshal([]byte(mcptest.Text(res)), &found); err != nil {
			t.Fatalf("search_tools(%q) result %s: %v", query, mcptest.Text(res), err)
		}
		names := []string{}
		for _, tl := range found.Tools {
			names = append(names, tl.Name)
			if tl.Description == "" || !strings.Contains(string(tl.InputSchema), `"properties"`) {
				t.Errorf("search_tools(%q) answers %+v; want a full definition", query, tl)
			}
		}
		return names
	}
	// The labelled queries find what they want in the top 5 about as often
	// as the index alone does (toolsearchtest.Floors): the tools are the
	// same, named synth__domain_tool rather than domain__tool.
	var want string
	hits := 0
	for _, q := range qs.Queries {
		names := search(q.Query)
		if len(names) > 5 {
			names = names[:5]
		}
		for _, w := range q.Want {
			if slices.Contains(names, agentName(w)) {
				hits++
				want = cmp.Or(want, agentName(w))
				break
			}
		}
	}
	if recall, floor := float64(hits)/float64(len(qs.Queries)), toolsearchtest.Floors["synthetic"].RecallAt5; recall < floor {
		t.Errorf("recall@5 through search_tools = %.3f (%d of %d); want at least %.3f", recall, hits, len(qs.Queries), floor)
	}
	if want == "" {
		t.Fatal("no labelled query found its tool")
	}
	for _, q := range append(qs.Nothing, "zxqv blorft quux") {
		if got := search(q); len(got) != 0 {
			t.Errorf("search_tools(%q) = %v; want nothing", q, got)
		}
	}

	res, err := c.Call("call_tool", map[string]any{"name": want, "arguments": map[string]any{}})

	if err != nil || res.IsError {
		t.Fatalf("call_tool(%s) = %v, %v; want the fixture's answer", want, res, err)
	}
	if got := e.waitCall(1); got.AgentName != want || got.Profile != "finder" || got.Outcome != "ok" || got.Decision != "allowed" {
		t.Errorf("audited = %+v; want %s of profile finder, allowed, ok", got, want)
	}
	if _, err := c.Call("call_tool", map[string]any{"name": "synth__nope_nothing"}); err == nil || !strings.Contains(err.Error(), "no tool is offered") {
		t.Errorf("call_tool of a tool there is none of = %v; want refused as unknown", err)
	}
	if _, err := c.Call(want, map[string]any{}); err == nil {
		t.Errorf("a direct call of %s, found only by search = nil; want refused", want)
	}
	if _, err := c.Call("synth__"+pin, map[string]any{}); err != nil {
		t.Errorf("a direct call of the pinned %s = %v", pin, err)
	}

	// A catalog change outside the pinned tools leaves the search-mode list
	// as it was: its agent is not told, while a default agent is.
	d := mcptest.Connect(t, e.base, testMCPToken)
	e.setPolicy("synth", strings.TrimPrefix(want, "synth__"), "deny")
	waitFor(t, 5*time.Second, "the default agent told of the change", func() bool { return d.ListChanged.Load() > 0 })
	if n := c.ListChanged.Load(); n != 0 {
		t.Errorf("the search-mode agent heard %d list changes; want none", n)
	}
	if err := mcptest.Refused(c.Call("call_tool", map[string]any{"name": want})); err == nil {
		t.Errorf("call_tool of %s once denied = nil; want refused", want)
	}
	if res, err := c.Call("search_tools", map[string]any{"query": "zxqv blorft quux"}); err != nil || mcptest.Text(res) != `{"tools":[]}` {
		t.Errorf("search_tools(nonsense) = %s, %v; want an empty list", mcptest.Text(res), err)
	}
}
