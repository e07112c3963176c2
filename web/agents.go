package web

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/r3labs/sse/v2"

	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/internal/tracing"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/gateway"
	"github.com/switchboard-dev/switchboard/web/internal/apijson"
	"github.com/switchboard-dev/switchboard/web/internal/profiles"
)

// handleMCP serves GET, POST and DELETE /mcp: the MCP endpoint for
// agents (see web/gateway), with its own token.
func (s *Server) handleMCP(c echo.Context) error {
	r := c.Request()
	if tracing.Enabled() { // an agent's trace goes on through Switchboard (a traceparent in _meta wins)
		r = r.WithContext(tracing.FromHeaders(r.Context(), r.Header))
	}
	err := s.mcp.Serve(c.Response(), r)
	var he *gateway.HTTPError
	if errors.As(err, &he) {
		return &apiError{Status: he.Status, Message: he.Message}
	}
	return err
}

// handleAgentsPage serves GET /agents: how to connect an agent, who is
// connected, the servers running for calls, the recent calls.
func (s *Server) handleAgentsPage(c echo.Context) error {
	v, err := s.agentsView(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AgentsPage(s.page(c, "Agents"), v))
}

// agentsView is what the Agents page shows.
func (s *Server) agentsView(c echo.Context) (views.AgentsView, error) {
	ctx := c.Request().Context()
	calls, err := s.callsView(ctx, views.CallFilter{})
	if err != nil {
		return views.AgentsView{}, err
	}
	offered, err := s.mcp.Offered()
	if err != nil {
		return views.AgentsView{}, err
	}
	clients, err := s.mcp.Clients(ctx)
	if err != nil {
		return views.AgentsView{}, err
	}
	cfg := s.mcp.Config()
	v := views.AgentsView{
		URL: "http://" + c.Request().Host + "/mcp", FixedToken: cfg.Token != "",
		Upstreams: s.upstreams(), Offered: offered, Calls: calls,
		AskTimeout: cfg.AskTimeout, IdleAfter: cfg.Pool.Idle, MaxRunning: cfg.Pool.MaxRunning,
	}
	if actorOf(c).Role.Allows(admin) { // the endpoint's shared token reaches everything
		v.Token = s.mcp.Token()
	}
	for _, a := range s.mcp.Sessions() {
		v.Sessions = append(v.Sessions, views.AgentSession{ID: a.ID, Client: a.Client, Started: a.Started})
	}
	for _, a := range s.mcp.StatelessClients() {
		v.Stateless = append(v.Stateless, views.StatelessAgent{Client: a.Client, LastUsed: a.LastUsed,
			Requests: a.Requests, Listening: a.Listening})
	}
	for _, ct := range clients {
		u := s.mcp.ClientUse(ct.ID)
		p, err := s.deps.Store.Profile(ctx, cmp.Or(ct.Profile, store.DefaultProfile))
		if err != nil {
			return views.AgentsView{}, err
		}
		cl := views.ConnectedClient{ID: ct.ID, Name: ct.Name, Created: ct.CreatedAt, By: ct.CreatedBy, Profile: cmp.Or(ct.Profile, store.DefaultProfile),
			State: u.State, LastSeen: u.LastSeen, Protocol: u.Protocol, Agent: u.Client, Sessions: u.Sessions,
			Approvals: ct.Approvals, InClient: store.InClientApprovals(ct, p)}
		for _, a := range ct.Allowed {
			cl.Allowed = append(cl.Allowed, views.ClientAllowed{ServerID: a.ServerID, Tool: a.Tool, At: a.At})
		}
		v.Clients = append(v.Clients, cl)
	}
	if v.Profiles, err = profiles.Options(ctx, s.deps.Store); err != nil {
		return views.AgentsView{}, err
	}
	for _, cl := range serverconfig.Clients {
		v.ConnectClients = append(v.ConnectClients, views.Option{Value: cl.Key, Title: cl.Name})
	}
	if v.Gates, err = s.clientGates(ctx); err != nil {
		return views.AgentsView{}, err
	}
	return v, nil
}

// managed is the launches of the servers Switchboard has.
func (s *Server) managed(ctx context.Context) (serverconfig.Managed, error) {
	sums, err := s.deps.Store.Summaries(ctx)
	if err != nil {
		return serverconfig.Managed{}, err
	}
	servers := make([]store.Server, 0, len(sums))
	for _, sum := range sums {
		servers = append(servers, sum.Server)
	}
	return serverconfig.ManagedOf(servers), nil
}

// clientGates says, per client whose config is on this machine, what
// reaches its agent around Switchboard.
func (s *Server) clientGates(ctx context.Context) ([]views.ClientGate, error) {
	m, err := s.managed(ctx)
	if err != nil {
		return nil, err
	}
	var out []views.ClientGate
	for _, cl := range serverconfig.Clients {
		g, err := serverconfig.GateHere(cl, s.home(), m)
		if err == nil && !g.Exists && len(g.Around) == 0 {
			continue
		}
		v := views.ClientGate{Key: cl.Key, Name: cl.Name, Path: g.Path, Connected: g.Connected}
		if err != nil {
			v.Error = err.Error()
		}
		for _, e := range g.Around {
			v.Around = append(v.Around, views.AroundEntry{Name: e.Name, Project: e.Project, File: e.File, ServerID: e.ServerID, Disabled: e.Disabled})
		}
		out = append(out, v)
	}
	return out, nil
}

// handleRotateToken serves POST /agents/token.
func (s *Server) handleRotateToken(c echo.Context) error {
	if err := s.mcp.Rotate(); errors.Is(err, gateway.ErrFixedToken) {
		return &apiError{Status: http.StatusConflict, Message: err.Error()}
	} else if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/agents")
}

// handleCallsFragment serves GET /fragments/calls.
func (s *Server) handleCallsFragment(c echo.Context) error {
	ctx := c.Request().Context()
	calls, err := s.callsView(ctx, callFilterOf(c))
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.CallsTable(calls))
}

// handleAPICalls serves GET /api/v1/calls?limit=N (newest first; 100 by
// default, at most store.MaxCalls).
func (s *Server) handleAPICalls(c echo.Context) error {
	ctx := c.Request().Context()
	limit := 100
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxCalls {
			return &apiError{Status: http.StatusUnprocessableEntity, Message: "invalid limit",
				Fields: map[string]string{"limit": "must be a whole number from 1 to " + strconv.Itoa(store.MaxCalls)}}
		}
		limit = n
	}
	calls, total, err := s.deps.Store.Calls(ctx, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"calls": calls, "total": total})
}

// shownCalls is how many recent calls the dashboard shows.
const shownCalls = 50

// callFilterOf reads the call log's filters from a request's query.
func callFilterOf(c echo.Context) views.CallFilter {
	return views.CallFilter{Server: c.QueryParam("server"), Client: c.QueryParam("client"),
		Decision: c.QueryParam("decision"), Outcome: c.QueryParam("outcome"), By: c.QueryParam("by")}
}

// filterOptionCalls is how many of the latest calls the filters' values
// come from, when no filter is set (a filter reads every call kept).
const filterOptionCalls = 1000

// callsView is the latest calls that f keeps (shownCalls at most), with
// the values each filter offers, from the latest filterOptionCalls calls,
// or from every call kept (store.MaxCalls) when f narrows the list.
func (s *Server) callsView(ctx context.Context, f views.CallFilter) (views.CallsView, error) {
	limit := filterOptionCalls
	if f.Any() {
		limit = store.MaxCalls
	}
	calls, total, err := s.deps.Store.Calls(ctx, limit)
	if err != nil {
		return views.CallsView{}, err
	}
	v := views.CallsView{Total: total, Filter: f}
	seen := map[*[]string]map[string]bool{}
	option := func(list *[]string, value string) {
		if value == "" {
			return
		}
		if seen[list] == nil {
			seen[list] = map[string]bool{}
		}
		if !seen[list][value] {
			seen[list][value] = true
			*list = append(*list, value)
		}
	}
	for _, c := range calls {
		row := views.CallRow{
			At: c.At, Session: c.Session, Client: c.Client, ConnectedAs: c.ConnectedAs, Method: c.Method, ServerID: c.ServerID, Tool: c.Tool, AgentName: c.AgentName,
			ArgsHash: c.ArgsHash, Decision: c.Decision, DecidedBy: c.DecidedBy, Reason: c.Reason,
			DurationMS: c.DurationMS, Outcome: c.Outcome, Error: c.Error, Arguments: c.Arguments, Truncated: c.ArgumentsTruncated,
		}
		o := &v.Options
		option(&o.Servers, row.ServerID)
		option(&o.Clients, cmp.Or(row.ConnectedAs, row.Client))
		option(&o.Decisions, row.Decision)
		option(&o.Outcomes, row.Outcome)
		option(&o.People, row.DecidedBy)
		if len(v.Calls) < shownCalls && f.Matches(row) {
			v.Calls = append(v.Calls, row)
		}
	}
	for _, list := range []*[]string{&v.Options.Servers, &v.Options.Clients, &v.Options.Decisions, &v.Options.Outcomes, &v.Options.People} {
		slices.Sort(*list)
	}
	return v, nil
}

func (s *Server) upstreams() []views.Upstream {
	var out []views.Upstream
	for _, r := range s.mcp.Running() {
		out = append(out, views.Upstream{ServerID: r.ServerID, Started: r.Started, LastUsed: r.LastUsed,
			Calls: r.Calls, InFlight: r.InFlight, Opening: r.Opening, Isolation: r.Isolation})
	}
	return out
}

func (s *Server) upstreamsEvent() *sse.Event {
	return &sse.Event{Event: []byte(views.EventUpstreams), Data: renderString(views.Upstreams(s.upstreams()))}
}

// publishAgents pushes the servers running for calls to every tab.
func (s *Server) publishAgents() { s.live.hub.Publish(s.upstreamsEvent()) }

// handleAPIUpstreams serves GET /api/v1/upstreams: the servers running for
// calls.
func (s *Server) handleAPIUpstreams(c echo.Context) error {
	out := []apijson.Upstream{}
	for _, r := range s.mcp.Running() {
		out = append(out, apijson.UpstreamOf(r))
	}
	return c.JSON(http.StatusOK, map[string]any{"upstreams": out})
}

// maxTryBody caps a Try it form.
const maxTryBody = 2 << 20

// handleTryPage serves GET /tools/:agent: the Try it form of one tool.
func (s *Server) handleTryPage(c echo.Context) error {
	v, err := s.try.View(c.Request().Context(), c.Param("agent"))
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.TryPage(s.page(c, "Try "+v.Tool), v))
}

// handleTry serves POST /tools/:agent/try: the form's arguments, checked
// against the tool's schema and called through the same path as an
// agent's call, approved by the person who pressed the button (see
// web/tryit); its progress arrives over SSE.
func (s *Server) handleTry(c echo.Context) error {
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, maxTryBody)
	form, err := c.FormParams()
	if err != nil {
		return &apiError{Status: http.StatusBadRequest, Message: "cannot read the form (at most 2 MiB)"}
	}
	v, status, err := s.try.Submit(r.Context(), c.Param("agent"), form)
	if err != nil {
		return err
	}
	if r.Header.Get(headerHXRequest) != "" {
		status = http.StatusOK // htmx swaps only successful answers
	}
	return render(c, status, views.TryPage(s.page(c, "Try "+v.Tool), v))
}

// handleTryCancel serves POST /tools/:agent/try/:call/cancel: the
// person's Cancel of their Try it call, whose own request then answers
// that it was cancelled. 404 if no such call runs.
func (s *Server) handleTryCancel(c echo.Context) error {
	if !s.try.Cancel(c.Param("agent"), c.Param("call")) {
		return &apiError{Status: http.StatusNotFound, Message: "no such call runs (it ended)"}
	}
	return c.NoContent(http.StatusNoContent)
}

// handleTryAnswer serves POST /tools/:agent/try/:call/answer (htmx): the
// person's answer to what the server asks during their Try it call (see
// web/tryit/questions.go). 404 if that call waits on no question.
func (s *Server) handleTryAnswer(c echo.Context) error {
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, maxTryBody)
	form, err := c.FormParams()
	if err != nil {
		return &apiError{Status: http.StatusBadRequest, Message: "cannot read the form (at most 2 MiB)"}
	}
	if !s.try.Answer(c.Param("call"), form) {
		return &apiError{Status: http.StatusNotFound, Message: "this call waits on no question (answered already, or ended)"}
	}
	return c.NoContent(http.StatusNoContent)
}
