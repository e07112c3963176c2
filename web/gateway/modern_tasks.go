package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery"
)

// The tasks extension of MCP 2026-07-28 (io.modelcontextprotocol/tasks,
// SEP-2663), for agents that declare it. Switchboard decides which calls
// become tasks: a call of a tool whose server declares task support
// (execution.taskSupport optional or required) is answered at once with
// the task (CreateTaskResult), and runs on in the background as any call
// does (the policy — a person's approval on the dashboard, as a task has
// no round trip to ask the agent's client in —, the audit, the server's
// own task for a tool that runs only as one). The agent polls tasks/get,
// which inlines the result (or the error) once the task ends; what the
// server asks meanwhile is the task's input_required status, with the
// questions under the server's keys, and the agent answers with
// tasks/update, some or all at once; tasks/cancel ends the call. A task
// is the token's that created it: any other token's request for it is
// answered as for a task that does not exist. A task lives while
// Switchboard runs, and its result stays for its TTL after it was
// created. Without the extension, a call is answered when it ends, a
// task-only tool's too: Switchboard waits on the server's task, so it
// has no need to refuse the call (-32021) as such a server must.
// The server's progress becomes the task's statusMessage; its log
// messages are not relayed to a task (no request is left to carry them).

// tasksExtension is the extension's id, in capabilities.extensions.
const tasksExtension = "io.modelcontextprotocol/tasks"

const (
	// taskTTL is how long a task's result stays, from its creation.
	taskTTL = 10 * time.Minute
	// taskPoll is the interval between tasks/get a task suggests.
	taskPoll = 500 * time.Millisecond
	// maxTokenTasks and maxTasks bound the tasks kept (running, or ended
	// within their TTL): per token, and in all.
	maxTokenTasks = 64
	maxTasks      = 1024
)

// Task statuses (SEP-2663).
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// modernTasks are the 2026-07-28 agents' tasks, by id.
type modernTasks struct {
	mu     sync.Mutex
	m      map[string]*modernTask
	closed bool
	wg     sync.WaitGroup // the tasks' calls
}

// modernTask is one agent's task: its call, running or ended.
type modernTask struct {
	id, tokenID string
	created     time.Time
	cancel      context.CancelFunc
	done        chan struct{} // closed when the call ended

	mu      sync.Mutex
	updated time.Time
	status  string
	message string              // the server's last progress, as the task's statusMessage
	result  *mcp.CallToolResult // completed
	failure *rpcError           // failed
	asked   *taskQuestions      // input_required
}

// taskQuestions are what the server asked at once, waiting for the
// agent's answers (tasks/update).
type taskQuestions struct {
	reqs    mcp.InputRequests
	pending map[string]bool // keys not answered yet
	answers mcp.InputResponses
	done    chan struct{} // closed when every question is answered
}

// tasksDeclared reports whether a 2026-07-28 request's client declared
// the tasks extension.
func tasksDeclared(req rpcRequest) bool {
	caps := req.Params.Meta.ClientCapabilities()
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[tasksExtension]
	return ok
}

// taskSupportOf is the execution.taskSupport of a tool's definition.
func taskSupportOf(def json.RawMessage) mcp.TaskSupport {
	if !bytes.Contains(def, []byte(`"taskSupport"`)) {
		return "" // most tools: not decoded again
	}
	var d struct {
		Execution struct {
			TaskSupport mcp.TaskSupport `json:"taskSupport"`
		} `json:"execution"`
	}
	if json.Unmarshal(def, &d) != nil {
		return ""
	}
	switch d.Execution.TaskSupport {
	case mcp.TaskSupportOptional, mcp.TaskSupportRequired:
		return d.Execution.TaskSupport
	}
	return ""
}

// missingTasks is the refusal of a request that needs the tasks
// extension from a client that did not declare it.
func missingTasks(what string) rpcError {
	return rpcError{Code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, Message: what + " needs the " + tasksExtension + " extension, which the request's clientCapabilities do not declare",
		Data: map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}}}
}

// answerTaskCall answers a 2026-07-28 tools/call of a tool its server
// runs as a task, from an agent that declared the extension, with the
// task, created and running. answered is false for a call that is not
// one.
func (e *Endpoint) answerTaskCall(w http.ResponseWriter, r *http.Request, req rpcRequest, o *offer, from agent) (answered bool, err error) {
	c, ok := o.tools[req.Params.Name]
	if !ok || c.taskSupport == "" || req.badArguments() != "" || !o.view(profileOf(r.Context())).offersTo(req.Params.Name, from.asks) {
		return false, nil // answered as any call (see answer)
	}
	if !tasksDeclared(req) {
		// Called as any tool: Switchboard waits on the server's task
		// for a task-only one (see discovery.Session.Call), so it need
		// not refuse the call (-32021) as a server that cannot answer
		// without a task must.
		return false, nil
	}
	var params mcp.CallToolParams
	if err := json.Unmarshal(req.RawParams, &params); err != nil {
		return true, writeRPCError(w, r, true, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: "invalid tools/call: " + err.Error()})
	}
	ct, _ := connectedClient(r.Context())
	cr := callRequest{Session: statelessSession, Client: from.client, ConnectedAs: ct.Name, TokenID: ct.ID, Profile: profileOf(r.Context()),
		AgentName: params.Name, Args: params.Arguments, Modern: true, InTask: true}
	cr.Called, cr.CalledArgs = cr.AgentName, cr.Args
	if cr.Asks = from.asks; cr.Asks.Any() {
		cr.Asks.Agent = "token " + cr.TokenID + " " + cr.Client
	}
	t, err := e.startTask(r.Context(), cr)
	if err != nil {
		return true, writeRPCError(w, r, true, req.ID, rpcError{Code: mcp.INTERNAL_ERROR, Message: err.Error()})
	}
	res := t.fields(false)
	res["resultType"] = "task"
	return true, writeJSON(w, r, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": res})
}

// startTask creates the task of cr's call and starts the call.
func (e *Endpoint) startTask(ctx context.Context, cr callRequest) (*modernTask, error) {
	now := time.Now()
	tctx, cancel := context.WithCancel(lifeContext{Context: e.life, values: ctx})
	t := &modernTask{id: rand.Text(), tokenID: cr.TokenID, created: now, updated: now, status: taskWorking, cancel: cancel, done: make(chan struct{})}
	e.mtasks.mu.Lock()
	e.mtasks.sweep(now)
	mine, oldest := 0, (*modernTask)(nil) // the token's tasks, and its oldest ended one
	for _, o := range e.mtasks.m {
		if o.tokenID != cr.TokenID {
			continue
		}
		mine++
		o.mu.Lock()
		if o.terminal() && (oldest == nil || o.created.Before(oldest.created)) {
			oldest = o
		}
		o.mu.Unlock()
	}
	if mine >= maxTokenTasks && oldest != nil { // its result makes room for the new task
		delete(e.mtasks.m, oldest.id)
		mine--
	}
	switch {
	case e.mtasks.closed:
		e.mtasks.mu.Unlock()
		cancel()
		return nil, errors.New("Switchboard is shutting down")
	case mine >= maxTokenTasks || len(e.mtasks.m) >= maxTasks:
		e.mtasks.mu.Unlock()
		cancel()
		return nil, fmt.Errorf("Switchboard keeps %d tasks per client and %d in all, running or ended within %s; this client's are %d", maxTokenTasks, maxTasks, taskTTL, mine)
	}
	if e.mtasks.m == nil {
		e.mtasks.m = map[string]*modernTask{}
	}
	e.mtasks.m[t.id] = t // durable before the agent hears of it
	e.mtasks.wg.Add(1)
	e.mtasks.mu.Unlock()

	relay := &taskRelay{t: t, timeout: e.cfg.AskTimeout, turn: make(chan struct{}, 1)}
	relay.askAsOne.input = relay.Input
	go func() {
		defer e.mtasks.wg.Done()
		defer close(t.done)
		defer cancel()
		// The server's progress is the task's status message: there is
		// no request left to carry notifications/progress.
		ctx := discovery.WithCallProgress(discovery.WithCallRelay(tctx, relay), newAgentProgress(t.progressed).server)
		res, err := e.call(ctx, cr)
		t.end(res, err)
	}()
	return t, nil
}

// sweep forgets the ended tasks past their TTL (e.mtasks.mu held): from
// their creation, or from their end for one that ran longer.
func (ts *modernTasks) sweep(now time.Time) {
	for id, t := range ts.m {
		t.mu.Lock()
		ended, last := t.terminal(), t.updated
		t.mu.Unlock()
		if ended && now.Sub(t.created) > taskTTL && now.Sub(last) > taskTTL {
			delete(ts.m, id)
		}
	}
}

// end records how the task's call ended, unless it was cancelled.
func (t *modernTask) end(res *mcp.CallToolResult, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.asked = nil
	if t.status == taskCancelled {
		return
	}
	t.updated = time.Now()
	var refused *refusedError
	switch {
	case errors.As(err, &refused):
		t.status, t.failure = taskFailed, &rpcError{Code: mcp.INVALID_REQUEST, Message: err.Error()}
	case err != nil:
		t.status, t.failure = taskFailed, &rpcError{Code: mcp.INTERNAL_ERROR, Message: err.Error()}
	default:
		// The result is inlined in tasks/get as it is: without the
		// server's related-task _meta (the task is the answer's), and
		// never changed again (requests read it at once).
		if res != nil && res.Meta != nil {
			r := *res
			m := *r.Meta
			m.AdditionalFields = maps.Clone(m.AdditionalFields)
			delete(m.AdditionalFields, mcp.RelatedTaskMetaKey)
			r.Meta = &m
			if m.ProgressToken == nil && len(m.AdditionalFields) == 0 {
				r.Meta = nil
			}
			res = &r
		}
		t.status, t.result = taskCompleted, res
	}
}

// progressed notes the server's progress as the task's status message.
func (t *modernTask) progressed(p discovery.CallProgress) {
	m := p.Message
	if m == "" {
		m = strconv.FormatFloat(p.Progress, 'f', -1, 64)
		if p.Total > 0 {
			m += " of " + strconv.FormatFloat(p.Total, 'f', -1, 64)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.terminal() {
		t.message, t.updated = m, time.Now()
	}
}

// terminal reports whether the task ended (t.mu held).
func (t *modernTask) terminal() bool {
	return t.status == taskCompleted || t.status == taskFailed || t.status == taskCancelled
}

// fields are the task's fields on the wire (SEP-2663's Task), with what
// it ended with or waits for if detailed (tasks/get's DetailedTask).
func (t *modernTask) fields(detailed bool) map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := map[string]any{"taskId": t.id, "status": t.status, "createdAt": t.created.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt": t.updated.UTC().Format(time.RFC3339Nano), "ttlMs": taskTTL.Milliseconds(), "pollIntervalMs": taskPoll.Milliseconds()}
	if !detailed {
		return f
	}
	switch {
	case t.status == taskCompleted && t.result != nil:
		f["result"] = t.result
	case t.status == taskFailed && t.failure != nil:
		f["error"] = t.failure
	case t.status == taskWorking && t.message != "":
		f["statusMessage"] = t.message
	case t.status == taskInputRequired && t.asked != nil:
		pending := make(mcp.InputRequests, len(t.asked.pending))
		for key := range t.asked.pending {
			pending[key] = t.asked.reqs[key]
		}
		f["inputRequests"] = pending
		f["statusMessage"] = "the server asked for input: answer with tasks/update"
	}
	return f
}

// answerTasks answers a 2026-07-28 tasks/* request: tasks/get,
// tasks/update and tasks/cancel of the token's own tasks, for a client
// that declared the extension; SEP-2663 has no other method.
func (e *Endpoint) answerTasks(w http.ResponseWriter, r *http.Request, req rpcRequest) error {
	switch req.Method {
	case string(mcp.MethodTasksGet), "tasks/update", string(mcp.MethodTasksCancel):
	default:
		return writeRPCError(w, r, true, req.ID, rpcError{Code: mcp.METHOD_NOT_FOUND,
			Message: req.Method + " is not a method of " + tasksExtension + " (2026-07-28 has tasks/get, tasks/update and tasks/cancel)"})
	}
	if !tasksDeclared(req) {
		return writeRPCError(w, r, true, req.ID, missingTasks(req.Method))
	}
	var params struct {
		TaskID         string             `json:"taskId"`
		InputResponses mcp.InputResponses `json:"inputResponses"`
	}
	if err := json.Unmarshal(req.RawParams, &params); err != nil || params.TaskID == "" {
		return writeRPCError(w, r, true, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: req.Method + " needs a taskId"})
	}
	if name := r.Header.Get(mcp.HeaderName); name != params.TaskID {
		return writeRPCError(w, r, true, req.ID, rpcError{Code: mcp.HEADER_MISMATCH,
			Message: fmt.Sprintf("%s header %q does not match params.taskId %q", mcp.HeaderName, name, params.TaskID)})
	}
	ct, _ := connectedClient(r.Context())
	e.mtasks.mu.Lock()
	e.mtasks.sweep(time.Now())
	t := e.mtasks.m[params.TaskID]
	e.mtasks.mu.Unlock()
	if t == nil || t.tokenID != ct.ID {
		return writeRPCError(w, r, true, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: "no task " + strconv.Quote(params.TaskID) + " of this client"})
	}
	ack := map[string]any{"resultType": "complete"}
	switch req.Method {
	case string(mcp.MethodTasksGet):
		res := t.fields(true)
		res["resultType"] = "complete"
		return writeJSON(w, r, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": res})
	case "tasks/update":
		t.answer(params.InputResponses)
	default: // tasks/cancel: its end is seen in the next tasks/get
		t.mu.Lock()
		if !t.terminal() {
			t.status, t.updated, t.asked = taskCancelled, time.Now(), nil
		}
		t.mu.Unlock()
		t.cancel()
	}
	return writeJSON(w, r, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": ack})
}

// answer takes the agent's answers to the questions the task waits on;
// once every one is answered, the call goes on.
func (t *modernTask) answer(answers mcp.InputResponses) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.asked
	if q == nil {
		return
	}
	for key, a := range answers {
		if q.pending[key] {
			q.answers[key] = a
			delete(q.pending, key)
		}
	}
	t.updated = time.Now()
	if len(q.pending) == 0 {
		t.asked, t.status = nil, taskWorking
		close(q.done)
	}
}

// closeTasks ends every running task and waits for their calls.
func (e *Endpoint) closeTasks() {
	e.mtasks.mu.Lock()
	e.mtasks.closed = true
	for _, t := range e.mtasks.m {
		t.cancel()
	}
	e.mtasks.mu.Unlock()
	e.mtasks.wg.Wait()
}

// taskRelay answers what a task's server asks: the task waits in
// input_required until the agent answers every question (tasks/update),
// within the ask timeout.
type taskRelay struct {
	t       *modernTask
	timeout time.Duration
	turn    chan struct{} // one round of questions at a time
	askAsOne
}

func (r *taskRelay) Input(ctx context.Context, reqs mcp.InputRequests) (_ mcp.InputResponses, err error) {
	select {
	case r.turn <- struct{}{}:
		defer func() { <-r.turn }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	q := &taskQuestions{reqs: reqs, pending: make(map[string]bool, len(reqs)), answers: make(mcp.InputResponses, len(reqs)), done: make(chan struct{})}
	for key := range reqs {
		q.pending[key] = true
	}
	t := r.t
	t.mu.Lock()
	if t.status != taskWorking {
		t.mu.Unlock()
		return nil, errors.New("the task ended")
	}
	t.status, t.asked, t.updated = taskInputRequired, q, time.Now()
	t.mu.Unlock()
	defer func() {
		if err != nil { // the questions are gone: the task works on, or ends
			t.mu.Lock()
			if t.asked == q {
				t.asked, t.updated = nil, time.Now()
				if t.status == taskInputRequired {
					t.status = taskWorking
				}
			}
			t.mu.Unlock()
		}
	}()
	timeout := time.NewTimer(r.timeout)
	defer timeout.Stop()
	select {
	case <-q.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timeout.C:
		return nil, errors.New("the agent did not answer what the server asked within " + r.timeout.String())
	}
	for key, a := range q.answers {
		if err := a.DecodeFor(reqs[key].Method); err != nil {
			return nil, fmt.Errorf("the agent's answer %q: %w", key, err)
		}
		q.answers[key] = a
	}
	return q.answers, nil
}

// askAsOne asks a 2025-era server's requests, one by one, through input
// (a relay that takes a 2026-07-28 server's questions together), each
// under a key of Switchboard's: q1, q2, …
type askAsOne struct {
	input func(context.Context, mcp.InputRequests) (mcp.InputResponses, error)
	keys  atomic.Uint64
}

// ask asks req and returns the answer to it.
func (a *askAsOne) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	key := "q" + strconv.FormatUint(a.keys.Add(1), 10)
	r, err := a.input(ctx, mcp.InputRequests{key: req})
	if err != nil {
		return mcp.InputResponse{}, err
	}
	answer, ok := r[key]
	if !ok {
		return mcp.InputResponse{}, errNotAnswered
	}
	return answer, nil
}

func (a *askAsOne) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	answer, err := a.ask(ctx, mcp.NewSamplingInputRequest(req.CreateMessageParams))
	if err == nil && answer.Sampling == nil {
		err = errNotAnswered
	}
	if err != nil {
		return nil, err
	}
	return answer.Sampling, nil
}

func (a *askAsOne) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	answer, err := a.ask(ctx, mcp.NewElicitationInputRequest(req.Params))
	if err == nil && answer.Elicitation == nil {
		err = errNotAnswered
	}
	if err != nil {
		return nil, err
	}
	return answer.Elicitation, nil
}

func (a *askAsOne) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	answer, err := a.ask(ctx, mcp.NewRootsInputRequest())
	if err == nil && answer.Roots == nil {
		err = errNotAnswered
	}
	if err != nil {
		return nil, err
	}
	return answer.Roots, nil
}
