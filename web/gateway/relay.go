package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

// What a server asks of the agent during a routed call, relayed to that
// agent (see discovery.Asks): a 2025-era agent's session declared what it
// can answer, the server's session declares the same, and each request
// the server sends during the call is sent on to the agent on the call's
// stream, its answer passed back as the agent gave it.

// asksOf are the client features an agent declared; agent names it (a
// session that declares roots serves it alone: see discovery.Asks).
func asksOf(caps mcp.ClientCapabilities, agent string) discovery.Asks {
	a := discovery.Asks{Sampling: caps.Sampling != nil, Roots: caps.Roots != nil, Agent: agent}
	if el := caps.Elicitation; el != nil {
		a.Elicitation = formElicitation(el)
		a.URLElicitation = el.URL != nil
	}
	return a
}

// agentRelay asks the agent of call (a 2025-era session's tools/call)
// what the call's server asks.
type agentRelay struct {
	e       *Endpoint
	session string
	call    context.Context // the agent's call: its session, and its end
}

// on is the context to ask the agent in: the call's (it names the
// agent's session), ended also when the server's request ends.
func (r agentRelay) on(ctx context.Context) (context.Context, context.CancelFunc) {
	asked, cancel := context.WithCancel(r.call)
	stop := context.AfterFunc(ctx, cancel)
	return asked, func() { stop(); cancel() }
}

// ask asks the agent with send, a question of method (see
// expectRelayed).
func relayAsk[T any](r agentRelay, ctx context.Context, method mcp.MCPMethod, send func(context.Context) (T, error)) (T, error) {
	ctx, cancel := r.on(ctx)
	defer cancel()
	done := r.e.expectRelayed(ctx, r.session, string(method))
	res, err := send(ctx)
	done(err)
	return res, err
}

func (r agentRelay) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return relayAsk(r, ctx, mcp.MethodSamplingCreateMessage, func(ctx context.Context) (*mcp.CreateMessageResult, error) {
		//lint:ignore SA1019 relaying a 2025-era server's sampling to a 2025-era agent, as that revision has it
		return r.e.srv.RequestSampling(ctx, req)
	})
}

func (r agentRelay) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return relayAsk(r, ctx, mcp.MethodElicitationCreate, func(ctx context.Context) (*mcp.ElicitationResult, error) {
		return r.e.srv.RequestElicitation(ctx, req)
	})
}

func (r agentRelay) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return relayAsk(r, ctx, mcp.MethodListRoots, func(ctx context.Context) (*mcp.ListRootsResult, error) {
		return r.e.srv.RequestRoots(ctx, req)
	})
}

// The call log's methods of what a server asks during a call.
var askMethods = map[string]string{
	store.AskSampling:    string(mcp.MethodSamplingCreateMessage),
	store.AskElicitation: string(mcp.MethodElicitationCreate),
	store.AskRoots:       string(mcp.MethodListRoots),
}

// guardedRelay applies a server's policy on what it may ask (see
// store.ServerAsks) to each question it asks during a call, before the
// agent is asked, and records each in the call log: kind, server,
// decision.
type guardedRelay struct {
	e     *Endpoint
	inner discovery.Relay
	srv   store.Server
	call  store.Call     // the routed call's record: who asks, during what
	asks  discovery.Asks // what the agent declared: nothing else reaches it
}

// guard wraps the relay ctx carries, if any, in srv's policy.
func (e *Endpoint) guard(ctx context.Context, srv store.Server, call store.Call, asks discovery.Asks) context.Context {
	inner := discovery.RelayOf(ctx)
	if inner == nil {
		return ctx
	}
	return discovery.WithCallRelay(ctx, guardedRelay{e: e, inner: inner, srv: srv, call: call, asks: asks})
}

// undeclared says why a question the agent did not declare it answers is
// refused, or "" for one it did. (Its session to the server declares the
// same, but a 2026-07-28 server's input_required may ask anything.)
func (g guardedRelay) undeclared(req mcp.InputRequest) string {
	var ok bool
	switch {
	case req.Sampling != nil:
		ok = g.asks.Sampling
	case req.Elicitation != nil && req.Elicitation.Mode == mcp.ElicitationModeURL:
		ok = g.asks.URLElicitation
	case req.Elicitation != nil:
		ok = g.asks.Elicitation
	default:
		ok = g.asks.Roots
	}
	if ok {
		return ""
	}
	return "the agent did not declare that it answers " + string(req.Method) + requestMode(req)
}

// requestMode names an elicitation's mode, for a refusal.
func requestMode(req mcp.InputRequest) string {
	if req.Elicitation != nil && req.Elicitation.Mode != "" {
		return " in " + string(req.Elicitation.Mode) + " mode"
	}
	return ""
}

// errAskRefused is a question of the server's that Switchboard refused.
type errAskRefused struct{ reason string }

func (e errAskRefused) Error() string { return "Switchboard refused the request: " + e.reason }

// allow decides a question of the kind (what shows of it: detail), and
// starts its record; done closes the record with the question's outcome.
func (g guardedRelay) allow(ctx context.Context, kind, detail string) (done func(error), err error) {
	start := time.Now()
	rec := g.call
	rec.At, rec.Method, rec.Seq = start.UTC(), askMethods[kind], 0
	rec.ArgsHash, rec.Arguments, rec.ArgumentsTruncated, rec.Pin = argsHash(detail), "", false, ""
	rec.Decision, rec.DecidedBy, rec.Reason, rec.Error, rec.Outcome = store.DecisionAllowed, byPolicy, "", "", ""
	finish := func(err error) {
		rec.DurationMS = time.Since(start).Milliseconds()
		rec.Outcome = "ok"
		if err != nil {
			rec.Outcome, rec.Error = "error", cutString(err.Error(), 500)
			var refused errAskRefused
			if errors.As(err, &refused) {
				rec.Outcome = "refused"
			}
		}
		g.e.audit.add(rec, nil)
	}
	policy := g.srv.Asks.Of(kind)
	if srv, err := g.e.st.Server(ctx, g.srv.ID); err == nil {
		policy = srv.Asks.Of(kind) // as it is now
	}
	rec.Policy = policy
	refuse := func(by, reason string) (func(error), error) {
		rec.Decision, rec.DecidedBy, rec.Reason = store.DecisionDenied, by, reason
		err := errAskRefused{reason}
		finish(err)
		return nil, err
	}
	switch policy {
	case store.PolicyDeny:
		return refuse(byPolicy, fmt.Sprintf("the policy of %s denies its %s requests (its page, What it may ask agents)", g.srv.Name, kind))
	case store.PolicyAsk:
		if g.e.deps.Approvers() == 0 {
			return refuse(bySwitch, fmt.Sprintf("%s's %s requests wait for a person on the dashboard, and no dashboard tab is open", g.srv.Name, kind))
		}
		ap := &approval{Session: g.call.Session, Client: g.call.Client, ConnectedAs: g.call.ConnectedAs, Profile: g.call.Profile, ServerID: g.srv.ID, ServerName: g.srv.Name,
			Tool: g.call.Tool, Request: kind, AgentName: g.call.AgentName, Args: detail, ArgsHash: rec.ArgsHash}
		answer, by, reason := g.e.approvals.ask(ctx, ap, g.e.cfg.AskTimeout, nil)
		if !answer.allows() {
			return refuse(by, reason)
		}
		rec.Decision, rec.DecidedBy = store.DecisionApproved, by
	}
	return finish, nil
}

// detailOf is what a card shows of a question: its JSON.
func detailOf(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return ""
	}
	return cutString(string(b), 4096)
}

func (g guardedRelay) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if why := g.undeclared(mcp.NewSamplingInputRequest(req.CreateMessageParams)); why != "" {
		return nil, errAskRefused{why}
	}
	done, err := g.allow(ctx, store.AskSampling, detailOf(req.CreateMessageParams))
	if err != nil {
		return nil, err
	}
	res, err := g.inner.CreateMessage(ctx, req)
	done(err)
	return res, err
}

func (g guardedRelay) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if why := g.undeclared(mcp.NewElicitationInputRequest(req.Params)); why != "" {
		return nil, errAskRefused{why}
	}
	done, err := g.allow(ctx, store.AskElicitation, detailOf(req.Params))
	if err != nil {
		return nil, err
	}
	res, err := g.inner.Elicit(ctx, req)
	done(err)
	return res, err
}

func (g guardedRelay) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	if why := g.undeclared(mcp.NewRootsInputRequest()); why != "" {
		return nil, errAskRefused{why}
	}
	done, err := g.allow(ctx, store.AskRoots, "")
	if err != nil {
		return nil, err
	}
	res, err := g.inner.ListRoots(ctx, req)
	done(err)
	return res, err
}

// Input decides each question a 2026-07-28 server asked together as the
// methods above decide them one by one, and asks the agent those allowed
// together, under the server's keys, if it takes them so (a 2026-07-28
// agent: see parkedCall.Input); else one by one. One refused refuses
// them all: the server's request ends with the refusal.
func (g guardedRelay) Input(ctx context.Context, reqs mcp.InputRequests) (mcp.InputResponses, error) {
	for _, key := range slices.Sorted(maps.Keys(reqs)) {
		if why := g.undeclared(reqs[key]); why != "" {
			return nil, errAskRefused{fmt.Sprintf("the server's request %q: %s", key, why)}
		}
	}
	inner, whole := g.inner.(discovery.InputRelay)
	if !whole {
		return discovery.AnswerEach(ctx, g, reqs)
	}
	var dones []func(error)
	finish := func(err error) {
		for _, done := range dones {
			done(err)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(reqs)) {
		kind, detail := askOf(reqs[key])
		done, err := g.allow(ctx, kind, detail)
		if err != nil {
			finish(fmt.Errorf("not asked: the server's request %q, asked with it, was refused", key))
			return nil, err
		}
		dones = append(dones, done)
	}
	answers, err := inner.Input(ctx, reqs)
	finish(err)
	return answers, err
}

// askOf is the kind of a question and what a card shows of it.
func askOf(req mcp.InputRequest) (kind, detail string) {
	switch {
	case req.Sampling != nil:
		return store.AskSampling, detailOf(req.Sampling)
	case req.Elicitation != nil:
		return store.AskElicitation, detailOf(req.Elicitation)
	}
	return store.AskRoots, ""
}
