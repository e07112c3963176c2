package profiles

import (
	"net/url"
	"reflect"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

// A form names tools and overrides by key (server id, a space, tool
// name; tool names may hold spaces); what its mode does not use is
// dropped, and the empty override is none; search mode is a checkbox,
// pinned tools are named by key.
func TestFromForm(t *testing.T) {
	form := url.Values{"id": {" p "}, "name": {" P "}, "mode": {"tools"}, "server": {"a"},
		"tool": {"a read", "b two words", "bad"}, "override": {"", "ask a read", "deny b two words", "deny nokey"},
		"search": {"on"}, "pinned": {"b two words", "nokey"}}
	got := clean(fromForm(form))
	read, two := store.ToolRef{ServerID: "a", Tool: "read"}, store.ToolRef{ServerID: "b", Tool: "two words"}
	want := store.Profile{ID: "p", Name: "P", Mode: store.ProfileTools, Tools: []store.ToolRef{read, two},
		Overrides: map[store.ToolRef]store.Policy{read: store.PolicyAsk, two: store.PolicyDeny}, Search: true, Pinned: []store.ToolRef{two}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("clean(fromForm(%v)) = %+v; want %+v", form, got, want)
	}
	form.Set("mode", "servers")
	if got := clean(fromForm(form)); got.Tools != nil || !reflect.DeepEqual(got.Servers, []string{"a"}) {
		t.Errorf("servers mode keeps tools %v, servers %v; want no tools, server a", got.Tools, got.Servers)
	}
}
