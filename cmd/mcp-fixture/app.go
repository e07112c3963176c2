package main

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// -app serves an MCP App (the io.modelcontextprotocol/ui extension): a
// ui:// resource holding an HTML page, and a tool whose _meta points at
// it (ui.resourceUri), which a client that renders apps shows with the
// tool's result.

// appURI is the app's resource.
const appURI = "ui://clock/app.html"

// appHTML is the app: a page that shows the time it is given.
const appHTML = `<!doctype html><html><head><meta charset="utf-8"><title>Clock</title></head>` +
	`<body><h1 id="clock">Clock app</h1><p>An MCP App served by the fixture.</p></body></html>`

// addApp adds the app's resource and tool to s (made with listedOptions).
func addApp(s *server.MCPServer) {
	s.AddResource(mcp.NewResource(appURI, "clock-app",
		mcp.WithResourceDescription("The clock app's page."), mcp.WithMIMEType("text/html;profile=mcp-app")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/html;profile=mcp-app", Text: appHTML}}, nil
		})
	tool := mcp.NewTool("show_clock", mcp.WithDescription("Shows the time in the clock app."))
	tool.Meta = &mcp.Meta{AdditionalFields: map[string]any{"ui": map[string]any{"resourceUri": appURI}}}
	s.AddTool(tool, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("12:00"), nil
	})
}
