package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/r3labs/sse/v2"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/batch"
)

// verifyAll starts a verification of every enabled server whose launch a
// person confirmed; the runner's concurrency limit paces them. Disabled
// and unconfirmed servers are skipped, with the reason.
func (s *Server) verifyAll(ctx context.Context) (*batch.Batch, error) {
	sums, err := s.store.Summaries(ctx)
	if err != nil {
		return nil, err
	}
	id := make([]byte, 8)
	rand.Read(id)
	b := &batch.Batch{ID: hex.EncodeToString(id), Created: time.Now()}
	for _, sum := range sums {
		srv := sum.Server
		switch {
		case !srv.Enabled:
			b.Skipped = append(b.Skipped, views.Skipped{ServerID: srv.ID, Reason: "disabled"})
			continue
		case !srv.LaunchConfirmedNow():
			b.Skipped = append(b.Skipped, views.Skipped{ServerID: srv.ID, Reason: "its command must be confirmed first: open it and press Review and verify"})
			continue
		}
		j, err := s.submit(srv, store.TriggerVerifyAll)
		if err != nil {
			return nil, err
		}
		b.Jobs = append(b.Jobs, batch.Job{ServerID: srv.ID, JobID: j.ID, Status: j.Status})
	}
	s.batches.Add(b, s.runner.Job)
	s.publishBatch()
	return b, nil
}

// batchEvent is the newest batch's progress as an SSE event.
func (s *Server) batchEvent() *sse.Event {
	v := s.batches.Latest()
	if v == nil {
		return nil
	}
	return &sse.Event{Event: []byte(views.EventVerifyAll), Data: renderString(views.VerifyAllProgress(v))}
}

func (s *Server) publishBatch() {
	if ev := s.batchEvent(); ev != nil {
		s.hub.Publish(ev)
	}
}

// handleVerifyAll serves POST /verify-all (htmx, from the servers page);
// progress arrives over SSE.
func (s *Server) handleVerifyAll(c echo.Context) error {
	ctx := c.Request().Context()
	if _, err := s.verifyAll(ctx); err != nil {
		return err
	}
	return c.NoContent(http.StatusAccepted)
}

// handleAPIVerifyAll serves POST /api/v1/verify-all: 202 with the batch.
func (s *Server) handleAPIVerifyAll(c echo.Context) error {
	ctx := c.Request().Context()
	b, err := s.verifyAll(ctx)
	if err != nil {
		return err
	}
	got, _ := s.batches.Get(b.ID)
	return c.JSON(http.StatusAccepted, map[string]any{"batch": batchToJSON(got)})
}

// handleAPIBatch serves GET /api/v1/batches/:id.
func (s *Server) handleAPIBatch(c echo.Context) error {
	b, ok := s.batches.Get(c.Param("id"))
	if !ok {
		return &apiError{Status: http.StatusNotFound, Message: "no batch with this id (the latest 20 are kept)"}
	}
	return c.JSON(http.StatusOK, map[string]any{"batch": batchToJSON(b)})
}

type batchJSON struct {
	ID        string         `json:"id"`
	CreatedAt time.Time      `json:"created_at"`
	Total     int            `json:"total"`
	Queued    int            `json:"queued"`
	Running   int            `json:"running"`
	Succeeded int            `json:"succeeded"`
	Failed    int            `json:"failed"`
	Done      bool           `json:"done"`
	Jobs      []batchJobJSON `json:"jobs"`
	Skipped   []skippedJSON  `json:"skipped"`
}

type batchJobJSON struct {
	ServerID string `json:"server_id"`
	JobID    string `json:"job_id"`
	Status   string `json:"status"`
}

type skippedJSON struct {
	ServerID string `json:"server_id"`
	Reason   string `json:"reason"`
}

func batchToJSON(b batch.Batch) batchJSON {
	v := b.View()
	out := batchJSON{ID: b.ID, CreatedAt: b.Created, Total: v.Total, Queued: v.Queued, Running: v.Running,
		Succeeded: v.Succeeded, Failed: v.Failed, Done: v.Finished(), Jobs: []batchJobJSON{}, Skipped: []skippedJSON{}}
	for _, j := range b.Jobs {
		out.Jobs = append(out.Jobs, batchJobJSON(j))
	}
	for _, sk := range b.Skipped {
		out.Skipped = append(out.Skipped, skippedJSON(sk))
	}
	return out
}
