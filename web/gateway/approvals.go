package gateway

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// Answer is a person's answer to a call waiting for approval.
type Answer string

const (
	AllowOnce   Answer = "allow_once"
	AlwaysAllow Answer = "always_allow" // allow, and set the tool's policy to allow
	Deny        Answer = "deny"
)

// ParseAnswer reads an answer as the cards and the API send it; "approve"
// is AllowOnce.
func ParseAnswer(s string) (Answer, bool) {
	switch a := Answer(s); a {
	case AllowOnce, AlwaysAllow, Deny:
		return a, true
	case "approve":
		return AllowOnce, true
	}
	return "", false
}

func (a Answer) allows() bool { return a == AllowOnce || a == AlwaysAllow }

// approval is a call to an ask tool waiting for a person: on every
// dashboard tab, and in the agent's own client when it can ask
// (elicitation); the first answer wins.
type approval struct {
	ID          string
	At          time.Time
	Deadline    time.Time
	Session     string
	Client      string
	ConnectedAs string
	// TokenID is the connected client's token that made the call ("" for
	// the endpoint's own): an Always allow answered in the client is
	// kept on it.
	TokenID    string
	ServerID   string
	ServerName string
	Tool       string
	// Kind is the kind of entry a fetch asks for (see fetch.go); empty
	// for a tool call.
	Kind store.ListedKind
	// Request is set when the server asks, during the call of Tool, what
	// its policy asks a person about first (store.AskSampling …).
	Request   string
	AgentName string
	Args      string // pretty JSON, shown escaped
	ArgsHash  string
	// InClient is set when the person is asked in the agent's client too.
	InClient bool
	// Profile is the profile of the token that made the call ("" for the
	// default), whose Approvers may limit who answers.
	Profile string
	// held is set for a 2026-07-28 call, which does not wait here: its
	// client asks the person and calls again with the answer (see hold).
	held bool
	// call is a held call's record, written to the call log if it is
	// never called again.
	call store.Call

	decided chan struct{} // closed by the decision
	answer  Answer
	by      string
	reason  string
}

// approvals are the calls waiting for a person, shown as cards on every
// open tab.
type approvals struct {
	changed func()          // a call started or stopped waiting
	expired func(*approval) // a held call was never called again
	mu      sync.Mutex
	pending map[string]*approval
	closed  bool
}

// ErrApprovalGone is Decide's answer for a call that is not waiting.
var ErrApprovalGone = errors.New("this call is no longer waiting: it was decided, timed out, or the agent gave up")

// maxPending bounds the calls waiting for a person: each is a card on
// every tab.
const maxPending = 32

// heldGrace is how long a held call's answer from the dashboard is kept
// for the agent's next call after its deadline.
const heldGrace = time.Minute

func newApprovals(changed func(), expired func(*approval)) *approvals {
	return &approvals{changed: changed, expired: expired, pending: map[string]*approval{}}
}

// add shows a card for ap; an error if no more may wait.
func (a *approvals) add(ap *approval, timeout time.Duration) error {
	ap.ID = randomHex(16)
	ap.At = time.Now()
	ap.Deadline = ap.At.Add(timeout)
	ap.decided = make(chan struct{})
	a.mu.Lock()
	switch {
	case a.closed:
		a.mu.Unlock()
		return errors.New("Switchboard is shutting down")
	case len(a.pending) >= maxPending:
		a.mu.Unlock()
		return fmt.Errorf("%d calls are already waiting for a person; try again later", maxPending)
	}
	a.pending[ap.ID] = ap
	a.mu.Unlock()
	a.changed()
	return nil
}

// ask shows the card and waits for the first answer: a person's on a tab
// or through the API, the one inClient gets from the agent's own client
// (if not nil; it runs until ctx ends), the timeout (deny), or the end of
// ctx (the agent gave up: deny). It returns the answer, who gave it and,
// for a denial, why.
func (a *approvals) ask(ctx context.Context, ap *approval, timeout time.Duration, inClient func(context.Context) (Answer, string, error)) (Answer, string, string) {
	ap.InClient = inClient != nil
	if err := a.add(ap, timeout); err != nil {
		return Deny, bySwitch, err.Error()
	}
	var asking sync.WaitGroup
	defer asking.Wait() // the question in the client ends before the call goes on
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	if inClient != nil {
		asking.Go(func() {
			ans, reason, err := inClient(actx)
			switch {
			case err == nil:
				a.decide(ap.ID, ans, ByClient, reason)
			case actx.Err() == nil:
				// The card on the dashboard can still be answered.
				a.setInClient(ap.ID, false)
			}
		})
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-ap.decided:
	case <-timer.C:
		a.decide(ap.ID, Deny, byTimeout, "nobody approved the call within "+timeout.String())
	case <-ctx.Done():
		a.decide(ap.ID, Deny, bySwitch, "the agent stopped waiting")
	}
	<-ap.decided // whoever decided first
	a.changed()
	return ap.answer, ap.by, ap.reason
}

// hold shows the card of a 2026-07-28 call, whose client asks the person
// too and calls again with the answer (see resume). At the deadline an
// unanswered call is denied; an answer not collected by then is kept
// heldGrace longer.
func (a *approvals) hold(ap *approval, timeout time.Duration) error {
	ap.held, ap.InClient = true, true
	if err := a.add(ap, timeout); err != nil {
		return err
	}
	// After Close (closeAll) the timers do nothing: the call was denied,
	// and the endpoint's audit and tabs are gone.
	time.AfterFunc(timeout, func() {
		if a.isClosed() {
			return
		}
		if a.decide(ap.ID, Deny, byTimeout, "nobody approved the call within "+timeout.String()) == nil {
			a.changed()
		}
		time.AfterFunc(heldGrace, func() {
			a.mu.Lock()
			_, left := a.pending[ap.ID]
			delete(a.pending, ap.ID)
			closed := a.closed
			a.mu.Unlock()
			if left && !closed {
				a.expired(ap)
			}
		})
	})
	return nil
}

func (a *approvals) isClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closed
}

// resume collects the answer to a held call: the dashboard's if it came
// first, else given (answered in the agent's client, if not ""). caller
// is the call that collects it: the same client (and connected client's
// token), tool and arguments. It reports false if the call is still
// waiting, and ErrApprovalGone if id is not a held call of caller's.
func (a *approvals) resume(id string, caller *approval, given Answer, reason string) (*approval, bool, error) {
	a.mu.Lock()
	ap, ok := a.pending[id]
	if !ok || !ap.held || ap.Session != caller.Session || ap.Client != caller.Client || ap.ConnectedAs != caller.ConnectedAs ||
		ap.AgentName != caller.AgentName || ap.ArgsHash != caller.ArgsHash {
		a.mu.Unlock()
		return nil, false, ErrApprovalGone
	}
	select {
	case <-ap.decided:
	default:
		if given == "" {
			a.mu.Unlock()
			return ap, false, nil
		}
		ap.answer, ap.by, ap.reason = given, ByClient, reason
		close(ap.decided)
		defer a.changed()
	}
	delete(a.pending, id)
	a.mu.Unlock()
	return ap, true, nil
}

// decide records the answer to a waiting call; ErrApprovalGone if it is
// not waiting (any more). A held call's answer stays for its client to
// collect (see resume).
func (a *approvals) decide(id string, ans Answer, by, reason string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	ap, ok := a.pending[id]
	if !ok {
		return ErrApprovalGone
	}
	select {
	case <-ap.decided:
		return ErrApprovalGone
	default:
	}
	if !ap.held {
		delete(a.pending, id)
	}
	if ans.allows() {
		reason = ""
	}
	ap.answer, ap.by, ap.reason = ans, by, reason
	close(ap.decided)
	return nil
}

// tool is the tool the call waiting under id calls.
func (a *approvals) tool(id string) (store.ListedRef, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ap, ok := a.pending[id]
	if !ok {
		return store.ListedRef{}, false
	}
	if ap.Request != "" {
		// Always allow lets the server ask that (see alwaysAllow).
		return store.ListedRef{ServerID: ap.ServerID, Kind: askKind, Key: ap.Request}, true
	}
	return store.ListedRef{ServerID: ap.ServerID, Kind: ap.Kind, Key: ap.Tool}, true
}

// askKind marks the ref of a server's question in Decide (see tool).
const askKind store.ListedKind = "ask"

// waiting reports whether a call waits for an answer under id.
func (a *approvals) waiting(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.pending[id]
	return ok
}

// setInClient records whether the person is still asked in the agent's
// client.
func (a *approvals) setInClient(id string, on bool) {
	a.mu.Lock()
	if ap, ok := a.pending[id]; ok {
		ap.InClient = on
	}
	a.mu.Unlock()
	a.changed()
}

// closeAll denies every waiting call; later ones are denied at once.
func (a *approvals) closeAll() {
	a.mu.Lock()
	a.closed = true
	ids := make([]string, 0, len(a.pending))
	for id := range a.pending {
		ids = append(ids, id)
	}
	a.mu.Unlock()
	for _, id := range ids {
		a.decide(id, Deny, bySwitch, "Switchboard is shutting down")
	}
}

// list returns the calls waiting for an answer, oldest first.
func (a *approvals) list() []views.Approval {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]views.Approval, 0, len(a.pending))
	for _, ap := range a.pending {
		select {
		case <-ap.decided:
			continue // a held call's answer, not collected yet
		default:
		}
		out = append(out, views.Approval{
			ID: ap.ID, At: ap.At, Deadline: ap.Deadline, Session: shortSession(ap.Session), Stateless: ap.Session == statelessSession, Client: ap.Client, ConnectedAs: ap.ConnectedAs,
			ServerID: ap.ServerID, ServerName: ap.ServerName, Tool: ap.Tool, Verb: verbOf(ap.Kind), Request: ap.Request, AgentName: ap.AgentName, Args: ap.Args, InClient: ap.InClient,
			Profile: ap.Profile,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

func shortSession(id string) string {
	if len(id) > 12 {
		return id[:12] + "…"
	}
	return id
}

// Approvals is the calls waiting for a person, oldest first.
func (e *Endpoint) Approvals() []views.Approval { return e.approvals.list() }

// Decide records a person's answer to a waiting call: by is where they
// answered (ByDashboard, ByAPI), reason why, if it is a denial. Always
// allow sets the tool's policy here and now, whether or not the call
// itself is ever made. It is ErrApprovalGone if the call is not waiting
// (any more).
func (e *Endpoint) Decide(id string, ans Answer, by, reason string) error {
	if !ans.allows() && reason == "" { // the agent's model reads it: never an empty refusal
		reason = "a person denied the call (" + by + ")"
	}
	ref, ok := e.approvals.tool(id)
	if err := e.approvals.decide(id, ans, by, reason); err != nil {
		return err
	}
	e.approvals.changed()
	if ans == AlwaysAllow && ok {
		if err := e.alwaysAllow(context.Background(), ref, by); err != nil {
			e.log.Error("set the policy of an always-allowed tool", "server", ref.ServerID, "kind", ref.Kind, "tool", ref.Key, "err", err)
		}
	}
	return nil
}

// verbOf is what an agent asks to do with an entry of the kind (a tool
// for "").
func verbOf(kind store.ListedKind) string {
	switch kind {
	case store.KindResource:
		return "read the resource"
	case store.KindPrompt:
		return "get the prompt"
	}
	return "call"
}
