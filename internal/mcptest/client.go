package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The MCP clients of the tests: mcp-go's client, as an agent uses it
// (Client, Asker), and single requests posted as they are (Post).

// Client is a real MCP client connected to /mcp, listening for server
// notifications.
type Client struct {
	*client.Client
	// ListChanged counts the notifications/tools/list_changed heard.
	ListChanged atomic.Int32
	// Acknowledged counts the subscriptions/listen streams the server
	// acknowledged (2026-07-28).
	Acknowledged atomic.Int32
}

// Connect connects to /mcp at base with token as a session-based client
// (2025-11-25) with its stream for server notifications open, until the
// test ends.
func Connect(t testing.TB, base, token string) *Client {
	t.Helper()
	return ConnectAs(t, base, token, mcp.ProtocolVersion20251125, mcp.Implementation{Name: "test-agent", Version: "0.1"})
}

// ConnectAs connects a client of the protocol version, as info, until
// the test ends: session-based with its notification stream open before
// 2026-07-28; from it stateless, discovering the server, and hearing
// notifications only on a subscriptions/listen stream it opens (Listen).
// It fails t unless the initialize answers Switchboard's endpoint with
// tools.listChanged, at the version.
func ConnectAs(t testing.TB, base, token, version string, info mcp.Implementation, opts ...client.ClientOption) *Client {
	t.Helper()
	topts := []transport.StreamableHTTPCOption{transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token})}
	if !mcp.IsModernProtocol(version) {
		//lint:ignore SA1019 an agent of 2025-11-25 or earlier hears notifications on the GET stream
		topts = append(topts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(base+"/mcp", topts...)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, opts...)
	mc := &Client{Client: c}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case string(mcp.MethodNotificationToolsListChanged):
			mc.ListChanged.Add(1)
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			mc.Acknowledged.Add(1)
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

// Names is the names tools/list answers, sorted; it fails t if the list
// fails.
func (c *Client) Names(t testing.TB) []string {
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

// Call calls the tool with args.
func (c *Client) Call(name string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
}

// PromptNames is the names prompts/list answers; it fails t if the list
// fails.
func (c *Client) PromptNames(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	var out []string
	for _, p := range res.Prompts {
		out = append(out, p.Name)
	}
	return out
}

// ResourceURIs is the URIs resources/list answers and the URI templates
// resources/templates/list does; it fails t if either fails.
func (c *Client) ResourceURIs(t testing.TB) (resources, templates []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	for _, r := range res.Resources {
		resources = append(resources, r.URI)
	}
	tmpl, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatalf("resources/templates/list: %v", err)
	}
	for _, r := range tmpl.ResourceTemplates {
		templates = append(templates, r.URITemplate.Raw())
	}
	return resources, templates
}

// Prompt gets the prompt with args.
func (c *Client) Prompt(name string, args map[string]string) (*mcp.GetPromptResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: name, Arguments: args}})
}

// Read reads the resource at uri.
func (c *Client) Read(uri string) (*mcp.ReadResourceResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
}

// Text is the text of a tool result's first content ("" if it has none,
// Refused is what refused a call: its MCP error, or its result's text
// when the result is an error (isError: as Switchboard answers a call it
// refused, or whose server failed); nil for a call that went through.
func Refused(res *mcp.CallToolResult, err error) error {
	if err != nil {
		return err
	}
	if res != nil && res.IsError {
		return errors.New(Text(res))
	}
	return nil
}

// or its first is not text).
func Text(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	tc, _ := res.Content[0].(mcp.TextContent)
	return tc.Text
}

// ModernAgent is the clientInfo of the 2026-07-28 client of the tests.
var ModernAgent = mcp.Implementation{Name: "modern-agent", Version: "0.2"}

// Answer is an answer of /mcp: its HTTP status, and its JSON-RPC id and
// result or error.
type Answer struct {
	Status int
	ID     json.RawMessage
	Result map[string]json.RawMessage
	Error  *RPCError
}

// RPCError is the error of an Answer (its message left out: the tests
// compare codes and data).
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// Post posts a JSON-RPC message to /mcp at base with token and the
// headers, on a connection of its own, and returns the answer; it fails
// t unless the answer is a JSON-RPC message.
func Post(t testing.TB, base, token string, header map[string]string, msg any) Answer {
	t.Helper()
	body, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.NewRequest(http.MethodPost, base+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+token)
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
	var envelope struct {
		ID     json.RawMessage            `json:"id"`
		Result map[string]json.RawMessage `json:"result"`
		Error  *RPCError                  `json:"error"`
	}
	if err := json.Unmarshal(data.Bytes(), &envelope); err != nil {
		t.Fatalf("POST /mcp %s = %d %q: %v", body, resp.StatusCode, truncate(data.String()), err)
	}
	return Answer{Status: resp.StatusCode, ID: envelope.ID, Result: envelope.Result, Error: envelope.Error}
}

// ModernRequest is a well-formed 2026-07-28 request of the method, as
// ModernAgent, and its headers; the tests break one part of it at a
// time. params (nil for none) gets the request's _meta.
func ModernRequest(method string, params map[string]any) (header map[string]string, msg map[string]any) {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: map[string]any{},
		mcp.MetaKeyClientInfo:         ModernAgent,
	}
	header = map[string]string{"Mcp-Protocol-Version": mcp.ProtocolVersion20260728, "Mcp-Method": method}
	if name, ok := params["name"].(string); ok {
		header["Mcp-Name"] = name
	}
	if task, ok := params["taskId"].(string); ok { // tasks/get, tasks/update, tasks/cancel
		header["Mcp-Name"] = task
	}
	return header, map[string]any{"jsonrpc": "2.0", "id": 41, "method": method, "params": params}
}

// PostModern posts a ModernRequest with token, changed by edit if it is
// not nil.
func PostModern(t testing.TB, base, token, method string, params map[string]any, edit func(header map[string]string, msg map[string]any)) Answer {
	t.Helper()
	header, msg := ModernRequest(method, params)
	if edit != nil {
		edit(header, msg)
	}
	return Post(t, base, token, header, msg)
}

func truncate(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// Asker is an agent's client that can ask its person (MCP elicitation):
// Answer answers each question, seeing its message. Connect it with
// ConnectAsker.
type Asker struct {
	Answer func(ctx context.Context, message string) (*mcp.ElicitationResult, error)
	// Asked counts the questions asked.
	Asked atomic.Int32
	// Choices are the answers the last question offered.
	Choices atomic.Value // []string
	// Withdrawn hears the questions Switchboard withdrew
	// (notifications/cancelled).
	Withdrawn chan struct{}
}

// Elicit answers a question with a.Answer (it is the client's
// elicitation handler).
func (a *Asker) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.Asked.Add(1)
	var schema struct {
		Properties struct {
			Answer struct {
				Enum []string `json:"enum"`
			} `json:"answer"`
		} `json:"properties"`
	}
	b, _ := json.Marshal(req.Params.RequestedSchema)
	json.Unmarshal(b, &schema)
	a.Choices.Store(schema.Properties.Answer.Enum)
	return a.Answer(ctx, req.Params.Message)
}

// Answering is an Asker's Answer: accept with the choice, or the action
// (decline, cancel) without content.
func Answering(choice string) func(context.Context, string) (*mcp.ElicitationResult, error) {
	return func(context.Context, string) (*mcp.ElicitationResult, error) {
		switch choice {
		case "decline", "cancel":
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseAction(choice)}}, nil
		}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
			Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"answer": choice}}}, nil
	}
}

// ConnectAsker connects an agent with token whose client can ask its
// person through a, at the protocol version, until the test ends.
func ConnectAsker(t testing.TB, base, token, version string, a *Asker) *Client {
	t.Helper()
	c := ConnectAs(t, base, token, version, mcp.Implementation{Name: "asking-agent", Version: "1"}, client.WithElicitationHandler(a))
	a.Withdrawn = make(chan struct{}, 10)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationCancelled) {
			a.Withdrawn <- struct{}{}
		}
	})
	return c
}
