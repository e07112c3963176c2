package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/r3labs/sse/v2"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/gateway"
)

// mayAnswer refuses an answer by a person the call's profile does not
// name among its approvers (when it names any): 403 naming them.
func (s *Server) mayAnswer(ctx context.Context, id, by string) error {
	for _, ap := range s.approvals.List() {
		if ap.ID != id {
			continue
		}
		p, err := s.deps.Store.Profile(ctx, cmp.Or(ap.Profile, store.DefaultProfile))
		if err != nil || len(p.Approvers) == 0 || slices.Contains(p.Approvers, by) {
			return nil
		}
		return &apiError{Status: http.StatusForbidden, Message: fmt.Sprintf("only the approvers the profile %s names may answer its calls: %s", p.Name, strings.Join(p.Approvers, ", "))}
	}
	return nil
}

// decisionsKept is how long the store keeps who answered a call: longer
// than any call waits.
const decisionsKept = time.Hour

// approvalsEvent is the cards of the calls waiting for a person, which
// every tab shows.
func (s *Server) approvalsEvent() *sse.Event {
	return &sse.Event{Event: []byte(views.EventApprovals), Data: renderString(views.ApprovalCards(s.approvals.List()))}
}

// handleDecideForm serves POST /approvals/:id from a card's buttons
// (htmx, which sends the CSRF token; the cards are the same on every tab,
// so they hold none).
func (s *Server) handleDecideForm(c echo.Context) error {
	if err := s.decide(c.Request().Context(), c.Param("id"), c.FormValue("decision"), actorOf(c).name(), "a person denied the call in the dashboard"); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent) // the cards update over SSE
}

// decide records an answer to a waiting call, as the cards and the API
// send it: 422 for an answer that is none, 409 naming the answer that
// counts if another was given first (on any replica: the store keeps
// the first), 404 for a call not waiting.
func (s *Server) decide(ctx context.Context, id, answer, by, reason string) error {
	a, ok := gateway.ParseAnswer(answer)
	if !ok {
		return &apiError{Status: http.StatusUnprocessableEntity, Message: "invalid decision",
			Fields: map[string]string{"decision": `must be "allow_once" (or "approve"), "always_allow" or "deny"`}}
	}
	if err := s.mayAnswer(ctx, id, by); err != nil {
		return err
	}
	now := s.cfg.Now().UTC()
	first, won, err := s.deps.Store.ClaimDecision(ctx, store.Decision{ID: id, By: by, Answer: answer, At: now}, now.Add(-decisionsKept))
	if err != nil {
		return err
	}
	if !won {
		return &apiError{Status: http.StatusConflict, Message: fmt.Sprintf("%s answered this call first (%s, at %s): that answer counts", first.By, first.Answer, first.At.Format("15:04:05 UTC"))}
	}
	err = s.approvals.Decide(id, a, by, reason)
	if errors.Is(err, gateway.ErrApprovalGone) {
		return &apiError{Status: http.StatusNotFound, Message: err.Error()}
	}
	return err
}

type approvalJSON struct {
	ID       string    `json:"id"`
	At       time.Time `json:"at"`
	Deadline time.Time `json:"deadline"`
	Session  string    `json:"session"`
	Client   string    `json:"client,omitempty"`
	ServerID string    `json:"server_id"`
	Tool     string    `json:"tool"`
	// Request is set when the server asks the agent something during
	// the call of Tool (sampling, elicitation, roots); Arguments is then
	// the question.
	Request   string `json:"request,omitempty"`
	AgentName string `json:"agent_name"`
	Arguments string `json:"arguments"`
}

// handleAPIApprovals serves GET /api/v1/approvals.
func (s *Server) handleAPIApprovals(c echo.Context) error {
	s.live.lastAPIPoll.Store(s.cfg.Now().UnixNano()) // a program that may answer (see approvers)
	list := s.approvals.List()
	out := make([]approvalJSON, 0, len(list))
	for _, a := range list {
		out = append(out, approvalJSON{ID: a.ID, At: a.At, Deadline: a.Deadline, Session: a.Session, Client: a.Client,
			ServerID: a.ServerID, Tool: a.Tool, Request: a.Request, AgentName: a.AgentName, Arguments: a.Args})
	}
	return c.JSON(http.StatusOK, map[string]any{"approvals": out})
}

// handleAPIDecide serves POST /api/v1/approvals/{id}: {"decision":
// "allow_once"|"always_allow"|"deny"} ("approve" is "allow_once").
func (s *Server) handleAPIDecide(c echo.Context) error {
	var body struct {
		Decision string `json:"decision"`
	}
	if err := decodeJSON(c, 4096, &body); err != nil {
		return err
	}
	if err := s.decide(c.Request().Context(), c.Param("id"), body.Decision, actorOf(c).name(), "denied through the API"); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"decision": body.Decision})
}
