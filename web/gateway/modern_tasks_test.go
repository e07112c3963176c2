package gateway_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/store"
)

// modernTask is a task as /mcp answers it (SEP-2663).
type modernTask struct {
	ResultType    string                     `json:"resultType"`
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
	TTLMs         *int64                     `json:"ttlMs"`
	PollMs        *int64                     `json:"pollIntervalMs"`
	Result        *mcp.CallToolResult        `json:"result"`
	Error         *mcptest.RPCError          `json:"error"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	StatusMessage string                     `json:"statusMessage"`
}

// A 2026-07-28 agent that declares the tasks extension gets a task for a
// call of a tool its server runs as one: answered at once, polled with
// tasks/get until it ends with the tool's result inlined (a tool's own
// error too, as completed), its server's questions answered with
// tasks/update (some, then the rest), ended by tasks/cancel, and
// nobody else's to see. Without the extension, a call is answered when
// it ends (a task-only tool's too: TestAnAgentsTaskIsRelayed), and the
// task methods are refused (-32021).
func TestA2026AgentsTasks(t *testing.T) {
	e := newEnv(t)
	e.conformanceServer()
	for _, tool := range []string{"greet", "slow_compute", "failing_job", "confirm_delete", "multi_input"} {
		e.setPolicy("conf", tool, "allow")
	}
	mine, theirs := e.connectWithProfile("mine", store.DefaultProfile), e.connectWithProfile("theirs", store.DefaultProfile)
	withTasks := func(_ map[string]string, msg map[string]any) { // and elicitation
		msg["params"].(map[string]any)["_meta"].(map[string]any)[mcp.MetaKeyClientCapabilities] = map[string]any{
			"elicitation": map[string]any{"form": map[string]any{}}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	}
	post := func(t *testing.T, token, method string, params map[string]any) (modernTask, mcptest.Answer) {
		t.Helper()
		a := mcptest.PostModern(t, e.base, token, method, params, withTasks)
		var task modernTask
		raw, _ := json.Marshal(a.Result)
		_ = json.Unmarshal(raw, &task)
		return task, a
	}
	start := func(t *testing.T, tool string, args map[string]any) modernTask {
		t.Helper()
		task, a := post(t, mine, "tools/call", map[string]any{"name": "conf__" + tool, "arguments": args})
		if a.Error != nil || task.ResultType != "task" || task.TaskID == "" || task.Status != "working" || task.TTLMs == nil || task.PollMs == nil {
			t.Fatalf("a call of %s = %d %s %+v; want a task, working", tool, a.Status, a.Result, a.Error)
		}
		return task
	}
	get := func(t *testing.T, id string) modernTask {
		t.Helper()
		task, a := post(t, mine, "tasks/get", map[string]any{"taskId": id})
		if a.Error != nil || task.ResultType != "complete" || task.TaskID != id {
			t.Fatalf("tasks/get %s = %d %s %+v", id, a.Status, a.Result, a.Error)
		}
		return task
	}
	until := func(t *testing.T, id, status string) modernTask {
		t.Helper()
		var task modernTask
		waitFor(t, time.Minute, "task "+id+" "+status, func() bool {
			task = get(t, id)
			if task.Status != status && task.Status != "working" && task.Status != "input_required" {
				t.Fatalf("task %s ended %+v (error %+v); want %s", id, task, task.Error, status)
			}
			return task.Status == status
		})
		return task
	}

	t.Run("a result, inlined", func(t *testing.T) {
		task := until(t, start(t, "slow_compute", map[string]any{"seconds": 0, "label": "now"}).TaskID, "completed")
		if task.Result == nil || mcptest.Text(task.Result) != "Computed now after 0 s" {
			t.Errorf("the completed task = %+v; want the tool's result", task)
		}
	})
	t.Run("a tool's own error is completed", func(t *testing.T) {
		task := until(t, start(t, "failing_job", nil).TaskID, "completed")
		if task.Result == nil || !task.Result.IsError || task.Error != nil {
			t.Errorf("the task of a tool that failed = %+v; want completed, its result an error", task)
		}
	})
	t.Run("questions answered with tasks/update", func(t *testing.T) {
		id := start(t, "multi_input", nil).TaskID
		task := until(t, id, "input_required")
		if keys := slices.Sorted(maps.Keys(task.InputRequests)); !slices.Equal(keys, []string{"first", "second"}) {
			t.Fatalf("the task's questions = %v; want the server's two", keys)
		}
		answer := func(key, value string) {
			if _, a := post(t, mine, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
				key: map[string]any{"action": "accept", "content": map[string]any{"value": value}}}}); a.Error != nil {
				t.Fatalf("tasks/update = %+v", a.Error)
			}
		}
		answer("first", "one")
		if task := get(t, id); task.Status != "input_required" || len(task.InputRequests) != 1 || task.InputRequests["second"] == nil {
			t.Fatalf("after one answer the task = %+v; want it waiting on the other", task)
		}
		answer("second", "two")
		task = until(t, id, "completed")
		if mcptest.Text(task.Result) != "first: one, second: two" {
			t.Errorf("the answered task = %+v; want both answers in its result", task)
		}
	})
	t.Run("its progress, then cancelled, and its call ended", func(t *testing.T) {
		id := start(t, "slow_compute", map[string]any{"seconds": 60, "label": "long"}).TaskID
		waitFor(t, time.Minute, "the server's progress as the task's status message", func() bool {
			task := get(t, id)
			return task.Status == "working" && task.StatusMessage == "second 1 of 60"
		})
		if _, a := post(t, mine, "tasks/cancel", map[string]any{"taskId": id}); a.Error != nil {
			t.Fatalf("tasks/cancel = %+v", a.Error)
		}
		if task := get(t, id); task.Status != "cancelled" {
			t.Errorf("the cancelled task = %+v; want cancelled", task)
		}
		waitFor(t, time.Minute, "the cancelled call recorded, ended", func() bool {
			for _, c := range e.calls() {
				if c.Tool == "slow_compute" && c.Outcome == "error" {
					return true
				}
			}
			return false
		})
		if _, a := post(t, mine, "tasks/cancel", map[string]any{"taskId": id}); a.Error != nil {
			t.Errorf("cancelling an ended task again = %+v; want the same ack", a.Error)
		}
	})
	t.Run("another token's task is none", func(t *testing.T) {
		id := start(t, "slow_compute", map[string]any{"seconds": 0}).TaskID
		for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
			if _, a := post(t, theirs, method, map[string]any{"taskId": id}); a.Error == nil || a.Error.Code != mcp.INVALID_PARAMS {
				t.Errorf("%s of another token's task = %s %+v; want -32602", method, a.Result, a.Error)
			}
		}
	})
	t.Run("without the extension", func(t *testing.T) {
		// A tool that runs only as a task is refused then: see
		// TestAnAgentsTaskIsRelayed, whose server has one.
		a := mcptest.PostModern(t, e.base, mine, "tools/call", map[string]any{"name": "conf__slow_compute", "arguments": map[string]any{"seconds": 0, "label": "sync"}}, nil)
		var res mcp.CallToolResult
		raw, _ := json.Marshal(a.Result)
		if a.Error != nil || json.Unmarshal(raw, &res) != nil || mcptest.Text(&res) != "Computed sync after 0 s" {
			t.Errorf("a call of an optional task tool without the extension = %s %+v; want its result at once", raw, a.Error)
		}
		if a := mcptest.PostModern(t, e.base, mine, "tasks/get", map[string]any{"taskId": "x"}, nil); a.Error == nil || a.Error.Code != mcp.MISSING_REQUIRED_CLIENT_CAPABILITY ||
			!strings.Contains(string(a.Error.Data), "io.modelcontextprotocol/tasks") {
			t.Errorf("tasks/get without the extension = %+v; want -32021 naming it", a.Error)
		}
	})
	t.Run("v1 methods are none", func(t *testing.T) {
		for _, method := range []string{"tasks/result", "tasks/list"} {
			if _, a := post(t, mine, method, map[string]any{"taskId": "x"}); a.Error == nil || a.Error.Code != mcp.METHOD_NOT_FOUND {
				t.Errorf("%s = %+v; want -32601", method, a.Error)
			}
		}
	})
}
