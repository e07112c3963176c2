package main

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP collector of traces: it keeps the spans
// it is sent.
type otlpReceiver struct {
	url   string
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" {
			http.NotFound(w, req)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var export collector.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &export); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range export.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// named is the spans received with the name.
func (r *otlpReceiver) named(name string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// childOf is the spans received whose parent is parent.
func (r *otlpReceiver) childOf(parent *tracepb.Span) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if string(s.ParentSpanId) == string(parent.SpanId) && string(s.TraceId) == string(parent.TraceId) {
			out = append(out, s)
		}
	}
	return out
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// With -otlp-endpoint, a verification and a routed call are each traced
// end to end with the MCP semantic conventions (issue 38): the
// verification's span has its requests to the server as children; the
// call's span continues the agent's trace (traceparent in _meta), its
// request to the server is its child, and the server receives that
// child's trace context in its own _meta.
func TestTracesOfAVerificationAndARoutedCall(t *testing.T) {
	rcv := newOTLPReceiver(t)
	token, mcpToken := strings.Repeat("o", 64), strings.Repeat("p", 32)
	s := startServeArgs(t, []string{"-addr", "127.0.0.1:0", "-otlp-endpoint", rcv.url},
		map[string]string{"SWITCHBOARD_DB": filepath.Join(t.TempDir(), "sb.db"), "SWITCHBOARD_TOKEN": token, "SWITCHBOARD_MCP_TOKEN": mcpToken})
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			s.stop()
		}
	})
	d := liveDashboard{base: s.base, token: token}
	d.api(t, http.MethodPost, "/api/v1/servers", map[string]any{"id": "fx", "transport": "stdio", "command": fixture,
		"args": []string{"-trace-echo"}}, http.StatusCreated)
	d.verified(t, "fx")
	d.api(t, http.MethodPut, "/api/v1/servers/fx/tools/trace_context/policy", map[string]any{"policy": "allow"}, http.StatusOK)
	tr, err := transport.NewStreamableHTTP(s.base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + mcpToken}))
	if err != nil {
		t.Fatal(err)
	}
	agent := client.NewClient(tr)
	defer agent.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20251125,
		ClientInfo: mcp.Implementation{Name: "traced-agent", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	const agentTrace, agentSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	res, err := agent.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fx__trace_context",
		Meta: &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + agentTrace + "-" + agentSpan + "-01"}}}})
	if err != nil || res.IsError {
		t.Fatalf("the traced call = %+v, %v", res, err)
	}
	upstream := strings.TrimSpace(res.Content[0].(mcp.TextContent).Text)
	stopped = true
	if err := s.stop(); err != nil { // sends the spans left
		t.Fatalf("serve stopped with %v", err)
	}

	verify := rcv.named("verify fx")
	if len(verify) != 1 || attr(verify[0], "switchboard.outcome") != "success" || attr(verify[0], "switchboard.trigger") != "manual" {
		t.Fatalf("verification spans = %v; want one, a success asked for by a person", verify)
	}
	methods := map[string]bool{}
	for _, c := range rcv.childOf(verify[0]) {
		if c.Kind == tracepb.Span_SPAN_KIND_CLIENT && attr(c, "network.transport") == "pipe" {
			methods[attr(c, "mcp.method.name")] = true
		}
	}
	if !methods["tools/list"] || !(methods["initialize"] || methods["server/discover"]) {
		t.Errorf("the verification's requests = %v; want its handshake and tools/list, as its children", methods)
	}

	call := rcv.named("tools/call fx__trace_context")
	if len(call) != 1 {
		t.Fatalf("routed call spans = %v; want one", call)
	}
	c := call[0]
	if hex.EncodeToString(c.TraceId) != agentTrace || hex.EncodeToString(c.ParentSpanId) != agentSpan || c.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("the call's span is of trace %x under %x (%v); want the agent's trace, under the agent's span, a server span", c.TraceId, c.ParentSpanId, c.Kind)
	}
	if attr(c, "mcp.method.name") != "tools/call" || attr(c, "gen_ai.tool.name") != "fx__trace_context" || attr(c, "switchboard.decision") != "allowed" || attr(c, "mcp.session.id") == "" {
		t.Errorf("the call's span says %v", c.Attributes)
	}
	var out *tracepb.Span
	for _, ch := range rcv.childOf(c) {
		if ch.Name == "tools/call trace_context" && ch.Kind == tracepb.Span_SPAN_KIND_CLIENT {
			out = ch
		}
	}
	if out == nil {
		t.Fatalf("no request to the server under the call's span")
	}
	if want := "00-" + agentTrace + "-" + hex.EncodeToString(out.SpanId) + "-01"; upstream != want {
		t.Errorf("the server received traceparent %q; want %q (the request's span)", upstream, want)
	}
}

// An endpoint that is not a collector's URL stops serve before anything
// starts, saying what is wanted.
func TestServeRefusesABadOTLPEndpoint(t *testing.T) {
	var stdout, stderr syncBuffer
	err := run(context.Background(), []string{"serve", "-addr", "127.0.0.1:0", "-otlp-endpoint", "collector:4318"},
		env(map[string]string{"SWITCHBOARD_DB": filepath.Join(t.TempDir(), "sb.db")}), nil, &stdout, &stderr)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "want an OTLP/HTTP collector's URL") {
		t.Errorf("serve -otlp-endpoint collector:4318 = %v; want a usage error saying what is wanted", err)
	}
}
