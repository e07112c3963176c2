package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The tools -mode asks serves besides the generated ones: each asks its
// client something while it handles the call (a 2025-era server's
// requests), and answers what the client answered, or the client's
// refusal as a tool error. ask_model asks for a model's message
// (sampling/createMessage), ask_person for a form's content and ask_url
// to visit a URL (elicitation/create, form and URL mode), list_roots for
// the client's roots (roots/list). log_steps tells rather than asks: a
// log message (notifications/message) at three levels, which the client
// gets at the level it asked for.

// asksTools returns the asking tools with their handlers.
func asksTools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcp.NewTool("ask_model", mcp.WithDescription("Asks the client's model to complete a prompt, and answers its text."),
			mcp.WithString("prompt", mcp.Required(), mcp.Description("What to ask the model."))), Handler: askModel},
		{Tool: mcp.NewTool("ask_person", mcp.WithDescription("Asks the person for their name with a form, and answers what they gave."),
			mcp.WithInteger("delay_ms", mcp.DefaultNumber(0), mcp.Min(0), mcp.Max(10000), mcp.Description("Pause before asking, in milliseconds."))), Handler: askPerson},
		{Tool: mcp.NewTool("ask_url", mcp.WithDescription("Asks the person to visit a URL, and answers what they did.")), Handler: askURL},
		{Tool: mcp.NewTool("list_roots", mcp.WithDescription("Asks the client for its roots, and answers their URIs, one a line.")), Handler: listRoots},
		{Tool: mcp.NewTool("log_steps", mcp.WithDescription("Works a moment, sends a log message at each of the levels debug, info and warning, then answers done.")), Handler: logSteps},
	}
}

// Each tool asks as a 2026-07-28 server does, with an input_required
// result answered on the call's retry; mcp-go sends a client of an
// earlier revision the same question as a request of its own during the
// call, and calls the handler again with the answer.

func askModel(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res := server.SamplingResponse(req.Params.InputResponses, "model")
	if res == nil {
		if _, asked := req.Params.InputResponses["model"]; asked {
			return mcp.NewToolResultError("sampling failed: the client's answer is not a message"), nil
		}
		return server.NewInputRequestBuilder("").Sample("model", mcp.CreateMessageParams{
			Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(req.GetString("prompt", ""))}},
			MaxTokens: 100,
		}).ToolResult(), nil
	}
	// The content arrives decoded as the transport left it (a TextContent,
	// or a map): read its text from its JSON.
	var text struct{ Text string }
	raw, _ := json.Marshal(res.Content)
	_ = json.Unmarshal(raw, &text)
	return mcp.NewToolResultText(res.Model + ": " + text.Text), nil
}

func askPerson(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res := server.ElicitationResponse(req.Params.InputResponses, "name")
	if res == nil {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(req.GetInt("delay_ms", 0)) * time.Millisecond):
		}
		return server.NewInputRequestBuilder("").Elicit("name", mcp.ElicitationParams{
			Message: "What is your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
				"name": map[string]any{"type": "string", "description": "Your name"}}, "required": []string{"name"}},
		}).ToolResult(), nil
	}
	content, _ := json.Marshal(res.Content)
	return mcp.NewToolResultText(string(res.Action) + " " + string(content)), nil
}

func askURL(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res := server.ElicitationResponse(req.Params.InputResponses, "visit")
	if res == nil {
		return server.NewInputRequestBuilder("").Elicit("visit", mcp.ElicitationParams{
			Mode: mcp.ElicitationModeURL, Message: "Please sign the form.", ElicitationID: "fixture-1", URL: "https://example.com/sign",
		}).ToolResult(), nil
	}
	return mcp.NewToolResultText(string(res.Action)), nil
}

func listRoots(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res := server.RootsResponse(req.Params.InputResponses, "roots")
	if res == nil {
		return server.NewInputRequestBuilder("").Roots("roots").ToolResult(), nil
	}
	uris := make([]string, 0, len(res.Roots))
	for _, r := range res.Roots {
		uris = append(uris, r.URI)
	}
	return mcp.NewToolResultText(strings.Join(uris, "\n")), nil
}

func logSteps(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s := server.ServerFromContext(ctx)
	// Some work first: a client that reads a message sent right after
	// another request ended as that request's (Switchboard) gets these.
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(400 * time.Millisecond):
	}
	for _, level := range []mcp.LoggingLevel{mcp.LoggingLevelDebug, mcp.LoggingLevelInfo, mcp.LoggingLevelWarning} {
		_ = s.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(level, "fixture", map[string]any{"step": string(level)}))
	}
	// mcp-go writes notifications from a goroutine of its own: give the
	// last one time to go before the result.
	time.Sleep(100 * time.Millisecond)
	return mcp.NewToolResultText("done"), nil
}

// sampleRootsTool asks for a model's message and the client's roots in
// one go; -gated lists it only to a client that declares both.
var sampleRootsTool = server.ServerTool{
	Tool: mcp.NewTool("sample_roots", mcp.WithDescription("Asks the client's model for a message and the client for its roots, and answers both.")),
	Handler: func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		sampled := server.SamplingResponse(req.Params.InputResponses, "model")
		roots := server.RootsResponse(req.Params.InputResponses, "roots")
		if sampled == nil || roots == nil {
			return server.NewInputRequestBuilder("").Sample("model", mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("name a root")}},
				MaxTokens: 100,
			}).Roots("roots").ToolResult(), nil
		}
		return mcp.NewToolResultText(sampled.Model + fmt.Sprintf(" and %d roots", len(roots.Roots))), nil
	},
}

// variantTools is -variant's tool filter: log_steps is described
// otherwise to a client that declares sampling.
func variantTools(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	if clientCapsOf(ctx).Sampling == nil {
		return tools
	}
	out := slices.Clone(tools)
	for i, t := range out {
		if t.Name == "log_steps" {
			out[i].Description += " (A client that samples is told more.)"
		}
	}
	return out
}

// clientCapsOf is what the client of a request declared: the request's
// own capabilities at 2026-07-28, its session's before.
func clientCapsOf(ctx context.Context) mcp.ClientCapabilities {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern && info.ClientCapabilities != nil {
		return *info.ClientCapabilities
	}
	if cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		return cs.GetClientCapabilities()
	}
	return mcp.ClientCapabilities{}
}

// gatedTools is -gated's tool filter: each asking tool is listed only to
// a client that declares what it asks, as server-everything lists
// trigger-sampling-request only to one that declares sampling.
func gatedTools(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	caps := clientCapsOf(ctx)
	form := caps.Elicitation != nil && (caps.Elicitation.Form != nil || caps.Elicitation.URL == nil)
	declared := map[string]bool{
		"ask_model":    caps.Sampling != nil,
		"ask_person":   form,
		"ask_url":      caps.Elicitation != nil && caps.Elicitation.URL != nil,
		"list_roots":   caps.Roots != nil,
		"sample_roots": caps.Sampling != nil && caps.Roots != nil,
	}
	out := tools[:0:0]
	for _, t := range tools {
		if on, gated := declared[t.Name]; !gated || on {
			out = append(out, t)
		}
	}
	return out
}
