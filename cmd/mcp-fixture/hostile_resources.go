package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// -mode hostile-resources declares resources and prompts and abuses each
// of their lists: resources/list lists one new resource per page with a
// new cursor, for ever (the page bound must stop it);
// resources/templates/list answers a JSON-RPC error (a warning, not a
// failed verification); prompts/list lists a sound prompt and one whose
// description is 1 MiB of injection (kept cut, flagged).
func (p *rawPeer) hostileResources(m inbound) error {
	switch m.Method {
	case string(mcp.MethodResourcesList):
		var params struct {
			Cursor string `json:"cursor"`
		}
		json.Unmarshal(m.Params, &params)
		n := 0
		fmt.Sscanf(params.Cursor, "page-%d", &n)
		return p.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{
			"resources":  []any{map[string]any{"uri": fmt.Sprintf("file:///page/%d", n), "name": fmt.Sprintf("page %d", n)}},
			"nextCursor": fmt.Sprintf("page-%d", n+1),
		}})
	case string(mcp.MethodResourcesTemplatesList):
		return p.sendError(m.ID, mcp.INTERNAL_ERROR, "templates \x1b[31mbroken\x1b[0m <b>today</b>")
	}
	huge := injectedDescription + strings.Repeat(" padding", (1<<20)/8)
	return p.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{
		"prompts": []any{
			map[string]any{"name": "summarize", "description": "Summarizes a text.",
				"arguments": []any{map[string]any{"name": "text", "required": true}}},
			map[string]any{"name": "huge", "description": huge},
		},
	}})
}
