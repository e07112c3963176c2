package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// What the endpoint assumes of mcp-go, each pinned by a test that fails
// on an mcp-go that no longer does it: the numbered assumptions of
// mcpgo.go, each test against a real mcp-go server and handler, over
// HTTP through httptest.

// Assumption 3: endSession ends an agent session by handing mcp-go's
// handler a DELETE with the session's id, as the agent's own DELETE
// would; mcp-go then asks the endpoint's session id manager to terminate
// it (so the next request on it is 404) and forgets the session itself
// (no notification can reach it).
func TestMCPGoEndsASessionOnDelete(t *testing.T) {
	ids := &recordingIDs{terminated: map[string]bool{}}
	mcpSrv := server.NewMCPServer("assumption", "1", server.WithToolCapabilities(false))
	h := server.NewStreamableHTTPServer(mcpSrv, server.WithSessionIdManager(ids))
	ts := httptest.NewServer(h)
	defer ts.Close()
	tr, err := transport.NewStreamableHTTP(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20251125,
		ClientInfo: mcp.Implementation{Name: "agent", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	id := tr.GetSessionId()
	if id == "" {
		t.Fatal("mcp-go gave the session no id")
	}
	request := func(method, body string) int {
		r := httptest.NewRequest(method, "/mcp", strings.NewReader(body))
		r.Header.Set(server.HeaderKeySessionID, id)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	const ping = `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	if code := request(http.MethodPost, ping); code != http.StatusOK {
		t.Fatalf("a ping on the live session = %d; want 200", code)
	}
	if err := mcpSrv.SendNotificationToSpecificClient(id, "notifications/message", nil); err != nil {
		t.Fatalf("a notification to the live session = %v", err)
	}
	endSession(h, id)
	if !ids.wasTerminated(id) {
		t.Error("mcp-go did not ask the session id manager to terminate the session")
	}
	if code := request(http.MethodPost, ping); code != http.StatusNotFound {
		t.Errorf("a ping on the session after its DELETE = %d; want 404", code)
	}
	if err := mcpSrv.SendNotificationToSpecificClient(id, "notifications/message", nil); err == nil {
		t.Error("a notification reached the session after its DELETE; want mcp-go to have forgotten it")
	}
}

// recordingIDs is a session id manager that remembers what it was asked
// to terminate.
type recordingIDs struct {
	mu         sync.Mutex
	n          int
	terminated map[string]bool
}

func (r *recordingIDs) Generate() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return fmt.Sprintf("session-%d", r.n)
}

func (r *recordingIDs) Validate(id string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.terminated[id], nil
}

func (r *recordingIDs) Terminate(id string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.terminated[id] = true
	return false, nil
}

func (r *recordingIDs) wasTerminated(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.terminated[id]
}

// objectSchema is the inputSchema of the tools of these tests.
var objectSchema = json.RawMessage(`{"type":"object"}`)

// bareMCPGo serves an mcp-go server made with opts through a Streamable
// HTTP handler at /mcp, as the endpoint makes them (its protocol
// versions, and ids from ids if it is not nil), until the test ends.
// wrap, if not nil, wraps the handler.
func bareMCPGo(t *testing.T, ids server.SessionIdManager, wrap func(http.Handler) http.Handler, opts ...server.ServerOption) (*server.MCPServer, *server.StreamableHTTPServer, string) {
	t.Helper()
	srv := server.NewMCPServer(mcpServerName, mcpServerVersion, opts...)
	hopts := []server.StreamableHTTPOption{server.WithEndpointPath("/mcp"), server.WithStreamableHTTPProtocolVersions(mcpProtocolVersions...)}
	if ids != nil {
		hopts = append(hopts, server.WithSessionIdManager(ids))
	}
	h := server.NewStreamableHTTPServer(srv, hopts...)
	var served http.Handler = h
	if wrap != nil {
		served = wrap(h)
	}
	ts := httptest.NewServer(served)
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		h.Shutdown(context.Background())
	})
	return srv, h, ts.URL + "/mcp"
}

// connectBare connects a client of the protocol version to url; a
// session-based one with its GET stream open if listen is set.
func connectBare(t *testing.T, url, version string, listen bool, copts ...client.ClientOption) (*client.Client, *transport.StreamableHTTP) {
	t.Helper()
	var opts []transport.StreamableHTTPCOption
	if listen {
		//lint:ignore SA1019 a session of 2025-11-25 hears notifications on the GET stream
		opts = append(opts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, copts...)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: version,
		ClientInfo: mcp.Implementation{Name: "agent", Version: "1"}}}); err != nil {
		t.Fatalf("initialize at %s: %v", version, err)
	}
	return c, tr
}

// callText calls the tool and returns its result's first text.
func callText(t *testing.T, c *client.Client, req mcp.CallToolRequest) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("call %s: %v", req.Params.Name, err)
	}
	if len(res.Content) == 0 {
		return ""
	}
	tc, _ := res.Content[0].(mcp.TextContent)
	return tc.Text
}

// Assumptions 1 and 2: routeCall, mcp-go's BeforeCallTool hook, sends a
// call of any name to the route tool, whose handler finds the name
// called in the shadowed params (calledName); an agent cannot set that
// name itself, whatever _meta it sends.
func TestMCPGoDispatchesTheRenamedCall(t *testing.T) {
	hooks := &server.Hooks{}
	hooks.AddBeforeCallTool(routeCall)
	srv, _, url := bareMCPGo(t, nil, nil, server.WithToolCapabilities(false), server.WithHooks(hooks))
	srv.AddTool(mcp.Tool{Name: routeToolName, RawInputSchema: objectSchema}, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(calledName(req) + " routed as " + req.Params.Name), nil
	})
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			c, _ := connectBare(t, url, version, false)
			if got := callText(t, c, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "alpha__read"}}); got != "alpha__read routed as "+routeToolName {
				t.Errorf("a call of alpha__read reached the route tool's handler as %q; want alpha__read routed as %s", got, routeToolName)
			}
			forged := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "alpha__read"}}
			forged.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{calledNameKey: "beta__secret"}}
			if got := callText(t, c, forged); got != "alpha__read routed as "+routeToolName {
				t.Errorf("a call of alpha__read whose _meta names beta__secret reached the handler as %q; want alpha__read", got)
			}
		})
	}
	if got := calledName(mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "plain"}}); got != "plain" {
		t.Errorf("calledName of a request routeCall did not route = %q; want its own name, plain", got)
	}
}

// Assumption 4: mcpSessions, as mcp-go's session id manager, gives the
// session its id and decides which ids mcp-go serves: one it does not
// know, or has terminated, is answered 404.
func TestMCPGoAsksTheSessionIDManager(t *testing.T) {
	ids := newMCPSessions()
	_, _, url := bareMCPGo(t, ids, nil, server.WithToolCapabilities(false))
	_, tr := connectBare(t, url, mcp.ProtocolVersion20251125, false)
	id := tr.GetSessionId()
	if !strings.HasPrefix(id, "sb-") || !ids.touch(id) {
		t.Fatalf("the session's id = %q; want one mcpSessions generated and holds live", id)
	}
	ping := func(id string) int {
		r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"ping"}`))
		r.Header.Set(server.HeaderKeySessionID, id)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := ping(id); got != http.StatusOK {
		t.Errorf("a ping on the live session = %d; want 200", got)
	}
	if got := ping("sb-forged"); got != http.StatusNotFound {
		t.Errorf("a ping on an id mcpSessions does not know = %d; want 404", got)
	}
	ids.Terminate(id)
	if got := ping(id); got != http.StatusNotFound {
		t.Errorf("a ping on a session mcpSessions terminated = %d; want 404", got)
	}
}

// Assumption 5: the AfterInitialize hook's context carries the session,
// by the id its agent is given.
func TestMCPGoInitializeHookSeesTheSession(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	hooks := &server.Hooks{}
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest, _ *mcp.InitializeResult) {
		mu.Lock()
		defer mu.Unlock()
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			seen = append(seen, cs.SessionID())
		} else {
			seen = append(seen, "none")
		}
	})
	_, _, url := bareMCPGo(t, newMCPSessions(), nil, server.WithToolCapabilities(false), server.WithHooks(hooks))
	_, tr := connectBare(t, url, mcp.ProtocolVersion20251125, false)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != tr.GetSessionId() {
		t.Errorf("the AfterInitialize hook saw sessions %q; want the agent's, %q", seen, tr.GetSessionId())
	}
}

// Assumption 6: the AfterListTools hook edits the list mcp-go answers.
func TestMCPGoListToolsHookEditsTheAnswer(t *testing.T) {
	hooks := &server.Hooks{}
	hooks.AddAfterListTools(func(_ context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		res.Tools = slices.DeleteFunc(res.Tools, func(t mcp.Tool) bool { return t.Name == routeToolName })
	})
	srv, _, url := bareMCPGo(t, nil, nil, server.WithToolCapabilities(false), server.WithHooks(hooks))
	noop := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(""), nil
	}
	srv.AddTool(mcp.Tool{Name: "search_tools", RawInputSchema: objectSchema}, noop)
	srv.AddTool(mcp.Tool{Name: routeToolName, RawInputSchema: objectSchema}, noop)
	c, _ := connectBare(t, url, mcp.ProtocolVersion20251125, false)
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"search_tools"}) {
		t.Errorf("tools/list = %q; want search_tools only, the hook having taken the route tool out", names)
	}
}

// elicitor answers every question with an accepted answer.
type elicitor struct{}

func (elicitor) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"answer": string(AllowOnce)}}}, nil
}

// Assumption 7: a tool handler learns from its context who calls: a
// 2026-07-28 request's protocol info, a session's client session with
// the capabilities it declared.
func TestMCPGoTellsTheHandlerWhoCalls(t *testing.T) {
	srv, _, url := bareMCPGo(t, newMCPSessions(), nil, server.WithToolCapabilities(false))
	srv.AddTool(mcp.Tool{Name: "who", RawInputSchema: objectSchema}, func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
			return mcp.NewToolResultText(fmt.Sprintf("modern %s, can ask %t", clientName(info.ClientInfo),
				info.ClientCapabilities != nil && formElicitation(info.ClientCapabilities.Elicitation))), nil
		}
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			ci, ok := cs.(server.SessionWithClientInfo)
			return mcp.NewToolResultText(fmt.Sprintf("session %s, can ask %t", cs.SessionID(), ok && formElicitation(ci.GetClientCapabilities().Elicitation))), nil
		}
		return mcp.NewToolResultText("nobody"), nil
	})
	for _, tc := range []struct {
		name, version string
		ask           bool
		want          func(session string) string
	}{
		{"a session that can ask", mcp.ProtocolVersion20251125, true, func(s string) string { return "session " + s + ", can ask true" }},
		{"a session that cannot", mcp.ProtocolVersion20251125, false, func(s string) string { return "session " + s + ", can ask false" }},
		{"a 2026-07-28 client that can ask", mcp.ProtocolVersion20260728, true, func(string) string { return "modern agent 1, can ask true" }},
		{"a 2026-07-28 client that cannot", mcp.ProtocolVersion20260728, false, func(string) string { return "modern agent 1, can ask false" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []client.ClientOption
			if tc.ask {
				opts = append(opts, client.WithElicitationHandler(elicitor{}))
			}
			c, tr := connectBare(t, url, tc.version, false, opts...)
			if got, want := callText(t, c, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "who"}}), tc.want(tr.GetSessionId()); got != want {
				t.Errorf("the handler saw %q; want %q", got, want)
			}
		})
	}
}

// writeLog keeps every Write to the response writers it wraps.
type writeLog struct {
	mu     sync.Mutex
	writes [][]byte
}

func (l *writeLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(loggedWriter{w, l}, r) })
}

func (l *writeLog) all() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.writes)
}

type loggedWriter struct {
	http.ResponseWriter
	l *writeLog
}

func (w loggedWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	w.l.writes = append(w.l.writes, bytes.Clone(p))
	w.l.mu.Unlock()
	return w.ResponseWriter.Write(p)
}

func (w loggedWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Assumption 8: what mcp-go sends an agent on a stream goes through the
// response writer it was handed, one Write per event, whole: a
// list_changed notification on a session's GET stream (isListChanged),
// and a question (elicitation/create) in a call's answer, with its
// _meta as sent (noteQuestions).
func TestMCPGoWritesAnEventAWrite(t *testing.T) {
	log := &writeLog{}
	srv, _, url := bareMCPGo(t, newMCPSessions(), log.wrap, server.WithToolCapabilities(true))
	srv.AddTool(mcp.Tool{Name: "ask", RawInputSchema: objectSchema}, func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := srv.RequestElicitation(ctx, mcp.ElicitationRequest{Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
			Params: question(&approval{ID: "ap-1", ServerName: "alpha", Tool: "write", Args: "{}"})})
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(string(res.Action)), nil
	})
	c, _ := connectBare(t, url, mcp.ProtocolVersion20251125, true, client.WithElicitationHandler(elicitor{}))
	var heard atomic.Int32
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			heard.Add(1)
		}
	})
	// The GET stream opens in the background: notify until it is heard.
	for deadline := time.Now().Add(10 * time.Second); heard.Load() == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the agent heard no tools/list_changed on its GET stream")
		}
		srv.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
	}
	if got := callText(t, c, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask"}}); got != string(mcp.ElicitationResponseActionAccept) {
		t.Fatalf("the call that asks = %q; want accept", got)
	}
	var notified, asked int
	for _, p := range log.all() {
		if bytes.Contains(p, listChangedEvent) {
			if isListChanged(p) != string(mcp.MethodNotificationToolsListChanged) {
				t.Errorf("a write holds part of a list_changed event: %q", p)
			}
			notified++
		}
		if bytes.Contains(p, []byte(approvalMeta)) {
			for data := range sseData(p) {
				var msg struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Params struct {
						Meta map[string]any `json:"_meta"`
					} `json:"params"`
				}
				if json.Unmarshal(data, &msg) == nil && msg.Method == string(mcp.MethodElicitationCreate) && len(msg.ID) > 0 && msg.Params.Meta[approvalMeta] == "ap-1" {
					asked++
				}
			}
		}
	}
	if notified == 0 || asked != 1 {
		t.Errorf("writes: %d of a whole list_changed event, %d of a whole question with its approval id in _meta; want some, and 1", notified, asked)
	}
}

// Assumption 9: a list result, as mcp-go encodes it, is listHeads' head,
// the list (a JSON array of the items as they encode) and "}", for a
// session and a 2026-07-28 request alike: what writeList writes.
func TestMCPGoEncodesListsLast(t *testing.T) {
	tool := mcp.Tool{Name: "t", Description: "A tool.", RawInputSchema: objectSchema}
	for _, tc := range []struct {
		method mcp.MCPMethod
		item   any
		full   func() mcp.ResultMetadata
	}{
		{mcp.MethodToolsList, tool, func() mcp.ResultMetadata { return &mcp.ListToolsResult{Tools: []mcp.Tool{tool}} }},
		{mcp.MethodResourcesList, mcp.NewResource("test://r", "r"), func() mcp.ResultMetadata {
			return &mcp.ListResourcesResult{Resources: []mcp.Resource{mcp.NewResource("test://r", "r")}}
		}},
		{mcp.MethodResourcesTemplatesList, mcp.NewResourceTemplate("test://{id}", "tmpl"), func() mcp.ResultMetadata {
			return &mcp.ListResourceTemplatesResult{ResourceTemplates: []mcp.ResourceTemplate{mcp.NewResourceTemplate("test://{id}", "tmpl")}}
		}},
		{mcp.MethodPromptsList, mcp.NewPrompt("p"), func() mcp.ResultMetadata { return &mcp.ListPromptsResult{Prompts: []mcp.Prompt{mcp.NewPrompt("p")}} }},
	} {
		for i, modern := range []bool{false, true} {
			res := tc.full()
			if modern {
				res.SetResultType(mcp.ResultTypeComplete)
				res.EnsureResultMeta().SetServerInfo(serverInfo)
				res.(mcp.CacheHintSetter).SetCacheHints(offerTTL, offerScope)
			}
			want, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			item, err := json.Marshal(tc.item)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Concat(listHeads[tc.method][i], []byte(`[`), item, []byte(`]}`)); !bytes.Equal(got, want) {
				t.Errorf("%s (modern %t) written as %s; mcp-go encodes %s", tc.method, modern, got, want)
			}
		}
	}
}

// Assumption 10: mcp-go refuses a POST that is not sent as
// application/json, which parseRequest leaves to it.
func TestMCPGoWantsJSON(t *testing.T) {
	_, _, url := bareMCPGo(t, newMCPSessions(), nil, server.WithToolCapabilities(false))
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
		r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		r.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.Header.Get(server.HeaderKeySessionID) != "" {
			t.Errorf("an initialize sent as %q = %d, session %q; want refused", ct, resp.StatusCode, resp.Header.Get(server.HeaderKeySessionID))
		}
	}
}

// Assumption 11: mcp-go answers a tool's result to a 2026-07-28 request
// with the server's serverInfo in _meta and resultType "complete", as
// refuseCall does, and a session's with neither, as relayed leaves it.
func TestMCPGoMarksModernResults(t *testing.T) {
	srv, _, url := bareMCPGo(t, newMCPSessions(), nil, server.WithToolCapabilities(false))
	srv.AddTool(mcp.Tool{Name: "echo", RawInputSchema: objectSchema}, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo"), nil
	})
	post := func(header map[string]string, params map[string]any) map[string]json.RawMessage {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params})
		r, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			r.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var answer struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || answer.Result == nil {
			t.Fatalf("tools/call = %d, %v; want a result", resp.StatusCode, err)
		}
		return answer.Result
	}
	modern := post(map[string]string{mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728, "Mcp-Method": "tools/call", "Mcp-Name": "echo"},
		map[string]any{"name": "echo", "_meta": map[string]any{mcp.MetaKeyProtocolVersion: mcp.ProtocolVersion20260728, mcp.MetaKeyClientCapabilities: map[string]any{}}})
	wantMeta, _ := json.Marshal(map[string]any{"io.modelcontextprotocol/serverInfo": serverInfo})
	if string(modern["resultType"]) != `"complete"` || string(modern["_meta"]) != string(wantMeta) {
		t.Errorf("a 2026-07-28 result: resultType %s, _meta %s; want \"complete\", %s", modern["resultType"], modern["_meta"], wantMeta)
	}
	_, tr := connectBare(t, url, mcp.ProtocolVersion20251125, false)
	session := post(map[string]string{server.HeaderKeySessionID: tr.GetSessionId(), mcp.HeaderProtocolVersion: mcp.ProtocolVersion20251125},
		map[string]any{"name": "echo"})
	if session["resultType"] != nil || session["_meta"] != nil || session["content"] == nil {
		t.Errorf("a session's result = %s; want its content without resultType or _meta", session)
	}
}
