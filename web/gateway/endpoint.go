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
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/web/internal/authlimit"
)

// The endpoint speaks both eras of MCP. A session-based client
// (2025-03-26 to 2025-11-25) initializes and is known by its
// Mcp-Session-Id; a 2026-07-28 client opens no session, sends its
// protocol version, capabilities and (optionally) clientInfo in the _meta
// of every request, and is known by that clientInfo (see mcpSessions).
// Everything else is the same for both: the offer, the call path
// (call.go), the refusals and the audit.

// The defaults of Config. DefaultAskTimeout is below the 60 s an agent's
// client commonly gives a request (the TypeScript SDK's default), so the
// call is denied, with its reason, before the client gives up on it.
const (
	DefaultAskTimeout  = 45 * time.Second
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
	// AuditSpool, if set, is a file where call records the store could not
	// take wait (a replica cut off from etcd) until it takes them again:
	// a record is never dropped for the store being out of reach.
	AuditSpool string
}

// Store is what the gateway reads and writes in the store.
type Store interface {
	Server(ctx context.Context, id string) (store.Server, error)
	UpdateServer(ctx context.Context, s store.Server) error // what a server may ask (always allow)
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
	store.MCPSessions
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
	// Observe, if set, sees each call's record as it is made (metrics):
	// it must return at once.
	Observe func(store.Call)
	// Approvers is how many dashboard tabs are open to answer calls
	// waiting for a person; nil is none.
	Approvers func() int
	// Logger is slog.Default() if nil.
	Logger *slog.Logger
}

// Endpoint is the MCP endpoint. Close it to end the upstream sessions
// and write the last calls to the log.
type Endpoint struct {
	st   Store
	deps Deps
	log  *slog.Logger
	cfg  Config
	srv  *server.MCPServer
	// relayed are the servers' questions relayed to agents' sessions,
	// expected or sent (see withdraw.go).
	relayed relayedQuestions
	// subs are the agents' resource subscriptions, relayed (see
	// subscriptions.go).
	// listeners are the mcp-go sessions of subscriptions/listen streams
	// that subscribed to resources, by their keys (see bindListen).
	listeners sync.Map
	subs      subscriptions
	h         *server.StreamableHTTPServer
	sessions  *mcpSessions
	pool      *discovery.Pool
	health    *callHealth

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
	parked    parkedCalls // calls whose 2026-07-28 agents answer their servers (parked.go)
	mtasks    modernTasks // 2026-07-28 agents' tasks (modern_tasks.go)
	// questions holds the JSON-RPC id of each question in an agent's
	// client, by approval id, while it is asked (see questionWriter).
	questions sync.Map
	// withdrawn is the questions withdrawn, by session and request id
	// (see lateAnswer).
	withdrawnMu sync.Mutex
	withdrawn   map[string]struct{}
	audit       *auditLog

	rebuild chan struct{} // a store change to catch up with (see storeChanged)
	quit    chan struct{} // closed by Close
	// life ends with Close too: the agents' tasks run in it, and tasks
	// are they (see tasks.go).
	life      context.Context
	endLife   context.CancelFunc
	tasks     agentTasks
	stopped   chan struct{} // closed when the rebuild loop ended
	closeOnce sync.Once
	// resuming serializes bringing kept sessions back (see resume.go).
	resuming sync.Mutex
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
		authLimit: authlimit.New(), withdrawn: map[string]struct{}{}, parked: parkedCalls{m: map[string]*parkedCall{}}, rebuild: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
	e.sessions.ended = e.unsubscribeAll
	e.sessions.forget = e.forgetSession
	e.life, e.endLife = context.WithCancel(context.Background())
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
	e.audit = newAuditLog(deps.Store, deps.CallsChanged, deps.Logger, cfg.AuditSpool, deps.Observe)
	e.health = newCallHealth(deps.ServerHealthChanged)
	e.mountMCPGo()
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
		e.endLife()
		<-e.stopped
		e.approvals.closeAll()
		e.closeParked()
		e.closeTasks()
		e.closeSubscriptions()
		e.pool.Close()
		e.sessions.close() // kept, to be resumed (see resume.go)
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

// Running is the upstream servers running for calls.
func (e *Endpoint) Running() []discovery.Running { return e.pool.Running() }

// CallHealth is what the calls routed to a server say of its health;
// false if none was routed since Switchboard started.
func (e *Endpoint) CallHealth(serverID string) (CallHealth, bool) { return e.health.get(serverID) }

// StopUpstream ends the upstream session to a server, if one is open (its
// next call opens another).
func (e *Endpoint) StopUpstream(serverID string) { e.pool.Stop(serverID) }
