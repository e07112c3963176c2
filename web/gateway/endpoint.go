// Package gateway is the MCP gateway for agents: one Streamable HTTP MCP
// server (mcp-go) at /mcp that offers agents the approved catalog and
// routes their calls to the upstream servers (through a discovery.Pool),
// with the calls to ask tools waiting for a person (approvals) and every
// call written to the store's call log (audit). The web package mounts
// it, shows its state on the Agents page and in the API, and tells it of
// store changes; it gets what it needs of the rest of Switchboard as
// Deps.
package gateway

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/toolsearch"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/web/internal/authlimit"
	"github.com/switchboard-dev/switchboard/web/internal/reclaim"
)

// tools/list is answered from an offer built from the store, never by
// contacting an upstream server. The offer holds every tool that is
// active (its pin is the approved one), whose effective policy is allow
// or ask, of a server that is enabled and whose launch a person
// confirmed; each under its agent name, as the canonical JSON of the
// definition that was approved (icons left out: they are URLs). The
// offer is rebuilt when the store changes, and agents hear
// notifications/tools/list_changed when the offer does: in their session
// (2025-11-25 and earlier), or on a subscriptions/listen stream
// (2026-07-28).
//
// mcp-go's own tools/list encodes each tool through a map, which costs
// ~65 ms for 10 000 tools; the offer keeps the whole list encoded, so a
// tools/list is written from those bytes, for a live session or a valid
// 2026-07-28 request. mcp-go knows two tools only, search_tools and the
// route tool, and every other tools/call reaches the call path through
// the route tool (see routeCall): it holds nothing per offered tool.
//
// The endpoint speaks both eras of MCP. A session-based client
// (2025-03-26 to 2025-11-25) initializes and is known by its
// Mcp-Session-Id; a 2026-07-28 client opens no session, sends its
// protocol version, capabilities and (optionally) clientInfo in the _meta
// of every request, and is known by that clientInfo (see mcpSessions).
// Everything else is the same for both: the offer, the call path
// (call.go), the refusals and the audit.

// The defaults of Config.
const (
	DefaultAskTimeout  = 60 * time.Second
	DefaultCallTimeout = 2 * time.Minute
)

// MaxBody caps a request body to the endpoint.
const MaxBody = 4 << 20

const (
	// mcpSessionIdle ends an agent session unused for this long, and
	// forgets a stateless client unseen for this long.
	mcpSessionIdle = time.Hour
	// mcpServerName and mcpServerVersion are the endpoint's serverInfo.
	mcpServerName    = "switchboard"
	mcpServerVersion = "1"
)

// serverInfo is the endpoint's serverInfo, as 2026-07-28 results carry it.
var serverInfo = mcp.Implementation{Name: mcpServerName, Version: mcpServerVersion}

// mcpProtocolVersions are the versions the endpoint speaks, newest first:
// the stateless 2026-07-28 and the session-based ones before it.
var mcpProtocolVersions = []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250326}

// offerTTL and offerScope are the caching fields of a 2026-07-28
// tools/list result (SEP-2549). The offer changes the moment a person
// changes a policy or a verification finds a tool changed, which nothing
// can schedule, so no time can be promised: a client should list again
// before relying on the list, or keep a subscriptions/listen stream open
// and list again on tools/list_changed. The list is what the holder of
// this endpoint's token is offered, so it is private: no shared cache
// may hand it to anyone else.
const (
	offerTTL   = 0
	offerScope = mcp.CacheScopePrivate
)

// Config configures the MCP endpoint.
type Config struct {
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
	// TokenKept, if set, is called with the stored token when the
	// endpoint starts and after each rotation (not for a Token set
	// here): `switchboard serve` keeps it in a file for `switchboard mcp`.
	TokenKept func(token string)
}

// offer is what agents are offered at one store revision.
type offer struct {
	revision string
	hash     string // of the JSON array of every offered tool
	// tools is what a call of each offered tool needs, by agent name,
	// and servers the servers they are of, by id: a call of a tool
	// offered reads nothing else (see find).
	tools   map[string]offeredCall
	servers map[string]offeredServer
	// views is each profile's view of it, by profile id (see
	// profiles.go).
	views map[string]*view
}

// offeredServer is a server of offered tools, with its configuration's
// hash (see store.Server.ConfigHash), which each call names.
type offeredServer struct {
	srv    store.Server
	config string
}

// offeredCall is what a call of an offered tool needs of it.
type offeredCall struct {
	serverID, name, pin string
	policy, effective   store.Policy
}

// offeredTool is a tool as the offer holds it: its definition for the
// list and its inputSchema.
type offeredTool struct {
	def         []byte
	inputSchema json.RawMessage
	description string // for search (see search.go)
}

// Store is what the gateway reads and writes in the store.
type Store interface {
	Server(ctx context.Context, id string) (store.Server, error)
	Summary(ctx context.Context, id string) (store.Summary, error)
	Summaries(ctx context.Context) ([]store.Summary, error)
	Catalog(ctx context.Context, fn func(*store.Summary, store.ToolEntry) error) (revision string, err error)
	Offer(ctx context.Context, fn func(*store.Summary, store.OfferedTool) error) (revision string, err error)
	Revision() string
	Profiles(ctx context.Context) ([]store.Profile, error)
	ToolByAgentName(ctx context.Context, agentName string) (store.ToolEntry, *store.Tool, error)
	SetPolicy(ctx context.Context, ref store.ToolRef, p store.Policy, by string) (store.ToolEntry, error)
	Listed(ctx context.Context, id string) ([]store.ListedEntry, error)
	ListedCatalog(ctx context.Context, fn func(*store.Summary, store.ListedEntry) error) (revision string, err error)
	SetListedPolicy(ctx context.Context, ref store.ListedRef, p store.Policy, by string) (store.ListedEntry, error)
	AppendCalls(ctx context.Context, calls []store.Call) error
	MCPToken(ctx context.Context) (string, error)
	RotateMCPToken(ctx context.Context) (string, error)
	AddClientToken(ctx context.Context, ct store.ClientToken) error
	ClientTokens(ctx context.Context) ([]store.ClientToken, error)
	RevokeClientToken(ctx context.Context, id string) error
	UpdateClientToken(ctx context.Context, id string, fn func(*store.ClientToken) error) (store.ClientToken, error)
}

// Deps is what the gateway needs of the rest of Switchboard.
type Deps struct {
	Store Store
	// Verifier starts and checks the upstream servers calls are routed to.
	Verifier *discovery.Verifier
	// Target is how a server is reached (with its OAuth token source).
	Target func(store.Server) discovery.Target
	// Verify has a server verified again, for the trigger given: a
	// routed call found it offering another definition than the
	// approved one.
	Verify func(srv store.Server, trigger string) error
	// ApprovalsChanged is called when a call starts or stops waiting for
	// a person (see Endpoint.Approvals), CallsChanged when calls were
	// written to the call log, UpstreamsChanged when an upstream session
	// opened or ended (see Endpoint.Running). Any may be nil.
	ApprovalsChanged, CallsChanged, UpstreamsChanged func()
	// ServerHealthChanged is called when a server's routed calls start
	// or stop failing (see Endpoint.CallHealth). It may be nil.
	ServerHealthChanged func(serverID string)
	// Approvers is how many dashboard tabs are open to answer calls
	// waiting for a person; nil is none.
	Approvers func() int
	// Logger is slog.Default() if nil.
	Logger *slog.Logger
}

// Endpoint is the MCP endpoint. Close it to end the upstream sessions
// and write the last calls to the log.
type Endpoint struct {
	st       Store
	deps     Deps
	log      *slog.Logger
	cfg      Config
	srv      *server.MCPServer
	h        *server.StreamableHTTPServer
	sessions *mcpSessions
	pool     *discovery.Pool
	health   *callHealth

	token      atomic.Pointer[string]
	fixedToken bool
	// clients are the connected clients' own tokens, by hash (see
	// clients.go).
	clients atomic.Pointer[map[string]store.ClientToken]
	// authLimit counts failed MCP tokens per address, apart from the
	// dashboard's: an agent retrying a rotated token must not lock the
	// person out of the dashboard (agents and browser share 127.0.0.1).
	authLimit *authlimit.Limiter

	offer   atomic.Pointer[offer]
	buildMu sync.Mutex // one build at a time
	// lastListSize is the size of the last offer's list (buildMu).
	lastListSize int
	// searchers are the search-mode profiles' indexes, by profile id, and
	// searchRev the revision of the last one built (buildMu; search.go).
	searchers map[string]*searchIndex
	searchRev uint64

	approvals *approvals
	// questions holds the JSON-RPC id of each question in an agent's
	// client, by approval id, while it is asked (see questionWriter).
	questions sync.Map
	// withdrawn is the questions withdrawn, by session and request id
	// (see lateAnswer).
	withdrawnMu sync.Mutex
	withdrawn   map[string]struct{}
	audit       *auditLog

	rebuild   chan struct{} // a store change to catch up with (see storeChanged)
	quit      chan struct{} // closed by Close
	stopped   chan struct{} // closed when the rebuild loop ended
	closeOnce sync.Once
}

// New makes the endpoint, reads its token (unless cfg sets it), and starts
// the loop that builds the offer, at once and after each store change
// (see StoreChanged). It fails only if the store cannot be read.
func New(cfg Config, deps Deps) (*Endpoint, error) {
	for _, f := range []*func(){&deps.ApprovalsChanged, &deps.CallsChanged, &deps.UpstreamsChanged} {
		if *f == nil {
			*f = func() {}
		}
	}
	if deps.Approvers == nil {
		deps.Approvers = func() int { return 0 }
	}
	deps.Logger = cmp.Or(deps.Logger, slog.Default())
	if cfg.AskTimeout <= 0 {
		cfg.AskTimeout = DefaultAskTimeout
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	e := &Endpoint{st: deps.Store, deps: deps, log: deps.Logger, cfg: cfg, sessions: newMCPSessions(), searchers: map[string]*searchIndex{},
		authLimit: authlimit.New(), withdrawn: map[string]struct{}{}, rebuild: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
	poolCfg := cfg.Pool
	poolCfg.OnChange = deps.UpstreamsChanged
	e.pool = discovery.NewPool(deps.Verifier, poolCfg)
	e.cfg.Pool = e.pool.Config()
	e.approvals = newApprovals(deps.ApprovalsChanged, func(ap *approval) {
		c := ap.call // the 2026-07-28 call whose answer was never collected
		c.DurationMS = time.Since(c.At).Milliseconds()
		c.DecidedBy, c.Decision, c.Reason = ap.by, store.DecisionDenied, ap.reason
		if ap.answer.allows() {
			c.Decision, c.Outcome, c.Reason = store.DecisionApproved, "not called", "the agent never called again to collect the answer"
		}
		e.audit.add(c, nil)
	})
	e.audit = newAuditLog(deps.Store, deps.CallsChanged, deps.Logger)
	e.health = newCallHealth(deps.ServerHealthChanged)
	hooks := &server.Hooks{}
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, req *mcp.InitializeRequest, res *mcp.InitializeResult) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			ct, _ := connectedClient(ctx)
			e.sessions.initialized(cs.SessionID(), ct.ID, res.ProtocolVersion, clientName(&req.Params.ClientInfo))
			e.sessions.noteView(cs.SessionID(), e.viewHashes(profileOf(ctx)))
		}
	})
	hooks.AddBeforeCallTool(routeCall)
	hooks.AddAfterListTools(func(_ context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		// A tools/list reaches mcp-go only if this endpoint could not
		// read it (see parseRequest); the route tool is plumbing, never
		// listed.
		res.Tools = slices.DeleteFunc(res.Tools, func(t mcp.Tool) bool { return t.Name == routeToolName })
	})
	e.srv = server.NewMCPServer(mcpServerName, mcpServerVersion,
		server.WithToolCapabilities(true),
		// Resources and prompts (see listed.go): lists that change, no
		// subscriptions to a resource.
		server.WithPromptCapabilities(true),
		server.WithResourceCapabilities(false, true),
		server.WithCompletions(), // relayed to the servers (see answerComplete)
		server.WithHooks(hooks),
		server.WithRecovery(),
		server.WithInstructions("Switchboard offers the tools a person approved on the MCP servers registered with it, named server__tool. Calls to some tools wait for the person's approval."))
	e.h = server.NewStreamableHTTPServer(e.srv,
		server.WithEndpointPath("/mcp"),
		server.WithSessionIdManager(e.sessions),
		server.WithStreamableHTTPProtocolVersions(mcpProtocolVersions...),
		server.WithStreamableHTTPLogger(e.log.With("part", "mcp")))
	e.srv.AddTools(
		server.ServerTool{Tool: mcp.Tool{Name: toolsearch.SearchToolName, RawInputSchema: json.RawMessage(`{"type":"object"}`)}, Handler: e.handleSearch},
		server.ServerTool{Tool: mcp.Tool{Name: routeToolName, RawInputSchema: json.RawMessage(`{"type":"object"}`)}, Handler: e.handleCall})
	if cfg.Token != "" {
		e.token.Store(&cfg.Token)
		e.fixedToken = true
	}
	if err := e.start(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// start reads the token and starts the loop that builds the offer, the
// first time at once.
func (e *Endpoint) start() error {
	ctx := context.Background()
	if !e.fixedToken {
		tok, err := e.st.MCPToken(ctx)
		if err != nil {
			close(e.stopped)
			return err
		}
		e.token.Store(&tok)
		e.keepToken(tok)
	}
	if err := e.loadClients(ctx); err != nil {
		close(e.stopped)
		return err
	}
	// The first offer is built in the background, so that Switchboard
	// serves at once; a request that needs it first builds it (or waits
	// for the build under way): never an answer from no offer. Later
	// changes rebuild it in the background only while an agent may hear
	// of them (a session, a listen stream): otherwise the next request
	// that needs it builds it.
	e.rebuild <- struct{}{}
	go func() {
		defer close(e.stopped)
		sweep := time.NewTicker(mcpSessionIdle / 4)
		defer sweep.Stop()
		for {
			select {
			case <-e.rebuild:
				if e.offer.Load() != nil && !e.sessions.anyListener() {
					continue // no agent to tell: the next request builds it
				}
				began := time.Now()
				if _, err := e.current(); err != nil {
					e.log.Error("rebuild the MCP offer", "err", err)
				}
				// Rebuilds in the background take a third of a core at
				// most, and come at most every rebuildPause: under a
				// stream of changes (a bulk verify), the next waits, its
				// changes gathered. A request that needs the newest offer
				// builds it itself (see current).
				pause := time.NewTimer(max(rebuildPause, 2*time.Since(began)))
				select {
				case <-pause.C:
				case <-e.quit:
					pause.Stop()
					return
				}
			case <-sweep.C:
				e.endIdleSessions(time.Now().Add(-mcpSessionIdle))
				e.sessions.forgetStateless(time.Now().Add(-mcpSessionIdle))
			case <-e.quit:
				return
			}
		}
	}()
	return nil
}

// rebuildPause is the least time between two rebuilds in the background:
// how late a list_changed may reach agents under a stream of changes.
const rebuildPause = 100 * time.Millisecond

// Close denies waiting calls, stops the upstream sessions and the
// endpoint, and writes the audit log's last records. It may be called
// more than once.
func (e *Endpoint) Close() {
	e.closeOnce.Do(func() {
		close(e.quit)
		<-e.stopped
		e.approvals.closeAll()
		e.pool.Close()
		e.h.Shutdown(context.Background())
		e.closeSearchers()
		e.audit.close()
	})
}

// Token is the endpoint's bearer token.
func (e *Endpoint) Token() string {
	if t := e.token.Load(); t != nil {
		return *t
	}
	return ""
}

// Config is the endpoint's configuration, with the defaults it uses for
// what was left zero. Its Token is set only if configuration fixed it
// (then Rotate refuses).
func (e *Endpoint) Config() Config { return e.cfg }

// ErrFixedToken is Rotate's refusal of a token set by configuration.
var ErrFixedToken = errors.New("the MCP token is set by SWITCHBOARD_MCP_TOKEN (or -mcp-token-file); change it there")

// Rotate replaces a stored token; a token set by configuration stays
// (ErrFixedToken).
func (e *Endpoint) Rotate() error {
	ctx := context.Background()
	if e.fixedToken {
		return ErrFixedToken
	}
	tok, err := e.st.RotateMCPToken(ctx)
	if err != nil {
		return err
	}
	e.token.Store(&tok)
	e.keepToken(tok)
	return nil
}

func (e *Endpoint) keepToken(tok string) {
	if e.cfg.TokenKept != nil {
		e.cfg.TokenKept(tok)
	}
}

// StoreChanged has the offer rebuilt after a committed change (which
// tells agents if it changed), in the background: the change's own
// request does not wait for a catalog read. Reads that come first
// rebuild it themselves (see current).
func (e *Endpoint) StoreChanged(c store.Change) {
	ctx := context.Background()
	if c.ServerID != "" { // not a profile's change
		if srv, err := e.st.Server(ctx, c.ServerID); err != nil || !srv.Enabled || !srv.LaunchConfirmedNow() {
			e.pool.Stop(c.ServerID) // deleted, disabled, or its launch awaits a person
		}
	}
	select {
	case e.rebuild <- struct{}{}:
	default: // one pending rebuild reads every change before it
	}
}

// current returns the offer for the store's current revision, building
// it if the store moved on.
func (e *Endpoint) current() (*offer, error) {
	if o := e.offer.Load(); o != nil && o.revision == e.st.Revision() {
		return o, nil
	}
	e.buildMu.Lock()
	defer e.buildMu.Unlock()
	if o := e.offer.Load(); o != nil && o.revision == e.st.Revision() {
		return o, nil
	}
	o, err := e.build()
	if err != nil {
		return nil, err
	}
	old := e.offer.Swap(o)
	// Tells every agent whose view changed that its list did: each
	// session, and each subscriptions/listen stream that asked for that
	// list (see viewChanged, which passes on only the notifications of a
	// view that changed).
	for i, n := range listChangedMethods { // tools, resources, prompts
		// The first offer's tools are news to a session that initialized
		// before it (one whose view it could not read then).
		if old == nil && i == 0 || old != nil && viewsChanged(old, o, n) {
			e.srv.SendNotificationToAllClients(n, nil)
		}
	}
	return o, nil
}

// routeToolName is the tool mcp-go dispatches every tools/call to, but
// search_tools': no agent name can take it (see validAgentName).
const routeToolName = "switchboard:route"

// routeCall is mcp-go's hook before a tools/call: it names the call for
// the route tool, whose handler is the call path (handleCall), keeping
// the name the agent called for it (see calledName). So mcp-go routes
// the call of any tool, and the call path decides what is offered; the
// route tool called by its own name is refused there, as not a tool's.
func routeCall(_ context.Context, _ any, req *mcp.CallToolRequest) {
	if req.Params.Name == toolsearch.SearchToolName {
		return
	}
	// The request's embedded mcp.Request params are a field no message
	// sets (the call's own params shadow them on the wire) and mcp-go
	// does not read: the name rides there, out of the agent's reach.
	req.Request.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{calledNameKey: req.Params.Name}}
	req.Params.Name = routeToolName
}

const calledNameKey = "switchboard/called"

// calledName is the name an agent called in a request routeCall routed.
func calledName(req mcp.CallToolRequest) string {
	if m := req.Request.Params.Meta; m != nil {
		if name, ok := m.AdditionalFields[calledNameKey].(string); ok {
			return name
		}
	}
	return req.Params.Name
}

// build reads the catalog and encodes the offer (buildMu held). The
// agent definitions come from the store as they are offered (see
// store.AgentDefinition), so the list is their concatenation, and every
// tool's definition and input schema are parts of it: the definitions
// are held once, however many views share them.
func (e *Endpoint) build() (*offer, error) {
	ctx := context.Background()
	listed, err := e.buildListed(ctx) // first: a change after it moves the revision read next
	if err != nil {
		return nil, err
	}
	o := &offer{tools: map[string]offeredCall{}, servers: map[string]offeredServer{}}
	list := make([]byte, 0, e.lastListSize) // sized like the last: no growing copies
	list = append(list, '[')
	type span struct{ def, schema [2]int } // where a tool's parts are in list
	var (
		entries []offerEntry
		spans   []span
		// The server of the tools at hand, and whether it offers them
		// (see serverRefusal): the store gives a server's tools one
		// after the other.
		server    string
		servesNow bool
	)
	rev, err := e.st.Offer(ctx, func(sum *store.Summary, t store.OfferedTool) error {
		if sum.Server.ID != server {
			_, reason := serverRefusal(sum)
			server, servesNow = sum.Server.ID, reason == ""
		}
		if !servesNow {
			return nil
		}
		// A tool is offered as its agent definition (see refusal).
		if _, reason := toolRefusal(t.Entry()); reason != "" {
			return nil
		}
		if len(entries) > 0 {
			list = append(list, ',')
		}
		if len(list)+len(t.Definition)+1 > cap(list) {
			// Twice the size, not append's quarter more for a large
			// slice: the first build, sized by no earlier one, would
			// copy the list a dozen times over.
			list = slices.Grow(list, max(cap(list), len(t.Definition)+1))
		}
		at := len(list)
		list = append(list, t.Definition...)
		spans = append(spans, span{def: [2]int{at, len(list)}, schema: [2]int{at + t.SchemaAt[0], at + t.SchemaAt[1]}})
		entries = append(entries, offerEntry{
			tool: OfferedTool{AgentName: t.AgentName, ServerID: t.ServerID, Tool: t.Name, Title: t.Title, Policy: t.Effective},
			def:  offeredTool{description: t.Description},
		})
		o.tools[t.AgentName] = offeredCall{serverID: t.ServerID, name: t.Name, pin: t.Policy.Pin, policy: t.Policy.Policy, effective: t.Effective}
		if _, ok := o.servers[t.ServerID]; !ok {
			o.servers[t.ServerID] = offeredServer{sum.Server, sum.Server.ConfigHash()}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	list = append(list, ']')
	if cap(list)-len(list) > len(list)/4 { // the list is kept: not its room to grow
		list = bytes.Clone(list)
	}
	e.lastListSize = len(list)
	for i := range entries {
		d, s := spans[i].def, spans[i].schema
		entries[i].def.def = list[d[0]:d[1]:d[1]]
		entries[i].def.inputSchema = list[s[0]:s[1]:s[1]]
	}
	profiles, err := e.st.Profiles(ctx)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(list)
	o.hash = hex.EncodeToString(sum[:])
	o.views = make(map[string]*view, len(profiles))
	for _, p := range profiles {
		o.views[p.ID] = buildViewOf(p, entries, list, o.hash)
		o.views[p.ID].listing = buildListing(p, listed)
	}
	e.indexViews(o.views)
	o.revision = rev
	reclaim.After(2 * len(list)) // the build's garbage: what the store lent was copied, and its records decoded
	return o, nil
}

// HTTPError is a request to /mcp refused before MCP: the status to
// answer with and a message fit to show.
type HTTPError struct {
	Status  int
	Message string
}

func (e *HTTPError) Error() string { return e.Message }

// Serve serves a request to /mcp (GET, POST or DELETE): the bearer token
// and a capped body for every request; tools/list from the offer and
// calls of tools not offered refused, for a live session or a valid
// 2026-07-28 request; everything else through mcp-go. It answers the
// request unless it returns an error: an *HTTPError, or one of the store
// (an internal error), for the caller to answer.
func (e *Endpoint) Serve(w http.ResponseWriter, r *http.Request) error {
	header := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	client, connected := e.clientOf(token)
	if !strings.EqualFold(scheme, "Bearer") || !connected && subtle.ConstantTimeCompare([]byte(token), []byte(e.Token())) != 1 {
		// Only a wrong token spends the budget, or is refused for it: a
		// right one never is, whoever failed before (see web's wrongToken).
		if header != "" {
			if e.authLimit.Refused(w.Header(), r.RemoteAddr) {
				return &HTTPError{Status: http.StatusTooManyRequests, Message: authlimit.Message}
			}
			e.authLimit.Failed(authlimit.Client(r.RemoteAddr))
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard-mcp"`)
		return &HTTPError{Status: http.StatusUnauthorized, Message: "missing or invalid MCP bearer token (see Agents in the dashboard)"}
	}
	if connected {
		r = r.WithContext(context.WithValue(r.Context(), connectionKey{}, client))
		e.sessions.tokenSeen(client.ID)
	}
	if sid := r.Header.Get(server.HeaderKeySessionID); sid != "" && !e.sessions.ownedBy(sid, client.ID) {
		// As if it did not exist: another token learns nothing of it.
		return &HTTPError{Status: http.StatusNotFound, Message: "unknown MCP session"}
	}
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return &HTTPError{Status: http.StatusRequestEntityTooLarge, Message: "request body over 4 MiB"}
			}
			return &HTTPError{Status: http.StatusBadRequest, Message: "cannot read the request body"}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !e.offeredCall(r, body) { // else mcp-go takes it: nothing to answer here
			if e.lateAnswer(r.Header.Get(server.HeaderKeySessionID), body) {
				w.WriteHeader(http.StatusAccepted)
				return nil
			}
			if req, ok := parseRequest(r, body); ok {
				if req.modern(r.Header) {
					return e.serveModern(w, r, req)
				}
				if e.sessions.touch(r.Header.Get(server.HeaderKeySessionID)) {
					if answered, err := e.answer(w, r, req, agent{session: r.Header.Get(server.HeaderKeySessionID)}); answered {
						return err
					}
				}
			}
		}
	}
	e.sessions.touch(r.Header.Get(server.HeaderKeySessionID))
	if r.Method == http.MethodGet { // a session's stream, open as long as the agent is there
		defer e.sessions.streaming(r.Header.Get(server.HeaderKeySessionID))()
	}
	sid := r.Header.Get(server.HeaderKeySessionID)
	e.h.ServeHTTP(questionWriter{ResponseWriter: w, e: e, listChanged: func(method string) bool {
		return e.sessions.viewChanged(sid, method, e.viewHashes(profileOf(r.Context())))
	}}, r)
	return nil
}

// serveModern serves a 2026-07-28 request. One that passes the checks
// mcp-go would make (see checkModern) is known by its clientInfo; its
// tools/list, or call of a tool not offered, is answered here, and a
// check that fails is answered as mcp-go would answer it. Everything else
// goes to mcp-go, which makes the same checks.
func (e *Endpoint) serveModern(w http.ResponseWriter, r *http.Request, req rpcRequest) error {
	o, err := e.current()
	if err != nil {
		return err
	}
	if failed := e.checkModern(r.Header, req, o.view(profileOf(r.Context())).tools); failed != nil {
		if req.Method == string(mcp.MethodToolsList) || req.Method == string(mcp.MethodToolsCall) {
			return writeRPCError(w, r, true, req.ID, *failed)
		}
	} else {
		client := req.client()
		ct, _ := connectedClient(r.Context())
		e.sessions.tokenDeclared(ct.ID, req.Params.Meta.ProtocolVersion(), client, true)
		if req.Method == string(mcp.MethodSubscriptionsListen) {
			defer e.sessions.listening(client)()
			defer e.sessions.tokenListening(ct.ID)()
			r = e.endWithEndpoint(r)
			seen := &viewSeen{last: e.viewHashes(profileOf(r.Context()))}
			w = questionWriter{ResponseWriter: w, e: e, listChanged: func(method string) bool {
				return seen.changed(method, e.viewHashes(profileOf(r.Context())))
			}}
		} else {
			e.sessions.seen(client)
		}
		if answered, err := e.answer(w, r, req, agent{session: statelessSession, client: client, modern: true}); answered {
			return err
		}
	}
	e.h.ServeHTTP(w, r)
	return nil
}

// endWithEndpoint returns r with a context that also ends when the
// endpoint closes. A subscriptions/listen stream lasts until its request
// ends, and mcp-go's Shutdown ends the streams of sessions but not these,
// which belong to none: they would hold the HTTP server's shutdown up.
func (e *Endpoint) endWithEndpoint(r *http.Request) *http.Request {
	ctx, cancel := context.WithCancel(r.Context())
	go func() { // ends with the request or the endpoint
		defer cancel()
		select {
		case <-e.quit:
		case <-ctx.Done():
		}
	}()
	return r.WithContext(ctx)
}

// agent is who sent a request: a session, or a 2026-07-28 client, which
// has none.
type agent struct {
	session, client string
	modern          bool
}

// statelessSession stands for the session in the audit and on approval
// cards of a call from a 2026-07-28 client, which has none.
const statelessSession = "stateless"

// answer answers a valid request here if it is a tools/list or a call of
// a tool not offered, and reports whether it did.
func (e *Endpoint) answer(w http.ResponseWriter, r *http.Request, req rpcRequest, from agent) (bool, error) {
	switch req.Method {
	case string(mcp.MethodToolsList):
		if req.Params.Cursor != "" { // the offer is one page: no cursor was ever given
			return true, writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_PARAMS,
				Message: "invalid cursor: Switchboard lists every tool in one page"})
		}
		return true, e.writeList(w, req.ID, from.modern, profileOf(r.Context()), mcp.MethodToolsList)
	case string(mcp.MethodToolsCall):
		if bad := req.badArguments(); bad != "" {
			return true, writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: bad})
		}
		if o, err := e.current(); err == nil {
			if _, offered := o.view(profileOf(r.Context())).tools[req.Params.Name]; !offered {
				return true, e.refuseCall(w, r, req, from)
			}
		}
	case string(mcp.MethodResourcesList), string(mcp.MethodResourcesTemplatesList), string(mcp.MethodPromptsList):
		if req.Params.Cursor != "" {
			return true, writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_PARAMS,
				Message: "invalid cursor: Switchboard lists everything in one page"})
		}
		return true, e.writeList(w, req.ID, from.modern, profileOf(r.Context()), mcp.MCPMethod(req.Method))
	case string(mcp.MethodResourcesRead), string(mcp.MethodPromptsGet):
		return true, e.answerFetch(w, r, req, from)
	case string(mcp.MethodCompletionComplete):
		return true, e.answerComplete(w, r, req, from)
	}
	return false, nil
}

// offeredCall reports whether body is, at a glance (see peekCall), a
// session's tools/call of a tool its view offers: one mcp-go routes to
// the call path with nothing for this endpoint to answer first (see
// answer), so it is not parsed here too.
func (e *Endpoint) offeredCall(r *http.Request, body []byte) bool {
	name, ok := sessionCall(r.Header, body)
	if !ok || !e.sessions.touch(r.Header.Get(server.HeaderKeySessionID)) {
		return false
	}
	if req, ok := parseRequest(r, body); ok && req.badArguments() != "" {
		return false // answered with the reason (see answer)
	}
	o, err := e.current()
	if err != nil {
		return false
	}
	_, offered := o.view(profileOf(r.Context())).tools[name]
	return offered
}

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

// refuseCall answers a tools/call of a tool that is not offered: the
// call path says why (and audits it), as an invalid-params error, which
// is what MCP answers for an unknown tool.
func (e *Endpoint) refuseCall(w http.ResponseWriter, r *http.Request, req rpcRequest, from agent) error {
	client := from.client
	if !from.modern {
		client = e.sessions.client(from.session)
	}
	ct, _ := connectedClient(r.Context())
	res, err := e.call(r.Context(), callRequest{Session: from.session, Client: client, ConnectedAs: ct.Name, TokenID: ct.ID, Profile: profileOf(r.Context()),
		AgentName: req.Params.Name, Args: req.arguments()})
	if err != nil {
		return writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: err.Error()})
	}
	// Offered since the offer was read: answered as mcp-go would.
	if from.modern {
		res.SetResultType(mcp.ResultTypeComplete)
		res.EnsureResultMeta().SetServerInfo(serverInfo)
	}
	return writeJSON(w, r, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": res})
}

// listHeads are the JSON of each list method's result up to its list,
// for a session ([0]) and a 2026-07-28 request ([1]).
var listHeads = map[mcp.MCPMethod][2][]byte{
	mcp.MethodToolsList:     listHeadsOf(func() mcp.ResultMetadata { return &mcp.ListToolsResult{Tools: []mcp.Tool{}} }, "tools"),
	mcp.MethodResourcesList: listHeadsOf(func() mcp.ResultMetadata { return &mcp.ListResourcesResult{Resources: []mcp.Resource{}} }, "resources"),
	mcp.MethodResourcesTemplatesList: listHeadsOf(func() mcp.ResultMetadata {
		return &mcp.ListResourceTemplatesResult{ResourceTemplates: []mcp.ResourceTemplate{}}
	}, "resourceTemplates"),
	mcp.MethodPromptsList: listHeadsOf(func() mcp.ResultMetadata { return &mcp.ListPromptsResult{Prompts: []mcp.Prompt{}} }, "prompts"),
}

// listHeadsOf is the JSON of a list result (made empty by empty) up to its
// list, the field key, as mcp-go's types encode it: for a session, and
// for a 2026-07-28 request with the fields that revision adds
// (resultType, serverInfo, ttlMs and cacheScope).
func listHeadsOf(empty func() mcp.ResultMetadata, key string) [2][]byte {
	var heads [2][]byte
	for i, modern := range []bool{false, true} {
		res := empty()
		if modern {
			res.SetResultType(mcp.ResultTypeComplete)
			res.EnsureResultMeta().SetServerInfo(serverInfo)
			res.(mcp.CacheHintSetter).SetCacheHints(offerTTL, offerScope)
		}
		b, err := json.Marshal(res)
		tail := `"` + key + `":[]}`
		if err != nil || !bytes.HasSuffix(b, []byte(tail)) {
			panic(fmt.Sprintf("%T encodes as %s, %v; want its %s last", res, b, err, key))
		}
		heads[i] = bytes.TrimSuffix(b, []byte(`[]}`))
	}
	return heads
}

// writeList answers a list request of method from the profile's view of
// the offer, writing its encoded list as it is.
func (e *Endpoint) writeList(w http.ResponseWriter, id json.RawMessage, modern bool, profile string, method mcp.MCPMethod) error {
	o, err := e.current()
	if err != nil {
		return err
	}
	v := o.view(profile)
	list := v.list
	if method != mcp.MethodToolsList {
		list = v.listing.lists[method]
	}
	head := append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":`...)
	result := listHeads[method][0]
	if modern {
		result = listHeads[method][1]
	}
	tail := []byte(`}}`)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(result)+len(list)+len(tail)))
	w.WriteHeader(http.StatusOK)
	for _, b := range [][]byte{head, result, list, tail} {
		if _, err := w.Write(b); err != nil {
			return nil // the agent went away
		}
	}
	return nil
}

// endIdleSessions ends the agent sessions unused since before, as an
// agent's DELETE would, so mcp-go forgets them too. (mcp-go's own idle
// sweep does not see the requests this endpoint answers itself.) What it
// assumes of mcp-go is pinned by TestMCPGoEndsASessionOnDelete.
func (e *Endpoint) endIdleSessions(before time.Time) {
	for _, id := range e.sessions.idleSince(before) {
		r := httptest.NewRequest(http.MethodDelete, "/mcp", nil)
		r.Header.Set(server.HeaderKeySessionID, id)
		e.h.ServeHTTP(httptest.NewRecorder(), r)
	}
}

// Offered is how many tools agents are offered now.
func (e *Endpoint) Offered() (int, error) {
	o, err := e.current()
	if err != nil {
		return 0, err
	}
	return len(o.tools), nil
}

// Running is the upstream servers running for calls.
func (e *Endpoint) Running() []discovery.Running { return e.pool.Running() }

// CallHealth is what the calls routed to a server say of its health;
// false if none was routed since Switchboard started.
func (e *Endpoint) CallHealth(serverID string) (CallHealth, bool) { return e.health.get(serverID) }

// StopUpstream ends the upstream session to a server, if one is open (its
// next call opens another).
func (e *Endpoint) StopUpstream(serverID string) { e.pool.Stop(serverID) }
