package gateway

// Everything the gateway assumes of mcp-go (github.com/mark3labs/mcp-go)
// beyond its documented API is in this file, each assumption pinned by a
// test in mcpgo_internal_test.go that fails on an mcp-go that no longer
// holds to it:
//
//  1. A BeforeCallTool hook gets the request mcp-go then dispatches, by
//     the name it holds after the hook: the hook can send the call of any
//     name to one tool (routeCall). TestMCPGoDispatchesTheRenamedCall.
//  2. The Params of the mcp.Request embedded in mcp.CallToolRequest are
//     shadowed on the wire by the call's own params: no message sets them,
//     mcp-go does not read them, and what a hook puts there reaches the
//     tool's handler (calledName), out of the agent's reach.
//     TestMCPGoDispatchesTheRenamedCall.
//  3. A DELETE with a session's id, handed to the handler, ends the
//     session: the session id manager is asked to terminate it, the next
//     request on it is answered 404 and no notification reaches it
//     (endSession). TestMCPGoEndsASessionOnDelete.
//  4. The session id manager (mcpSessions) decides which ids are valid: an
//     id it reports terminated is answered 404, one it does not know is
//     refused, and the id it generates is the one the initialize result
//     gives. TestMCPGoAsksTheSessionIDManager.
//  5. An AfterInitialize hook's context carries the new session
//     (server.ClientSessionFromContext), with the id the manager gave it.
//     TestMCPGoInitializeHookSeesTheSession.
//  6. An AfterListTools hook can change the result mcp-go then sends
//     (the route tool is never listed). TestMCPGoListToolsHookEditsTheAnswer.
//  7. A tool handler learns who calls from its context: a 2026-07-28
//     request's protocol info (server.RequestProtocolInfoFromContext:
//     Modern, clientInfo, capabilities), a session's client session
//     (server.ClientSessionFromContext, a server.SessionWithClientInfo
//     with the capabilities it declared). TestMCPGoTellsTheHandlerWhoCalls.
//  8. mcp-go writes what it sends on a stream (a session's GET stream, a
//     POST's SSE answer) through the http.ResponseWriter it was handed,
//     one Write per SSE event, each "data: " line a whole JSON-RPC
//     message, with a request's params._meta as sent: questionWriter reads
//     list_changed notifications (isListChanged) and elicitation/create
//     requests (noteQuestions) there. TestMCPGoWritesAnEventAWrite.
//  9. mcp-go's list result types encode their list last, after the fields
//     of the revision (listHeadsOf): the offer writes a list as a head,
//     its encoded items and a tail, byte for byte what mcp-go would
//     encode. TestMCPGoEncodesListsLast (and listHeadsOf panics at start
//     on a type that does not).
// 10. mcp-go answers only a POST sent as application/json; anything else
//     it refuses, so parseRequest leaves such a request to it.
//     TestMCPGoWantsJSON.
// 11. mcp-go checks a 2026-07-28 request as checkModern does, and answers
//     a tool's result to such a request with Switchboard's serverInfo and
//     resultType "complete" (refuseCall, relayed): what this endpoint
//     answers itself matches what mcp-go answers. TestMCPGoMarksModernResults,
//     and TestMCPModernChecksAsMCPGo (gateway_test) end to end.
// 12. A notification sent with SendNotificationToClient (or
//     SendLogMessageToClient, which also applies the level the client
//     asked for) from a tool handler's context reaches the client that
//     made the call, on that call's stream (a 2025 session's POST is
//     turned into an SSE stream; a 2026-07-28 request's answer too),
//     without blocking: a client that does not read loses it
//     (relayProgress, relayLog). TestProgressReachesTheAgent and
//     TestLogMessagesReachTheAgent (gateway_test), both eras.
//
// mcp-go's own idle sweep and Shutdown are not relied on: the endpoint
// ends idle sessions itself (endIdleSessions) and ends subscriptions/
// listen streams with the endpoint (endWithEndpoint;
// TestMCPListenEndsWithTheEndpoint).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/toolsearch"
)

// mountMCPGo makes the endpoint's mcp-go server and its Streamable HTTP
// handler: the hooks that route calls and note sessions, the two tools
// mcp-go knows (search_tools and the route tool), and the session id
// manager.
func (e *Endpoint) mountMCPGo() {
	hooks := &server.Hooks{}
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, req *mcp.InitializeRequest, res *mcp.InitializeResult) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			ct, _ := connectedClient(ctx)
			e.sessions.initialized(cs.SessionID(), ct.ID, res.ProtocolVersion, clientName(&req.Params.ClientInfo), asksOf(req.Params.Capabilities, ""))
			e.sessions.noteView(cs.SessionID(), e.viewHashes(profileOf(ctx)))
			e.keepSession(ctx, cs.SessionID(), ct.ID, req.Params)
		}
	})
	hooks.AddBeforeCallTool(routeCall)
	hooks.AddBeforeSubscriptionsListen(e.bindListen)
	hooks.AddAfterDiscover(func(_ context.Context, _ any, _ *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
		// At 2026-07-28 tasks are the extension's (declared with the
		// others): the capability of 2025-11-25's tasks, which sessions
		// have, is not a 2026-07-28 client's (see modern_tasks.go).
		res.Capabilities.Tasks = nil
	})
	hooks.AddBeforeCancelTask(e.cancelTask)
	hooks.AddAfterListTools(func(_ context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		// A tools/list reaches mcp-go only if this endpoint could not
		// read it (see parseRequest); the route tool is plumbing, never
		// listed.
		res.Tools = slices.DeleteFunc(res.Tools, func(t mcp.Tool) bool { return t.Name == routeToolName })
	})
	e.srv = server.NewMCPServer(mcpServerName, mcpServerVersion,
		server.WithToolCapabilities(true),
		// Resources and prompts (see listed.go): lists that change, and
		// subscriptions to a resource, relayed (see subscriptions.go).
		server.WithPromptCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithCompletions(), // relayed to the servers (see answerComplete)
		server.WithLogging(),     // a server's log messages during a call (see relayLog)
		// MCP Apps: tools' ui:// resources are offered and read like any
		// resource, under URIs that keep the scheme (store.UIResourceURI).
		// Agents' tasks at 2026-07-28 (see modern_tasks.go).
		server.WithExtensions(map[string]any{uiExtension: map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}}, tasksExtension: map[string]any{}}),
		server.WithHooks(hooks),
		// Agents' own tasks (see tasks.go): of tools calls, listed and
		// cancelled, each the session's that created it.
		server.WithTaskCapabilities(true, true, true),
		server.WithMaxConcurrentTasks(maxAgentTasks),
		server.WithTaskHooks(taskHooks()),
		server.WithRecovery(),
		server.WithInstructions("Switchboard offers the tools a person approved on the MCP servers registered with it, named server__tool. Calls to some tools wait for the person's approval."))
	e.h = server.NewStreamableHTTPServer(e.srv,
		server.WithEndpointPath("/mcp"),
		server.WithSessionIdManagerResolver(resumeResolver{e.sessions}), // see resume.go
		server.WithStreamableHTTPProtocolVersions(mcpProtocolVersions...),
		server.WithStreamableHTTPLogger(e.log.With("part", "mcp")))
	e.srv.AddTools(
		server.ServerTool{Tool: mcp.Tool{Name: toolsearch.SearchToolName, RawInputSchema: json.RawMessage(`{"type":"object"}`)}, Handler: e.handleSearch},
		// Any call may be a task's (see tasks.go): whether its tool takes
		// one is its definition's to say, as agents get it.
		server.ServerTool{Tool: mcp.Tool{Name: routeToolName, RawInputSchema: json.RawMessage(`{"type":"object"}`),
			Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}}, Handler: e.handleCallAsTool})
}

// uiExtension is MCP Apps' extension: tools whose _meta names a ui://
// resource that a client renders.
const uiExtension = "io.modelcontextprotocol/ui"

// routeToolName is the tool mcp-go dispatches every tools/call to, but
// search_tools': no agent name can take it (see validAgentName).
const routeToolName = "switchboard:route"

// routeCall is mcp-go's hook before a tools/call: it names the call for
// the route tool, whose handler is the call path (handleCall), keeping
// the name the agent called for it (see calledName). So mcp-go routes
// the call of any tool, and the call path decides what is offered; the
// route tool called by its own name is refused there, as not a tool's.
func routeCall(_ context.Context, _ any, req *mcp.CallToolRequest) {
	if req.Params.Name == toolsearch.SearchToolName {
		return
	}
	// The request's embedded mcp.Request params are a field no message
	// sets (the call's own params shadow them on the wire) and mcp-go
	// does not read: the name rides there, out of the agent's reach.
	req.Request.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{calledNameKey: req.Params.Name}}
	req.Params.Name = routeToolName
}

const calledNameKey = "switchboard/called"

// calledName is the name an agent called in a request routeCall routed.
func calledName(req mcp.CallToolRequest) string {
	if m := req.Request.Params.Meta; m != nil {
		if name, ok := m.AdditionalFields[calledNameKey].(string); ok {
			return name
		}
	}
	return req.Params.Name
}

// endIdleSessions ends the agent sessions unused since before (see
// endSession). (mcp-go's own idle sweep does not see the requests this
// endpoint answers itself.)
func (e *Endpoint) endIdleSessions(before time.Time) {
	for _, id := range e.sessions.idleSince(before) {
		endSession(e.h, id)
	}
}

// endSession ends the session id as an agent's DELETE would: mcp-go asks
// the session id manager to terminate it (so the next request on it is
// answered 404) and forgets the session itself (no notification reaches
// it). Assumption 3: TestMCPGoEndsASessionOnDelete.
func endSession(h http.Handler, id string) {
	r := httptest.NewRequest(http.MethodDelete, "/mcp", nil)
	r.Header.Set(server.HeaderKeySessionID, id)
	h.ServeHTTP(httptest.NewRecorder(), r)
}

// listHeadsOf is the JSON of a list result (made empty by empty) up to its
// list, the field key, as mcp-go's types encode it: for a session, and
// for a 2026-07-28 request with the fields that revision adds
// (resultType, serverInfo, ttlMs and cacheScope).
func listHeadsOf(empty func() mcp.ResultMetadata, key string) [2][]byte {
	var heads [2][]byte
	for i, modern := range []bool{false, true} {
		res := empty()
		if modern {
			res.SetResultType(mcp.ResultTypeComplete)
			res.EnsureResultMeta().SetServerInfo(serverInfo)
			res.(mcp.CacheHintSetter).SetCacheHints(offerTTL, offerScope)
		}
		b, err := json.Marshal(res)
		tail := `"` + key + `":[]}`
		if err != nil || !bytes.HasSuffix(b, []byte(tail)) {
			panic(fmt.Sprintf("%T encodes as %s, %v; want its %s last", res, b, err, key))
		}
		heads[i] = bytes.TrimSuffix(b, []byte(`[]}`))
	}
	return heads
}

// sseData yields the data of each "data: " line of the SSE events in p.
func sseData(p []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for line := range bytes.Lines(p) {
			if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok && !yield(data) {
				return
			}
		}
	}
}

// listChangedEvent is how the end of a list_changed notification's
// method reads in the SSE mcp-go writes (one Write per event).
var listChangedEvent = []byte(`/list_changed"`)

// isListChanged returns the method of the list_changed notification p,
// written to an agent's stream, is (see listChangedMethods), or "": a
// data line whose message is that notification itself, not a result that
// holds its words (a tool's structured content is the upstream server's
// to fill).
func isListChanged(p []byte) string {
	if !bytes.Contains(p, listChangedEvent) {
		return ""
	}
	for data := range sseData(p) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(data, &msg) == nil && len(msg.ID) == 0 && slices.Contains(listChangedMethods, msg.Method) {
			return msg.Method
		}
	}
	return ""
}

// relayProgress sends the agent the progress an upstream server reported
// of the agent's call, under the progressToken the agent gave. It never
// blocks the session's reading goroutine it is called on: a notification
// the agent's stream has no room for is dropped, as progress may be.
func (e *Endpoint) relayProgress(ctx context.Context, token mcp.ProgressToken, p discovery.CallProgress) {
	params := map[string]any{"progressToken": token, "progress": p.Progress}
	if p.Total > 0 {
		params["total"] = p.Total
	}
	if p.Message != "" {
		params["message"] = p.Message
	}
	_ = e.srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), params)
}

// relayLog sends the agent a log message an upstream server sent while
// the agent's call ran, if the agent asked for messages of its level
// (logging/setLevel on a 2025-era session, the request's logLevel at
// 2026-07-28: mcp-go applies either). Like relayProgress, it never
// blocks.
func (e *Endpoint) relayLog(ctx context.Context, l discovery.CallLog) {
	_ = e.srv.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(l.Level, l.Logger, l.Data))
}
