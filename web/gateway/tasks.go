package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// An agent's own MCP tasks (2025-11-25). A session's tools/call with a
// task param becomes a task of Switchboard's: mcp-go answers at once with
// the task (CreateTaskResult), runs the call as any call (the policy, a
// person's approval, the audit, the upstream call: as a task itself if
// the tool runs only as one, see discovery/tasks.go) in the background,
// and answers the agent's tasks/get, tasks/list, tasks/result and
// tasks/cancel, with status notifications, for the session that created
// the task only (mcp-go keys tasks by session). tasks/cancel ends the
// call, which cancels the server's own task. A task lives no longer than
// Switchboard runs; its result stays for the TTL the agent asked for.
//
// mcp-go (v1.2.1) runs a task in a context that ends as soon as the call
// that created it is answered: the call runs in one of its own instead
// (see detachTask), which the agent's tasks/cancel ends.
//
// A 2026-07-28 client has no session to bind a task to, and tasks are an
// extension there (io.modelcontextprotocol/tasks): see modern_tasks.go.
// Its 2025-era task param is dropped.

// maxAgentTasks bounds the agents' tasks running at once.
const maxAgentTasks = 64

// taskSlot is where the task a session's task-augmented call creates is
// noted (by mcp-go's task-created hook), for the call to find.
type taskSlot struct {
	mu          sync.Mutex
	id, session string
}

type taskSlotKey struct{}

// agentTasks are the agents' tasks running, by id: the session that made
// each, and what ends its call.
type agentTasks struct {
	mu sync.Mutex
	m  map[string]agentTask
	// early are the tasks/cancel that came before their task's call
	// started (mcp-go answers the task at once, and the agent may cancel
	// it before the call is under way), by task id: the session that
	// asked. At most maxEarlyCancels are kept.
	early map[string]string
}

// maxEarlyCancels bounds agentTasks.early.
const maxEarlyCancels = 256

type agentTask struct {
	session string
	cancel  context.CancelFunc
}

// taskCall reports whether body is a tools/call that asks for a task.
func taskCall(body []byte) bool {
	if !bytes.Contains(body, []byte(`"task"`)) && !bytes.Contains(body, []byte(`\u`)) { // no decoding for the rest
		return false
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Task json.RawMessage `json:"task"`
		} `json:"params"`
	}
	return json.Unmarshal(body, &msg) == nil && msg.Method == string(mcp.MethodToolsCall) &&
		len(msg.Params.Task) > 0 && string(msg.Params.Task) != "null"
}

// forTask returns r, a session's task-augmented call, with a slot for
// its task.
func forTask(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), taskSlotKey{}, &taskSlot{}))
}

// taskHooks note each task in the slot of the call that created it.
func taskHooks() *server.TaskHooks {
	h := &server.TaskHooks{}
	h.AddOnTaskCreated(func(ctx context.Context, m server.TaskMetrics) {
		if slot, ok := ctx.Value(taskSlotKey{}).(*taskSlot); ok {
			slot.mu.Lock()
			slot.id, slot.session = m.TaskID, m.SessionID
			slot.mu.Unlock()
		}
	})
	return h
}

// detachTask returns the context a task's call runs in: ctx's values,
// ended by the agent's tasks/cancel (see cancelTask) or the endpoint's
// close, not by the end of the request that created the task; done is to
// be called when the call ends. ctx of a call that is no task's is
// returned as it is.
func (e *Endpoint) detachTask(ctx context.Context) (_ context.Context, done func()) {
	slot, ok := ctx.Value(taskSlotKey{}).(*taskSlot)
	if !ok {
		return ctx, func() {}
	}
	slot.mu.Lock()
	id, session := slot.id, slot.session
	slot.mu.Unlock()
	if id == "" {
		return ctx, func() {}
	}
	tctx, cancel := context.WithCancel(lifeContext{Context: e.life, values: ctx})
	e.tasks.mu.Lock()
	if e.tasks.m == nil {
		e.tasks.m = map[string]agentTask{}
	}
	e.tasks.m[id] = agentTask{session: session, cancel: cancel}
	if by, ok := e.tasks.early[id]; ok {
		delete(e.tasks.early, id)
		if by == session { // cancelled already: the call ends at once
			cancel()
		}
	}
	e.tasks.mu.Unlock()
	return tctx, func() {
		e.tasks.mu.Lock()
		delete(e.tasks.m, id)
		e.tasks.mu.Unlock()
		cancel()
	}
}

// cancelTask is mcp-go's hook before a tasks/cancel: it ends the task's
// call, if the task is the asking session's (mcp-go refuses the others).
func (e *Endpoint) cancelTask(ctx context.Context, _ any, req *mcp.CancelTaskRequest) {
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil {
		return
	}
	e.tasks.mu.Lock()
	t, ok := e.tasks.m[req.Params.TaskId]
	if !ok { // its call may not have started yet: it ends as it does
		if e.tasks.early == nil || len(e.tasks.early) >= maxEarlyCancels {
			e.tasks.early = map[string]string{}
		}
		e.tasks.early[req.Params.TaskId] = cs.SessionID()
	}
	e.tasks.mu.Unlock()
	if ok && t.session == cs.SessionID() {
		t.cancel()
	}
}

// lifeContext is the values of one context (a request's: its session,
// its token) with the deadline and end of another (the endpoint's life).
// A context derived from it waits on its end with a goroutine of its own
// (it is no context package type), which ends when that context does.
type lifeContext struct {
	context.Context
	values context.Context
}

func (c lifeContext) Value(key any) any { return c.values.Value(key) }

// withoutTask returns body, a 2026-07-28 tools/call, without its task
// param (see above); r's body is set to it.
func withoutTask(r *http.Request, body []byte) []byte {
	var msg map[string]json.RawMessage
	var params map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil || json.Unmarshal(msg["params"], &params) != nil {
		return body
	}
	delete(params, "task")
	msg["params"], _ = json.Marshal(params)
	out, err := json.Marshal(msg)
	if err != nil {
		return body
	}
	r.Body = io.NopCloser(bytes.NewReader(out))
	r.ContentLength = int64(len(out))
	return out
}
