package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/r3labs/sse/v2"

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
	s       *Server
	mu      sync.Mutex
	pending map[string]*approval
	closed  bool
}

var errApprovalGone = errors.New("this call is no longer waiting: it was decided, timed out, or the agent gave up")

// maxPending bounds the calls waiting for a person: each is a card on
// every tab.
const maxPending = 32

func newApprovals(s *Server) *approvals {
	return &approvals{s: s, pending: map[string]*approval{}}
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
	a.publish()
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
	a.publish()
	if ap.approved {
		return true, ap.by, ""
	}
	return false, ap.by, ap.reason
}

// decide records a decision on a waiting call; errApprovalGone if it is
// not waiting (any more).
func (a *approvals) decide(id string, approve bool, by, reason string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	ap, ok := a.pending[id]
	if !ok {
		return errApprovalGone
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

// event is the cards fragment every tab shows.
func (a *approvals) event() *sse.Event {
	return &sse.Event{Event: []byte("approvals"), Data: renderString(views.ApprovalCards(a.list()))}
}

func (a *approvals) publish() { a.s.hub.Publish(a.event()) }

// handleDecideForm serves POST /approvals/:id from a card's buttons
// (htmx, which sends the CSRF token; the cards are the same on every tab,
// so they hold none).
func (s *Server) handleDecideForm(c echo.Context) error {
	approve, err := decision(c.FormValue("decision"))
	if err != nil {
		return err
	}
	if err := s.mcp.approvals.decide(c.Param("id"), approve, byDashboard, "a person denied the call in the dashboard"); err != nil {
		return &apiError{Status: http.StatusNotFound, Message: err.Error()}
	}
	return c.NoContent(http.StatusNoContent) // the cards update over SSE
}

func decision(v string) (bool, error) {
	switch v {
	case "approve":
		return true, nil
	case "deny":
		return false, nil
	}
	return false, &apiError{Status: http.StatusUnprocessableEntity, Message: "invalid decision",
		Fields: map[string]string{"decision": `must be "approve" or "deny"`}}
}

type approvalJSON struct {
	ID        string    `json:"id"`
	At        time.Time `json:"at"`
	Deadline  time.Time `json:"deadline"`
	Session   string    `json:"session"`
	Client    string    `json:"client,omitempty"`
	ServerID  string    `json:"server_id"`
	Tool      string    `json:"tool"`
	AgentName string    `json:"agent_name"`
	Arguments string    `json:"arguments"`
}

// handleAPIApprovals serves GET /api/v1/approvals.
func (s *Server) handleAPIApprovals(c echo.Context) error {
	list := s.mcp.approvals.list()
	out := make([]approvalJSON, 0, len(list))
	for _, a := range list {
		out = append(out, approvalJSON{ID: a.ID, At: a.At, Deadline: a.Deadline, Session: a.Session, Client: a.Client,
			ServerID: a.ServerID, Tool: a.Tool, AgentName: a.AgentName, Arguments: a.Args})
	}
	return c.JSON(http.StatusOK, map[string]any{"approvals": out})
}

// handleAPIDecide serves POST /api/v1/approvals/{id}: {"decision": "approve"|"deny"}.
func (s *Server) handleAPIDecide(c echo.Context) error {
	var body struct {
		Decision string `json:"decision"`
	}
	if err := decodeJSON(c, 4096, &body); err != nil {
		return err
	}
	approve, err := decision(body.Decision)
	if err != nil {
		return err
	}
	if err := s.mcp.approvals.decide(c.Param("id"), approve, byAPI, "denied through the API"); err != nil {
		return &apiError{Status: http.StatusNotFound, Message: err.Error()}
	}
	return c.JSON(http.StatusOK, map[string]any{"decision": body.Decision})
}
