package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The tools the conformance suite's tasks scenarios (SEP-2663, the
// io.modelcontextprotocol/tasks extension) call by name. The suite holds
// the server it tests to run them as tasks; behind Switchboard, it is
// Switchboard that does (its /mcp creates the task and calls the tool),
// so here each is a plain tool that declares its task support and works
// as the suite's reference server's does. Each is optional, though the
// suite wants failing_job and test_tool_with_task to run only as tasks:
// a server's task-only tool has its result taken with tasks/result up to
// 2025-11-25 and inlined in tasks/get at 2026-07-28 (SEP-2663), and
// mcp-go's server (v1.2.1), which the fixture is, removes tasks/result
// at 2026-07-28 without inlining the result, so no client could have a
// 2026-07-28 task-only tool's result from it.
func taskTools() []server.ServerTool {
	tool := func(name, description string, support mcp.TaskSupport, h server.ToolHandlerFunc, opts ...mcp.ToolOption) server.ServerTool {
		opts = append([]mcp.ToolOption{mcp.WithDescription(description)}, opts...)
		if support != "" {
			opts = append(opts, mcp.WithTaskSupport(support))
		}
		return server.ServerTool{Tool: mcp.NewTool(name, opts...), Handler: h}
	}
	return []server.ServerTool{
		tool("greet", "Greets someone by name.", "", func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(fmt.Sprintf("Hello, %s!", req.GetString("name", "World"))), nil
		}, mcp.WithString("name")),
		tool("slow_compute", "Works for the given seconds, saying so (progress) after each, then answers.", mcp.TaskSupportOptional, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			seconds := req.GetInt("seconds", 0)
			for i := 1; i <= seconds; i++ {
				if err := pause(ctx, time.Second); err != nil {
					return nil, err
				}
				if m := req.Params.Meta; m != nil && m.ProgressToken != nil {
					_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
						"progressToken": m.ProgressToken, "progress": i, "total": seconds, "message": fmt.Sprintf("second %d of %d", i, seconds)})
				}
			}
			return mcp.NewToolResultText(fmt.Sprintf("Computed %s after %d s", req.GetString("label", ""), seconds)), nil
		}, mcp.WithInteger("seconds", mcp.Min(0), mcp.Max(120)), mcp.WithString("label")),
		tool("failing_job", "Works a second, then fails as a tool does.", mcp.TaskSupportOptional, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			time.Sleep(time.Second)
			return mcp.NewToolResultError("the job failed"), nil
		}),
		tool("protocol_error_job", "Fails with a protocol error.", mcp.TaskSupportOptional, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("the job broke down")
		}),
		tool("confirm_delete", "Asks the person to confirm, then deletes the file (pretends to).", mcp.TaskSupportOptional, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name := req.GetString("filename", "")
			res := server.ElicitationResponse(req.Params.InputResponses, "confirm")
			if res == nil {
				return server.NewInputRequestBuilder("").Elicit("confirm", mcp.ElicitationParams{
					Message: "Delete " + name + "?", RequestedSchema: confirmForm}).ToolResult(), nil
			}
			if content, _ := res.Content.(map[string]any); res.Action != mcp.ElicitationResponseActionAccept || content["ok"] != true {
				return mcp.NewToolResultText("Kept " + name), nil
			}
			return mcp.NewToolResultText("Deleted " + name), nil
		}, mcp.WithString("filename")),
		tool("multi_input", "Asks two questions at once, then answers both.", mcp.TaskSupportOptional, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			first := server.ElicitationResponse(req.Params.InputResponses, "first")
			second := server.ElicitationResponse(req.Params.InputResponses, "second")
			if first == nil || second == nil {
				return server.NewInputRequestBuilder("").
					Elicit("first", mcp.ElicitationParams{Message: "First?", RequestedSchema: formOf("value")}).
					Elicit("second", mcp.ElicitationParams{Message: "Second?", RequestedSchema: formOf("value")}).ToolResult(), nil
			}
			return mcp.NewToolResultText(fmt.Sprintf("first: %s, second: %s", answered(first, "value"), answered(second, "value"))), nil
		}),
		tool("test_tool_with_task", "Asks the person's name, then answers with it (a task).", mcp.TaskSupportOptional, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if res := server.ElicitationResponse(req.Params.InputResponses, "user_name"); res != nil {
				return mcp.NewToolResultText("Task done for " + answered(res, "name")), nil
			}
			return server.NewInputRequestBuilder("").Elicit("user_name", mcp.ElicitationParams{
				Message: "What is your name?", RequestedSchema: formOf("name")}).ToolResult(), nil
		}),
	}
}
