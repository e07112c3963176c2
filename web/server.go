// Package web is Switchboard's HTTP face: the pages, the htmx fragments,
// the SSE stream and the JSON API, with the middleware that guards them.
package web

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	"github.com/r3labs/sse/v2"

	"github.com/switchboard-dev/switchboard/cluster"
	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/discovery/sandbox"
	"github.com/switchboard-dev/switchboard/internal/registry"
	"github.com/switchboard-dev/switchboard/internal/verify"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/gateway"
	"github.com/switchboard-dev/switchboard/web/internal/authlimit"
	"github.com/switchboard-dev/switchboard/web/internal/batch"
	"github.com/switchboard-dev/switchboard/web/internal/bodycache"
	"github.com/switchboard-dev/switchboard/web/internal/conns"
	"github.com/switchboard-dev/switchboard/web/internal/held"
	"github.com/switchboard-dev/switchboard/web/internal/profiles"
	"github.com/switchboard-dev/switchboard/web/internal/replica"
	"github.com/switchboard-dev/switchboard/web/internal/session"
	"github.com/switchboard-dev/switchboard/web/internal/signin"
	"github.com/switchboard-dev/switchboard/web/tryit"
)

// Config configures the web face.
type Config struct {
	// Token is the API bearer token; it also logs a browser in. With a
	// TokenFile, the token that file holds once it is replaced (rotated).
	Token, TokenFile string
	// LoginCode is the one-time code of the login URL printed at start.
	LoginCode string
	// NoSharedToken turns the shared API token off: only people (with a
	// personal token, or signed in through the identity provider) get in.
	NoSharedToken bool
	// OIDC, if set, signs people in with the company's identity provider.
	OIDC *OIDCConfig
	// MetricsAllow are the addresses that read /metrics without a token
	// (a scraper's); anyone else needs an admin's token.
	MetricsAllow []netip.Prefix
	// AllowedHosts are extra Host header names accepted besides loopback.
	AllowedHosts []string
	// MCP configures the MCP endpoint for agents.
	MCP MCPConfig
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
	// Now is the clock sessions and approvals are judged by (time.Now if
	// nil).
	Now func() time.Time
}

// MCPConfig configures the MCP endpoint for agents (see web/gateway).
type MCPConfig = gateway.Config

// Defaults of MCPConfig's timeouts.
const (
	DefaultAskTimeout  = gateway.DefaultAskTimeout
	DefaultCallTimeout = gateway.DefaultCallTimeout
)

// Deps is what the web face shows and acts on, built by the program
// (cmd/switchboard) and closed by it after the Server.
type Deps struct {
	Store store.Store
	// Verify runs and records verifications (internal/verify's Service).
	Verify Verifications
	// Verifier reaches servers: the gateway's routed calls and the
	// sign-ins to remote servers.
	Verifier *discovery.Verifier
	// Grants holds the tokens remote servers' sign-ins left
	// (internal/grants' Keeper).
	Grants Grants
	// Cluster is how this replica coordinates with the others of a
	// team's Switchboard (store/etcd's Coordinator); a Switchboard on
	// its own if nil.
	Cluster cluster.Cluster
	// Registry is the copies of the MCP Registries browsed and added
	// from (internal/registry); none if nil.
	Registry *registry.Copies
}

// Verifications is what the web face asks of verifications (see
// internal/verify.Service).
type Verifications interface {
	// Submit queues a verification of srv (or joins the one under way);
	// verify.ErrClosed once the program is stopping.
	Submit(srv store.Server, trigger string) (discovery.Job, error)
	// Requeue queues one after an edit, if the server may be verified
	// without a person asking.
	Requeue(srv store.Server, trigger string)
	Cancel(jobID string) bool
	Job(id string) (discovery.Job, bool)
	Active(serverID string) (discovery.Job, bool)
	Watch(serverID string) *verify.WatchState
	// Subscribe follows every change of what servers show of their
	// verifications.
	Subscribe(fn func(verify.Event)) (unsubscribe func())
	// Target is how a server is reached (the gateway's calls use it).
	Target(srv store.Server) discovery.Target
	Machine() sandbox.Machine
	DefaultTTL() time.Duration
	Leading() bool
}

// Grants is what the web face asks of the remote servers' sign-ins kept.
type Grants interface {
	// Forget drops what is held of a server's grant (a new sign-in, a
	// sign-out, the server deleted).
	Forget(serverID string)
}

// Server is the Echo application with its dependencies.
type Server struct {
	echo      *echo.Echo
	deps      Deps
	cfg       Config
	log       *slog.Logger
	mcp       *gateway.Endpoint
	approvals *replica.Approvals // every replica's calls waiting for a person
	try       *tryit.Service
	doors     doors           // who may come in, and how often
	live      *live           // what the tabs are sent (see publish.go)
	holds     holds           // what a person started that outlives a request
	bodies    bodycache.Cache // JSON of the catalog and of each server's tools
	stop      []func()        // stops following the store and the verifications
	oidc      *oidcDoor       // the identity provider, if one is configured
	routed    map[string]bool // "METHOD path" of every route (see authorize)
	metrics   *metrics        // /metrics (see metrics.go)
}

// doors are the checks at the entrance: sessions, the limits on wrong
// tokens and codes, and the connection limits.
type doors struct {
	sessions *session.Sessions
	// tokenLimit counts wrong API tokens (bearer, login form, export)
	// per client; codeLimit counts wrong login links, apart, so that
	// they can never block the right token.
	tokenLimit, codeLimit *authlimit.Limiter
	conns                 *conns.Guard
}

// holds is what a person started and the server keeps between requests.
type holds struct {
	imports *held.Map[heldImport] // previewed imports
	signIns *signin.Pending       // sign-ins to remote servers under way
	batches batch.Recent          // "Verify all" runs
}

// New builds the web face of deps, whose changes it follows from now
// on. Close it to stop following and to end its endpoint's calls and
// its tabs' streams; deps are the caller's to close after. It fails only
// if the store cannot be read.
func New(cfg Config, deps Deps) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
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
	if deps.Cluster == nil {
		deps.Cluster = &cluster.Local{}
	}
	st := deps.Store
	s := &Server{
		echo: echo.New(),
		deps: deps,
		doors: doors{
			sessions:   session.New(st, session.NewToken(cfg.Token, cfg.TokenFile), cfg.LoginCode, cfg.Now),
			tokenLimit: authlimit.New(),
			codeLimit:  authlimit.New(),
			conns:      conns.New(conns.Max()),
		},
		holds: holds{imports: newHeldImports(), signIns: signin.NewPending()},
		cfg:   cfg,
		log:   cfg.Logger,
	}
	if cfg.OIDC != nil {
		s.oidc = &oidcDoor{cfg: *cfg.OIDC}
	}
	s.live = newLive(s.snapshot, s.publishNow)
	s.metrics = newMetrics(s)
	mcp, err := gateway.New(cfg.MCP, gateway.Deps{
		Store:    st,
		Verifier: deps.Verifier,
		Target:   deps.Verify.Target,
		Verify: func(srv store.Server, trigger string) error {
			_, err := s.submit(srv, trigger)
			return err
		},
		ApprovalsChanged: func() {
			s.approvals.LocalChanged()
			s.live.hub.Publish(s.approvalsEvent())
		},
		CallsChanged:        func() { s.live.hub.Publish(signal(views.EventCalls)) },
		Observe:             func(c store.Call) { s.metrics.call(c) },
		UpstreamsChanged:    s.publishAgents,
		ServerHealthChanged: s.publishServer,
		Approvers:           func() int { return s.approvals.Approvers() },
		Logger:              s.log,
	})
	if err != nil {
		s.live.close()
		return nil, err
	}
	s.mcp = mcp
	s.approvals = replica.NewApprovals(deps.Cluster, replica.ApprovalDeps{Local: mcp.Approvals, Decide: mcp.Decide, Approvers: s.approvers,
		Leading: deps.Verify.Leading, Revision: st.Revision,
		Changed: func() { s.live.hub.Publish(s.approvalsEvent()) }, Log: cfg.Logger})
	s.try = tryit.New(tryit.Deps{Store: st, Call: mcp.Try, Publish: func(event string, data []byte) {
		s.live.hub.Publish(&sse.Event{Event: []byte(event), Data: data})
	}})
	s.stop = []func(){st.Subscribe(s.storeChanged), deps.Verify.Subscribe(s.verifyChanged)}
	s.echo.HideBanner = true
	s.echo.HidePort = true
	s.echo.HTTPErrorHandler = s.handleError
	s.routes(&profiles.Handlers{Store: st, Offer: mcp, Page: s.page, Render: render})
	return s, nil
}

// ServeHTTP serves a request through the whole application.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.echo.ServeHTTP(w, s.doors.conns.BodyDeadline(w, r, s.cfg.BodyTimeout))
}

// Close stops following the store and the verifications, ends the MCP
// endpoint's sessions and calls, then every SSE connection.
func (s *Server) Close() {
	for _, stop := range s.stop {
		stop()
	}
	s.approvals.Close()
	s.mcp.Close()
	s.live.close()
}

// verifyChanged shows a change of a server's verifications: its
// fragments and, if the job belongs to the latest "Verify all", that
// batch's progress.
func (s *Server) verifyChanged(e verify.Event) {
	s.publishServer(e.ServerID)
	if e.Job == nil {
		return
	}
	s.metrics.job(*e.Job)
	if _, ok := s.holds.batches.Update(*e.Job); ok {
		s.publishBatch()
	}
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
func (s *Server) publishServer(id string) { s.live.pub.mark(id) }

// publishNow pushes a server's row and status panel to every tab, or a
// list refresh if the server is gone.
func (s *Server) publishNow(id string) {
	ctx := context.Background()
	s.live.pubMu.Lock()
	defer s.live.pubMu.Unlock()
	s.live.snap = nil // a server's fragments change
	sum, err := s.deps.Store.Summary(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		s.live.hub.Publish(signal(views.EventServers))
		return
	}
	if err != nil {
		s.log.Error("read server for live update", "server", id, "err", err)
		return
	}
	s.live.hub.Publish(s.serverEvents(ctx, sum)...)
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
	s.live.pubMu.Lock()
	defer s.live.pubMu.Unlock()
	current := s.deps.Store.Revision()
	if s.live.snap == nil || s.live.snap.revision != current || time.Since(s.live.snap.at) > snapshotReuse {
		sums, err := s.deps.Store.Summaries(ctx)
		if err != nil {
			s.log.Error("read servers for snapshot", "err", err)
			return nil
		}
		s.live.snap = &serversSnapshot{revision: current, at: time.Now(), events: make([]*sse.Event, 0, 2*len(sums))}
		for _, sum := range sums {
			s.live.snap.events = append(s.live.snap.events, s.serverEvents(ctx, sum)...)
			s.live.snap.ids = append(s.live.snap.ids, sum.Server.ID)
		}
	}
	events := make([]*sse.Event, 0, len(s.live.snap.events)+2*len(s.live.snap.ids)+3)
	events = append(events, s.live.snap.events...)
	if since != current {
		for _, id := range s.live.snap.ids {
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
	s.mcp.StoreChanged(c)
	if c.Profile != "" {
		s.live.hub.Publish(signal(views.EventProfiles)) // no server's change
		return
	}
	if c.Deleted || c.Created {
		s.live.hub.Publish(signal(views.EventServers))
		if c.Deleted {
			s.deps.Grants.Forget(c.ServerID)
			s.holds.signIns.Forget(c.ServerID)
			return
		}
	}
	s.publishServer(c.ServerID)
	if c.Tools {
		s.live.hub.Publish(toolsChanged(c.ServerID))
	}
	if c.History {
		s.live.hub.Publish(signal(views.HistoryEvent(c.ServerID)))
	}
}
