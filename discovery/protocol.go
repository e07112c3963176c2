package discovery

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// What 2026-07-28 asks of a client beyond the handshake (see
// handshake.go): tools whose x-mcp-header annotations are checked and
// mirrored as headers, a stream of its own for notifications, and a
// tools/list result's ttlMs.

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

// listensForChanges is the subscriptions/listen filter a held connection
// opens a stream with, and whether it opens one: on 2026-07-28, a client
// opts in to notifications on a stream of their own, which lasts as long
// as the connection, and which a server that declares no listChanged
// refuses or ends at once (that is no reason to end the connection). It
// asks for the lists the server says change (tools, and with listed,
// resources and prompts). Over legacy SSE the notifications arrive on the
// event stream without it (and mcp-go's SSE server would hold the request
// past the session); older revisions send them unasked.
func listensForChanges(init *mcp.InitializeResult, t Target, listed bool) (mcp.SubscriptionFilter, bool) {
	caps := init.Capabilities
	f := mcp.SubscriptionFilter{ToolsListChanged: caps.Tools != nil && caps.Tools.ListChanged}
	if listed {
		f.ResourcesListChanged = caps.Resources != nil && caps.Resources.ListChanged
		f.PromptsListChanged = caps.Prompts != nil && caps.Prompts.ListChanged
	}
	ok := mcp.IsModernProtocol(init.ProtocolVersion) && t.Transport != TransportSSE &&
		(f.ToolsListChanged || f.ResourcesListChanged || f.PromptsListChanged)
	return f, ok
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
