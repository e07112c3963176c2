// Package toolsearchtest holds what measures toolsearch's quality: the
// catalogs of two real MCP servers as they answered tools/list, a
// synthetic 1,000-tool catalog, queries labelled with the tools that
// answer them, and the recall@k and MRR of an index over them. The tests
// of toolsearch and `make bench` (cmd/bench) use it.
package toolsearchtest

import (
	"embed"
	"encoding/json"
	"fmt"

	"github.com/switchboard-dev/switchboard/internal/toolsearch"
	"github.com/switchboard-dev/switchboard/store"
)

//go:embed testdata/*.json
var testdata embed.FS

// RealServers are the servers whose tools/list is kept in testdata, by
// the server id their tools are offered under: the npm packages
// @modelcontextprotocol/server-everything and server-filesystem at the
// version e2e/package.json pins (see TestRealCatalogs, which checks them
// against the installed servers; -update rewrites them).
var RealServers = []string{"everything", "filesystem"}

// listedTool is a tool as tools/list gave it, the fields the index reads.
type listedTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// RealCatalog is the catalog of the real servers, offered under the ids
// in RealServers.
func RealCatalog() ([]toolsearch.Tool, error) {
	var all []toolsearch.Tool
	for _, id := range RealServers {
		data, err := testdata.ReadFile("testdata/" + id + ".tools.json")
		if err != nil {
			return nil, err
		}
		var raws []json.RawMessage
		if err := json.Unmarshal(data, &raws); err != nil {
			return nil, fmt.Errorf("%s.tools.json: %w", id, err)
		}
		for _, raw := range raws {
			var t listedTool
			if err := json.Unmarshal(raw, &t); err != nil {
				return nil, fmt.Errorf("%s.tools.json: %w", id, err)
			}
			all = append(all, offered(id, t, raw))
		}
	}
	return all, nil
}

// offered is t of server id as the index gets it: named with its agent
// name, the definition as sent but renamed.
func offered(id string, t listedTool, raw json.RawMessage) toolsearch.Tool {
	agent := store.AgentName(id, t.Name)
	var fields map[string]json.RawMessage
	def := raw
	if json.Unmarshal(raw, &fields) == nil {
		fields["name"], _ = json.Marshal(agent)
		if b, err := json.Marshal(fields); err == nil {
			def = b
		}
	}
	return toolsearch.Tool{
		AgentName: agent, Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, Definition: def,
	}
}

// Query is one labelled query: a task in words, and the agent names of
// the tools that do it (any one of them is a right answer).
type Query struct {
	Query string   `json:"query"`
	Want  []string `json:"want"`
}

// QuerySet is a catalog's labelled queries, and queries that should find
// nothing at all.
type QuerySet struct {
	Queries []Query  `json:"queries"`
	Nothing []string `json:"nothing"`
}

// Queries reads the labelled queries of a catalog: "real" or "synthetic".
func Queries(catalog string) (QuerySet, error) {
	var qs QuerySet
	data, err := testdata.ReadFile("testdata/" + catalog + ".queries.json")
	if err != nil {
		return qs, err
	}
	if err := json.Unmarshal(data, &qs); err != nil {
		return qs, fmt.Errorf("%s.queries.json: %w", catalog, err)
	}
	return qs, nil
}
