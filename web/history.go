package web

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/apijson"
)

// historyShown is how many verifications the detail page lists.
const historyShown = 20

// historyItems is the newest part of a server's history, for its page.
func (s *Server) historyItems(ctx context.Context, id string) ([]views.HistoryItem, int, error) {
	entries, total, err := s.deps.Store.History(ctx, id, historyShown)
	if err != nil {
		return nil, 0, notFound(err)
	}
	items := make([]views.HistoryItem, 0, len(entries))
	for _, e := range entries {
		h := views.HistoryItem{FinishedAt: e.FinishedAt, Trigger: e.Trigger, Outcome: string(e.Outcome), DurationMS: e.DurationMS,
			ServerVersion: e.ServerVersion, PreviousVersion: e.PreviousVersion}
		if d := e.Delta; d != nil {
			h.Delta = d.String()
			h.Added = views.NameList{Names: d.AddedNames, Total: d.Added}
			h.Removed = views.NameList{Names: d.RemovedNames, Total: d.Removed}
			h.Changed = views.NameList{Names: d.ChangedNames, Total: d.Changed}
		}
		if e.Error != nil {
			h.ErrorClass, h.ErrorPhase, h.ErrorMessage = e.Error.Class, e.Error.Phase, e.Error.Message
		}
		items = append(items, h)
	}
	return items, total, nil
}

// handleHistoryFragment serves GET /servers/:id/history: the detail
// page's history section, reloaded when a verification is recorded.
func (s *Server) handleHistoryFragment(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	items, total, err := s.historyItems(ctx, id)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.HistoryBody(items, total))
}

type historyJSON struct {
	Seq             uint64         `json:"seq"`
	JobID           string         `json:"job_id"`
	Trigger         string         `json:"trigger,omitempty"`
	StartedAt       string         `json:"started_at"`
	FinishedAt      string         `json:"finished_at"`
	DurationMS      int64          `json:"duration_ms"`
	Outcome         store.Status   `json:"outcome"`
	Error           *apijson.Error `json:"error,omitempty"`
	Delta           *apijson.Delta `json:"delta,omitempty"`
	ToolCount       int            `json:"tool_count"`
	ServerVersion   string         `json:"server_version,omitempty"`
	PreviousVersion string         `json:"previous_version,omitempty"`
}

// handleAPIHistory serves GET /api/v1/servers/:id/history: every kept
// verification, newest first.
func (s *Server) handleAPIHistory(c echo.Context) error {
	ctx := c.Request().Context()
	entries, total, err := s.deps.Store.History(ctx, c.Param("id"), 0)
	if err != nil {
		return notFound(err)
	}
	out := make([]historyJSON, 0, len(entries))
	for _, e := range entries {
		h := historyJSON{Seq: e.Seq, JobID: e.JobID, Trigger: e.Trigger, StartedAt: e.StartedAt.Format(timeJSON),
			FinishedAt: e.FinishedAt.Format(timeJSON), DurationMS: e.DurationMS, Outcome: e.Outcome, Delta: apijson.DeltaOf(e.Delta),
			ToolCount: e.ToolCount, ServerVersion: e.ServerVersion, PreviousVersion: e.PreviousVersion}
		if e.Error != nil {
			h.Error = &apijson.Error{Class: e.Error.Class, Phase: e.Error.Phase, Message: e.Error.Message, Suggestion: e.Error.Suggestion}
		}
		out = append(out, h)
	}
	return c.JSON(http.StatusOK, map[string]any{"history": out, "total": total, "kept_at_most": store.HistoryKeep})
}

// timeJSON is how times appear in JSON answers (as encoding/json writes a
// time.Time).
const timeJSON = "2006-01-02T15:04:05.999999999Z07:00"
