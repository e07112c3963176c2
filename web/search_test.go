package web_test

import (
	"cmp"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/toolsearch/toolsearchtest"
)

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
	if job := e.verify("synth"); job.Status != "success" {
		t.Fatalf("verify synth = %v", job)
	}
	rec := e.api(http.MethodGet, "/api/v1/servers/synth/tools", nil)
	wantStatus(t, rec, http.StatusOK)
	allowed := 0
	for _, tl := range decodeAs[toolsAnswer](t, rec).Tools {
		if tl.State == "active" && tl.EffectivePolicy == "allow" {
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
	srv, _ := e.liveServer()
	agentName := synthServer(t, e)
	qs, err := toolsearchtest.Queries("synthetic")
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]string{"server_id": "synth", "tool": "tracker_list_nope"}

	rec := e.api(http.MethodPost, "/api/v1/profiles", map[string]any{"id": "finder", "name": "Finder", "mode": "all", "search": true,
		"pinned": []map[string]string{pinned}})
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if got := decodeAs[apiError](t, rec); !strings.Contains(got.Fields["pinned"], "not in the profile's view") {
		t.Errorf("a pinned tool outside the view = %+v; want a pinned field error", got)
	}
	pin := strings.TrimPrefix(agentName("tracker__list_issue"), "synth__")
	p := e.createProfile(map[string]any{"id": "finder", "name": "Finder", "mode": "all", "search": true,
		"pinned": []map[string]string{{"server_id": "synth", "tool": pin}}})
	if !p.Search || len(p.Pinned) != 1 || p.Pinned[0].Tool != pin {
		t.Fatalf("created = %+v; want search mode, %s pinned", p, pin)
	}
	c := connectMCP(t, srv.URL, e.connectWithProfile("Finder agent", "finder"))
	if got, wantList := c.names(t), []string{"call_tool", "search_tools", "synth__" + pin}; !slices.Equal(got, wantList) {
		t.Fatalf("tools/list = %v; want %v", got, wantList)
	}

	// search is the agent names search_tools finds for a query, checking
	// that each comes with its full definition.
	search := func(query string) []string {
		t.Helper()
		res, err := c.call("search_tools", map[string]any{"query": query})
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
		if err := json.Unmarshal([]byte(text(res)), &found); err != nil {
			t.Fatalf("search_tools(%q) result %s: %v", query, text(res), err)
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

	res, err := c.call("call_tool", map[string]any{"name": want, "arguments": map[string]any{}})

	if err != nil || res.IsError {
		t.Fatalf("call_tool(%s) = %v, %v; want the fixture's answer", want, res, err)
	}
	if got := e.waitCall(1); got.AgentName != want || got.Profile != "finder" || got.Outcome != "ok" || got.Decision != "allowed" {
		t.Errorf("audited = %+v; want %s of profile finder, allowed, ok", got, want)
	}
	if _, err := c.call("call_tool", map[string]any{"name": "synth__nope_nothing"}); err == nil || !strings.Contains(err.Error(), "no tool is offered") {
		t.Errorf("call_tool of a tool there is none of = %v; want refused as unknown", err)
	}
	if _, err := c.call(want, map[string]any{}); err == nil {
		t.Errorf("a direct call of %s, found only by search = nil; want refused", want)
	}
	if _, err := c.call("synth__"+pin, map[string]any{}); err != nil {
		t.Errorf("a direct call of the pinned %s = %v", pin, err)
	}

	// A catalog change outside the pinned tools leaves the search-mode list
	// as it was: its agent is not told, while a default agent is.
	d := connectMCP(t, srv.URL, testMCPToken)
	e.setPolicy("synth", strings.TrimPrefix(want, "synth__"), "deny")
	waitFor(t, 5*time.Second, "the default agent told of the change", func() bool { return d.listChanged.Load() > 0 })
	if n := c.listChanged.Load(); n != 0 {
		t.Errorf("the search-mode agent heard %d list changes; want none", n)
	}
	if _, err := c.call("call_tool", map[string]any{"name": want}); err == nil {
		t.Errorf("call_tool of %s once denied = nil; want refused", want)
	}
	if res, err := c.call("search_tools", map[string]any{"query": "zxqv blorft quux"}); err != nil || text(res) != `{"tools":[]}` {
		t.Errorf("search_tools(nonsense) = %s, %v; want an empty list", text(res), err)
	}
}
