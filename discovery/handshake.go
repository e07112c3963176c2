package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Protocol revisions. mcp-go speaks them all: it first sends
// server/discover at 2026-07-28 (the stateless revision: _meta on every
// request, the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers over
// HTTP), and falls back to the initialize handshake of the older
// revisions when the server does not answer it. What Switchboard adds is
// here: how long the probe may take, and one retry mcp-go leaves out; and
// the handshake itself, which a verification, a session and a watch all
// run the same way.

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
func (r *verification) newClient(tr transport.Interface, asks *relays) *client.Client {
	probe := r.limits.DiscoverTimeout
	if r.target.Transport != TransportStdio {
		probe = r.limits.InitTimeout // the handshake's context bounds it too
	}
	opts := []client.ClientOption{client.WithDiscoverTimeout(probe)}
	if a := r.target.Asks; a.Any() && asks != nil {
		opts = append(opts, client.WithClientCapabilities(a.capabilities()))
		if a.Sampling {
			opts = append(opts, client.WithSamplingHandler(asks))
		}
		if a.Elicitation || a.URLElicitation {
			opts = append(opts, client.WithElicitationHandler(asks))
		}
		if a.Roots {
			opts = append(opts, client.WithRootsHandler(asks))
		}
	}
	return client.NewClient(tr, opts...)
}

// listeners are what a held connection hears besides answers: the server
// saying its tool list changed, and the connection lost. A nil one is
// not listened for.
type listeners struct {
	// toolsChanged is called on notifications/tools/list_changed, and
	// listedChanged on notifications/resources/list_changed and
	// notifications/prompts/list_changed.
	toolsChanged, listedChanged func()
	// lost is called when mcp-go finds the connection lost, with the
	// error to end on (see streamLost).
	lost func(error)
	// progress is called on notifications/progress.
	progress func(mcp.JSONRPCNotification)
	// asks answers what the server asks of the calling agents (a held
	// session whose target has Asks).
	asks *relays
	// logged is called on notifications/message.
	logged func(mcp.JSONRPCNotification)
	// updated is called on notifications/resources/updated.
	updated func(mcp.JSONRPCNotification)
}

// handshake connects to the run's server (see connect) and runs the MCP
// handshake on a new client (see newClient): server/discover, or
// initialize for a server of an older revision, with clientInfo. It
// enters PhaseStarting, then PhaseInitializing once the transport has
// started; both steps are bounded by Limits.InitTimeout from ctx. held
// is the context that owns the connection (an SSE stream, a Streamable
// HTTP GET stream) for as long as it is used, so it must outlast the
// handshake; the init deadline still bounds Start itself, by ending the
// connection. on is registered before anything can arrive.
//
// It returns the client and the server's answer (see greeting). Whatever
// it started, r.disconnect stops, also when it fails: the caller calls
// that once done with the connection, after r.exited if it failed (so
// that a child that exited on its own says so).
func (r *verification) handshake(ctx, held context.Context, on listeners) (*client.Client, *mcp.InitializeResult, error) {
	r.disconnect = func() {}
	r.enter(PhaseStarting, 0)
	initCtx, cancelInit := context.WithTimeout(ctx, r.limits.InitTimeout)
	defer cancelInit()
	tr, cleanup, err := r.connect(initCtx)
	if err != nil {
		return nil, nil, err
	}
	conn, endConn := context.WithCancel(held)
	r.disconnect = func() {
		endConn()
		cleanup()
	}
	c := r.newClient(tr, on.asks)
	if on.toolsChanged != nil || on.listedChanged != nil || on.progress != nil || on.logged != nil || on.updated != nil {
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			switch {
			case n.Method == string(mcp.MethodNotificationToolsListChanged) && on.toolsChanged != nil:
				on.toolsChanged()
			case (n.Method == mcp.MethodNotificationResourcesListChanged || n.Method == mcp.MethodNotificationPromptsListChanged) && on.listedChanged != nil:
				on.listedChanged()
			case n.Method == string(mcp.MethodNotificationProgress) && on.progress != nil:
				on.progress(n)
			case n.Method == string(mcp.MethodNotificationMessage) && on.logged != nil:
				on.logged(n)
			case n.Method == string(mcp.MethodNotificationResourceUpdated) && on.updated != nil:
				on.updated(n)
			}
		})
	}
	if on.lost != nil {
		c.OnConnectionLost(func(err error) { on.lost(streamLost("the event stream", err)) })
	}
	stopInitBound := context.AfterFunc(initCtx, endConn)
	err = c.Start(conn)
	stopped := stopInitBound()
	if err != nil {
		if initErr := initCtx.Err(); initErr != nil {
			return nil, nil, fmt.Errorf("%w: %v", initErr, err)
		}
		return nil, nil, err
	}
	if !stopped { // the init deadline ended the connection
		return nil, nil, initCtx.Err()
	}
	r.enter(PhaseInitializing, 0)
	answer, err := c.Initialize(initCtx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: clientInfo}})
	if err != nil {
		return nil, nil, err
	}
	return c, answer, nil
}

// greeting is what the server said of itself in the handshake, as a
// verification reports it: the protocol version negotiated, its
// serverInfo and instructions, cut to the limits with a warning for each
// cut, and its capabilities; and how a stdio server is isolated.
func (r *verification) greeting(answer *mcp.InitializeResult) *Result {
	res := &Result{ProtocolVersion: answer.ProtocolVersion}
	if r.proc != nil {
		res.Isolation = r.proc.isolation
	}
	r.named(res, answer.ServerInfo)
	res.Instructions = capText(res, "instructions", answer.Instructions, r.limits.InstructionsBytes)
	res.Capabilities, _ = json.Marshal(answer.Capabilities)
	return res
}

// named sets res's ServerName and ServerVersion from info, each cut to
// Limits.ServerInfoBytes with a warning in res.
func (r *verification) named(res *Result, info mcp.Implementation) {
	res.ServerName = capText(res, "name", info.Name, r.limits.ServerInfoBytes)
	res.ServerVersion = capText(res, "version", info.Version, r.limits.ServerInfoBytes)
}

// capText returns s cut to at most n bytes (at a rune boundary), adding a
// warning to res when it is cut; what names the field of serverInfo.
func capText(res *Result, what, s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := cutText(s, n)
	res.Warnings = append(res.Warnings, fmt.Sprintf("the server's %s is %d bytes; the first %d are kept", what, len(s), len(cut)))
	return cut
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
