package discovery

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// MCP tasks (2025-11-25): a tool whose execution.taskSupport is
// "required" runs only as a task. Its call is sent with a task param; the
// server answers at once with the task (CreateTaskResult), works on it in
// the background, and hands the tool's result to tasks/result, which
// waits for it. Session.Call makes such a call for whoever calls the
// tool, so every agent can use it as an ordinary tool: the session waits
// for the task's result, passes each new status message on as the
// call's progress (WithCallProgress), relays what the server asks during
// the task like any call's questions (tasks/result is the call's stream:
// a server delivers them there), and cancels the task (tasks/cancel)
// when the call ends first. A task does not outlive its call: when the
// agent goes away, or Switchboard stops, the upstream task is cancelled.

// taskTTL is how long a server is asked to keep a task and its result:
// past the longest call (CallTimeout), so that the result is there.
const taskTTL = 30 * time.Minute

// taskPoll bounds how often and how seldom a task's status is read, for
// its status message (the server's pollInterval, kept within them).
const (
	minTaskPoll = 250 * time.Millisecond
	maxTaskPoll = 5 * time.Second
)

// taskCreateTimeout bounds the call that starts a task (answered at
// once, with the task), and taskCancelTimeout the tasks/cancel sent for
// a call that ended before its task.
const (
	taskCreateTimeout = 30 * time.Second
	taskCancelTimeout = 5 * time.Second
)

// requiresTask reports whether a tool definition says it runs only as a
// task.
func requiresTask(raw json.RawMessage) bool {
	var def struct {
		Execution struct {
			TaskSupport string `json:"taskSupport"`
		} `json:"execution"`
	}
	return json.Unmarshal(raw, &def) == nil && def.Execution.TaskSupport == string(mcp.TaskSupportRequired)
}

// taskMetaKey is where taskAnswer puts the task a task's call started,
// in the _meta of the tool result mcp-go's client gets instead.
const taskMetaKey = "dev.switchboard/task"

// taskAnswer is the answer to a tools/call as mcp-go's client gets it:
// the server's, but for a task's call answered with its task
// (CreateTaskResult), which the client would take for an empty tool
// result, the task in the _meta of one (see callAsTask).
func taskAnswer(req transport.JSONRPCRequest, resp *transport.JSONRPCResponse) *transport.JSONRPCResponse {
	if !taskCall(req.Params) || resp == nil || resp.Error != nil {
		return resp
	}
	var created struct {
		Task json.RawMessage `json:"task"`
	}
	if json.Unmarshal(resp.Result, &created) != nil || len(created.Task) == 0 || string(created.Task) == "null" {
		return resp // a tool result: the server ran the call at once
	}
	out := *resp
	out.Result, _ = json.Marshal(map[string]any{"content": []any{}, "_meta": map[string]json.RawMessage{taskMetaKey: created.Task}})
	return &out
}

// taskCall reports whether the params of a tools/call, as mcp-go's
// client hands them to the transport, ask for a task.
func taskCall(params any) bool {
	switch p := params.(type) {
	case mcp.CallToolParams:
		return p.Task != nil
	case map[string]json.RawMessage: // with the _meta of a 2026-07-28 request
		return len(p["task"]) > 0 && string(p["task"]) != "null"
	case map[string]any:
		return p["task"] != nil
	}
	return false
}

// callAsTask makes req, a call of a tool that runs only as a task, as a
// task, and returns the tool's result once the task has one.
func (s *Session) callAsTask(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ttl := taskTTL.Milliseconds()
	req.Params.Task = &mcp.TaskParams{TTL: &ttl}
	// The call that starts the task is not cut short with the agent's
	// call: a task started without its id known could not be cancelled,
	// and would run on to its TTL. The task is cancelled below instead.
	create, cancelCreate := context.WithTimeout(context.WithoutCancel(ctx), taskCreateTimeout)
	res, err := s.c.CallTool(create, req)
	cancelCreate()
	if err != nil {
		return nil, err
	}
	var task mcp.Task
	if res.Meta == nil || res.Meta.AdditionalFields[taskMetaKey] == nil {
		return res, nil // the server ran it at once, as one that ignores the task param does
	}
	raw, _ := json.Marshal(res.Meta.AdditionalFields[taskMetaKey])
	if err := json.Unmarshal(raw, &task); err != nil || task.TaskId == "" {
		return nil, newError(ClassProtocol, PhaseCalling, "the server answered a task's call without the task it started", err)
	}
	done := false
	defer func() {
		if !done { // the call ended before the task: so does the task
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskCancelTimeout)
			defer cancel()
			_, _ = s.c.CancelTask(cctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: task.TaskId}})
		}
	}()
	if fn := progressOf(ctx); fn != nil {
		stop := s.followTask(ctx, task, fn)
		defer stop()
	}
	got, err := s.c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: task.TaskId}})
	if err != nil {
		return nil, err
	}
	done = true
	return &mcp.CallToolResult{Result: got.Result, Content: got.Content, StructuredContent: got.StructuredContent, IsError: got.IsError}, nil
}

// followTask reads the task's status until stop is called, passing each
// new status message to fn as progress (one step a message).
func (s *Session) followTask(ctx context.Context, task mcp.Task, fn func(CallProgress)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		last, steps := "", 0.0
		for {
			if m := task.StatusMessage; m != "" && m != last {
				last, steps = m, steps+1
				fn(CallProgress{Progress: steps, Message: cutText(m, MaxProgressMessage)})
			}
			if task.Status.IsTerminal() {
				return
			}
			wait := minTaskPoll
			if p := task.PollInterval; p != nil {
				wait = min(max(time.Duration(*p)*time.Millisecond, minTaskPoll), maxTaskPoll)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			got, err := s.c.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: task.TaskId}})
			if err != nil {
				return // tasks/result says how it ends
			}
			task = got.Task
		}
	}()
	return func() { cancel(); <-ended }
}
