package gateway

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/internal/toolsearch"
)

// The JSON-RPC plumbing of what the endpoint answers itself: reading a
// request (rpcRequest, parseRequest), checking a 2026-07-28 one as
// mcp-go would (checkModern), and writing an answer or error.

// rpcRequest is what the endpoint reads of a JSON-RPC request itself.
type rpcRequest struct {
	ID     json.RawMessage
	Method string
	Params struct {
		Cursor string `json:"cursor"`
		Name   string `json:"name"`
		URI    string `json:"uri"`
		// Arguments are as sent: decoded only where this endpoint
		// answers with them (see arguments), not for every request.
		Arguments json.RawMessage `json:"arguments"`
		Meta      *mcp.Meta       `json:"_meta"`
	}
	// RawParams is params as sent.
	RawParams json.RawMessage
}

// badArguments says why a tools/call's arguments (or, for call_tool,
// the arguments it passes on) are not a JSON object; "" if they are, or
// if there are none. mcp-go would hand anything else to the server.
func (req rpcRequest) badArguments() string {
	if !objectOrAbsent(req.Params.Arguments) {
		return "invalid params: arguments must be a JSON object"
	}
	if req.Params.Name == toolsearch.CallToolName {
		var inner struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		json.Unmarshal(req.Params.Arguments, &inner)
		if !objectOrAbsent(inner.Arguments) {
			return "invalid params: " + toolsearch.CallToolName + "'s arguments must be a JSON object"
		}
	}
	return ""
}

// objectOrAbsent reports whether raw is a JSON object, null or nothing.
func objectOrAbsent(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null" || t[0] == '{'
}

// arguments is the request's arguments decoded (nil if none, or not
// JSON: the request was JSON, so they are).
func (req rpcRequest) arguments() any {
	var v any
	if len(req.Params.Arguments) > 0 {
		_ = json.Unmarshal(req.Params.Arguments, &v)
	}
	return v
}

// parseRequest reads body as a single JSON-RPC request, sent as JSON (as
// mcp-go requires: anything else is left to it to refuse).
func parseRequest(r *http.Request, body []byte) (rpcRequest, bool) {
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	req := rpcRequest{}
	if media, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || media != "application/json" ||
		json.Unmarshal(body, &msg) != nil || msg.JSONRPC != "2.0" || len(msg.ID) == 0 || string(msg.ID) == "null" || msg.Method == "" ||
		len(msg.Params) > 0 && json.Unmarshal(msg.Params, &req.Params) != nil {
		return req, false
	}
	req.ID, req.Method, req.RawParams = msg.ID, msg.Method, msg.Params
	return req, true
}

// modern reports whether the request is of protocol version 2026-07-28 or
// later, as mcp-go decides it: by its header or its _meta.
func (req rpcRequest) modern(h http.Header) bool {
	return mcp.IsModernProtocol(h.Get(mcp.HeaderProtocolVersion)) || mcp.IsModernProtocol(req.Params.Meta.ProtocolVersion())
}

// client is the clientInfo of a 2026-07-28 request (see clientName).
func (req rpcRequest) client() string { return clientName(req.Params.Meta.ClientInfo()) }

// rpcError is a JSON-RPC error to answer with.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// checkModern checks a 2026-07-28 request as mcp-go checks one before
// handing it to a method (the transport's validateModernRequest, then the
// server's _meta and header checks: server/streamable_http_modern.go,
// server/protocol.go, mcp.ValidateStandardHeaders), so that what this
// endpoint answers itself is refused exactly when mcp-go would refuse it;
// TestMCPModernChecksAsMCPGo holds the two together. It also checks a
// call's Mcp-Param headers against the inputSchema of the tool offered
// (tools: the agent's view, by agent name) (SEP-2243), which mcp-go
// cannot: the tools registered with it carry no schema. nil means the
// request is valid.
func (e *Endpoint) checkModern(h http.Header, req rpcRequest, tools map[string]json.RawMessage) *rpcError {
	headerVersion, metaVersion := h.Get(mcp.HeaderProtocolVersion), req.Params.Meta.ProtocolVersion()
	switch {
	case h.Get(mcp.HeaderLastEventID) != "":
		return &rpcError{Code: mcp.HEADER_MISMATCH, Message: "Last-Event-ID is not supported in protocol version " + mcp.ProtocolVersion20260728 + ": streams are not resumable"}
	case headerVersion == "":
		return &rpcError{Code: mcp.HEADER_MISMATCH, Message: mcp.HeaderProtocolVersion + " header is required for requests carrying " + mcp.MetaKeyProtocolVersion}
	case metaVersion == "":
		return &rpcError{Code: mcp.INVALID_PARAMS, Message: "missing or invalid _meta field " + mcp.MetaKeyProtocolVersion}
	case headerVersion != metaVersion:
		return &rpcError{Code: mcp.HEADER_MISMATCH, Message: mcp.HeaderProtocolVersion + " header " + headerVersion + " does not match " + mcp.MetaKeyProtocolVersion + " " + metaVersion}
	case !e.h.SupportsProtocolVersion(metaVersion):
		unsupported := mcp.UnsupportedProtocolVersionError{Version: metaVersion, Supported: server.FilterSupportedVersions(e.h)}.JSONRPCError()
		return &rpcError{Code: unsupported.Error.Code, Message: unsupported.Error.Message, Data: unsupported.Error.Data}
	case req.Params.Meta.ClientCapabilities() == nil:
		return &rpcError{Code: mcp.INVALID_PARAMS, Message: "missing or invalid _meta field " + mcp.MetaKeyClientCapabilities}
	}
	if err := mcp.ValidateStandardHeaders(h.Get, metaVersion, mcp.MCPMethod(req.Method), req.RawParams); err != nil {
		return &rpcError{Code: mcp.HEADER_MISMATCH, Message: err.Error()}
	}
	if schema, offered := tools[req.Params.Name]; offered && req.Method == string(mcp.MethodToolsCall) {
		lookup := func(name string) (string, bool) {
			v := h.Values(name)
			if len(v) == 0 {
				return "", false
			}
			return v[0], true
		}
		if err := mcp.ValidateParamHeadersLookup(lookup, &mcp.Tool{RawInputSchema: schema}, req.RawParams); err != nil {
			return &rpcError{Code: mcp.HEADER_MISMATCH, Message: err.Error()}
		}
	}
	return nil
}

// writeRPCError answers a request with a JSON-RPC error; for a 2026-07-28
// request with the HTTP status that revision gives its code.
func writeRPCError(w http.ResponseWriter, r *http.Request, modern bool, id json.RawMessage, e rpcError) error {
	status := http.StatusOK
	if modern {
		switch e.Code {
		case mcp.METHOD_NOT_FOUND:
			status = http.StatusNotFound
		case mcp.HEADER_MISMATCH, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION,
			mcp.INVALID_REQUEST, mcp.INVALID_PARAMS, mcp.PARSE_ERROR:
			status = http.StatusBadRequest
		}
	}
	return writeJSON(w, r, status, map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
}

// writeJSON answers with v as JSON, as the web package's handlers do
// (Echo's Context.JSON): indented if the query has "pretty".
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) error {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	if _, pretty := r.URL.Query()["pretty"]; pretty {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}
