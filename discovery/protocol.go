package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Protocol revisions. mcp-go speaks them all: it first sends
// server/discover at 2026-07-28 (the stateless revision: _meta on every
// request, the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers over
// HTTP), and falls back to the initialize handshake of the older
// revisions when the server does not answer it. What Switchboard adds is
// here: how long the probe may take, and one retry mcp-go leaves out.

// clientInfo is how Switchboard introduces itself to servers: in
// initialize, and in the _meta of every 2026-07-28 request.
var clientInfo = mcp.Implementation{Name: "switchboard", Version: "1"}

// newClient is the MCP client of one run over tr. On stdio the probe
// gets Limits.DiscoverTimeout: a server of an older revision may ignore
// the unknown method, and what the probe waits is added to every
// verification of it. A remote server gets the whole handshake deadline:
// every HTTP server answers a POST (an older one with a JSON-RPC error
// or a 4xx status), so a probe that gave up early would only take a slow
// 2026-07-28 server (a slow link, a loaded machine) for an older one and
// send it an initialize it does not know.
func (r *verification) newClient(tr transport.Interface) *client.Client {
	probe := r.limits.DiscoverTimeout
	if r.target.Transport != TransportStdio {
		probe = r.limits.InitTimeout // the handshake's context bounds it too
	}
	return client.NewClient(tr, client.WithDiscoverTimeout(probe))
}

// initialize runs the handshake on c: server/discover, or initialize for
// a server of an older revision.
func initialize(ctx context.Context, c *client.Client) (*mcp.InitializeResult, error) {
	return c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: clientInfo}})
}

// sendFunc is a transport's SendRequest.
type sendFunc func(context.Context, transport.JSONRPCRequest) (*transport.JSONRPCResponse, error)

// sendDiscover sends req, and sends a server/discover once more when the
// server refused its protocol version (-32022) while listing that very
// version as supported. MCP asks a client to retry a refused version
// with one the server supports; mcp-go retries only with another version
// than the refused one, and otherwise falls back to initialize, which a
// 2026-07-28-only server does not know. (The conformance suite's
// request-metadata scenario refuses the first request this way.) Other
// requests are sent once.
//
// A server/discover answered with a result that does not list the
// version asked for among its supportedVersions is turned into an error:
// it comes from a server of an older revision that answers any method it
// does not know with an empty result (the suite's initialize scenario
// does), and mcp-go would take the connection for a 2026-07-28 one and
// never run the handshake that server needs.
func sendDiscover(ctx context.Context, send sendFunc, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := send(ctx, req)
	if err != nil || req.Method != string(mcp.MethodServerDiscover) {
		return resp, err
	}
	if refusedAsSupported(req, resp) {
		if resp, err = send(ctx, req); err != nil {
			return resp, err
		}
	}
	if resp == nil || resp.Error != nil {
		return resp, nil
	}
	sent := metaVersion(req)
	var result struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if json.Unmarshal(resp.Result, &result) == nil && slices.Contains(result.SupportedVersions, sent) {
		return resp, nil
	}
	notModern := *resp
	notModern.Result = nil
	notModern.Error = &mcp.JSONRPCErrorDetails{Code: mcp.METHOD_NOT_FOUND,
		Message: fmt.Sprintf("server/discover answered without listing protocol version %s as supported", sent)}
	return &notModern, nil
}

// metaVersion is the protocol version req declares in its _meta, or "".
func metaVersion(req transport.JSONRPCRequest) string {
	var params struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if raw, err := json.Marshal(req.Params); err != nil || json.Unmarshal(raw, &params) != nil {
		return ""
	}
	var sent string
	json.Unmarshal(params.Meta[mcp.MetaKeyProtocolVersion], &sent)
	return sent
}

// refusedAsSupported reports whether resp refuses the protocol version
// req declared in its _meta, and lists it among the supported ones.
func refusedAsSupported(req transport.JSONRPCRequest, resp *transport.JSONRPCResponse) bool {
	if resp == nil || resp.Error == nil || resp.Error.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION {
		return false
	}
	var data mcp.UnsupportedProtocolVersionData
	if raw, err := json.Marshal(resp.Error.Data); err != nil || json.Unmarshal(raw, &data) != nil {
		return false
	}
	sent := metaVersion(req)
	return mcp.IsModernProtocol(sent) && slices.Contains(data.Supported, sent)
}

// headerProblem says what is wrong with the x-mcp-header annotations of
// t's input schema (2026-07-28: a string, integer or boolean parameter
// may ask to be sent as an Mcp-Param-<name> HTTP header too), or "".
// MCP asks clients to leave such a tool out over HTTP; Switchboard
// flags it invalid, so it is never offered or called, whatever the
// transport.
func headerProblem(t Tool) string {
	err := mcp.ValidateParamHeaderAnnotations(&mcp.Tool{Name: t.Name, RawInputSchema: t.InputSchema})
	if err == nil {
		return ""
	}
	return cutText("its x-mcp-header annotations break MCP's rules: "+err.Error(), maxProblemBytes)
}

// maxProblemBytes bounds a problem that quotes what the server sent.
const maxProblemBytes = 300

// paramHeaders are the Mcp-Param-<name> headers of a call of t with args
// on a 2026-07-28 connection over HTTP: each argument whose parameter
// has an x-mcp-header annotation, mirrored so that gateways can route on
// it. (mcp-go would add them itself, from the tools it decoded; it never
// sees the lists the pipeline decodes instead, see listStub.)
func paramHeaders(t Tool, args any) http.Header {
	params, err := json.Marshal(mcp.CallToolParams{Name: t.Name, Arguments: args})
	if err != nil {
		return nil
	}
	mirrored := mcp.GenerateParamHeaders(&mcp.Tool{Name: t.Name, RawInputSchema: t.InputSchema}, params)
	if len(mirrored) == 0 {
		return nil
	}
	h := make(http.Header, len(mirrored))
	for name, value := range mirrored {
		h.Set(name, value)
	}
	return h
}

// listensForChanges reports whether a held connection opens a
// subscriptions/listen stream for notifications/tools/list_changed: on
// 2026-07-28, a client opts in to notifications on a stream of their
// own, which lasts as long as the connection, and which a server that
// does not declare tools.listChanged refuses or ends at once (that is no
// reason to end the connection). Over legacy SSE the notifications
// arrive on the event stream without it (and mcp-go's SSE server would
// hold the request past the session); older revisions send them
// unasked.
func listensForChanges(init *mcp.InitializeResult, t Target) bool {
	return mcp.IsModernProtocol(init.ProtocolVersion) && t.Transport != TransportSSE &&
		init.Capabilities.Tools != nil && init.Capabilities.Tools.ListChanged
}

// maxListTTL bounds a list's ttlMs that is kept (a year): a server may
// send any number, and a duration overflows past 292 years.
const maxListTTL = 365 * 24 * time.Hour

// listTTL is a tools/list result's ttlMs as a duration: nil when absent
// or negative, at most maxListTTL.
func listTTL(ms *int64) *time.Duration {
	if ms == nil || *ms < 0 {
		return nil
	}
	d := maxListTTL
	if *ms < int64(maxListTTL/time.Millisecond) {
		d = time.Duration(*ms) * time.Millisecond
	}
	return &d
}
