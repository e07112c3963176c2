package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/r3labs/sse/v2"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/apijson"
	"github.com/switchboard-dev/switchboard/web/internal/batch"
)

// verifyAll starts a verification of every enabled server whose launch a
// person confirmed (of those of only, unless only is nil); the runner's
// concurrency limit paces them. Disabled and unconfirmed servers are
// skipped, with the reason.
func (s *Server) verifyAll(ctx context.Context, only []string) (*batch.Batch, error) {
	sums, err := s.deps.Store.Summaries(ctx)
	if err != nil {
		return nil, err
	}
	id := make([]byte, 8)
	rand.Read(id)
	b := &batch.Batch{ID: hex.EncodeToString(id), Created: time.Now()}
	for _, sum := range sums {
		srv := sum.Server
		switch {
		case only != nil && !slices.Contains(only, srv.ID):
			continue
		case !srv.Enabled:
			b.Skipped = append(b.Skipped, views.Skipped{ServerID: srv.ID, Reason: "disabled"})
			continue
		case !srv.LaunchConfirmedNow():
			b.Skipped = append(b.Skipped, views.Skipped{ServerID: srv.ID, Reason: "its command must be confirmed first: Confirm launches on the servers list"})
			continue
		}
		j, err := s.submit(srv, store.TriggerVerifyAll)
		if err != nil {
			return nil, err
		}
		b.Jobs = append(b.Jobs, batch.Job{ServerID: srv.ID, JobID: j.ID, Status: j.Status})
	}
	s.holds.batches.Add(b, s.deps.Verify.Job)
	s.publishBatch()
	return b, nil
}

// batchEvent is the newest batch's progress as an SSE event.
func (s *Server) batchEvent() *sse.Event {
	v := s.holds.batches.Latest()
	if v == nil {
		return nil
	}
	return &sse.Event{Event: []byte(views.EventVerifyAll), Data: renderString(views.VerifyAllProgress(v))}
}

func (s *Server) publishBatch() {
	if ev := s.batchEvent(); ev != nil {
		s.live.hub.Publish(ev)
	}
}

// handleVerifyAll serves POST /verify-all (htmx, from the servers page);
// progress arrives over SSE.
func (s *Server) handleVerifyAll(c echo.Context) error {
	ctx := c.Request().Context()
	if _, err := s.verifyAll(ctx, nil); err != nil {
		return err
	}
	return c.NoContent(http.StatusAccepted)
}

// handleAPIVerifyAll serves POST /api/v1/verify-all: 202 with the batch.
// With {"confirm": {ID: launch_hash…}} (hashes from GET /api/v1/launches)
// it confirms those launches and verifies just those servers, or refuses
// (409) if any launch is no longer the one given.
func (s *Server) handleAPIVerifyAll(c echo.Context) error {
	ctx := c.Request().Context()
	var body struct {
		Confirm map[string]string `json:"confirm"`
	}
	if err := decodeOptionalJSON(c, 64<<10, &body); err != nil {
		return err
	}
	verify := func() (*batch.Batch, error) { return s.verifyAll(ctx, nil) }
	if body.Confirm != nil {
		verify = func() (*batch.Batch, error) { return s.confirmLaunches(ctx, body.Confirm) }
	}
	b, err := verify()
	if err != nil {
		return err
	}
	got, _ := s.holds.batches.Get(b.ID)
	return c.JSON(http.StatusAccepted, map[string]any{"batch": apijson.BatchOf(got)})
}

// handleCancelBatch serves POST /batches/:id/cancel (htmx, from the
// Verify all panel) and POST /api/v1/batches/:id/cancel (202 with the
// batch): the batch's verifications still queued or running are
// cancelled (a running one's process is stopped).
func (s *Server) handleCancelBatch(c echo.Context) error {
	jobs, ok := s.holds.batches.Cancel(c.Param("id"))
	if !ok {
		return errNoBatch
	}
	for _, id := range jobs {
		s.deps.Verify.Cancel(id)
	}
	s.publishBatch()
	if b, _ := s.holds.batches.Get(c.Param("id")); strings.HasPrefix(c.Path(), "/api/") {
		return c.JSON(http.StatusAccepted, map[string]any{"batch": apijson.BatchOf(b)})
	}
	return c.NoContent(http.StatusAccepted)
}

// handleDismissBatch serves POST /batches/:id/dismiss (htmx): the panel
// goes away in every tab; the batch's jobs go on.
func (s *Server) handleDismissBatch(c echo.Context) error {
	if !s.holds.batches.Dismiss(c.Param("id")) {
		return errNoBatch
	}
	s.publishBatch()
	return c.NoContent(http.StatusAccepted)
}

var errNoBatch = &apiError{Status: http.StatusNotFound, Message: "no batch with this id (the latest 20 are kept)"}

// handleAPIBatch serves GET /api/v1/batches/:id.
func (s *Server) handleAPIBatch(c echo.Context) error {
	b, ok := s.holds.batches.Get(c.Param("id"))
	if !ok {
		return errNoBatch
	}
	return c.JSON(http.StatusOK, map[string]any{"batch": apijson.BatchOf(b)})
}
