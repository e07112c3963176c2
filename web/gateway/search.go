package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/toolsearch"
	"github.com/switchboard-dev/switchboard/store"
)

// A profile in search mode (store.Profile.Search) lists search_tools,
// call_tool and its pinned tools instead of its view's tools. Each such
// profile has a toolsearch.Searcher of its view, replaced when the view's
// tools change (see indexViews); search_tools searches it, and call_tool
// routes a call of the tool it names along the direct-call path (call.go),
// with every check a direct call has. The listed tools change only with
// the pinned ones, so a catalog change tells a search-mode agent nothing.

// searchIndex is the Searcher of one search-mode profile and the hash of
// the view's tools it was built from.
type searchIndex struct {
	s    *toolsearch.Searcher
	hash string
}

// searchModeTools are the definitions of search_tools and call_tool, as
// listed, with their input schemas.
var searchModeTools = func() []offeredTool {
	var out []offeredTool
	for _, t := range []mcp.Tool{toolsearch.SearchTool(), toolsearch.CallTool()} {
		def, err := json.Marshal(t)
		if err != nil {
			panic(err)
		}
		var fields struct {
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal(def, &fields); err != nil {
			panic(err)
		}
		out = append(out, offeredTool{def: def, inputSchema: fields.InputSchema})
	}
	return out
}()

// searchList sets the list and the listed tools of v, a search-mode view
// whose tools are entries (those of the view): search_tools, call_tool
// and the pinned tools.
func searchList(v *view, entries []offerEntry) {
	defs := [][]byte{searchModeTools[0].def, searchModeTools[1].def}
	v.tools = map[string]json.RawMessage{toolsearch.SearchToolName: searchModeTools[0].inputSchema, toolsearch.CallToolName: searchModeTools[1].inputSchema}
	for _, en := range entries {
		for _, ref := range v.profile.Pinned {
			if ref.ServerID == en.tool.ServerID && ref.Tool == en.tool.Tool {
				if en.needs != nil {
					v.asking = append(v.asking, askingTool{name: en.tool.AgentName, def: en.def.def, needs: en.needs})
				} else {
					defs = append(defs, en.def.def)
				}
				v.tools[en.tool.AgentName] = en.def.inputSchema
			}
		}
	}
	v.list = append(append([]byte{'['}, joinDefs(defs)...), ']')
	v.hash = listHash(v.list, v.asking)
}

func joinDefs(defs [][]byte) []byte {
	n := len(defs)
	for _, d := range defs {
		n += len(d)
	}
	out := make([]byte, 0, n)
	for i, d := range defs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, d...)
	}
	return out
}

// indexViews gives each search-mode view its profile's Searcher, replaced
// with the view's tools if they changed, and closes the Searchers of
// profiles no longer in search mode (buildMu held).
func (e *Endpoint) indexViews(views map[string]*view) {
	select {
	case <-e.quit: // closed (or closing): no index is made that closeSearchers would miss
		return
	default:
	}
	for id, v := range views {
		if !v.profile.Search {
			continue
		}
		idx := e.searchers[id]
		if idx == nil {
			idx = &searchIndex{s: &toolsearch.Searcher{}}
			e.searchers[id] = idx
		}
		v.searcher = idx.s
		if idx.hash == v.allHash {
			continue
		}
		tools := make([]toolsearch.Tool, 0, len(v.offered))
		for _, t := range v.offered {
			en := v.entries[t.AgentName]
			tools = append(tools, toolsearch.Tool{AgentName: t.AgentName, Name: t.Tool, Title: t.Title, Description: en.description,
				InputSchema: en.inputSchema, Definition: en.def})
		}
		e.searchRev++
		if err := idx.s.Replace(e.searchRev, tools); err != nil {
			e.log.Error("index a profile's tools for search", "profile", id, "err", err)
			continue
		}
		idx.hash = v.allHash
	}
	for id, idx := range e.searchers {
		if v, ok := views[id]; !ok || !v.profile.Search {
			idx.s.Close()
			delete(e.searchers, id)
		}
	}
}

// closeSearchers closes every profile's Searcher (when the endpoint
// closes).
func (e *Endpoint) closeSearchers() {
	e.buildMu.Lock()
	defer e.buildMu.Unlock()
	for id, idx := range e.searchers {
		idx.s.Close()
		delete(e.searchers, id)
	}
}

// handleSearch is the mcp-go handler of search_tools: the best matches
// of the query among the tools of the agent's view (an empty list if
// none match).
func (e *Endpoint) handleSearch(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	o, err := e.current()
	if err != nil {
		return nil, errors.New("Switchboard could not read its catalog; its log has the details")
	}
	v := o.view(profileOf(ctx))
	if !v.profile.Search || v.searcher == nil {
		return nil, &refusedError{reason: fmt.Sprintf(noSuchTool+" %q", toolsearch.SearchToolName), protocol: true}
	}
	hits, x, err := v.searcher.Search(req.GetString("query", ""), req.GetInt("limit", toolsearch.DefaultLimit))
	if err != nil {
		e.log.Error("search a profile's tools", "profile", v.profile.ID, "err", err)
		return nil, errors.New("Switchboard could not search its tools; its log has the details")
	}
	return toolsearch.Result(x, v.searchHits(hits, e.callerAsks(ctx))) // no hits (x nil before the first index) is an empty list
}

// callThrough is the call that call_tool asks for: the tool it names,
// with its arguments, as a direct call of that tool.
func callThrough(cr callRequest) callRequest {
	args, _ := cr.Args.(map[string]any)
	name, _ := args["name"].(string)
	cr.AgentName, cr.Args, cr.Searched = name, args["arguments"], true
	if cr.Args == nil {
		cr.Args = map[string]any{}
	}
	return cr
}

// listedIn reports whether ref is listed to an agent of the profile (not
// only found by search): any tool of the view, unless the profile is in
// search mode and ref is not pinned.
func listedIn(p store.Profile, ref store.ToolRef) bool {
	if !p.Search {
		return true
	}
	for _, r := range p.Pinned {
		if r == ref {
			return true
		}
	}
	return false
}
