package discovery

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A 2026-07-28 server that does not declare tools.listChanged keeps a
// held session and a watch: they do not subscribe to a notification it
// never sends (it would end that stream at once).
func TestModernServerWithoutListChanged(t *testing.T) {
	url := serveStreamable(t, newToolServer(2)) // tools capability, listChanged false
	target := Target{Transport: TransportHTTP, URL: url}
	res, e, _ := verify(t, Limits{}, target, nil)
	if e != nil || res.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Fatalf("verify = %+v, %v; want protocol %s", res, e, mcp.ProtocolVersion20260728)
	}

	s, err := NewVerifier(Limits{}, nil).Open(context.Background(), target, 5*time.Second)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer s.Close()
	select {
	case <-s.Done():
		t.Fatalf("the session ended by itself: %v", s.Err())
	case <-time.After(500 * time.Millisecond):
	}
	tool := s.Tools()["tool_001"]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := s.Call(ctx, tool.Name, tool.Pin, map[string]any{"q": "x"}, 0); err != nil || resultText(out) != "ok" {
		t.Fatalf("Call = %q, %v; want ok", resultText(out), err)
	}

	w := startWatch(t, nil, target, time.Minute)
	if ev := w.waitCount(t, WatchConnected, 1); ev.ListChanged {
		t.Errorf("WatchConnected.ListChanged = true; the server does not declare it")
	}
	select {
	case err := <-w.done:
		t.Fatalf("the watch ended by itself: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
}

// A server that refuses the protocol version of the first
// server/discover while listing it as supported (as the conformance
// suite's request-metadata scenario does) gets the request again at that
// version, and the verification speaks 2026-07-28, not the older
// handshake the server does not know.
func TestDiscoverRetriedAtRefusedSupportedVersion(t *testing.T) {
	inner := server.NewStreamableHTTPServer(newToolServer(1))
	var refused atomic.Bool
	var seen sync.Map // method → MCP-Protocol-Version header
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(body, &req)
		if req.Method == "initialize" {
			t.Errorf("the client fell back to initialize")
		}
		seen.Store(req.Method, r.Header.Get(mcp.HeaderProtocolVersion))
		if req.Method == string(mcp.MethodServerDiscover) && refused.CompareAndSwap(false, true) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}}`, req.ID)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	}))
	defer ts.Close()
	res, e, _ := verify(t, Limits{}, Target{Transport: TransportHTTP, URL: ts.URL + "/mcp"}, nil)
	if e != nil {
		t.Fatalf("verify: %v", e)
	}
	if res.ProtocolVersion != mcp.ProtocolVersion20260728 || len(res.Tools) != 1 || !refused.Load() {
		t.Fatalf("verify = protocol %q, %d tools (refused once: %v); want %s, 1 tool", res.ProtocolVersion, len(res.Tools), refused.Load(), mcp.ProtocolVersion20260728)
	}
	for _, method := range []string{"server/discover", "tools/list"} {
		if v, _ := seen.Load(method); v != mcp.ProtocolVersion20260728 {
			t.Errorf("%s sent MCP-Protocol-Version %q; want %s", method, v, mcp.ProtocolVersion20260728)
		}
	}
}

func TestRefusedAsSupported(t *testing.T) {
	discover := func(version string) transport.JSONRPCRequest {
		params := map[string]any{}
		if version != "" {
			params["_meta"] = map[string]any{mcp.MetaKeyProtocolVersion: version}
		}
		return transport.JSONRPCRequest{Method: string(mcp.MethodServerDiscover), Params: params}
	}
	refusal := func(code int, supported ...string) *transport.JSONRPCResponse {
		return &transport.JSONRPCResponse{Error: &mcp.JSONRPCErrorDetails{Code: code, Message: "no",
			Data: map[string]any{"supported": supported, "requested": "2026-07-28"}}}
	}
	for _, c := range []struct {
		name string
		req  transport.JSONRPCRequest
		resp *transport.JSONRPCResponse
		want bool
	}{
		{"refused yet listed", discover("2026-07-28"), refusal(mcp.UNSUPPORTED_PROTOCOL_VERSION, "2026-07-28"), true},
		{"refused, other versions listed", discover("2026-07-28"), refusal(mcp.UNSUPPORTED_PROTOCOL_VERSION, "2025-11-25"), false},
		{"another error", discover("2026-07-28"), refusal(mcp.METHOD_NOT_FOUND, "2026-07-28"), false},
		{"no version sent", discover(""), refusal(mcp.UNSUPPORTED_PROTOCOL_VERSION, "2026-07-28"), false},
		{"an older version sent", discover("2025-11-25"), refusal(mcp.UNSUPPORTED_PROTOCOL_VERSION, "2025-11-25"), false},
		{"an answer", discover("2026-07-28"), &transport.JSONRPCResponse{Result: json.RawMessage(`{}`)}, false},
	} {
		if got := refusedAsSupported(c.req, c.resp); got != c.want {
			t.Errorf("%s: refusedAsSupported = %v; want %v", c.name, got, c.want)
		}
	}
}

// Over HTTP on 2026-07-28, a call mirrors each argument whose parameter
// carries an x-mcp-header annotation into its Mcp-Param-<name> header,
// encoded as MCP says (Base64 where the value is not plain ASCII).
func TestParamHeaders(t *testing.T) {
	s := server.NewMCPServer("headers", "1", server.WithToolCapabilities(false))
	ok := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	s.AddTool(mcp.NewToolWithRawSchema("routed", "Routed by region.",
		json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"note":{"type":"string","x-mcp-header":"Note"},"n":{"type":"integer"}}}`)), ok)
	inner := server.NewStreamableHTTPServer(s)
	calls := make(chan http.Header, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(mcp.HeaderMethod) == string(mcp.MethodToolsCall) {
			calls <- r.Header.Clone()
		}
		inner.ServeHTTP(w, r)
	}))
	defer ts.Close()
	target := Target{Transport: TransportHTTP, URL: ts.URL + "/mcp"}

	sess, err := NewVerifier(Limits{}, nil).Open(context.Background(), target, 5*time.Second)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer sess.Close()
	tool := sess.Tools()["routed"]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := sess.Call(ctx, tool.Name, tool.Pin, map[string]any{"region": "us-west1", "note": "Grüße", "n": 3}, 0); err != nil {
		t.Fatalf("Call = %v", err)
	}
	h := <-calls
	if got := h.Get("Mcp-Param-Region"); got != "us-west1" {
		t.Errorf("Mcp-Param-Region = %q; want us-west1", got)
	}
	if got := h.Get("Mcp-Param-Note"); got != "=?base64?R3LDvMOfZQ==?=" {
		t.Errorf("Mcp-Param-Note = %q; want the Base64 form of Grüße", got)
	}
	if got := h.Get(mcp.HeaderName); got != "routed" {
		t.Errorf("%s = %q; want routed", mcp.HeaderName, got)
	}
	for name := range h {
		if strings.HasPrefix(name, "Mcp-Param-") && name != "Mcp-Param-Region" && name != "Mcp-Param-Note" {
			t.Errorf("header %s sent; only annotated parameters are mirrored", name)
		}
	}
}

// A tool whose x-mcp-header annotations break MCP's rules is flagged
// invalid (never offered or called), saying which property.
func TestHeaderAnnotationsChecked(t *testing.T) {
	for _, c := range []struct {
		name, schema, want string
	}{
		{"valid", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`, ""},
		{"object", `{"type":"object","properties":{"data":{"type":"object","x-mcp-header":"Data"}}}`, `"data"`},
		{"empty", `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":""}}}`, `"v"`},
		{"number", `{"type":"object","properties":{"score":{"type":"number","x-mcp-header":"Score"}}}`, `"score"`},
		{"duplicate", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"MyField"},"b":{"type":"string","x-mcp-header":"myfield"}}}`, "duplicate"},
		{"space in name", `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":"My Field"}}}`, `"v"`},
	} {
		tool, err := decodeTool(json.RawMessage(`{"name":"t","inputSchema":`+c.schema+`}`), DefaultLimits)
		if err != nil {
			t.Fatalf("%s: decodeTool = %v", c.name, err)
		}
		switch {
		case c.want == "" && (tool.State != "" || len(tool.Problems) != 0):
			t.Errorf("%s: state %q, problems %q; want a valid tool", c.name, tool.State, tool.Problems)
		case c.want != "" && (tool.State != ToolInvalid || len(tool.Problems) != 1 ||
			!strings.Contains(tool.Problems[0], "x-mcp-header") || !strings.Contains(tool.Problems[0], c.want)):
			t.Errorf("%s: state %q, problems %q; want invalid, one problem naming x-mcp-header and %s", c.name, tool.State, tool.Problems, c.want)
		}
	}
}

// A server/discover answered without the version asked for among the
// supported ones is an older server's answer to any method: the client
// is told it is not a 2026-07-28 server (and runs initialize).
func TestDiscoverAnswerWithoutSupportedVersion(t *testing.T) {
	req := transport.JSONRPCRequest{Method: string(mcp.MethodServerDiscover),
		Params: map[string]any{"_meta": map[string]any{mcp.MetaKeyProtocolVersion: "2026-07-28"}}}
	for _, c := range []struct {
		result string
		modern bool
	}{
		{`{}`, false},
		{`{"supportedVersions":["2025-11-25"]}`, false},
		{`{"supportedVersions":"2026-07-28"}`, false},
		{`{"supportedVersions":["2026-07-28"],"capabilities":{}}`, true},
	} {
		send := func(context.Context, transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
			return &transport.JSONRPCResponse{Result: json.RawMessage(c.result)}, nil
		}
		resp, err := sendDiscover(context.Background(), send, req)
		if err != nil {
			t.Fatal(err)
		}
		if modern := resp.Error == nil; modern != c.modern {
			t.Errorf("discover answered %s: taken as 2026-07-28 %v (error %+v); want %v", c.result, modern, resp.Error, c.modern)
		}
	}
}

// A list's ttlMs and cacheScope are kept with the result: the least
// ttlMs of all pages.
func TestListCacheHints(t *testing.T) {
	res, e, _ := verify(t, Limits{}, Target{Transport: TransportHTTP,
		URL: serveStreamable(t, newToolServer(3, server.WithCacheHints(90_000, mcp.CacheScopePrivate), server.WithPaginationLimit(2)))}, nil)
	if e != nil {
		t.Fatalf("verify: %v", e)
	}
	if res.Pages != 2 || res.ListTTL == nil || *res.ListTTL != 90*time.Second || res.CacheScope != "private" {
		t.Fatalf("verify = %d pages, ttl %v, scope %q; want 2 pages, 90s, private", res.Pages, res.ListTTL, res.CacheScope)
	}
	for _, c := range []struct {
		ms   *int64
		want string
	}{{nil, "none"}, {ptr(int64(-1)), "none"}, {ptr(int64(0)), "0s"}, {ptr(int64(1) << 62), "8760h0m0s"}} {
		got := "none"
		if d := listTTL(c.ms); d != nil {
			got = d.String()
		}
		if got != c.want {
			t.Errorf("listTTL(%v) = %s; want %s", c.ms, got, c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// modernOnly is the testServer mode of serveModernOnly.
const modernOnly = "modern-only"

// refuseInitialize is the answer of a server that speaks only 2026-07-28
// to initialize.
func refuseInitialize(id json.RawMessage) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"initialize: this server speaks only MCP 2026-07-28"}}`, id)
}

// serveModernOnly serves newToolServer(2) over stdio as a server that
// speaks only 2026-07-28: initialize is refused, everything else is
// mcp-go's. (Writes of whole lines under 4 KiB to a pipe do not
// interleave.)
func serveModernOnly() int {
	r, w := io.Pipe()
	go func() {
		in := bufio.NewScanner(os.Stdin)
		in.Buffer(nil, 1<<20)
		for in.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(in.Bytes(), &m) == nil && m.Method == "initialize" {
				os.Stdout.WriteString(refuseInitialize(m.ID) + "\n")
				continue
			}
			w.Write(append(in.Bytes(), '\n'))
		}
		w.Close()
	}()
	if err := server.NewStdioServer(newToolServer(2)).Listen(context.Background(), r, os.Stdout); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// A server that speaks only 2026-07-28 (initialize refused) verifies,
// over stdio and Streamable HTTP, on 2026-07-28.
func TestModernOnlyServer(t *testing.T) {
	stdio, _ := testServer(t, modernOnly)
	inner := server.NewStreamableHTTPServer(newToolServer(2), server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "initialize" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, refuseInitialize(m.ID))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	}))
	defer ts.Close()
	for _, target := range []Target{stdio, {Transport: TransportHTTP, URL: ts.URL + "/mcp"}} {
		// The server/discover probe's 500 ms is for a server that never
		// answers it; this one does, but a loaded machine may take longer
		// to start it (issue 35's stress run did).
		res, e, _ := verify(t, Limits{DiscoverTimeout: 30 * time.Second}, target, nil)
		if e != nil || res.ProtocolVersion != mcp.ProtocolVersion20260728 || len(res.Tools) != 2 {
			t.Errorf("verify over %s = %+v, %v; want 2 tools on %s", target.Transport, res, e, mcp.ProtocolVersion20260728)
		}
	}
}
