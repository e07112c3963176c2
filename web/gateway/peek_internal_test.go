package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

var peekCases = []struct {
	body string
	name string // "" when peekCall must decline
}{
	{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fx__read","arguments":{"limit":3,"query":"a \"b\" }{"}}}`, "fx__read"},
	{` { "params" : { "arguments" : [1, {"x": [true, null]}, "]"], "name" : "a-b" } , "method" : "tools/call" , "id" : "x" } `, "a-b"},
	{`{"method":"tools/call","params":{"name":"x"},"jsonrpc":"2.0","id":-1.5e3}`, "x"},
	{`{"method":"tools/list","params":{"name":"x"}}`, ""},
	{`{"method":"tools/call","params":{"name":"x","_meta":{}}}`, ""},
	{`{"method":"tools/call","params":{"name":"\u0078"}}`, ""},
	{`{"method":"tools/call","params":{"name":"x","name":"y"}}`, ""},
	{`{"method":"tools/call","method":"tools/call","params":{"name":"x"}}`, ""},
	{`{"method":"tools/call","params":{"name":"x"}} trailing`, ""},
	{`{"method":"tools/call","params":{"name":""}}`, ""},
	{`{"method":"tools/call","params":{"arguments":{"name":"nested"}}}`, ""},
	{`{"method":"tools/call","params":{"name":"x"`, ""},
	{`[{"method":"tools/call","params":{"name":"x"}}]`, ""},
}

// peekCall reads the method and tool of plain calls, and declines what it
// cannot tell at a glance.
func TestPeekCall(t *testing.T) {
	for _, tc := range peekCases {
		name, ok := peekCall([]byte(tc.body))
		if ok != (tc.name != "") || name != tc.name {
			t.Errorf("peekCall(%s) = %q, %v; want %q, %v", tc.body, name, ok, tc.name, tc.name != "")
		}
	}
}

// Whatever peekCall reads, encoding/json (which mcp-go uses) reads the
// same: a tools/call of that tool.
func FuzzPeekCall(f *testing.F) {
	for _, tc := range peekCases {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		name, ok := peekCall(body)
		if !ok {
			return
		}
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if err := json.Unmarshal(body, &msg); err != nil {
			return // malformed: mcp-go refuses it, whatever peekCall said
		}
		if msg.Method != "tools/call" || msg.Params.Name != name {
			t.Errorf("peekCall(%q) = %q; encoding/json reads method %q, name %q", body, name, msg.Method, msg.Params.Name)
		}
	})
}

// The tools/call a real mcp-go client sends in a session, at each
// session-based version (which from 2025-06-18 it names in a header), is
// read at a glance; a 2026-07-28 client's is not (it has no session, and
// its _meta is checked in full).
func TestSessionCallOfARealClient(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20250326, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			s := server.NewMCPServer("peek", "1")
			s.AddTool(mcp.Tool{Name: "fx__read", RawInputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("ok"), nil
				})
			h := server.NewStreamableHTTPServer(s)
			type sent struct {
				header http.Header
				body   []byte
			}
			calls := make(chan sent, 1)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if bytes.Contains(body, []byte(`"tools/call"`)) {
					calls <- sent{r.Header.Clone(), body}
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				h.ServeHTTP(w, r)
			}))
			defer ts.Close()
			tr, err := transport.NewStreamableHTTP(ts.URL)
			if err != nil {
				t.Fatal(err)
			}
			c := client.NewClient(tr)
			defer c.Close()
			if err := c.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			var init mcp.InitializeRequest
			init.Params.ProtocolVersion = version
			init.Params.ClientInfo = mcp.Implementation{Name: "peek-test", Version: "1"}
			if _, err := c.Initialize(t.Context(), init); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fx__read", Arguments: map[string]any{"q": 1}}}); err != nil {
				t.Fatal(err)
			}
			call := <-calls
			name, ok := sessionCall(call.header, call.body)
			if want := !mcp.IsModernProtocol(version); ok != want || ok && name != "fx__read" {
				t.Errorf("sessionCall of %s with %s %q = %q, %v; want fx__read, %v", call.body, mcp.HeaderProtocolVersion,
					call.header.Get(mcp.HeaderProtocolVersion), name, ok, want)
			}
		})
	}
}
