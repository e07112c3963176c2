package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

// A resources/read or prompts/get (a "fetch") is routed as a tool call is
// (see listed.go for what is offered): the entry is found in the agent's
// view, read again from the store, refused if it is no longer offered,
// put to a person on ask (in a 2026-07-28 client that answers forms, in
// its answer's input_required, as a call's; else on the dashboard's
// cards: a session's fetch is answered by Switchboard itself, outside
// the session's stream that could carry a question to the agent's
// client), sent through the server's pooled session, and written to the
// call log.

// fetch routes one resources/read (kind KindResource, for cr.AgentName,
// the URI asked for) or prompts/get (KindPrompt, for cr.AgentName, the
// name asked for, with args). A name or URI not offered is a *notOffered,
// a refusal a *refusedError, a failure of the server an error saying
// what failed.
func (e *Endpoint) fetch(ctx context.Context, cr callRequest, args map[string]string) (res any, err error) {
	start := time.Now()
	method := store.MethodReadResource
	if cr.Kind == store.KindPrompt {
		method = store.MethodGetPrompt
	}
	rec := store.Call{At: start.UTC(), Method: method, Session: cr.Session, Client: cr.Client, ConnectedAs: cr.ConnectedAs,
		Profile: cr.Profile, AgentName: cr.AgentName, ArgsHash: argsHash(cr.Args)}
	o, err := e.current()
	if err != nil {
		return nil, err
	}
	l := o.view(cr.Profile).listing
	var ol *offeredListed
	upstream := cr.AgentName
	if cr.Kind == store.KindPrompt {
		if ol, err = l.prompt(cr.AgentName); err == nil {
			upstream = ol.ref.Key
		}
	} else {
		ol, upstream, err = l.resource(cr.AgentName)
	}
	if err != nil {
		return nil, err // not audited: as an unknown method would not be
	}
	defer func() {
		if m, ok := res.(interface{ NeedsInput() bool }); ok && m.NeedsInput() {
			return // the answer is to come (see park)
		}
		e.finish(rec, cr.Args, start, err, false)
	}()
	refuse := func(by, reason string) error {
		rec.DecidedBy = by
		return &refusedError{reason: reason}
	}
	rec.ServerID, rec.Tool = ol.ref.ServerID, upstream
	entry, srv, by, reason, err := e.lookupListed(ctx, ol.ref)
	if err != nil {
		e.log.Error("read an entry for a fetch", "server", ol.ref.ServerID, "key", ol.ref.Key, "err", err)
		return nil, errors.New("Switchboard could not read the entry; its log has the details")
	}
	rec.Pin, rec.Policy = entry.Policy.Pin, entry.Policy.Policy
	if srv.RecordArgs {
		rec.Arguments, rec.ArgumentsTruncated = recordedArgs(cr.Args, e.deps.Target(srv).Redactor(srv.OAuthSettings().ClientSecret))
	}
	if reason != "" {
		return nil, refuse(by, reason)
	}
	rec.Decision, rec.DecidedBy = store.DecisionAllowed, byPolicy
	if entry.Effective == store.PolicyAsk {
		cr.Ask = nil // a session's fetch is answered off its stream: the dashboard's cards
		if cr.CanAsk && !e.inClientApprovals(ctx, cr) {
			cr.CanAsk, cr.DashboardOnly = false, true
		}
		a := e.askPerson(ctx, cr, srv, rec)
		if a.pending != nil { // a 2026-07-28 client's person answers in its retry
			return inputRequiredOf(cr.Kind, a.pending.MultiRoundTripResult), nil
		}
		if !a.answer.allows() {
			return nil, refuse(a.by, a.reason)
		}
		rec.Decision, rec.DecidedBy = store.DecisionApproved, a.by
		again, againSrv, _, reason, err := e.lookupListed(ctx, ol.ref)
		switch {
		case err != nil:
			return nil, refuse(bySwitch, "the entry could not be read again after the approval")
		case reason != "":
			return nil, refuse(bySwitch, "while the request waited: "+reason)
		case again.Policy.Pin != entry.Policy.Pin || againSrv.ConfigHash() != srv.ConfigHash():
			return nil, refuse(bySwitch, "the entry or its server changed while the request waited")
		}
	}
	target := e.deps.Target(srv)
	target.Asks = cr.Asks
	send := func(ctx context.Context) (any, error) {
		ctx = e.guard(ctx, srv, rec, cr.Asks) // what the server may ask of the agent
		cctx, cancel := context.WithTimeout(ctx, e.cfg.CallTimeout)
		defer cancel()
		var res any
		_, err := e.pool.Use(cctx, srv.ID, srv.ConfigHash(), target, time.Duration(srv.TimeoutMS)*time.Millisecond, func(s *discovery.Session) error {
			var err error
			if cr.Kind == store.KindPrompt {
				var got *mcp.GetPromptResult
				if got, err = s.GetPrompt(cctx, ol.ref.Key, args, e.pool.MaxResult()); err == nil {
					if got.ResultType == mcp.ResultTypeInputRequired {
						return errInputRequired
					}
					got.Result, got.MultiRoundTripResult = relayedResult(got.Result), mcp.MultiRoundTripResult{}
					res = got
				}
				return err
			}
			var read *mcp.ReadResourceResult
			if read, err = s.ReadResource(cctx, upstream, e.pool.MaxResult()); err == nil {
				if read.ResultType == mcp.ResultTypeInputRequired {
					return errInputRequired
				}
				// Switchboard's own caching fields, not the server's (see
				// answerFetch).
				read.CacheableResult = mcp.CacheableResult{Result: relayedResult(read.Result)}
				read.MultiRoundTripResult = mcp.MultiRoundTripResult{}
				if upstream != cr.AgentName { // asked for by its offered URI: answered so
					for i, c := range read.Contents {
						read.Contents[i] = renamed(c, upstream, cr.AgentName)
					}
				}
				res = read
			}
			return err
		})
		if err != nil {
			return nil, upstreamError(srv, err)
		}
		return res, nil
	}
	if cr.Modern && cr.Asks.Any() {
		// What the server asks comes back to the agent as input_required
		// (see parked.go).
		return e.park(ctx, cr, &rec, start, send)
	}
	return send(ctx)
}

// inClientApprovals reports whether cr's client answers approvals itself
// (see store.InClientApprovals), by its token and profile as they are.
func (e *Endpoint) inClientApprovals(ctx context.Context, cr callRequest) bool {
	token, _ := e.clientAllows(ctx, cr.TokenID, store.ToolRef{}, "")
	profile, err := e.profile(cr.Profile)
	return err == nil && store.InClientApprovals(token, profile)
}

// errInputRequired is a server's answer that asks the client for input
// (SEP-2322) that the agent could not be asked (see discovery.ErrInputRequired).
var errInputRequired = discovery.ErrInputRequired

// renamed is c with the URI asked for as its URI, if it has the
// server's.
func renamed(c mcp.ResourceContents, upstream, asked string) mcp.ResourceContents {
	switch v := c.(type) {
	case mcp.TextResourceContents:
		if v.URI == upstream {
			v.URI = asked
		}
		return v
	case mcp.BlobResourceContents:
		if v.URI == upstream {
			v.URI = asked
		}
		return v
	}
	return c
}

// lookupListed reads an entry with its server, and says why it is not
// offered now (who decided and why), if it is not (see lookup).
func (e *Endpoint) lookupListed(ctx context.Context, ref store.ListedRef) (entry store.ListedEntry, srv store.Server, by, reason string, err error) {
	sum, err := e.st.Summary(ctx, ref.ServerID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return entry, srv, bySwitch, "its server is gone", nil
	case err != nil:
		return entry, srv, "", "", err
	}
	entries, err := e.st.Listed(ctx, ref.ServerID)
	if err != nil {
		return entry, srv, "", "", err
	}
	i := slices.IndexFunc(entries, func(en store.ListedEntry) bool { return en.Kind == ref.Kind && en.Key == ref.Key })
	if i < 0 {
		return entry, sum.Server, bySwitch, "the server no longer lists it", nil
	}
	entry = entries[i]
	by, reason = listedRefusal(&sum, entry)
	return entry, sum.Server, by, reason, nil
}

// answerFetch answers a resources/read or prompts/get (see fetch).
func (e *Endpoint) answerFetch(w http.ResponseWriter, r *http.Request, req rpcRequest, from agent) error {
	client := from.client
	if !from.modern {
		client = e.sessions.client(from.session)
	}
	cr := callRequest{Session: from.session, Client: client, ConnectedAs: connectedAs(r.Context()), Profile: profileOf(r.Context())}
	var args map[string]string
	if req.Method == string(mcp.MethodPromptsGet) {
		cr.Kind, cr.AgentName, cr.Args = store.KindPrompt, req.Params.Name, req.arguments()
		var bad string
		if args, bad = promptArguments(cr.Args); bad != "" {
			return writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: bad})
		}
	} else {
		cr.Kind, cr.AgentName, cr.Args = store.KindResource, req.Params.URI, map[string]any{"uri": req.Params.URI}
	}
	cr.Called, cr.CalledArgs = cr.AgentName, cr.Args
	var res any
	var err error
	if from.modern {
		// What the server asks comes back to a 2026-07-28 agent as
		// input_required, and its retry carries the answers (see
		// parked.go); a 2025-era agent's fetch is answered here, off
		// the session's stream, and cannot be asked.
		ct, _ := connectedClient(r.Context())
		cr.TokenID, cr.Modern = ct.ID, true
		if caps := req.Params.Meta.ClientCapabilities(); caps != nil {
			cr.CanAsk = formElicitation(caps.Elicitation) // asked on ask in its answer, as a call is
		}
		if cr.Asks = from.asks; cr.Asks.Any() {
			cr.Asks.Agent = "token " + cr.TokenID + " " + cr.Client
		}
		if err := json.Unmarshal(req.RawParams, &cr.Retry); err != nil {
			return writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: "invalid inputResponses or requestState: " + err.Error()})
		}
	}
	if strings.HasPrefix(cr.Retry.RequestState, parkedState) {
		res, err = e.resume(r.Context(), cr)
	} else {
		res, err = e.fetch(r.Context(), cr, args)
	}
	var missing *notOffered
	var refused *refusedError
	switch {
	case errors.As(err, &missing) && cr.Kind == store.KindResource:
		// SEP-2164: an unknown resource is invalid params, with its URI.
		return writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: missing.message, Data: map[string]string{"uri": req.Params.URI}})
	case errors.As(err, &missing):
		return writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: missing.message})
	case errors.As(err, &refused):
		return writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_REQUEST, Message: refused.Error()})
	case err != nil:
		return writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INTERNAL_ERROR, Message: err.Error()})
	}
	if m, asks := res.(interface{ NeedsInput() bool }); asks && m.NeedsInput() {
		return writeJSON(w, r, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": res})
	}
	if from.modern {
		m := res.(mcp.ResultMetadata)
		m.SetResultType(mcp.ResultTypeComplete)
		m.EnsureResultMeta().SetServerInfo(serverInfo)
		if read, ok := res.(*mcp.ReadResourceResult); ok {
			read.SetCacheHints(offerTTL, offerScope)
		}
	}
	return writeJSON(w, r, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": res})
}

// promptArguments reads a prompts/get's arguments: an object of strings,
// or none; bad says what is wrong with them.
func promptArguments(v any) (args map[string]string, bad string) {
	if v == nil {
		return nil, ""
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, "a prompt's arguments are an object of strings"
	}
	args = make(map[string]string, len(m))
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Sprintf("a prompt's arguments are strings; %q is not", k)
		}
		args[k] = s
	}
	return args, ""
}

// maxCompletions caps the values of a completion relayed, as MCP does.
const maxCompletions = 100

// answerComplete answers a completion/complete for an argument of an
// offered prompt or resource template, by asking its server. A prompt or
// template whose policy is ask gets no completions (the server is not
// asked: nobody approved reaching it), nor one whose server does not
// complete. Completions are not written to the call log: they act on
// nothing.
func (e *Endpoint) answerComplete(w http.ResponseWriter, r *http.Request, req rpcRequest, from agent) error {
	var params mcp.CompleteParams
	if err := json.Unmarshal(req.RawParams, &params); err != nil {
		return writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: "invalid completion request: " + err.Error()})
	}
	o, err := e.current()
	if err != nil {
		return err
	}
	l := o.view(profileOf(r.Context())).listing
	var ol *offeredListed
	switch ref := params.Ref.(type) {
	case mcp.PromptReference:
		ol, err = l.prompt(ref.Name)
	case mcp.ResourceReference:
		ol, err = l.template(ref.URI)
	default:
		err = &notOffered{"a completion's ref is a ref/prompt or a ref/resource"}
	}
	if err != nil {
		return writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: err.Error()})
	}
	res := &mcp.CompleteResult{Completion: mcp.Completion{Values: []string{}}}
	if ol.policy == store.PolicyAllow {
		if got, err := e.complete(r.Context(), ol, params); err != nil {
			e.log.Debug("completion not relayed", "server", ol.ref.ServerID, "key", ol.ref.Key, "err", err)
		} else {
			res.Completion = got.Completion
			res.Completion.Values = res.Completion.Values[:min(len(res.Completion.Values), maxCompletions)]
		}
	}
	if from.modern {
		res.SetResultType(mcp.ResultTypeComplete)
		res.EnsureResultMeta().SetServerInfo(serverInfo)
	}
	return writeJSON(w, r, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": res})
}

// complete asks the server of ol for completions, its ref named as the
// server names it.
func (e *Endpoint) complete(ctx context.Context, ol *offeredListed, params mcp.CompleteParams) (*mcp.CompleteResult, error) {
	_, srv, _, reason, err := e.lookupListed(ctx, ol.ref)
	switch {
	case err != nil:
		return nil, err
	case reason != "":
		return nil, errors.New(reason)
	}
	if ol.ref.Kind == store.KindPrompt {
		params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: ol.ref.Key}
	} else {
		params.Ref = mcp.ResourceReference{Type: "ref/resource", URI: ol.ref.Key}
	}
	cctx, cancel := context.WithTimeout(ctx, e.cfg.CallTimeout)
	defer cancel()
	var res *mcp.CompleteResult
	_, err = e.pool.Use(cctx, srv.ID, srv.ConfigHash(), e.deps.Target(srv), time.Duration(srv.TimeoutMS)*time.Millisecond, func(s *discovery.Session) (err error) {
		res, err = s.Complete(cctx, params, e.pool.MaxResult())
		return err
	})
	return res, err
}
