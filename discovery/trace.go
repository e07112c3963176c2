package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-dev/switchboard/internal/tracing"
)

// Network transports of the requests to a server, as the span of each
// names it: a stdio server's pipes, or TCP.
const (
	networkPipe = "pipe"
	networkTCP  = "tcp"
)

// traceRequest starts the CLIENT span of a request Switchboard sends to
// a server (its handshake, a page of tools/list, a routed tools/call…),
// named and described as the MCP semantic conventions have it, and puts
// the span's trace context in the request's params._meta, so that a
// server that traces carries the trace on. With tracing off it does
// nothing: req as it is, and a span that records nothing.
func traceRequest(ctx context.Context, req transport.JSONRPCRequest, network string) (context.Context, transport.JSONRPCRequest, trace.Span) {
	if !tracing.Enabled() {
		return ctx, req, trace.SpanFromContext(context.Background())
	}
	name := req.Method
	attrs := []attribute.KeyValue{tracing.MethodName.String(req.Method), tracing.RequestID.String(req.ID.String()), tracing.Transport.String(network)}
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	if b, err := json.Marshal(req.Params); err == nil {
		json.Unmarshal(b, &p)
	}
	switch mcp.MCPMethod(req.Method) {
	case mcp.MethodToolsCall:
		name += " " + p.Name
		attrs = append(attrs, tracing.ToolName.String(p.Name), tracing.OperationName.String("execute_tool"))
	case mcp.MethodPromptsGet:
		name += " " + p.Name
		attrs = append(attrs, tracing.PromptName.String(p.Name))
	case mcp.MethodResourcesRead:
		attrs = append(attrs, tracing.ResourceURI.String(p.URI))
	}
	ctx, span := tracing.Tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	req.Params = tracing.ToParams(ctx, req.Params)
	return ctx, req, span
}

// endRequest ends a request's span with its answer: failed with the
// error's type, the JSON-RPC error's code, or a tool's own error.
func endRequest(span trace.Span, resp *transport.JSONRPCResponse, err error) {
	if !span.IsRecording() {
		return
	}
	defer span.End()
	switch {
	case err != nil:
		tracing.Fail(span, errorType(err), err)
	case resp != nil && resp.Error != nil:
		code := strconv.Itoa(resp.Error.Code)
		span.SetAttributes(tracing.StatusCode.String(code))
		tracing.Fail(span, code, nil)
	case resp != nil:
		var r struct {
			IsError bool `json:"isError"`
		}
		if json.Unmarshal(resp.Result, &r) == nil && r.IsError {
			tracing.Fail(span, "tool_error", nil)
		}
	}
}

// errorType is the error.type of a request that failed with err: its
// class when it is a verification's error, else Go's name of it.
func errorType(err error) string {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Class
	case errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	case errors.Is(err, context.Canceled):
		return ClassCancelled
	}
	return "_OTHER" // the semantic conventions' word for an error of no known type
}
