package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// A tool outside MCP's Tool shape is invalid: clients check a whole
// tools/list against it, so one such tool offered could fail the list of
// every server's tools.
func TestShapeProblems(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want []string
	}{
		{`{"name":"a","inputSchema":{"type":"object"}}`, nil},
		{`{"name":"a","title":"T","description":"d","inputSchema":{"type":"object","properties":{}},"outputSchema":{"type":"object"},"annotations":{},"_meta":{}}`, nil},
		{`{"name":"a"}`, []string{"it has no inputSchema (MCP requires one)"}},
		{`{"name":"a","inputSchema":null}`, []string{`its inputSchema is not a JSON Schema object of type "object" (MCP requires one)`}},
		{`{"name":"a","inputSchema":{"type":"string"}}`, []string{`its inputSchema is not a JSON Schema object of type "object" (MCP requires one)`}},
		{`{"name":"a","inputSchema":{"type":["object","null"]}}`, []string{`its inputSchema is not a JSON Schema object of type "object" (MCP requires one)`}},
		{`{"name":"a","inputSchema":{"type":"object"},"outputSchema":[]}`, []string{`its outputSchema is not a JSON Schema object of type "object" (MCP requires one)`}},
		{`{"name":"a","inputSchema":{"type":"object"},"title":null,"description":5}`, []string{"its title is not a string", "its description is not a string"}},
		{`{"name":"a","inputSchema":{"type":"object"},"annotations":"x","_meta":null}`, []string{"its annotations are not an object", "its _meta is not an object"}},
	} {
		if got := shapeProblems(json.RawMessage(c.raw)); !slices.Equal(got, c.want) {
			t.Errorf("shapeProblems(%s) = %q; want %q", c.raw, got, c.want)
		}
	}
	tool, err := decodeTool(json.RawMessage(`{"name":"a","inputSchema":{"type":"string"}}`), Limits{}.withDefaults())
	if err != nil || tool.State != ToolInvalid {
		t.Errorf("decodeTool of a string input schema = %s, %v; want invalid", tool.State, err)
	}
}

// A tool that runs only as an MCP task is sound: Switchboard calls it
// as a task (see tasks.go). Its other flags still apply.
func TestTaskRequiredIsSupported(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want string
	}{
		{`{"name":"a","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}`, ""},
		{`{"name":"a","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}`, ""},
		{`{"name":"a","inputSchema":{"type":"object"},"execution":5}`, ""},
		{`{"name":"a b","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}`, string(ToolInvalid)},
	} {
		tool, err := decodeTool(json.RawMessage(c.raw), Limits{}.withDefaults())
		if err != nil || string(tool.State) != c.want {
			t.Errorf("decodeTool(%s) = %q, %v; want %q", c.raw, tool.State, err, c.want)
		}
		if requiresTask(json.RawMessage(c.raw)) != strings.Contains(c.raw, `"required"`) {
			t.Errorf("requiresTask(%s) = %v", c.raw, !strings.Contains(c.raw, `"required"`))
		}
	}
}

// A failure is lasting only when classify knows what it is: a dropped
// connection may pass, and so may an error nothing recognised (a
// ClassProtocol guess); an unsupported protocol version will not.
func TestLastingOnlyWhenKnown(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		err     error
		class   string
		lasting bool
	}{
		{fmt.Errorf("failed to send request: %w", &url.Error{Op: "Post", URL: "http://x/mcp", Err: io.EOF}), ClassNetwork, false},
		{fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), ClassNetwork, false},
		{errors.New("something nobody foresaw"), ClassProtocol, false},
		{mcp.UnsupportedProtocolVersionError{Version: "1999-01-01"}, ClassProtocol, true},
	} {
		e := classify(c.err, PhaseInitializing, ctx, false, 0)
		if e.Class != c.class || e.Lasting() != c.lasting {
			t.Errorf("classify(%v) = %s, lasting %v; want %s, %v", c.err, e.Class, e.Lasting(), c.class, c.lasting)
		}
	}
}
