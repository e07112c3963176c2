package gateway

import (
	"encoding/json"
	"log/slog"
	"slices"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/toolsearch"
	"github.com/switchboard-dev/switchboard/store"
)

// A search-mode view lists search_tools, call_tool and its pinned tools;
// its list (and so its hash) moves with the pinned tools only, while
// every tool of the view stays offered (for the preview and the index).
func TestBuildViewSearchMode(t *testing.T) {
	aRead, bRead := store.ToolRef{ServerID: "a", Tool: "read"}, store.ToolRef{ServerID: "b", Tool: "read"}
	p := store.Profile{ID: "s", Mode: store.ProfileAll, Search: true, Pinned: []store.ToolRef{bRead}}
	v := buildView(p, testEntries())
	var listed []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(v.list, &listed); err != nil {
		t.Fatalf("list %s: %v", v.list, err)
	}
	var names []string
	for _, l := range listed {
		names = append(names, l.Name)
	}
	if want := []string{toolsearch.SearchToolName, toolsearch.CallToolName, "b__read"}; !slices.Equal(names, want) || len(v.tools) != len(want) {
		t.Errorf("search view lists %v (%d tools); want %v", names, len(v.tools), want)
	}
	if len(v.offered) != 3 || len(v.entries) != 3 {
		t.Errorf("search view offers %d tools, %d entries; want 3, 3", len(v.offered), len(v.entries))
	}
	if fewer := buildView(p, testEntries()[1:]); fewer.hash != v.hash || fewer.allHash == v.allHash {
		t.Errorf("a tool not pinned gone: hash moved %v, all-tools hash moved %v; want false, true", fewer.hash != v.hash, fewer.allHash != v.allHash)
	}
	q := p
	q.Pinned = []store.ToolRef{aRead, bRead}
	if again := buildView(q, testEntries()); again.hash == v.hash {
		t.Error("another pinned tool: the list hash did not move")
	}
	for _, tc := range []struct {
		p    store.Profile
		ref  store.ToolRef
		want bool
	}{{store.Default(), aRead, true}, {p, aRead, false}, {p, bRead, true}} {
		if got := listedIn(tc.p, tc.ref); got != tc.want {
			t.Errorf("listedIn(%s, %v) = %v; want %v", tc.p.ID, tc.ref, got, tc.want)
		}
	}
}

// indexViews indexes each search-mode view, re-indexes it only when its
// tools change, and closes the index of a profile that left search mode.
func TestIndexViews(t *testing.T) {
	e := &Endpoint{searchers: map[string]*searchIndex{}, log: slog.Default()}
	defer e.closeSearchers()
	p := store.Profile{ID: "s", Mode: store.ProfileAll, Search: true}
	entries := testEntries()
	entries[1].def.description = "Writes a file's contents to the disk."
	views := map[string]*view{"default": buildView(store.Default(), entries), "s": buildView(p, entries)}
	e.indexViews(views)
	if len(e.searchers) != 1 || views["s"].searcher == nil || views["default"].searcher != nil {
		t.Fatalf("indexViews: %d searchers; want one, for s", len(e.searchers))
	}
	hits, _, err := views["s"].searcher.Search("write file contents", 5)
	if err != nil || len(hits) == 0 || hits[0].AgentName != "a__write" {
		t.Errorf("Search(write file contents) = %v, %v; want a__write first", hits, err)
	}
	if _, rev := views["s"].searcher.Current(); rev != 1 {
		t.Errorf("index revision %d; want 1", rev)
	}
	e.indexViews(map[string]*view{"s": buildView(p, entries)})
	if _, rev := e.searchers["s"].s.Current(); rev != 1 {
		t.Errorf("same tools: index revision %d; want 1 (not rebuilt)", rev)
	}
	e.indexViews(map[string]*view{"s": buildView(p, entries[1:])})
	if _, rev := e.searchers["s"].s.Current(); rev != 2 {
		t.Errorf("fewer tools: index revision %d; want 2", rev)
	}
	e.indexViews(map[string]*view{"s": buildView(store.Profile{ID: "s", Mode: store.ProfileAll}, entries)})
	if len(e.searchers) != 0 {
		t.Errorf("after leaving search mode: %d searchers; want none", len(e.searchers))
	}
}
