package gateway

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/views"
)

// approval is a call to an ask tool waiting for a person.
type approval struct {
	ID         string
	At         time.Time
	Deadline   time.Time
	Session    string
	Client     string
	ServerID   string
	ServerName string
	Tool       string
	AgentName  string
	Args       string // pretty JSON, shown escaped

	decided  chan struct{} // closed by the decision
	approved bool
	by       string
	reason   string
}

// approvals are the calls waiting for a person, shown as cards on every
// open tab.
type approvals struct {
	changed func() // a call started or stopped waiting
	mu      sync.Mutex
	pending map[string]*approval
	closed  bool
}

// ErrApprovalGone is Decide's answer for a call that is not waiting.
var ErrApprovalGone = errors.New("this call is no longer waiting: it was decided, timed out, or the agent gave up")

// maxPending bounds the calls waiting for a person: each is a card on
// every tab.
const maxPending = 32

func newApprovals(changed func()) *approvals {
	return &approvals{changed: changed, pending: map[string]*approval{}}
}

// ask shows the card and waits for a person's decision, the timeout
// (deny), or the end of ctx (the agent gave up: deny). It returns
// whether the call may go ahead, who decided, and why not.
func (a *approvals) ask(ctx context.Context, ap *approval, timeout time.Duration) (ok bool, by, reason string) {
	ap.ID = randomHex(16)
	ap.At = time.Now()
	ap.Deadline = ap.At.Add(timeout)
	ap.decided = make(chan struct{})
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return false, bySwitch, "Switchboard is shutting down"
	}
	if len(a.pending) >= maxPending {
		a.mu.Unlock()
		return false, bySwitch, fmt.Sprintf("%d calls are already waiting for a person; try again later", maxPending)
	}
	a.pending[ap.ID] = ap
	a.mu.Unlock()
	a.changed()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-ap.decided:
	case <-timer.C:
		a.decide(ap.ID, false, byTimeout, "nobody approved the call within "+timeout.String())
	case <-ctx.Done():
		a.decide(ap.ID, false, bySwitch, "the agent stopped waiting")
	}
	<-ap.decided // whoever decided first
	a.changed()
	if ap.approved {
		return true, ap.by, ""
	}
	return false, ap.by, ap.reason
}

// decide records a decision on a waiting call; ErrApprovalGone if it is
// not waiting (any more).
func (a *approvals) decide(id string, approve bool, by, reason string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	ap, ok := a.pending[id]
	if !ok {
		return ErrApprovalGone
	}
	delete(a.pending, id)
	ap.approved, ap.by, ap.reason = approve, by, reason
	close(ap.decided)
	return nil
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
		a.decide(id, false, bySwitch, "Switchboard is shutting down")
	}
}

// list returns the waiting calls, oldest first.
func (a *approvals) list() []views.Approval {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]views.Approval, 0, len(a.pending))
	for _, ap := range a.pending {
		out = append(out, views.Approval{
			ID: ap.ID, At: ap.At, Deadline: ap.Deadline, Session: shortSession(ap.Session), Stateless: ap.Session == statelessSession, Client: ap.Client,
			ServerID: ap.ServerID, ServerName: ap.ServerName, Tool: ap.Tool, AgentName: ap.AgentName, Args: ap.Args,
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

// Decide records a decision on a waiting call: by is who decided
// (ByDashboard, ByAPI), reason why, if it is a denial. It is
// ErrApprovalGone if the call is not waiting (any more).
func (e *Endpoint) Decide(id string, approve bool, by, reason string) error {
	return e.approvals.decide(id, approve, by, reason)
}
