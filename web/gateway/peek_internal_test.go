package gateway

import (
	"encoding/json"
	"testing"
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
