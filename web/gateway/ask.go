package gateway

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/store"
)

// A call to an ask tool asks the person where they are: on every open
// dashboard tab, and in the agent's own client when it can ask them (MCP
// elicitation). The first answer wins and closes the other question.
//
// A session-based client (2025-06-18, 2025-11-25) that declared
// elicitation gets an elicitation/create request while the call waits. A
// 2026-07-28 client that declared it gets the call's answer at once: an
// input_required result carrying the question, which it answers by
// calling again with the answer and the request state (SEP-2322); the
// card waits on the dashboard meanwhile, and the call again collects
// whichever answer came first. With no tab open and no client that can
// ask, the call is refused at once, saying what to do.

// answerInput is the key of the question in an input_required result.
const answerInput = "switchboard_approval"

// noApprover is the refusal of an ask call that nobody can answer.
const noApprover = "nobody can approve this call now: no Switchboard dashboard tab is open, and this client cannot ask you (it does not support MCP elicitation). " +
	"Open the Switchboard dashboard and call again, or set the tool's policy to allow there"

// noApproverOnDashboard is the refusal of an ask call of a client whose
// approvals are answered on the dashboard only, with no tab open.
const noApproverOnDashboard = "nobody can approve this call now: this client's calls are approved on the Switchboard dashboard only, and no dashboard tab is open. " +
	"Open the Switchboard dashboard and call again"

// answerSchema is the question's form for a call made with the token
// id: one choice. Always allow is offered only to a connected client's
// own token, where it is kept (see allowForClient); the endpoint's own
// token is shared.
func answerSchema(tokenID string) map[string]any {
	enum := []string{string(AllowOnce), string(AlwaysAllow), string(Deny)}
	names := []string{"Allow once", "Always allow for this client (its token only)", "Deny"}
	if tokenID == "" {
		enum, names = []string{string(AllowOnce), string(Deny)}, []string{"Allow once", "Deny"}
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"answer": map[string]any{"type": "string", "title": "Your answer", "enum": enum, "enumNames": names},
		},
		"required": []string{"answer"},
	}
}

// approvalMeta is the _meta key of a question's approval id, by which
// the question's request id is found to withdraw it (see questionWriter).
const approvalMeta = "dev.switchboard/approval"

// question is what the agent's client shows the person.
func question(ap *approval) mcp.ElicitationParams {
	return mcp.ElicitationParams{
		Meta: &mcp.Meta{AdditionalFields: map[string]any{approvalMeta: ap.ID}},
		Message: fmt.Sprintf("Allow %s to run %s with these arguments?\n\n%s\n\nSwitchboard asks because the tool's policy is ask; you can answer here or on the Switchboard dashboard.",
			ap.ServerName, ap.Tool, ap.Args),
		RequestedSchema: answerSchema(ap.TokenID),
	}
}

// answerOf reads the person's answer from the client's reply: anything
// but an accepted known answer is a denial, saying which.
func answerOf(res *mcp.ElicitationResult) (Answer, string) {
	switch res.Action {
	case mcp.ElicitationResponseActionAccept:
		if content, ok := res.Content.(map[string]any); ok {
			if s, ok := content["answer"].(string); ok {
				if a, ok := ParseAnswer(s); ok {
					return a, "the person denied the call in the agent's client"
				}
			}
		}
		return Deny, "the agent's client sent an answer Switchboard does not know"
	case mcp.ElicitationResponseActionDecline:
		return Deny, "the person denied the call in the agent's client"
	}
	return Deny, "the person dismissed the question in the agent's client"
}

// formElicitation reports whether a client that declared c can be asked
// a question with a form.
func formElicitation(c *mcp.ElicitationCapability) bool {
	return c != nil && (c.Form != nil || c.URL == nil) // {} is form, as before modes existed
}

// asked is how a call to an ask tool was answered.
type asked struct {
	answer     Answer
	by, reason string
	// pending is set when the answer is still to come from a 2026-07-28
	// client: the input_required result to answer its call with.
	pending *mcp.CallToolResult
}

// askPerson asks the person about a call to an ask tool (see above).
func (e *Endpoint) askPerson(ctx context.Context, cr callRequest, srv store.Server, rec store.Call) asked {
	rec.ArgsHash = cmp.Or(rec.ArgsHash, argsHash(cr.Args)) // matches a retry to its approval, and is kept with it
	ap := &approval{Session: cr.Session, Client: cr.Client, ConnectedAs: cr.ConnectedAs, TokenID: cr.TokenID, ServerID: srv.ID, ServerName: srv.Name,
		Tool: rec.Tool, Kind: cr.Kind, AgentName: cr.AgentName, Args: PrettyJSON(cr.Args), ArgsHash: rec.ArgsHash, Profile: cr.Profile}
	if state := cr.Retry.RequestState; state != "" {
		var given Answer
		var reason string
		if res := server.ElicitationResponse(cr.Retry.InputResponses, answerInput); res != nil {
			given, reason = answerOf(res)
		}
		held, done, err := e.approvals.resume(state, ap, given, reason)
		switch {
		case err != nil:
			return asked{answer: Deny, by: bySwitch, reason: "the question this call answers is gone: it was answered already or timed out; call again"}
		case !done:
			return asked{pending: inputRequired(held)}
		}
		return asked{answer: held.answer, by: held.by, reason: held.reason}
	}
	if cr.Modern && cr.CanAsk {
		ap.call = rec
		ap.call.Outcome = "refused"
		if err := e.approvals.hold(ap, e.cfg.AskTimeout); err != nil {
			return asked{answer: Deny, by: bySwitch, reason: err.Error()}
		}
		return asked{pending: inputRequired(ap)}
	}
	var inClient func(context.Context) (Answer, string, error)
	if cr.Ask != nil {
		inClient = func(ctx context.Context) (Answer, string, error) {
			res, err := cr.Ask(ctx, question(ap))
			if qid, sent := e.questions.LoadAndDelete(ap.ID); sent && err != nil && ctx.Err() != nil {
				// Answered elsewhere first: the client closes its question.
				e.withdraw(cr.Session, qid.(json.RawMessage))
			}
			if err != nil {
				if ctx.Err() == nil && e.deps.Approvers() == 0 {
					return Deny, "could not ask in the agent's client (" + err.Error() + "), and no Switchboard dashboard tab is open", nil
				}
				return "", "", err
			}
			a, reason := answerOf(res)
			return a, reason, nil
		}
	} else if e.deps.Approvers() == 0 {
		if cr.DashboardOnly {
			return asked{answer: Deny, by: bySwitch, reason: noApproverOnDashboard}
		}
		return asked{answer: Deny, by: bySwitch, reason: noApprover}
	}
	a, by, reason := e.approvals.ask(ctx, ap, e.cfg.AskTimeout, inClient)
	return asked{answer: a, by: by, reason: reason}
}

// inputRequired is the answer to a 2026-07-28 call whose approval is
// awaited: the question, and the approval's id as the state to send back.
func inputRequired(ap *approval) *mcp.CallToolResult {
	return server.NewInputRequestBuilder(ap.ID).Elicit(answerInput, question(ap)).ToolResult()
}

// clientAllows reports whether the connected client with the token id
// always allows the tool at pin, with the token as the store has it now
// (a zero token for the endpoint's own, "", or one revoked meanwhile).
// A token the store cannot read allows nothing.
func (e *Endpoint) clientAllows(ctx context.Context, id string, ref store.ToolRef, pin string) (store.ClientToken, bool) {
	if id == "" {
		return store.ClientToken{}, false
	}
	list, err := e.st.ClientTokens(ctx)
	if err != nil {
		e.log.Error("read the connected clients for an ask call", "err", err)
		return store.ClientToken{}, false
	}
	i := slices.IndexFunc(list, func(ct store.ClientToken) bool { return ct.ID == id })
	if i < 0 {
		return store.ClientToken{}, false
	}
	return list[i], list[i].Allows(ref, pin)
}

// allowForClient keeps the Always allow answered in the agent's client
// on its token (id), for the tool at pin: the call's reason. The
// endpoint's own token ("") is shared by whatever was set up with it, so
// there the answer allows this call only (the question did not offer it;
// a client that sends it anyway gets this).
func (e *Endpoint) allowForClient(ctx context.Context, id string, ref store.ToolRef, pin string) string {
	if id == "" {
		return "allowed once: always allow answered in the agent's client is kept per connected client, and this call used the endpoint's shared token"
	}
	_, err := e.st.UpdateClientToken(ctx, id, func(ct *store.ClientToken) error {
		ct.Allow(ref, pin, time.Now())
		return nil
	})
	if err != nil {
		e.log.Error("keep a connected client's always allow", "client", id, "server", ref.ServerID, "tool", ref.Tool, "err", err)
		return "allowed once: always allow could not be kept for this client: " + err.Error()
	}
	return "always allow for this connected client only: its other agents' and every other client's calls still ask"
}

// alwaysAllow sets the policy of a tool (a ref of no Kind) or entry the
// person answered Always allow for.
func (e *Endpoint) alwaysAllow(ctx context.Context, ref store.ListedRef, by string) error {
	var err error
	if ref.Kind == askKind { // a server's question: it may ask that from now on
		srv, err := e.st.Server(ctx, ref.ServerID)
		if err != nil {
			return err
		}
		srv.Asks.Set(ref.Key, store.PolicyAllow)
		return e.st.UpdateServer(ctx, srv)
	}
	if ref.Kind == "" {
		_, err = e.st.SetPolicy(ctx, store.ToolRef{ServerID: ref.ServerID, Tool: ref.Key}, store.PolicyAllow, by+" (always allow)")
	} else {
		_, err = e.st.SetListedPolicy(ctx, ref, store.PolicyAllow, by+" (always allow)")
	}
	return err
}

// questionWriter is the response writer of a session's requests: it
// notes the JSON-RPC id under which each question (elicitation/create)
// goes to the agent's client, so that a question answered elsewhere first
// can be withdrawn (notifications/cancelled needs that id, which mcp-go
// keeps to itself).
type questionWriter struct {
	http.ResponseWriter
	e       *Endpoint
	session string // the session whose stream it is, if any
	// listChanged, if set, says whether a list_changed notification of
	// the method is to reach the agent (that list of its view changed);
	// one that is not to is dropped.
	listChanged func(method string) bool
}

func (w questionWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(approvalMeta)) {
		w.e.noteQuestions(p)
	}
	w.e.noteRelayed(w.session, p)
	if method := isListChanged(p); w.listChanged != nil && method != "" && !w.listChanged(method) {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w questionWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w questionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// noteQuestions reads the questions of waiting calls in SSE events.
func (e *Endpoint) noteQuestions(p []byte) {
	for data := range sseData(p) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(data, &msg) != nil || msg.Method != string(mcp.MethodElicitationCreate) || len(msg.ID) == 0 {
			continue
		}
		if id, ok := msg.Params.Meta[approvalMeta].(string); ok && e.approvals.waiting(id) {
			e.questions.Store(id, msg.ID)
		}
	}
}

// maxWithdrawn bounds the withdrawn questions remembered.
const maxWithdrawn = 1024

// withdraw tells the session's client that the question under request id
// qid needs no answer any more; an answer it sends all the same is taken
// and dropped (see lateAnswer).
func (e *Endpoint) withdraw(session string, qid json.RawMessage) {
	e.withdrawnMu.Lock()
	if len(e.withdrawn) >= maxWithdrawn {
		clear(e.withdrawn)
	}
	e.withdrawn[session+" "+string(qid)] = struct{}{}
	e.withdrawnMu.Unlock()
	if err := e.srv.SendNotificationToSpecificClient(session, string(mcp.MethodNotificationCancelled),
		map[string]any{"requestId": qid, "reason": "answered elsewhere first (the Switchboard dashboard), or the call ended"}); err != nil {
		e.log.Debug("withdraw a question", "session", session, "err", err)
	}
}

// lateAnswer reports whether body is a session's answer to a withdrawn
// question (a JSON-RPC response), which the client sent before it heard
// of the withdrawal: nothing waits for it.
func (e *Endpoint) lateAnswer(session string, body []byte) bool {
	e.withdrawnMu.Lock()
	none := len(e.withdrawn) == 0
	e.withdrawnMu.Unlock()
	if none || session == "" { // nothing to look for: no decoding
		return false
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "" || len(msg.ID) == 0 {
		return false
	}
	key := session + " " + string(msg.ID)
	e.withdrawnMu.Lock()
	defer e.withdrawnMu.Unlock()
	_, ok := e.withdrawn[key]
	delete(e.withdrawn, key)
	return ok
}
