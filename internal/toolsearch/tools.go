package toolsearch

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// The names of the two tools an agent sees in search mode.
const (
	SearchToolName = "search_tools"
	CallToolName   = "call_tool"
)

// searchOutputSchema is the shape of search_tools' structured result.
const searchOutputSchema = `{"type":"object","properties":{"tools":{"type":"array","description":"The matching tools, best first, each a full MCP tool definition whose name is the name to pass to call_tool.","items":{"type":"object"}}},"required":["tools"]}`

// SearchTool is the search_tools definition offered in search mode.
func SearchTool() mcp.Tool {
	return mcp.NewTool(SearchToolName,
		mcp.WithToolTitle("Search tools"),
		mcp.WithDescription("Finds the tools available to you that fit a task. "+
			"Most tools are not listed directly: describe what you want to do in a few plain words "+
			"(for example \"read a file's contents\" or \"create an issue in the tracker\") and this returns "+
			"the best matching tools, best first, each with its full definition: its name, description and input schema. "+
			"Then call the one you chose with call_tool, passing that name and arguments that fit its input schema. "+
			"An empty list means no tool matches; try other words rather than guessing a name."),
		mcp.WithString("query",
			mcp.Required(),
			mcp.MaxLength(MaxQueryBytes),
			mcp.Description("What you want to do, in plain words (a task, not a tool name).")),
		mcp.WithInteger("limit",
			mcp.Min(1), mcp.Max(MaxLimit),
			mcp.Description(fmt.Sprintf("How many tools to return at most (default %d, at most %d).", DefaultLimit, MaxLimit))),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
		mcp.WithRawOutputSchema(json.RawMessage(searchOutputSchema)),
	)
}

// CallTool is the call_tool definition offered in search mode. A call
// through it gets every check a direct call of the named tool gets
// (policy, approval, argument validation, audit); its hints are those of
// the most dangerous tool it may reach.
func CallTool() mcp.Tool {
	return mcp.NewTool(CallToolName,
		mcp.WithToolTitle("Call a tool"),
		mcp.WithDescription("Calls one of the tools found with search_tools. "+
			"Pass the tool's name exactly as search_tools returned it, and its arguments as an object that fits that tool's input schema. "+
			"The result is the tool's own result. The call is checked as a direct call of that tool would be: "+
			"it may need a person's approval, or be refused."),
		mcp.WithString("name",
			mcp.Required(),
			mcp.Description("The tool's name, as search_tools returned it (for example \"filesystem__read_text_file\").")),
		mcp.WithObject("arguments",
			mcp.Description("The tool's arguments, fitting its input schema; omit or {} for a tool without any."),
			mcp.AdditionalProperties(true)),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(true),
	)
}

// SearchResult is the structured result of search_tools.
type SearchResult struct {
	Tools []json.RawMessage `json:"tools"`
}

// Result renders hits as the result of search_tools: the full definition
// of each hit's tool in x (its Definition, or one made of its agent name,
// title, description and input schema), best first, as structuredContent
// and the same JSON as text content. A hit whose tool x does not have is
// left out. No hits is an empty list, not an error.
func Result(x *Index, hits []Hit) (*mcp.CallToolResult, error) {
	res := SearchResult{Tools: make([]json.RawMessage, 0, len(hits))}
	for _, h := range hits {
		t, ok := x.Tool(h.AgentName)
		if !ok {
			continue
		}
		def, err := definition(t)
		if err != nil {
			return nil, err
		}
		res.Tools = append(res.Tools, def)
	}
	text, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultStructured(res, string(text)), nil
}

// definition is the tool as agents get it.
func definition(t Tool) (json.RawMessage, error) {
	if len(t.Definition) > 0 {
		return t.Definition, nil
	}
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	def := struct {
		Name        string          `json:"name"`
		Title       string          `json:"title,omitempty"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}{t.AgentName, t.Title, t.Description, schema}
	b, err := json.Marshal(def)
	if err != nil {
		return nil, fmt.Errorf("toolsearch: definition of %s: %w", t.AgentName, err)
	}
	return b, nil
}
