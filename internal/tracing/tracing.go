// Package tracing is Switchboard's OpenTelemetry traces: off unless an
// OTLP endpoint is configured, then a verification and a routed call are
// each traced end to end, with the MCP semantic conventions
// (mcp.method.name, gen_ai.tool.name, mcp.session.id, …) and the trace
// context carried to and from MCP peers in params._meta (traceparent,
// tracestate), as those conventions ask.
//
// The spans are made through the global tracer provider, a no-op until
// Start sets one: with tracing off, a span costs a no-op call.
package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of Switchboard's spans.
const Name = "github.com/switchboard-dev/switchboard"

// Tracer is Switchboard's tracer (the global provider's).
func Tracer() trace.Tracer { return otel.Tracer(Name) }

// on is whether Start turned tracing on.
var on atomic.Bool

// Enabled reports whether spans are exported: what spans cost beyond a
// no-op call (reading a request's parameters for its span's name,
// carrying its trace context) is only spent then.
func Enabled() bool { return on.Load() }

// Attribute keys of the MCP semantic conventions, and Switchboard's own.
const (
	MethodName      = attribute.Key("mcp.method.name")
	SessionID       = attribute.Key("mcp.session.id")
	ProtocolVersion = attribute.Key("mcp.protocol.version")
	ResourceURI     = attribute.Key("mcp.resource.uri")
	ToolName        = attribute.Key("gen_ai.tool.name")
	PromptName      = attribute.Key("gen_ai.prompt.name")
	OperationName   = attribute.Key("gen_ai.operation.name")
	RequestID       = attribute.Key("jsonrpc.request.id")
	ErrorType       = attribute.Key("error.type")
	StatusCode      = attribute.Key("rpc.response.status_code")
	Transport       = attribute.Key("network.transport")
	ClientName      = attribute.Key("switchboard.client.name")
	ServerID        = attribute.Key("switchboard.server.id")
	JobID           = attribute.Key("switchboard.job.id")
	Trigger         = attribute.Key("switchboard.trigger")
	Decision        = attribute.Key("switchboard.decision")
	DecidedBy       = attribute.Key("switchboard.decided_by")
	Outcome         = attribute.Key("switchboard.outcome")
	Replica         = attribute.Key("switchboard.replica")
)

// Config says where traces go.
type Config struct {
	// Endpoint is the OTLP/HTTP collector's URL (http://collector:4318);
	// empty: the OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
	// OTEL_EXPORTER_OTLP_ENDPOINT variable's, and with neither, tracing
	// is off.
	Endpoint string
	// Version and Replica describe this process in every span's
	// resource.
	Version, Replica string
}

// On reports whether c turns tracing on.
func (c Config) On() bool {
	return c.Endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Start exports this process's spans as c says, until shutdown, which
// sends what is left (within ctx) and turns tracing off again. With
// tracing off, Start does nothing.
func Start(ctx context.Context, c Config) (shutdown func(context.Context) error, err error) {
	if !c.On() {
		return func(context.Context) error { return nil }, nil
	}
	var opts []otlptracehttp.Option
	if c.Endpoint != "" {
		u, err := endpointURL(c.Endpoint)
		if err != nil {
			return nil, err
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx, resource.WithAttributes(
		attribute.String("service.name", "switchboard"),
		attribute.String("service.version", c.Version),
		attribute.String("service.instance.id", c.Replica)))
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	on.Store(true)
	return func(ctx context.Context) error {
		on.Store(false)
		err := tp.Shutdown(ctx)
		otel.SetTracerProvider(noop.NewTracerProvider())
		return err
	}, nil
}

// endpointURL is the traces URL of a collector's endpoint: as given when
// it has a path, else its /v1/traces (as OTEL_EXPORTER_OTLP_ENDPOINT is
// read).
func endpointURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("want an OTLP/HTTP collector's URL, such as http://collector:4318; got %q", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// CheckEndpoint says what is wrong with an endpoint Config would be
// given, if anything.
func CheckEndpoint(endpoint string) error {
	_, err := endpointURL(endpoint)
	return err
}

// metaCarrier is an MCP params._meta as a carrier of trace context.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// FromMeta is ctx with the trace context an MCP request's params._meta
// carries (traceparent, tracestate), if any: the agent's trace goes on
// through Switchboard.
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	if _, ok := meta["traceparent"].(string); !ok {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, metaCarrier(meta))
}

// FromHeaders is ctx with the trace context of an HTTP request's
// headers (traceparent, tracestate), if any.
func FromHeaders(ctx context.Context, h http.Header) context.Context {
	if h.Get("traceparent") == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(h))
}

// ToParams is params (a JSON-RPC request's) with the span of ctx's trace
// context in its _meta, for the MCP server it goes to; params as they
// are when ctx has no span being recorded, or they are not an object.
func ToParams(ctx context.Context, params any) any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return params
	}
	b, err := json.Marshal(params)
	if err != nil {
		return params
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return params // null, or not an object
	}
	if m == nil {
		m = map[string]any{}
	}
	meta, _ := m["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	propagation.TraceContext{}.Inject(ctx, metaCarrier(meta))
	m["_meta"] = meta
	return m
}

// Fail marks span failed with err, its type errType.
func Fail(span trace.Span, errType string, err error) {
	if err == nil {
		err = errors.New(errType)
	}
	span.SetAttributes(ErrorType.String(errType))
	span.SetStatus(codes.Error, err.Error())
}
