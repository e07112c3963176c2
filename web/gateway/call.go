package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/discovery/oauth"
	"github.com/switchboard-dev/switchboard/internal/toolsearch"
	"github.com/switchboard-dev/switchboard/internal/tracing"
	"github.com/switchboard-dev/switchboard/store"
)

// Who decides a call, as the call log and Decide name them.
const (
	ByDashboard = "dashboard" // a person in the dashboard
	ByAPI       = "api"       // a program with the API token
	ByClient    = "client"    // the person, in the agent's own client (MCP elicitation)
	// ByClientAllowance: a tool the person always allows for this
	// client's token, answering in that client (store.ClientAllowance).
	ByClientAllowance = "client allowance"
	byPolicy          = "policy"
	byTimeout         = "timeout"
	byPinCheck        = "pin check"
	bySwitch          = "switchboard"
)

// callRequest is one call to route: from an agent through /mcp, or from
// a person's Try it form.
type callRequest struct {
	Session, Client string
	// ConnectedAs names the connected client whose token made the call;
	// TokenID is that token's id ("" for the endpoint's own token).
	ConnectedAs, TokenID string
	// Profile is the profile of the token that made the call (see
	// profiles.go); empty for Try it, which sees what the default sees.
	Profile   string
	AgentName string
	Args      any
	// Kind is the kind of entry a resources/read or prompts/get asks
	// for (see fetch); empty for a tool call.
	Kind store.ListedKind
	// Searched is set for a call through call_tool, which may reach any
	// tool of a search-mode profile's view, not only those listed.
	Searched bool
	// ApprovedBy, if set, is the person who started the call (Try it):
	// an ask tool needs no other approval.
	ApprovedBy string
	// Ask asks the person in the agent's client (a session that declared
	// elicitation); nil if it cannot.
	Ask func(context.Context, mcp.ElicitationParams) (*mcp.ElicitationResult, error)
	// Modern is set for a 2026-07-28 call, CanAsk if its client declared
	// elicitation; Retry is what it sent back of an earlier answer.
	Modern, CanAsk bool
	Retry          mcp.MultiRoundTripParams
	// InTask is set for the call of a 2026-07-28 agent's task (see
	// modern_tasks.go): what the server asks is the task's to relay, and
	// a person approves on the dashboard.
	InTask bool
	// DashboardOnly is set when the client could be asked but its token
	// or profile keeps approvals on the dashboard.
	DashboardOnly bool
	// Asks are what the agent can answer of what the server asks during
	// the call (see relay.go).
	Asks discovery.Asks
	// Waiting, if set, tells the agent what its call waits for, as
	// progress (it gave a progressToken).
	Waiting func(message string)
	// Called and CalledArgs are the tool's name and arguments as the
	// agent sent them (before call_tool's unwrapping): a retry that
	// answers a parked call must repeat them.
	Called     string
	CalledArgs any
}

// refusedError is a call Switchboard did not let through. The agent gets
// its message as the tool's result (isError: see handleCallAsTool), or
// as the MCP error of a protocol fault (protocol: a tool nobody offers,
// an answer to a question that is gone).
type refusedError struct {
	reason   string
	protocol bool
}

// noSuchTool starts the reason of a call of a tool nobody offers.
const noSuchTool = "no tool is offered as"

// handleCallAsTool is handleCall (mcp-go's handler of every tools/call
// but search_tools), with what a model can act on as the tool's result:
// a call refused by policy, a person or a pin check, and a failure of
// its server, are a result with isError whose text says what happened.
// A protocol fault stays an MCP error.
func (e *Endpoint) handleCallAsTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res, err := e.handleCall(ctx, req)
	var refused *refusedError
	switch {
	case err == nil, ctx.Err() != nil:
		return res, err
	case errors.As(err, &refused) && refused.protocol:
		return nil, err
	}
	return mcp.NewToolResultError(err.Error()), nil
}

func (e *refusedError) Error() string { return "Switchboard refused the call: " + e.reason }

// Try routes a call a person started with the Try it form in the
// dashboard: as an agent's call, approved by the person (an ask tool
// waits for no other approval), and in the call log as the dashboard's.
// With a relay in ctx (discovery.WithCallRelay), what the server asks is
// the relay's to answer.
// A refusal or a failure of the server is an error saying what happened,
// fit to show.
func (e *Endpoint) Try(ctx context.Context, agentName string, args any) (*mcp.CallToolResult, error) {
	cr := callRequest{Session: "dashboard", Client: "Try it", AgentName: agentName, Args: args, ApprovedBy: ByDashboard}
	if discovery.RelayOf(ctx) != nil {
		// The person answers what the server asks, on the page.
		cr.Asks = discovery.Asks{Sampling: true, Elicitation: true, URLElicitation: true, Roots: true, Agent: "dashboard"}
	}
	return e.call(ctx, cr)
}

// handleCall is the mcp-go handler of every tools/call but search_tools
// (see routeCall).
func (e *Endpoint) handleCall(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ctx, done := e.detachTask(ctx)
	defer done()
	ct, _ := connectedClient(ctx)
	cr := callRequest{AgentName: calledName(req), Args: req.Params.Arguments, Retry: req.Params.MultiRoundTripParams, ConnectedAs: ct.Name, TokenID: ct.ID, Profile: profileOf(ctx)}
	cr.Called, cr.CalledArgs = cr.AgentName, cr.Args
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		cr.Session, cr.Client = statelessSession, clientName(info.ClientInfo)
		cr.Modern = true
		cr.CanAsk = info.ClientCapabilities != nil && formElicitation(info.ClientCapabilities.Elicitation)
		if info.ClientCapabilities != nil {
			cr.Asks = asksOf(*info.ClientCapabilities, "token "+cr.TokenID+" "+cr.Client)
		}
		if strings.HasPrefix(cr.Retry.RequestState, parkedState) {
			return toolResult(e.resume(ctx, cr)) // answers to what a server asked
		}
	} else if cs := server.ClientSessionFromContext(ctx); cs != nil {
		cr.Session = cs.SessionID()
		cr.Client = e.sessions.client(cr.Session)
		if ci, ok := cs.(server.SessionWithClientInfo); ok {
			caps := ci.GetClientCapabilities()
			if formElicitation(caps.Elicitation) {
				cr.Ask = func(ctx context.Context, p mcp.ElicitationParams) (*mcp.ElicitationResult, error) {
					return e.srv.RequestElicitation(ctx, mcp.ElicitationRequest{
						Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)}, Params: p})
				}
			}
			if cr.Asks = asksOf(caps, "session "+cr.Session); cr.Asks.Any() {
				ctx = discovery.WithCallRelay(ctx, agentRelay{e: e, session: cr.Session, call: ctx})
			}
		}
	}
	if cr.AgentName == toolsearch.CallToolName {
		cr = callThrough(cr)
	}
	if m := req.Params.Meta; m != nil {
		ctx = tracing.FromMeta(ctx, m.AdditionalFields) // the agent's trace goes on
	}
	// The server's log messages during the call reach the agent at the
	// level it asked for (see relayLog).
	ctx = discovery.WithCallLog(ctx, func(l discovery.CallLog) { e.relayLog(ctx, l) })
	if m := req.Params.Meta; m != nil && m.ProgressToken != nil {
		// The server's progress reaches the agent under the agent's own
		// token, on the call's stream (see relayProgress), after
		// Switchboard's own while the call waits for a person.
		p := newAgentProgress(func(p discovery.CallProgress) { e.relayProgress(ctx, m.ProgressToken, p) })
		ctx, cr.Waiting = discovery.WithCallProgress(ctx, p.server), p.waiting
	}
	return e.call(ctx, cr)
}

// agentProgress is the progress an agent's call reports: Switchboard's
// own steps while the call waits (for a person's approval), then the
// server's, counted on from there; always increasing, as MCP has it (a
// task's status steps and the server's own progress may both come, each
// counting on its own: one that does not go past the last is dropped).
// relay is called one at a time, and must not block.
type agentProgress struct {
	mu    sync.Mutex
	relay func(discovery.CallProgress)
	last  float64 // the last relayed
	base  float64 // Switchboard's own steps, before the server's
}

func newAgentProgress(relay func(discovery.CallProgress)) *agentProgress {
	return &agentProgress{relay: relay, last: math.Inf(-1)}
}

// waiting reports a step of Switchboard's own: what the call waits for.
func (p *agentProgress) waiting(message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.base = max(p.base, p.last) + 1
	p.last = p.base
	p.relay(discovery.CallProgress{Progress: p.base, Message: message})
}

// server reports the server's progress, after Switchboard's own steps.
func (p *agentProgress) server(c discovery.CallProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.Progress += p.base
	if c.Total > 0 {
		c.Total += p.base
	}
	if c.Progress > p.last {
		p.last = c.Progress
		p.relay(c)
	}
}

// askHeartbeat is how often a call waiting for a person says so to an
// agent that asked for progress.
const askHeartbeat = 5 * time.Second

// heartbeat says, through waiting (if not nil), that the call waits for
// a person until stop is called: at once, then every askHeartbeat, with
// the time left until deadline.
func heartbeat(waiting func(string), deadline time.Time) (stop func()) {
	if waiting == nil {
		return func() {}
	}
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(askHeartbeat)
		defer tick.Stop()
		for {
			waiting(fmt.Sprintf("waiting for a person to approve the call (up to %s more)", time.Until(deadline).Round(time.Second)))
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); <-ended }
}

// call routes one call: it re-reads the tool and its policy, refuses
// what is not offered, waits for a person on ask, calls the server
// through its pooled session (checked against the approved pin), and
// audits the outcome. A refusal is a *refusedError; a failure of the
// server an error saying what failed.
func (e *Endpoint) call(ctx context.Context, cr callRequest) (res *mcp.CallToolResult, err error) {
	start := time.Now()
	// The record's ArgsHash is made by the audit writer (see finish),
	// or by askPerson when a person is asked.
	rec := store.Call{At: start.UTC(), Session: cr.Session, Client: cr.Client, ConnectedAs: cr.ConnectedAs, Profile: cr.Profile, AgentName: cr.AgentName}
	// The call's span, end to end: the wait for a person and the call
	// to the server (see discovery's traceRequest) are its children.
	span := trace.SpanFromContext(context.Background()) // records nothing
	if tracing.Enabled() {
		ctx, span = tracing.Tracer().Start(ctx, "tools/call "+cr.AgentName, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			tracing.MethodName.String(string(mcp.MethodToolsCall)), tracing.ToolName.String(cr.AgentName), tracing.OperationName.String("execute_tool"),
			tracing.SessionID.String(cr.Session), tracing.ClientName.String(cr.Client)))
	}
	defer func() {
		if !span.IsRecording() {
			return
		}
		span.SetAttributes(tracing.ServerID.String(rec.ServerID), tracing.Decision.String(rec.Decision), tracing.DecidedBy.String(rec.DecidedBy))
		var refused *refusedError
		switch {
		case res != nil && res.NeedsInput():
			span.SetAttributes(tracing.Outcome.String("input_required"))
		case errors.As(err, &refused):
			tracing.Fail(span, "refused", err)
		case err != nil:
			tracing.Fail(span, "_OTHER", err)
		case res != nil && res.IsError:
			tracing.Fail(span, "tool_error", nil)
		}
		span.End()
	}()
	defer func() {
		if res != nil && res.NeedsInput() {
			return // the call's answer is to come (see askPerson)
		}
		e.finish(rec, cr.Args, start, err, res != nil && res.IsError)
	}()
	refuse := func(by, reason string) error {
		rec.DecidedBy = by
		return &refusedError{reason: reason, protocol: strings.HasPrefix(reason, noSuchTool)}
	}

	if !validAgentName(cr.AgentName) {
		rec.AgentName = strings.ToValidUTF8(cutString(cr.AgentName, store.MaxAgentName), "") + "…"
		rec.DecidedBy = bySwitch
		return nil, &refusedError{reason: "that is not the name of a tool Switchboard offers (they are [a-zA-Z0-9_-], at most 46 characters)", protocol: true}
	}
	entry, srv, config, by, reason, err := e.find(ctx, cr.AgentName)
	if err != nil {
		e.log.Error("read a tool for a call", "tool", cr.AgentName, "err", err)
		return nil, errors.New("Switchboard could not read the tool; its log has the details")
	}
	rec.ServerID, rec.Tool, rec.Pin, rec.Policy = entry.ServerID, entry.Name, entry.Policy.Pin, entry.Policy.Policy
	if srv.RecordArgs { // refused or not: what was asked for (see args.go)
		rec.Arguments, rec.ArgumentsTruncated = recordedArgs(cr.Args, e.deps.Target(srv).Redactor(srv.OAuthSettings().ClientSecret))
	}
	profile, err := e.profile(cr.Profile)
	if err != nil {
		return nil, errors.New("Switchboard could not read the tool; its log has the details")
	}
	ref := store.ToolRef{ServerID: entry.ServerID, Tool: entry.Name}
	switch {
	case !profile.Includes(ref), !cr.Searched && !listedIn(profile, ref): // as if there were no such tool
		return nil, refuse(bySwitch, fmt.Sprintf(noSuchTool+" %q", cr.AgentName))
	case reason != "":
		return nil, refuse(by, reason)
	case !cr.Asks.Serves(entry.Needs):
		return nil, refuse(bySwitch, "its server offers the tool only to "+discovery.NeedsText(entry.Needs)+
			", and this client did not declare that capability")
	}
	if p := profile.Policy(ref, entry.Effective); p != entry.Effective {
		if p == store.PolicyDeny {
			return nil, refuse(byPolicy, fmt.Sprintf("the profile %q of this client denies the tool", profile.ID))
		}
		entry.Effective, rec.Reason = p, fmt.Sprintf("the profile %q asks for this tool", profile.ID)
	}
	rec.Decision, rec.DecidedBy = store.DecisionAllowed, byPolicy
	if entry.Effective == store.PolicyAsk {
		token, allowed := e.clientAllows(ctx, cr.TokenID, ref, entry.Policy.Pin)
		switch {
		case cr.ApprovedBy != "":
			rec.Decision, rec.DecidedBy = store.DecisionApproved, cr.ApprovedBy
		case allowed:
			rec.Decision, rec.DecidedBy = store.DecisionApproved, ByClientAllowance
			rec.Reason = fmt.Sprintf("always allowed for the connected client %q, answering in that client", token.Name)
		default:
			if !store.InClientApprovals(token, profile) && (cr.Ask != nil || cr.CanAsk) {
				// Asked on the dashboard only: an agent that answers its
				// own questions approves nothing.
				cr.Ask, cr.CanAsk, cr.DashboardOnly = nil, false, true
			}
			stop := func() {}
			if !cr.Modern || !cr.CanAsk { // else answered at once: the question goes in the answer
				stop = heartbeat(cr.Waiting, time.Now().Add(e.cfg.AskTimeout))
			}
			actx, wait := tracing.Tracer().Start(ctx, "approval "+cr.AgentName)
			a := e.askPerson(actx, cr, srv, rec)
			wait.SetAttributes(tracing.DecidedBy.String(a.by))
			wait.End()
			stop()
			switch {
			case a.pending != nil:
				return a.pending, nil
			case !a.answer.allows():
				return nil, refuse(a.by, a.reason)
			}
			rec.Decision, rec.DecidedBy = store.DecisionApproved, a.by
			if a.answer == AlwaysAllow {
				// A person on a card set the policy as they answered (see
				// Decide). An answer in the agent's client widens no one
				// else's access: it is kept on this client's token only.
				rec.Reason = "always allow: the tool's policy is now allow"
				if a.by == ByClient {
					rec.Reason = e.allowForClient(ctx, cr.TokenID, ref, entry.Policy.Pin)
				}
			}
			// The person may have changed the tool or its server while
			// the call waited.
			again, _, againConfig, _, reason, err := e.lookup(ctx, cr.AgentName)
			profile, perr := e.profile(cr.Profile)
			switch {
			case err != nil || perr != nil:
				return nil, refuse(bySwitch, "the tool could not be read again after the approval")
			case reason != "":
				return nil, refuse(bySwitch, "while the call waited: "+reason)
			case !profile.Includes(ref) || profile.Policy(ref, again.Effective) == store.PolicyDeny:
				return nil, refuse(bySwitch, fmt.Sprintf("while the call waited: the profile %q of this client stopped offering the tool", profile.ID))
			case again.Policy.Pin != entry.Policy.Pin || againConfig != config:
				return nil, refuse(bySwitch, "the tool or its server changed while the call waited")
			}
		}
	}

	target := e.deps.Target(srv)
	target.Asks = cr.Asks
	upstream := func(ctx context.Context) (*mcp.CallToolResult, error) {
		ctx = e.guard(ctx, srv, rec, cr.Asks) // what the server may ask of the agent
		cctx, cancel := context.WithTimeout(ctx, e.cfg.CallTimeout)
		defer cancel()
		res, _, err := e.pool.Call(cctx, srv.ID, config, target,
			time.Duration(srv.TimeoutMS)*time.Millisecond, entry.Name, entry.Policy.Pin, cr.Args)
		var mismatch *discovery.PinMismatchError
		if errors.As(err, &mismatch) && mismatch.Live != nil && target.Asks.Any() {
			// The server defines the tool otherwise to a client that
			// answers what it asks (its verification warned so): the
			// call goes as every client's, to the definition a person
			// reviewed, on a session that declares nothing. (Verifying
			// again would find the same, and refuse the next call too.)
			plain := target
			plain.Asks = discovery.Asks{}
			res, _, err = e.pool.Call(cctx, srv.ID, config, plain,
				time.Duration(srv.TimeoutMS)*time.Millisecond, entry.Name, entry.Policy.Pin, cr.Args)
		}
		if errors.As(err, &mismatch) {
			// Verify, so the dashboard shows the change for review.
			if verr := e.deps.Verify(srv, store.TriggerPinMismatch); verr != nil {
				e.log.Warn("verify after a pin mismatch", "server", srv.ID, "err", verr)
			}
			rec.Decision = store.DecisionDenied
			return nil, refuse(byPinCheck, mismatch.Error()+"; the call was not made, and the server is being re-verified for a person to review")
		}
		if err != nil {
			return nil, upstreamError(srv, err)
		}
		return relayed(res), nil
	}
	if cr.Modern && cr.Asks.Any() && !cr.InTask {
		// What the server asks comes back to the agent as input_required
		// (see parked.go).
		return toolResult(e.park(ctx, cr, &rec, start, func(ctx context.Context) (any, error) { return upstream(ctx) }))
	}
	return upstream(ctx)
}

// toolResult is a parked tool call's result as its type is (see park).
func toolResult(res any, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return nil, err
	}
	return res.(*mcp.CallToolResult), nil
}

// finish writes the record of a call (or read, or get) with args that
// started at start and ended with err, or with a tool's own error, to
// the call log, and tells the server's call health.
func (e *Endpoint) finish(rec store.Call, args any, start time.Time, err error, toolError bool) {
	rec.DurationMS = time.Since(start).Milliseconds()
	var refused *refusedError
	switch {
	case errors.As(err, &refused):
		rec.Decision, rec.Outcome, rec.Reason = store.DecisionDenied, "refused", refused.reason
	case err != nil:
		rec.Outcome, rec.Error = "error", err.Error()
	case toolError:
		rec.Outcome = "tool_error"
	default:
		rec.Outcome = "ok"
	}
	// The errors are redacted where they are made; a credential in a
	// shape OAuth gives it is taken out again before the record is kept
	// (and logged, and sent to the dashboard): issue 34 M5.
	rec.Error, rec.Reason = oauth.RedactParams(rec.Error), oauth.RedactParams(rec.Reason)
	e.health.note(rec, err)
	e.audit.add(rec, args)
}

// upstreamError is what the agent is told of a request the server
// failed.
func upstreamError(srv store.Server, err error) error {
	var de *discovery.Error
	switch {
	case errors.As(err, &de) && de.Class == discovery.ClassAuth:
		// The grant is gone, revoked or refused: a person must sign in.
		return fmt.Errorf("the server %s wants a signed-in client: sign in again on its page in Switchboard (%s)", srv.ID, de.Message)
	case errors.As(err, &de):
		return fmt.Errorf("the server %s failed (%s while %s): %s%s", srv.ID, de.Class, de.Phase, de.Message, stderrEnd(de.StderrTail))
	}
	return fmt.Errorf("the server %s failed: %w", srv.ID, err)
}

// stderrEnd is the last lines a failed server wrote to stderr (redacted,
// as discovery keeps it), for the agent's error: what the server itself
// said went wrong.
func stderrEnd(tail string) string {
	var last []string
	for _, l := range strings.Split(tail, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			last = append(last, l)
		}
	}
	if len(last) == 0 {
		return ""
	}
	last = last[max(0, len(last)-3):]
	return "; its stderr ends: " + strings.ToValidUTF8(cutString(strings.Join(last, " / "), 500), "")
}

// relayed is an upstream server's result as Switchboard answers it: the
// fields of the upstream's own exchange are removed, its serverInfo and
// its "complete" resultType (2026-07-28). The agent is answered by
// Switchboard, in its own protocol version: mcp-go adds Switchboard's
// serverInfo and the resultType to a 2026-07-28 answer, and a session's
// answer has neither.
func relayed(res *mcp.CallToolResult) *mcp.CallToolResult {
	res.Result = relayedResult(res.Result)
	return res
}

// relayedResult is the fields every result has, as relayed (see
// relayed).
func relayedResult(res mcp.Result) mcp.Result {
	if res.ResultType == mcp.ResultTypeComplete {
		res.ResultType = ""
	}
	if m := res.Meta; m != nil {
		delete(m.AdditionalFields, mcp.MetaKeyServerInfo)
		if m.ProgressToken == nil && len(m.AdditionalFields) == 0 {
			res.Meta = nil
		}
	}
	return res
}

// find is lookup answered from the offer for a tool it offers: the offer
// is of the store's current revision (see current), and holds what a
// call needs, its server's configuration hash too. A tool it does not
// offer is looked up, to say why.
func (e *Endpoint) find(ctx context.Context, agentName string) (entry store.ToolEntry, srv store.Server, config, by, reason string, err error) {
	if o, err := e.current(); err == nil {
		if c, ok := o.tools[agentName]; ok {
			entry = store.ToolEntry{Tool: store.Tool{ServerID: c.serverID, Name: c.name, AgentName: agentName, Pin: c.pin, State: store.ToolActive, Needs: c.needs},
				Policy: store.PolicySetting{Policy: c.policy, Pin: c.pin}, Effective: c.effective}
			s := o.servers[c.serverID]
			return entry, s.srv, s.config, "", "", nil
		}
	}
	return e.lookup(ctx, agentName)
}

// lookup reads a tool by its agent name with its server (and the hash of
// its configuration), and says why it is not offered now (who decided and
// why), if it is not. err is for a store that cannot be read.
func (e *Endpoint) lookup(ctx context.Context, agentName string) (entry store.ToolEntry, srv store.Server, config, by, reason string, err error) {
	entry, _, err = e.st.ToolByAgentName(ctx, agentName)
	switch {
	case errors.Is(err, store.ErrAgentNameUnknown):
		return entry, srv, "", bySwitch, fmt.Sprintf(noSuchTool+" %q", agentName), nil
	case err != nil:
		return entry, srv, "", "", "", err
	}
	sum, err := e.st.Summary(ctx, entry.ServerID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return entry, srv, "", bySwitch, "its server is gone", nil
	case err != nil:
		return entry, srv, "", "", "", err
	}
	by, reason = refusal(&sum, entry)
	return entry, sum.Server, sum.Server.ConfigHash(), by, reason, nil
}

// refusal says why a tool is not offered to agents (who decides, and
// why), or "" if it is: its server is enabled, its launch confirmed, and
// its latest verification did not fail for good (see
// store.VerifyError.Lasting); the tool is active at its approved pin, its
// effective policy is allow or ask, and it has a definition to serve.
func refusal(sum *store.Summary, t store.ToolEntry) (by, reason string) {
	if by, reason = serverRefusal(sum); reason != "" {
		return by, reason
	}
	return toolRefusal(t)
}

// toolRefusal is the part of refusal that is the tool's own.
func toolRefusal(t store.ToolEntry) (by, reason string) {
	switch {
	case t.State == store.ToolChanged && t.Policy.Pin == "":
		return bySwitch, "the tool is new, and its definition is flagged (possible prompt injection or hidden characters): a person must review it on its server's page before it is offered"
	case t.State == store.ToolChanged || t.State == store.ToolActive && t.Pin != t.Policy.Pin:
		return bySwitch, "the tool's definition changed since it was approved; a person must review the change"
	case t.State.Flagged():
		return bySwitch, "the tool is " + string(t.State) + ": it " + strings.Join(t.Problems, "; it ")
	case t.State != store.ToolActive:
		return bySwitch, "the tool is " + string(t.State)
	case t.Effective != store.PolicyAllow && t.Effective != store.PolicyAsk:
		return byPolicy, "the tool's policy is deny"
	case t.AgentName == "" || len(t.Raw) == 0:
		return bySwitch, "the tool has no definition to offer"
	}
	return "", ""
}

// serverRefusal says why nothing of a server is offered to agents, or ""
// if its offer is up to each tool or entry: it is enabled, its launch
// confirmed, and its latest verification did not fail for good (see
// store.VerifyError.Lasting).
func serverRefusal(sum *store.Summary) (by, reason string) {
	srv, failed := sum.Server, sum.Discovery.Error
	switch {
	case !srv.Enabled:
		return bySwitch, "its server is disabled"
	case !srv.LaunchConfirmedNow():
		return bySwitch, "its server's command or URL changed and awaits a person's confirmation (on its page in Switchboard: Review and verify)"
	case sum.Discovery.Status != store.StatusSuccess && failed != nil && failed.Lasting:
		reason = "its server's latest verification failed (" + failed.Class + "): " + failed.Message
		if failed.Suggestion != "" {
			reason += ". " + failed.Suggestion
		}
		return bySwitch, reason + " Its tools are offered again once it verifies."
	}
	return "", ""
}

// validAgentName reports whether name has the syntax of an agent name:
// 1 to 64 of a-z, A-Z, 0-9, _ and -.
func validAgentName(name string) bool {
	if len(name) == 0 || len(name) > store.MaxAgentName {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// cutString cuts s to at most n bytes.
func cutString(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// argsHash is the SHA-256 of the arguments' JSON as Go encodes them once
// decoded (object keys sorted): equal arguments hash alike however the
// agent spaced or ordered them.
func argsHash(args any) string {
	b, _ := json.Marshal(args)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// maxShownArgs caps the arguments shown on an approval card.
const maxShownArgs = 16 << 10

// PrettyJSON is v (a call's arguments, a part of its result) as
// indented JSON for a person, cut (and saying so) past 16 KiB.
func PrettyJSON(v any) string {
	if v == nil {
		return "{}"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // shown escaped by the page, read by a person
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("(arguments that cannot be shown: %v)", err)
	}
	b := bytes.TrimRight(buf.Bytes(), "\n")
	if len(b) > maxShownArgs {
		return strings.ToValidUTF8(string(b[:maxShownArgs]), "") + fmt.Sprintf("\n… %d more bytes not shown", len(b)-maxShownArgs)
	}
	return string(b)
}

// ResultText is a tool result for a person: each text content as it is,
// anything else (images, resources, structured content) as indented JSON.
func ResultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			parts = append(parts, t.Text)
			continue
		}
		parts = append(parts, PrettyJSON(c))
	}
	if res.StructuredContent != nil {
		parts = append(parts, "structured content:\n"+PrettyJSON(res.StructuredContent))
	}
	if len(parts) == 0 {
		return "(an empty result)"
	}
	return strings.Join(parts, "\n\n")
}
