package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/labstack/echo/v4"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

// The MCP endpoint: one Streamable HTTP MCP server (mcp-go) at /mcp that
// offers agents the approved catalog and routes their calls.
//
// tools/list is answered from an offer built from the store, never by
// contacting an upstream server. The offer holds every tool that is
// active (its pin is the approved one), whose effective policy is allow
// or ask, of a server that is enabled and whose launch a person
// confirmed; each under its agent name, as the canonical JSON of the
// definition that was approved (icons left out: they are URLs). The
// offer is rebuilt when the store changes, and connected agents hear
// notifications/tools/list_changed when the offer does.
//
// mcp-go's own tools/list encodes each tool through a map, which costs
// ~65 ms for 10 000 tools; the offer keeps the whole list encoded, so a
// tools/list of a live session is written from those bytes. The tools
// registered with mcp-go carry only what routing a call needs.

// MCP endpoint defaults.
const (
	DefaultAskTimeout  = 60 * time.Second
	DefaultCallTimeout = 2 * time.Minute
	// mcpMaxBody caps a request body to the endpoint.
	mcpMaxBody = 4 << 20
	// mcpSessionIdle ends an agent session unused for this long.
	mcpSessionIdle = time.Hour
)

// mcpProtocolVersions are the versions the endpoint speaks: the
// session-based ones. 2026-07-28 has no sessions, and the endpoint's
// audit names the agent session and sends list changes to it.
var mcpProtocolVersions = []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250326}

// MCPConfig configures the MCP endpoint.
type MCPConfig struct {
	// Token is the endpoint's bearer token; if empty, the store's (made
	// once, kept across restarts, rotatable from the dashboard).
	Token string
	// AskTimeout is how long a call to an ask tool waits for a person
	// (DefaultAskTimeout if zero); then it is denied.
	AskTimeout time.Duration
	// CallTimeout bounds a routed call, the server's start included
	// (DefaultCallTimeout if zero).
	CallTimeout time.Duration
	// Pool configures the upstream sessions.
	Pool discovery.PoolConfig
}

// offer is what agents are offered at one store revision.
type offer struct {
	revision string
	list     []byte          // the JSON array of tool objects
	hash     string          // of list
	tools    map[string]bool // by agent name
}

type mcpEndpoint struct {
	s        *Server
	cfg      MCPConfig
	srv      *server.MCPServer
	h        *server.StreamableHTTPServer
	sessions *mcpSessions
	pool     *discovery.Pool

	token      atomic.Pointer[string]
	fixedToken bool
	// authLimit counts failed MCP tokens per address, apart from the
	// dashboard's: an agent retrying a rotated token must not lock the
	// person out of the dashboard (agents and browser share 127.0.0.1).
	authLimit *failureLimiter

	offer     atomic.Pointer[offer]
	buildMu   sync.Mutex        // one build at a time
	canonical map[string][]byte // tool JSON by pin and agent name (buildMu)

	approvals *approvals
	audit     *auditLog

	rebuild   chan struct{} // a store change to catch up with (see storeChanged)
	quit      chan struct{} // closed by close
	stopped   chan struct{} // closed when the rebuild loop ended
	closeOnce sync.Once
}

func newMCPEndpoint(s *Server, cfg MCPConfig, v *discovery.Verifier) *mcpEndpoint {
	if cfg.AskTimeout <= 0 {
		cfg.AskTimeout = DefaultAskTimeout
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	e := &mcpEndpoint{s: s, cfg: cfg, sessions: newMCPSessions(), canonical: map[string][]byte{}, authLimit: newFailureLimiter(),
		rebuild: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
	poolCfg := cfg.Pool
	poolCfg.OnChange = e.upstreamChanged
	e.pool = discovery.NewPool(v, poolCfg)
	e.cfg.Pool = e.pool.Config()
	e.approvals = newApprovals(s)
	e.audit = newAuditLog(s)
	hooks := &server.Hooks{}
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, req *mcp.InitializeRequest, _ *mcp.InitializeResult) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			e.sessions.setClient(cs.SessionID(), req.Params.ClientInfo.Name+" "+req.Params.ClientInfo.Version)
		}
	})
	e.srv = server.NewMCPServer("switchboard", "1",
		server.WithToolCapabilities(true),
		server.WithHooks(hooks),
		server.WithRecovery(),
		server.WithInstructions("Switchboard offers the tools a person approved on the MCP servers registered with it, named server__tool. Calls to some tools wait for the person's approval."))
	e.h = server.NewStreamableHTTPServer(e.srv,
		server.WithEndpointPath("/mcp"),
		server.WithSessionIdManager(e.sessions),
		server.WithStreamableHTTPProtocolVersions(mcpProtocolVersions...),
		server.WithStreamableHTTPLogger(s.log.With("part", "mcp")))
	if cfg.Token != "" {
		e.token.Store(&cfg.Token)
		e.fixedToken = true
	}
	return e
}

// start reads the token, builds the first offer and starts the loop that
// rebuilds it after store changes.
func (e *mcpEndpoint) start() error {
	if !e.fixedToken {
		tok, err := e.s.store.MCPToken()
		if err != nil {
			close(e.stopped)
			return err
		}
		e.token.Store(&tok)
	}
	if _, err := e.current(); err != nil {
		close(e.stopped)
		return err
	}
	go func() {
		defer close(e.stopped)
		sweep := time.NewTicker(mcpSessionIdle / 4)
		defer sweep.Stop()
		for {
			select {
			case <-e.rebuild:
				if _, err := e.current(); err != nil {
					e.s.log.Error("rebuild the MCP offer", "err", err)
				}
			case <-sweep.C:
				e.endIdleSessions(time.Now().Add(-mcpSessionIdle))
			case <-e.quit:
				return
			}
		}
	}()
	return nil
}

// close denies waiting calls, stops the upstream sessions and the
// endpoint, and writes the audit log's last records. It may be called
// more than once.
func (e *mcpEndpoint) close() {
	e.closeOnce.Do(func() {
		close(e.quit)
		<-e.stopped
		e.approvals.closeAll()
		e.pool.Close()
		e.h.Shutdown(context.Background())
		e.audit.close()
	})
}

// Token is the endpoint's bearer token.
func (e *mcpEndpoint) Token() string {
	if t := e.token.Load(); t != nil {
		return *t
	}
	return ""
}

// rotate replaces a stored token; a token set by configuration stays.
func (e *mcpEndpoint) rotate() error {
	if e.fixedToken {
		return &apiError{Status: http.StatusConflict, Message: "the MCP token is set by SWITCHBOARD_MCP_TOKEN (or -mcp-token); change it there"}
	}
	tok, err := e.s.store.RotateMCPToken()
	if err != nil {
		return err
	}
	e.token.Store(&tok)
	return nil
}

// storeChanged has the offer rebuilt after a committed change (which
// tells agents if it changed), in the background: the change's own
// request does not wait for a catalog read. Reads that come first
// rebuild it themselves (see current).
func (e *mcpEndpoint) storeChanged(c store.Change) {
	if srv, err := e.s.store.Server(c.ServerID); err != nil || !srv.Enabled || !srv.LaunchConfirmedNow() {
		e.pool.Stop(c.ServerID) // deleted, disabled, or its launch awaits a person
	}
	select {
	case e.rebuild <- struct{}{}:
	default: // one pending rebuild reads every change before it
	}
}

// current returns the offer for the store's current revision, building
// it if the store moved on.
func (e *mcpEndpoint) current() (*offer, error) {
	if o := e.offer.Load(); o != nil && o.revision == e.s.store.Revision() {
		return o, nil
	}
	e.buildMu.Lock()
	defer e.buildMu.Unlock()
	if o := e.offer.Load(); o != nil && o.revision == e.s.store.Revision() {
		return o, nil
	}
	o, err := e.build()
	if err != nil {
		return nil, err
	}
	old := e.offer.Swap(o)
	if old == nil || old.hash != o.hash {
		tools := make([]server.ServerTool, 0, len(o.tools))
		for name := range o.tools {
			tools = append(tools, server.ServerTool{
				Tool:    mcp.Tool{Name: name, RawInputSchema: json.RawMessage(`{"type":"object"}`)},
				Handler: e.handleCall,
			})
		}
		e.srv.SetTools(tools...) // tells every agent session the list changed
	}
	return o, nil
}

// offerable reports whether a tool is offered to agents (see refusal).
func offerable(sum *store.Summary, t store.ToolEntry) bool {
	_, reason := refusal(sum.Server, t)
	return reason == ""
}

// build reads the catalog and encodes the offer (buildMu held).
func (e *mcpEndpoint) build() (*offer, error) {
	o := &offer{tools: map[string]bool{}}
	var list bytes.Buffer
	list.WriteByte('[')
	used := make(map[string][]byte, len(e.canonical))
	rev, err := e.s.store.Catalog(func(sum *store.Summary, t store.ToolEntry) error {
		if !offerable(sum, t) {
			return nil
		}
		key := t.Pin + " " + t.AgentName
		def, ok := e.canonical[key]
		if !ok {
			var err error
			if def, err = agentDefinition(t); err != nil {
				e.s.log.Warn("tool left out of the MCP offer", "server", t.ServerID, "tool", t.Name, "err", err)
				return nil
			}
		}
		used[key] = def
		if len(o.tools) > 0 {
			list.WriteByte(',')
		}
		list.Write(def)
		o.tools[t.AgentName] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	list.WriteByte(']')
	e.canonical = used // what is no longer offered is forgotten
	o.revision, o.list = rev, list.Bytes()
	sum := sha256.Sum256(o.list)
	o.hash = hex.EncodeToString(sum[:])
	return o, nil
}

// agentDefinition is the tool object agents get: the canonical JSON
// (RFC 8785) of the definition as approved, named with the agent name,
// without icons.
func agentDefinition(t store.ToolEntry) ([]byte, error) {
	canon, err := jcs.Transform(t.Raw)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(canon, &fields); err != nil {
		return nil, err
	}
	name, _ := json.Marshal(t.AgentName)
	fields["name"] = name
	delete(fields, "icons")
	if _, ok := fields["inputSchema"]; !ok {
		fields["inputSchema"] = json.RawMessage(`{"type":"object"}`)
	}
	return json.Marshal(fields) // sorted keys, as canonical JSON has them
}

// handleMCP serves /mcp: the bearer token, a capped body, tools/list from
// the offer, everything else through mcp-go.
func (e *mcpEndpoint) handleMCP(c echo.Context) error {
	r, w := c.Request(), c.Response()
	header := r.Header.Get(echo.HeaderAuthorization)
	if header != "" {
		if err := limitBy(e.authLimit, c); err != nil {
			return err
		}
	}
	scheme, token, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Bearer") || !equal(strings.TrimSpace(token), e.Token()) {
		if header != "" {
			e.authLimit.failed(clientOf(c))
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard-mcp"`)
		return &apiError{Status: http.StatusUnauthorized, Message: "missing or invalid MCP bearer token (see Agents in the dashboard)"}
	}
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcpMaxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return &apiError{Status: http.StatusRequestEntityTooLarge, Message: "request body over 4 MiB"}
			}
			return &apiError{Status: http.StatusBadRequest, Message: "cannot read the request body"}
		}
		if req, ok := parseRequest(r, body); ok && e.sessions.touch(r.Header.Get(server.HeaderKeySessionID)) {
			switch req.Method {
			case string(mcp.MethodToolsList):
				if req.Params.Cursor != "" { // the offer is one page: no cursor was ever given
					return c.JSON(http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": req.ID,
						"error": map[string]any{"code": mcp.INVALID_PARAMS, "message": "invalid cursor: Switchboard lists every tool in one page"}})
				}
				return e.writeList(c, req.ID)
			case string(mcp.MethodToolsCall):
				if o, err := e.current(); err == nil && !o.tools[req.Params.Name] {
					return e.refuseCall(c, req)
				}
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	e.sessions.touch(r.Header.Get(server.HeaderKeySessionID))
	e.h.ServeHTTP(w, r)
	return nil
}

// rpcRequest is what the endpoint reads of a JSON-RPC request itself.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Cursor    string    `json:"cursor"`
		Name      string    `json:"name"`
		Arguments any       `json:"arguments"`
		Meta      *mcp.Meta `json:"_meta"`
	} `json:"params"`
}

// parseRequest reads body as a single JSON-RPC request of a
// session-based protocol version.
func parseRequest(r *http.Request, body []byte) (rpcRequest, bool) {
	var req rpcRequest
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || json.Unmarshal(body, &req) != nil ||
		req.JSONRPC != "2.0" || len(req.ID) == 0 || string(req.ID) == "null" || mcp.IsModernProtocol(req.Params.Meta.ProtocolVersion()) {
		return req, false
	}
	return req, true
}

// refuseCall answers a tools/call of a tool that is not offered: the
// call path says why (and audits it), as an invalid-params error, which
// is what MCP answers for an unknown tool.
func (e *mcpEndpoint) refuseCall(c echo.Context, req rpcRequest) error {
	session := c.Request().Header.Get(server.HeaderKeySessionID)
	res, err := e.call(c.Request().Context(), callRequest{Session: session, Client: e.sessions.client(session),
		AgentName: req.Params.Name, Args: req.Params.Arguments})
	answer := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	if err != nil {
		answer["error"] = map[string]any{"code": mcp.INVALID_PARAMS, "message": err.Error()}
	} else { // offered since the offer was read
		answer["result"] = res
	}
	return c.JSON(http.StatusOK, answer)
}

// writeList answers a tools/list request from the offer, writing its
// encoded list as it is.
func (e *mcpEndpoint) writeList(c echo.Context, id json.RawMessage) error {
	o, err := e.current()
	if err != nil {
		return err
	}
	head := append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":{"tools":`...)
	tail := []byte(`}}`)
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	w.Header().Set(echo.HeaderContentLength, strconv.Itoa(len(head)+len(o.list)+len(tail)))
	w.WriteHeader(http.StatusOK)
	for _, b := range [][]byte{head, o.list, tail} {
		if _, err := w.Write(b); err != nil {
			return nil // the agent went away
		}
	}
	return nil
}

// endIdleSessions ends the agent sessions unused since before, as an
// agent's DELETE would, so mcp-go forgets them too. (mcp-go's own idle
// sweep does not see the requests this endpoint answers itself.)
func (e *mcpEndpoint) endIdleSessions(before time.Time) {
	for _, id := range e.sessions.idleSince(before) {
		r := httptest.NewRequest(http.MethodDelete, "/mcp", nil)
		r.Header.Set(server.HeaderKeySessionID, id)
		e.h.ServeHTTP(httptest.NewRecorder(), r)
	}
}

// upstreamChanged tells the dashboard that an upstream session opened or
// ended.
func (e *mcpEndpoint) upstreamChanged() { e.s.publishAgents() }
