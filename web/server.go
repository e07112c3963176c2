// Package web is Switchboard's HTTP face: the pages, the htmx fragments,
// the SSE stream and the JSON API, with the middleware that guards them.
package web

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	"github.com/r3labs/sse/v2"

	"github.com/switchboard-dev/switchboard/cluster"
	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/gateway"
	"github.com/switchboard-dev/switchboard/web/internal/authlimit"
	"github.com/switchboard-dev/switchboard/web/internal/batch"
	"github.com/switchboard-dev/switchboard/web/internal/bodycache"
	"github.com/switchboard-dev/switchboard/web/internal/conns"
	"github.com/switchboard-dev/switchboard/web/internal/held"
	"github.com/switchboard-dev/switchboard/web/internal/hub"
	"github.com/switchboard-dev/switchboard/web/internal/profiles"
	"github.com/switchboard-dev/switchboard/web/internal/refresh"
	"github.com/switchboard-dev/switchboard/web/internal/replica"
	"github.com/switchboard-dev/switchboard/web/internal/session"
	"github.com/switchboard-dev/switchboard/web/internal/signin"
	"github.com/switchboard-dev/switchboard/web/tryit"
)

// Config configures the web server.
type Config struct {
	// Token is the API bearer token; it also logs a browser in. With a
	// TokenFile, the token that file holds once it is replaced (rotated).
	Token, TokenFile string
	// LoginCode is the one-time code of the login URL printed at start.
	LoginCode string
	// AllowedHosts are extra Host header names accepted besides loopback.
	AllowedHosts []string
	// Concurrency is the global limit on running verifications.
	Concurrency int
	// DefaultTTL is how long a successful verification counts as fresh
	// for servers that set no TTL of their own (DefaultTTL if zero).
	DefaultTTL time.Duration
	// NoVerifyOnStart turns off the start-up verifications of servers
	// left interrupted, or enabled and never verified (see Start).
	NoVerifyOnStart bool
	// WatchPingInterval is how often a held session to an auto-refreshed
	// server is pinged (the discovery default if zero).
	WatchPingInterval time.Duration
	// MCP configures the MCP endpoint for agents.
	MCP gateway.Config
	// Cluster is how this replica coordinates with the others of a
	// team's Switchboard (store/etcd's Coordinator); nil for a
	// Switchboard on its own.
	Cluster cluster.Cluster
	// HeaderTimeout and BodyTimeout bound the reading of a request's
	// header and body (see HTTPServer); the defaults if zero.
	HeaderTimeout, BodyTimeout time.Duration
	// ImportHome and ImportCwd are where the Import page looks for client
	// configs (the user's home and the working directory if empty).
	ImportHome, ImportCwd string
	// OAuthClientMetadataURL is where Switchboard's Client ID Metadata
	// Document is published (an https URL authorization servers can
	// fetch), used as its client_id where they support those; empty:
	// none, a client is registered dynamically instead.
	OAuthClientMetadataURL string
	Logger                 *slog.Logger
	// Now is the clock freshness is judged and verifications are dated
	// by (time.Now if nil).
	Now func() time.Time
}

// DefaultTTL is the default of Config.DefaultTTL.
const DefaultTTL = 5 * time.Minute

// Server is the Echo application with its dependencies.
type Server struct {
	echo      *echo.Echo
	store     store.Store
	runner    *discovery.Runner
	jobs      *replica.Jobs      // every replica's verifications (see package replica)
	approvals *replica.Approvals // every replica's calls waiting for a person
	unlead    func()
	leading   atomic.Bool // this replica leads (see cluster.Cluster)
	hub       *hub.Hub
	sessions  *session.Sessions
	// tokenLimit counts wrong API tokens (bearer, login form, export)
	// per client; codeLimit counts wrong login links, apart, so that
	// they can never block the right token.
	tokenLimit, codeLimit *authlimit.Limiter
	conns                 *conns.Guard // connection limits
	cfg                   Config
	log                   *slog.Logger

	// pubMu orders reading a server's state with publishing it, so the
	// last fragment a tab gets is never older than one before it.
	pubMu sync.Mutex
	// snap is the servers' fragments of the last snapshot (pubMu; see
	// snapshot).
	snap *serversSnapshot

	bodies bodycache.Cache // JSON of the catalog and of each server's tools

	batches  batch.Recent // "Verify all" runs
	refresh  *refresh.Refresher
	watches  *refresh.Watches
	verifier *discovery.Verifier
	mcp      *gateway.Endpoint
	profiles *profiles.Handlers
	try      *tryit.Service
	held     *held.Map[heldImport] // previewed imports
	tokens   *signin.Keeper
	signIns  *signin.Pending

	pub         *publisher // the one path of servers' state to the tabs
	unsubscribe func()     // stops following the store's changes

	// lastTab and lastAPIPoll are when a tab last closed and a program last
	// read the waiting calls (Unix ns; see approvers).
	lastTab, lastAPIPoll atomic.Int64
}

// New builds the application on st, whose changes it follows from now
// on. Close the server to stop its jobs and stop following. It fails only
// if the store cannot be read.
func New(cfg Config, st store.Store, v *discovery.Verifier) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DefaultTTL <= 0 {
		cfg.DefaultTTL = DefaultTTL
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = HeaderTimeout
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = BodyTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Cluster == nil {
		cfg.Cluster = &cluster.Local{}
	}
	s := &Server{
		echo:       echo.New(),
		store:      st,
		sessions:   session.New(st, session.NewToken(cfg.Token, cfg.TokenFile), cfg.LoginCode, cfg.Now),
		tokenLimit: authlimit.New(),
		codeLimit:  authlimit.New(),
		conns:      conns.New(conns.Max()),
		cfg:        cfg,
		log:        cfg.Logger,
	}
	s.hub = hub.New(s.snapshot)
	s.held = newHeldImports()
	s.pub = newPublisher(s.publishNow)
	s.runner = discovery.NewRunner(v, discovery.RunnerConfig{
		Concurrency: cfg.Concurrency,
		Started:     s.jobStarted,
		Finish:      s.jobFinished,
		Event:       s.jobEvent,
		Late:        s.jobLateWarnings,
	})
	s.jobs = replica.New(s.runner, cfg.Cluster, cfg.Logger, func(j discovery.Job) { s.publishServer(j.ServerID) })
	s.verifier = v
	s.watches = refresh.NewWatches(refresh.WatchDeps{
		Watch: func(ctx context.Context, srv store.Server, onEvent func(discovery.WatchEvent)) error {
			return v.Watch(ctx, s.target(srv), time.Duration(srv.TimeoutMS)*time.Millisecond, cfg.WatchPingInterval, onEvent)
		},
		Summary: st.Summary,
		Verify:  func(srv store.Server, trigger string) { s.refresh.Submit(srv, trigger) },
		Publish: s.publishServer,
	})
	s.refresh = refresh.New(refresh.Deps{
		Summaries: st.Summaries,
		TTL:       cfg.DefaultTTL,
		Running:   func(id string) bool { _, ok := s.jobs.Active(id); return ok },
		Submit: func(srv store.Server, trigger string) error {
			_, err := s.submit(srv, trigger)
			if ae := (*apiError)(nil); errors.As(err, &ae) {
				return nil // shutting down
			}
			return err
		},
		Publish: s.publishServer,
		Watch:   s.watches.Reconcile,
		Log:     cfg.Logger,
	})
	s.tokens = signin.NewKeeper(st, v)
	s.signIns = signin.NewPending()
	mcp, err := gateway.New(cfg.MCP, gateway.Deps{
		Store:    st,
		Verifier: v,
		Target:   s.target,
		Verify: func(srv store.Server, trigger string) error {
			_, err := s.submit(srv, trigger)
			return err
		},
		ApprovalsChanged: func() {
			s.approvals.LocalChanged()
			s.hub.Publish(s.approvalsEvent())
		},
		CallsChanged:        func() { s.hub.Publish(signal(views.EventCalls)) },
		UpstreamsChanged:    s.publishAgents,
		ServerHealthChanged: s.publishServer,
		Approvers:           func() int { return s.approvals.Approvers() },
		Logger:              s.log,
	})
	if err != nil {
		s.runner.Close()
		s.pub.close()
		s.hub.Close()
		return nil, err
	}
	s.mcp, s.profiles = mcp, &profiles.Handlers{Store: st, Offer: mcp, Page: s.page, Render: render}
	s.approvals = replica.NewApprovals(cfg.Cluster, replica.ApprovalDeps{Local: mcp.Approvals, Decide: mcp.Decide, Approvers: s.approvers,
		Changed: func() { s.hub.Publish(s.approvalsEvent()) }, Log: cfg.Logger})
	s.try = tryit.New(tryit.Deps{Store: st, Call: mcp.Try, Publish: func(event string, data []byte) {
		s.hub.Publish(&sse.Event{Event: []byte(event), Data: data})
	}})
	s.unsubscribe = st.Subscribe(s.storeChanged)
	s.echo.HideBanner = true
	s.echo.HidePort = true
	s.echo.HTTPErrorHandler = s.handleError
	s.routes()
	s.unlead = cfg.Cluster.OnLeader(func(leading bool) {
		s.leading.Store(leading)
		s.refresh.SetLeading(leading)
	})
	go s.refresh.Run(!cfg.NoVerifyOnStart)
	return s, nil
}

// ServeHTTP serves a request through the whole application.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.echo.ServeHTTP(w, s.conns.BodyDeadline(w, r, s.cfg.BodyTimeout))
}

// Close cancels running verifications and waits for them (and their
// processes) to end, then ends every SSE connection.
func (s *Server) Close() {
	s.unsubscribe()
	s.unlead()
	s.refresh.Close()
	s.watches.Close()
	s.approvals.Close()
	s.mcp.Close()
	s.runner.Close()
	s.jobs.Close()
	s.pub.close()
	s.hub.Close()
}

// render writes a templ component with a status, rendering into a buffer
// first so a render error becomes an error response, not half a page.
func render(c echo.Context, status int, comp templ.Component) error {
	var buf bytes.Buffer
	if err := comp.Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// renderString renders a component for an SSE event.
func renderString(comp templ.Component) []byte {
	var buf bytes.Buffer
	if err := comp.Render(context.Background(), &buf); err != nil {
		return nil
	}
	return buf.Bytes()
}

// publishServer has the server's state published to every tab soon (see
// publisher).
func (s *Server) publishServer(id string) { s.pub.mark(id) }

// publishNow pushes a server's row and status panel to every tab, or a
// list refresh if the server is gone.
func (s *Server) publishNow(id string) {
	ctx := context.Background()
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	s.snap = nil // a server's fragments change
	sum, err := s.store.Summary(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		s.hub.Publish(signal(views.EventServers))
		return
	}
	if err != nil {
		s.log.Error("read server for live update", "server", id, "err", err)
		return
	}
	s.hub.Publish(s.serverEvents(ctx, sum)...)
}

func (s *Server) serverEvents(ctx context.Context, sum store.Summary) []*sse.Event {
	item := s.serverItem(ctx, sum)
	return []*sse.Event{
		{Event: []byte(views.RowEvent(item.ID)), Data: renderString(views.ServerCells(item))},
		{Event: []byte(views.StatusEvent(item.ID)), Data: renderString(views.StatusBody(item))},
	}
}

// snapshot is every server's current fragments, sent to a tab when it
// connects or after it fell behind. Unless the tab's page is known to be
// as new as the store (since is the current revision), it also signals
// every server's tools as changed: a page rendered before a change whose
// signal went out before the tab connected (or while it was behind)
// reloads its tools section.
func (s *Server) snapshot(since string) []*sse.Event {
	ctx := context.Background()
	go s.approvals.LocalChanged() // one more approver here: the other replicas count it
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	current := s.store.Revision()
	if s.snap == nil || s.snap.revision != current || time.Since(s.snap.at) > snapshotReuse {
		sums, err := s.store.Summaries(ctx)
		if err != nil {
			s.log.Error("read servers for snapshot", "err", err)
			return nil
		}
		s.snap = &serversSnapshot{revision: current, at: time.Now(), events: make([]*sse.Event, 0, 2*len(sums))}
		for _, sum := range sums {
			s.snap.events = append(s.snap.events, s.serverEvents(ctx, sum)...)
			s.snap.ids = append(s.snap.ids, sum.Server.ID)
		}
	}
	events := make([]*sse.Event, 0, len(s.snap.events)+2*len(s.snap.ids)+3)
	events = append(events, s.snap.events...)
	if since != current {
		for _, id := range s.snap.ids {
			events = append(events, toolsChanged(id), signal(views.HistoryEvent(id)))
		}
	}
	if ev := s.batchEvent(); ev != nil {
		events = append(events, ev)
	}
	events = append(events, s.approvalsEvent(), s.upstreamsEvent())
	return events
}

// serversSnapshot is every server's fragments (their events, in the
// order of ids), as a snapshot rendered them at a store revision. Tabs
// that connect together (a restart, a burst of resynchronisations) share
// it, rather than each read and render every server: it is reused for
// snapshotReuse at most, while the store is at that revision and no
// server's fragments were published since (publishNow drops it).
type serversSnapshot struct {
	revision string
	at       time.Time
	events   []*sse.Event
	ids      []string
}

// snapshotReuse bounds how long a snapshot's fragments are shared: what
// changes with time alone (how long ago a server was verified, whether
// its tools are fresh) is at most this old.
const snapshotReuse = time.Second

func toolsChanged(id string) *sse.Event { return signal(views.ToolsEvent(id)) }

// signal is an event that carries no fragment: it says that what its name
// names changed, and the page fetches it again.
func signal(name string) *sse.Event { return &sse.Event{Event: []byte(name), Data: []byte("changed")} }

// storeChanged reacts to a committed store change.
func (s *Server) storeChanged(c store.Change) {
	s.refresh.Poke()
	s.mcp.StoreChanged(c)
	if c.Profile != "" {
		s.hub.Publish(signal(views.EventProfiles)) // no server's change
		return
	}
	if c.Deleted || c.Created {
		s.hub.Publish(signal(views.EventServers))
		if c.Deleted {
			s.tokens.Forget(c.ServerID)
			s.signIns.Forget(c.ServerID)
			return
		}
	}
	s.publishServer(c.ServerID)
	if c.Tools {
		s.hub.Publish(toolsChanged(c.ServerID))
	}
	if c.History {
		s.hub.Publish(signal(views.HistoryEvent(c.ServerID)))
	}
}
