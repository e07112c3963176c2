package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
)

// taskServer is an upstream server (MCP 2025-11-25 over Streamable HTTP)
// whose research tool runs only as a task: with wait, it runs until the
// server is sent tasks/cancel, saying so on started and stopped.
type taskServer struct {
	url              string
	started, stopped chan struct{}
	cancel           sync.Once
	cancelled        chan struct{} // closed by the first tasks/cancel
}

func startTaskServer(t *testing.T) *taskServer {
	t.Helper()
	ts := &taskServer{started: make(chan struct{}, 1), stopped: make(chan struct{}, 1), cancelled: make(chan struct{})}
	up := server.NewMCPServer("upstream", "1.0.0", server.WithToolCapabilities(false), server.WithTaskCapabilities(true, true, true))
	up.AddTool(mcp.NewTool("research", mcp.WithDescription("Researches a topic, as a task."), mcp.WithTaskSupport(mcp.TaskSupportRequired),
		mcp.WithString("topic"), mcp.WithBoolean("wait")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if !req.GetBool("wait", false) {
				return mcp.NewToolResultText("researched " + req.GetString("topic", "")), nil
			}
			// mcp-go's server (v1.2.1) ends a task's context as soon as it
			// has answered the call that created it, so the task cannot
			// wait on it: it waits for the tasks/cancel the server is sent.
			ts.started <- struct{}{}
			<-ts.cancelled
			ts.stopped <- struct{}{}
			return mcp.NewToolResultError("cancelled"), nil
		})
	up.AddTool(mcp.NewTool("maybe_task", mcp.WithTaskSupport(mcp.TaskSupportOptional)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("done"), nil
		})
	// Tasks are of MCP 2025-11-25; at 2026-07-28 they are an extension
	// mcp-go does not have.
	h := server.NewStreamableHTTPServer(up, server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20251125))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"method":"tasks/cancel"`) {
			ts.cancel.Do(func() { close(ts.cancelled) })
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ts.url = srv.URL + "/mcp"
	return ts
}

// An agent's own task: a session's task-augmented call of a tool is
// answered at once with a task of Switchboard's, which that session (and
// no other) reads the status and the result of; the agent's tasks/cancel
// ends the call, and with it the server's own task. At 2026-07-28 tasks
// are the extension's (see TestA2026AgentsTasks).
func TestAnAgentsTaskIsRelayed(t *testing.T) {
	up := startTaskServer(t)
	e := newEnv(t)
	e.createServer(map[string]any{"id": "tasks", "name": "Tasks", "transport": "http", "url": up.url, "default_policy": "allow"})
	if status := e.verify("tasks"); status != "success" {
		t.Fatalf("verify = %s", status)
	}
	e.setPolicy("tasks", "research", "allow")
	c := mcptest.ConnectAs(t, e.base, testMCPToken, mcp.ProtocolVersion20251125, mcp.Implementation{Name: "task-agent", Version: "1"})
	other := mcptest.ConnectAs(t, e.base, testMCPToken, mcp.ProtocolVersion20251125, mcp.Implementation{Name: "other-agent", Version: "1"})
	ctx := t.Context()

	task := startAgentTask(t, e.base, c.GetSessionId(), map[string]any{"topic": "tides"})
	res, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: task.TaskId}})
	if err != nil || len(res.Content) != 1 {
		t.Fatalf("tasks/result = %+v, %v", res, err)
	}
	if text, _ := res.Content[0].(mcp.TextContent); text.Text != "researched tides" {
		t.Errorf("the task's result = %+v; want the tool's", res.Content)
	}
	if got, err := c.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: task.TaskId}}); err != nil || got.Status != mcp.TaskStatusCompleted {
		t.Errorf("tasks/get after the result = %+v, %v; want completed", got, err)
	}
	if _, err := other.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: task.TaskId}}); err == nil {
		t.Error("another session read the agent's task")
	}
	for _, method := range []string{"tasks/get", "tasks/cancel"} { // no session: the extension's, and none of its tasks
		got := mcptest.PostModern(t, e.base, testMCPToken, method, map[string]any{"taskId": task.TaskId}, withTasksExtension)
		if got.Error == nil || got.Error.Code != mcp.INVALID_PARAMS {
			t.Errorf("a 2026-07-28 %s of the session's task = %+v; want no such task", method, got)
		}
	}
	if calls := e.waitCalls(1); calls[0].Tool != "research" || calls[0].Decision != "allowed" {
		t.Errorf("audited = %+v; want the call, allowed", calls[0])
	}

	waiting := startAgentTask(t, e.base, c.GetSessionId(), map[string]any{"wait": true})
	select {
	case <-up.started:
	case <-time.After(time.Minute):
		t.Fatal("the server's task never started")
	}
	if _, err := other.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: waiting.TaskId}}); err == nil {
		t.Error("another session cancelled the agent's task")
	}
	if got, err := c.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: waiting.TaskId}}); err != nil || got.Status != mcp.TaskStatusWorking {
		t.Fatalf("the task after another session's tasks/cancel = %+v, %v; want working", got, err)
	}
	if _, err := c.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: waiting.TaskId}}); err != nil {
		t.Fatalf("tasks/cancel = %v", err)
	}
	select {
	case <-up.stopped: // by the tasks/cancel the server was sent
	case <-time.After(time.Minute):
		t.Fatal("the server's task was still running a minute after the agent's tasks/cancel")
	}

	// At 2026-07-28 a client without the tasks extension has its call
	// answered when the server's task ends (its v1 task param
	// tolerated); one with it gets a task of its own, whose result
	// comes from the server's task.
	modern := mcptest.PostModern(t, e.base, testMCPToken, string(mcp.MethodToolsCall),
		map[string]any{"name": "tasks__research", "arguments": map[string]any{"topic": "reefs"}, "task": map[string]any{"ttl": 60000}}, nil)
	if modern.Error != nil || !strings.Contains(string(modern.Result["content"]), "researched reefs") {
		t.Errorf("a 2026-07-28 call of a task-only tool without the extension = %+v; want the result at once", modern)
	}
	modern = mcptest.PostModern(t, e.base, testMCPToken, string(mcp.MethodToolsCall),
		map[string]any{"name": "tasks__research", "arguments": map[string]any{"topic": "reefs"}}, withTasksExtension)
	var created modernTask
	raw, _ := json.Marshal(modern.Result)
	if modern.Error != nil || json.Unmarshal(raw, &created) != nil || created.ResultType != "task" {
		t.Fatalf("a 2026-07-28 call of a task-only tool with the extension = %s %+v; want a task", raw, modern.Error)
	}
	waitFor(t, time.Minute, "the 2026-07-28 task's result", func() bool {
		got := mcptest.PostModern(t, e.base, testMCPToken, "tasks/get", map[string]any{"taskId": created.TaskID}, withTasksExtension)
		raw, _ := json.Marshal(got.Result)
		var task modernTask
		_ = json.Unmarshal(raw, &task)
		if task.Status == "failed" || task.Status == "cancelled" {
			t.Fatalf("the task ended %s: %s", task.Status, raw)
		}
		return task.Status == "completed" && task.Result != nil && mcptest.Text(task.Result) == "researched reefs"
	})
}

// withTasksExtension declares the tasks extension in a 2026-07-28
// request (see mcptest.PostModern).
func withTasksExtension(_ map[string]string, msg map[string]any) {
	msg["params"].(map[string]any)["_meta"].(map[string]any)[mcp.MetaKeyClientCapabilities] = map[string]any{
		"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
}

// startAgentTask makes session's task-augmented call of tasks__research
// with args, and returns the task Switchboard answered with.
func startAgentTask(t *testing.T, base, session string, args map[string]any) mcp.Task {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "task-1", "method": "tools/call",
		"params": map[string]any{"name": "tasks__research", "arguments": args, "task": map[string]any{"ttl": 60000}}})
	r, err := http.NewRequest(http.MethodPost, base+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Authorization": "Bearer " + testMCPToken, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Session-Id": session, "Mcp-Protocol-Version": mcp.ProtocolVersion20251125} {
		r.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// A JSON answer, or an event stream whose last data line is.
	var last []byte
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Bytes()
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			last = bytes.Clone(bytes.TrimSpace(data))
		} else if bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
			last = bytes.Clone(line)
		}
	}
	var answer struct {
		Result mcp.CreateTaskResult `json:"result"`
		Error  *struct{ Message string }
	}
	if err := json.Unmarshal(last, &answer); err != nil || answer.Error != nil || answer.Result.Task.TaskId == "" {
		t.Fatalf("task-augmented call = %d %s (%v); want a task", resp.StatusCode, last, err)
	}
	return answer.Result.Task
}
