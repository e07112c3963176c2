package gateway

import (
	"slices"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

// The list_changed notifications, as viewHashes keys.
var toolsChanged, promptsChanged = listChangedMethods[0], listChangedMethods[2]

func testEntries() []offerEntry {
	mk := func(server, tool string, p store.Policy) offerEntry {
		name := server + "__" + tool
		return offerEntry{tool: OfferedTool{AgentName: name, ServerID: server, Tool: tool, Policy: p},
			def: offeredTool{def: []byte(`{"name":"` + name + `"}`), inputSchema: []byte(`{"type":"object"}`)}}
	}
	return []offerEntry{mk("a", "read", store.PolicyAllow), mk("a", "write", store.PolicyAsk), mk("b", "read", store.PolicyAllow)}
}

// A profile's view: the tools its mode takes, each at the stricter of
// its policy and the override, those denied left out; its list is the
// definitions of those, in the offer's order.
func TestBuildView(t *testing.T) {
	aRead, aWrite, bRead := store.ToolRef{ServerID: "a", Tool: "read"}, store.ToolRef{ServerID: "a", Tool: "write"}, store.ToolRef{ServerID: "b", Tool: "read"}
	for _, tc := range []struct {
		name     string
		p        store.Profile
		want     []string
		policies []store.Policy
		list     string
	}{
		{"default", store.Default(), []string{"a__read", "a__write", "b__read"}, []store.Policy{"allow", "ask", "allow"},
			`[{"name":"a__read"},{"name":"a__write"},{"name":"b__read"}]`},
		{"servers", store.Profile{ID: "s", Mode: store.ProfileServers, Servers: []string{"b"}}, []string{"b__read"}, []store.Policy{"allow"}, `[{"name":"b__read"}]`},
		{"tools", store.Profile{ID: "t", Mode: store.ProfileTools, Tools: []store.ToolRef{aWrite, bRead}}, []string{"a__write", "b__read"}, []store.Policy{"ask", "allow"},
			`[{"name":"a__write"},{"name":"b__read"}]`},
		{"overrides", store.Profile{ID: "o", Mode: store.ProfileAll, Overrides: map[store.ToolRef]store.Policy{aRead: store.PolicyAsk, aWrite: store.PolicyDeny}},
			[]string{"a__read", "b__read"}, []store.Policy{"ask", "allow"}, `[{"name":"a__read"},{"name":"b__read"}]`},
		{"nothing", store.Profile{ID: "n", Mode: store.ProfileServers, Servers: []string{"c"}}, nil, nil, `[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := buildView(tc.p, testEntries())
			var names []string
			var policies []store.Policy
			for _, o := range v.offered {
				names = append(names, o.AgentName)
				policies = append(policies, o.Policy)
				if _, ok := v.tools[o.AgentName]; !ok {
					t.Errorf("offered %s is not among the view's tools", o.AgentName)
				}
			}
			if !slices.Equal(names, tc.want) || !slices.Equal(policies, tc.policies) || len(v.tools) != len(tc.want) {
				t.Errorf("buildView(%s) offers %v at %v (%d tools); want %v at %v", tc.name, names, policies, len(v.tools), tc.want, tc.policies)
			}
			if string(v.list) != tc.list {
				t.Errorf("buildView(%s).list = %s; want %s", tc.name, v.list, tc.list)
			}
		})
	}
}

// A change tells only the views it changed: an override from allow to
// ask leaves a view's list as it was, a tool outside a view leaves it.
func TestViewsChanged(t *testing.T) {
	p := store.Profile{ID: "p", Mode: store.ProfileServers, Servers: []string{"b"}}
	offerOf := func(entries []offerEntry, profiles ...store.Profile) *offer {
		o := &offer{views: map[string]*view{}}
		for _, p := range profiles {
			o.views[p.ID] = buildView(p, entries)
		}
		return o
	}
	old := offerOf(testEntries(), store.Default(), p)
	fewer := testEntries()[:2]   // b__read gone
	outside := testEntries()[1:] // a__read gone: outside p
	if now := offerOf(outside, store.Default(), p); now.view("p").hash != old.view("p").hash || now.view("default").hash == old.view("default").hash {
		t.Errorf("a tool outside p gone: p's view changed or the default's did not")
	}
	if now := offerOf(fewer, store.Default(), p); now.view("p").hash == old.view("p").hash {
		t.Errorf("p's only tool gone: its view did not change")
	}
	asked := p
	asked.Overrides = map[store.ToolRef]store.Policy{{ServerID: "b", Tool: "read"}: store.PolicyAsk}
	if now := offerOf(testEntries(), store.Default(), asked); viewsChanged(old, now, toolsChanged) {
		t.Errorf("an ask override changed a view's list; only a deny leaves a tool out")
	}
	if now := offerOf(testEntries(), store.Default(), p, store.Profile{ID: "q", Mode: store.ProfileAll}); !viewsChanged(old, now, toolsChanged) {
		t.Errorf("a new profile: viewsChanged = false")
	}
	if got := old.view("gone"); len(got.tools) != 0 || string(got.list) != "[]" {
		t.Errorf("view of a profile there is none of = %+v; want nothing offered", got)
	}
}

// A session is told of a list change only when its view's hash moved
// since it was last told (or started); a stream of no live session
// always is.
func TestSessionViewChanged(t *testing.T) {
	m := newMCPSessions()
	sid := m.Generate()
	m.noteView(sid, viewHashes{toolsChanged: "h1"})
	for i, tc := range []struct {
		now  string
		want bool
	}{{"h1", false}, {"h2", true}, {"h2", false}, {"h1", true}} {
		if got := m.viewChanged(sid, toolsChanged, viewHashes{toolsChanged: tc.now}); got != tc.want {
			t.Errorf("step %d: viewChanged(%s) = %v; want %v", i, tc.now, got, tc.want)
		}
	}
	if !m.viewChanged("not-a-session", toolsChanged, viewHashes{toolsChanged: "h1"}) {
		t.Error("viewChanged of no live session = false; want true")
	}
	s := &viewSeen{last: viewHashes{toolsChanged: "h1", promptsChanged: "p1"}}
	at := func(tools, prompts string) viewHashes {
		return viewHashes{toolsChanged: tools, promptsChanged: prompts}
	}
	if s.changed(toolsChanged, at("h1", "p2")) || !s.changed(toolsChanged, at("h2", "p2")) || s.changed(toolsChanged, at("h2", "p2")) {
		t.Error("viewSeen: want told of the tools only when their hash moved")
	}
	if !s.changed(promptsChanged, at("h2", "p2")) || s.changed(promptsChanged, at("h2", "p2")) {
		t.Error("viewSeen: want told of the prompts once when their hash moved, whatever the tools did")
	}
}

// Only the notification itself is a list change: a tool's result that
// holds its words (in structured content, as an upstream may send) is
// not, and is never dropped.
func TestIsListChanged(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    string
		want string
	}{
		{"the notification", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n", toolsChanged},
		{"with params", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{}}\n\n", toolsChanged},
		{"prompts", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/prompts/list_changed\"}\n\n", promptsChanged},
		{"a result holding its words", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"structuredContent\":{\"method\":\"notifications/tools/list_changed\"}}}\n\n", ""},
		{"another notification", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n", ""},
		{"no data line", `{"method":"notifications/tools/list_changed"}`, ""},
	} {
		if got := isListChanged([]byte(tc.p)); got != tc.want {
			t.Errorf("isListChanged(%s) = %q; want %q", tc.name, got, tc.want)
		}
	}
}
