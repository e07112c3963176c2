package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// archetype is a template for a family of generated tools. Tool i is built
// from archetypes[i%len(archetypes)], so the same index always yields the
// same definition.
type archetype struct {
	// summary is the first sentence of the tool description.
	summary string
	// annotations are the behaviour hints advertised for the tool.
	readOnly, destructive, idempotent, openWorld bool
	// options add the input schema properties, in declaration order.
	options []mcp.ToolOption
}

// archetypes lists the tool families. Their input schemas use 2 to 4
// properties of different types and their annotations differ, so that a
// client sees a realistic mix of read-only, destructive and open-world tools.
var archetypes = []archetype{
	{
		summary:    "Searches the record catalogue for entries matching a free-text query.",
		readOnly:   true,
		idempotent: true,
		options: []mcp.ToolOption{
			mcp.WithString("query", mcp.Required(), mcp.Description("Free-text search query.")),
			mcp.WithInteger("limit", mcp.Min(1), mcp.Description("Maximum number of results to return.")),
			mcp.WithBoolean("include_archived", mcp.Description("Whether archived records are included.")),
		},
	},
	{
		summary:    "Fetches a document from a remote URL and returns its contents.",
		readOnly:   true,
		idempotent: true,
		openWorld:  true,
		options: []mcp.ToolOption{
			mcp.WithString("url", mcp.Required(), mcp.Description("Absolute URL of the document to fetch.")),
			mcp.WithInteger("timeout_seconds", mcp.Min(1), mcp.Description("How long to wait for the remote server.")),
			mcp.WithString("format", mcp.Enum("json", "text", "html"), mcp.Description("Representation to return.")),
		},
	},
	{
		summary: "Creates a new work item with the given title and priority.",
		options: []mcp.ToolOption{
			mcp.WithString("title", mcp.Required(), mcp.Description("Short title of the work item.")),
			mcp.WithString("priority", mcp.Required(), mcp.Enum("low", "normal", "high"), mcp.Description("Priority of the work item.")),
			mcp.WithInteger("estimate_hours", mcp.Min(0), mcp.Description("Estimated effort in hours.")),
			mcp.WithBoolean("notify_owner", mcp.Description("Whether the owner is notified.")),
		},
	},
	{
		summary:     "Permanently deletes a record by its identifier.",
		destructive: true,
		idempotent:  true,
		options: []mcp.ToolOption{
			mcp.WithString("id", mcp.Required(), mcp.Description("Identifier of the record to delete.")),
			mcp.WithBoolean("force", mcp.Description("Delete even if other records still reference it.")),
		},
	},
	{
		summary:   "Sends a message to a chat channel on an external service.",
		openWorld: true,
		options: []mcp.ToolOption{
			mcp.WithString("channel", mcp.Required(), mcp.Description("Name of the destination channel.")),
			mcp.WithString("message", mcp.Required(), mcp.Description("Text of the message.")),
			mcp.WithString("urgency", mcp.Enum("info", "warning", "critical"), mcp.Description("How prominently the message is shown.")),
		},
	},
	{
		summary:    "Computes a summary statistic over a dataset for a trailing time window.",
		readOnly:   true,
		idempotent: true,
		options: []mcp.ToolOption{
			mcp.WithString("dataset", mcp.Required(), mcp.Description("Name of the dataset.")),
			mcp.WithString("metric", mcp.Required(), mcp.Enum("mean", "median", "p95"), mcp.Description("Statistic to compute.")),
			mcp.WithInteger("window_days", mcp.Min(1), mcp.Description("Length of the trailing window in days.")),
		},
	},
	{
		summary:     "Overwrites the configuration value stored under a key.",
		destructive: true,
		options: []mcp.ToolOption{
			mcp.WithString("key", mcp.Required(), mcp.Description("Configuration key to overwrite.")),
			mcp.WithString("value", mcp.Required(), mcp.Description("New value for the key.")),
			mcp.WithBoolean("dry_run", mcp.Description("Report the change without applying it.")),
		},
	},
}

// toolName returns the name of the generated tool with index i.
func toolName(i int) string {
	return fmt.Sprintf("tool_%03d", i)
}

// generateTool returns the definition of the tool with index i. The result
// depends only on i.
func generateTool(i int) mcp.Tool {
	a := archetypes[i%len(archetypes)]
	opts := []mcp.ToolOption{
		mcp.WithToolTitle(fmt.Sprintf("Tool %03d", i)),
		mcp.WithDescription(fmt.Sprintf("%s This is generated fixture tool number %d.", a.summary, i)),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{
			ReadOnlyHint:    mcp.ToBoolPtr(a.readOnly),
			DestructiveHint: mcp.ToBoolPtr(a.destructive),
			IdempotentHint:  mcp.ToBoolPtr(a.idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(a.openWorld),
		}),
	}
	opts = append(opts, a.options...)
	return mcp.NewTool(toolName(i), opts...)
}

// generateTools returns the n generated tools, tool_000 first.
func generateTools(n int) []mcp.Tool {
	tools := make([]mcp.Tool, 0, n)
	for i := range n {
		tools = append(tools, generateTool(i))
	}
	return tools
}

// extraTool returns the tool that change-on-second-run adds from the
// second run on.
func extraTool() mcp.Tool {
	return mcp.NewTool("extra_tool",
		mcp.WithToolTitle("Extra Tool"),
		mcp.WithDescription("Reports the fixture's run counter. It only exists from the second run on."),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{
			ReadOnlyHint:    mcp.ToBoolPtr(true),
			DestructiveHint: mcp.ToBoolPtr(false),
			IdempotentHint:  mcp.ToBoolPtr(true),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		}),
		mcp.WithString("note", mcp.Description("Free-text note echoed back.")),
		mcp.WithBoolean("verbose", mcp.Description("Whether to include extra detail.")),
	)
}

// echoHandler answers tools/call with one text content holding the tool name
// and the JSON encoding of the call's arguments, for example
// `tool_003 {"id":"x"}`.
func echoHandler(name string) server.ToolHandlerFunc {
	return func(_ context.Context, request mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := request.GetArguments()
		if args == nil {
			args = map[string]any{}
		}
		encoded, err := json.Marshal(args)
		if err != nil {
			return mcp.NewToolResultErrorf("cannot encode arguments: %v", err), nil
		}
		return mcp.NewToolResultText(name + " " + string(encoded)), nil
	}
}

// serverTools pairs every tool with its echo handler.
func serverTools(tools []mcp.Tool) []server.ServerTool {
	out := make([]server.ServerTool, 0, len(tools))
	for _, t := range tools {
		out = append(out, server.ServerTool{Tool: t, Handler: echoHandler(t.Name)})
	}
	return out
}

// lastToolName returns the name that sorts last, which is the last tool
// mcp-go lists, or "" if there are no tools.
func lastToolName(tools []mcp.Tool) string {
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return names[len(names)-1]
}

// lastServed is lastToolName of the tools s serves now.
func lastServed(s *server.MCPServer) string {
	last := ""
	for name := range s.ListTools() {
		last = max(last, name)
	}
	return last
}
