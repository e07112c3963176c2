package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/store"
)

// The MCP clients of the scenario tests: mcp-go's client, as an agent
// uses it, and single requests posted as they are.

// mcpClient connects a real MCP client to the endpoint, listening for
// server notifications, and counts tools/list_changed.
type mcpClient struct {
	*client.Client
	listChanged atomic.Int32
	// acknowledged counts the subscriptions/listen streams the server
	// acknowledged (2026-07-28).
	acknowledged atomic.Int32
}

// connectMCP connects as a session-based client (2025-11-25) with its
// stream for server notifications open.
func connectMCP(t testing.TB, base, token string) *mcpClient {
	t.Helper()
	return connectMCPAs(t, base, token, mcp.ProtocolVersion20251125, mcp.Implementation{Name: "test-agent", Version: "0.1"})
}

// connectMCPAs connects a client of the protocol version: session-based
// with its notification stream open before 2026-07-28; from it
// stateless, discovering the server, and hearing notifications only on a
// subscriptions/listen stream it opens (Listen).
func connectMCPAs(t testing.TB, base, token, version string, info mcp.Implementation, copts ...client.ClientOption) *mcpClient {
	t.Helper()
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token})}
	if !mcp.IsModernProtocol(version) {
		//lint:ignore SA1019 an agent of 2025-11-25 or earlier hears notifications on the GET stream
		opts = append(opts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(base+"/mcp", opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, copts...)
	mc := &mcpClient{Client: c}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case string(mcp.MethodNotificationToolsListChanged):
			mc.listChanged.Add(1)
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			mc.acknowledged.Add(1)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: version, ClientInfo: info}})
	if err != nil {
		t.Fatalf("initialize at %s: %v", version, err)
	}
	if res.ServerInfo.Name != "switchboard" || res.Capabilities.Tools == nil || !res.Capabilities.Tools.ListChanged {
		t.Fatalf("initialize = %+v; want switchboard with tools.listChanged", res)
	}
	if got := c.ProtocolVersion(); got != version {
		t.Fatalf("the client speaks %s to /mcp; want %s", got, version)
	}
	return mc
}

func (c *mcpClient) names(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

func (c *mcpClient) call(name string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
}

func text(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	tc, _ := res.Content[0].(mcp.TextContent)
	return tc.Text
}

var agentNameSyntax = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// modernAgent is the clientInfo of the 2026-07-28 client in these tests.
var modernAgent = mcp.Implementation{Name: "modern-agent", Version: "0.2"}

// mcpAnswer is an answer of /mcp: its status, and its result or error.
type mcpAnswer struct {
	status int
	id     json.RawMessage
	result map[string]json.RawMessage
	error  *struct {
		Code int             `json:"code"`
		Data json.RawMessage `json:"data"`
	}
}

// postMCP posts a JSON-RPC message to /mcp with the token and headers.
func postMCP(t *testing.T, base string, header map[string]string, msg any) mcpAnswer {
	t.Helper()
	body, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.NewRequest(http.MethodPost, base+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+testMCPToken)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		r.Header.Set(k, v)
	}
	// No connection is kept: none is left open when the tests end.
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(r)
	if err != nil {
		t.Fatalf("POST /mcp %s: %v", body, err)
	}
	defer resp.Body.Close()
	var data bytes.Buffer
	data.ReadFrom(resp.Body)
	a := mcpAnswer{status: resp.StatusCode}
	var envelope struct {
		ID     json.RawMessage            `json:"id"`
		Result map[string]json.RawMessage `json:"result"`
		Error  *struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data.Bytes(), &envelope); err != nil {
		t.Fatalf("POST /mcp %s = %d %q: %v", body, resp.StatusCode, truncate(data.String()), err)
	}
	a.id, a.result, a.error = envelope.ID, envelope.Result, envelope.Error
	return a
}

// modernRequest is a well-formed 2026-07-28 request and its headers; the
// tests break one part of it at a time.
func modernRequest(method string, params map[string]any) (map[string]string, map[string]any) {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: map[string]any{},
		mcp.MetaKeyClientInfo:         modernAgent,
	}
	header := map[string]string{"Mcp-Protocol-Version": mcp.ProtocolVersion20260728, "Mcp-Method": method}
	if name, ok := params["name"].(string); ok {
		header["Mcp-Name"] = name
	}
	return header, map[string]any{"jsonrpc": "2.0", "id": 41, "method": method, "params": params}
}

// postModern posts a well-formed 2026-07-28 request, changed by edit if
// it is not nil.
func postModern(t *testing.T, base, method string, params map[string]any, edit func(header map[string]string, msg map[string]any)) mcpAnswer {
	t.Helper()
	header, msg := modernRequest(method, params)
	if edit != nil {
		edit(header, msg)
	}
	return postMCP(t, base, header, msg)
}

// asker is an agent's client that can ask its person (MCP elicitation):
// answer answers each question, seeing its message.
type asker struct {
	answer func(ctx context.Context, message string) (*mcp.ElicitationResult, error)
	asked  atomic.Int32
	// choices are the answers the last question offered.
	choices atomic.Value // []string
	// withdrawn hears the questions Switchboard withdrew
	// (notifications/cancelled).
	withdrawn chan struct{}
}

func (a *asker) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.asked.Add(1)
	var schema struct {
		Properties struct {
			Answer struct {
				Enum []string `json:"enum"`
			} `json:"answer"`
		} `json:"properties"`
	}
	b, _ := json.Marshal(req.Params.RequestedSchema)
	json.Unmarshal(b, &schema)
	a.choices.Store(schema.Properties.Answer.Enum)
	return a.answer(ctx, req.Params.Message)
}

// answering is an asker's answer: accept with the choice, or the action
// (decline, cancel) without content.
func answering(choice string) func(context.Context, string) (*mcp.ElicitationResult, error) {
	return func(context.Context, string) (*mcp.ElicitationResult, error) {
		switch choice {
		case "decline", "cancel":
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseAction(choice)}}, nil
		}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
			Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"answer": choice}}}, nil
	}
}

// connectAsker connects an agent whose client can ask its person, at
// the protocol version.
func connectAsker(t *testing.T, base, version string, a *asker) *mcpClient {
	t.Helper()
	return connectAskerWith(t, base, testMCPToken, version, a)
}

// connectAskerWith is connectAsker with the MCP token given.
func connectAskerWith(t *testing.T, base, token, version string, a *asker) *mcpClient {
	t.Helper()
	c := connectMCPAs(t, base, token, version, mcp.Implementation{Name: "asking-agent", Version: "1"}, client.WithElicitationHandler(a))
	a.withdrawn = make(chan struct{}, 10)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationCancelled) {
			a.withdrawn <- struct{}{}
		}
	})
	return c
}

// lastCall waits for the call log to hold n calls and returns the newest.
func (e *env) lastCall(n int) store.Call {
	e.t.Helper()
	return e.waitCall(n)
}

// callOutcome is what a call's log entry says of its decision.
type callOutcome struct{ Tool, Decision, DecidedBy, Outcome, Client string }

func outcomeOf(c store.Call) callOutcome {
	return callOutcome{c.Tool, c.Decision, c.DecidedBy, c.Outcome, c.Client}
}
