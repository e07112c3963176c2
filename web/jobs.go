package web

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

// startVerify queues a verification of the server with its current
// configuration, or joins the one already in flight.
func (s *Server) startVerify(id string) (discovery.Job, error) {
	srv, err := s.store.Server(id)
	if err != nil {
		return discovery.Job{}, notFound(err)
	}
	j, _, err := s.runner.Submit(discovery.Request{
		ServerID:    srv.ID,
		ConfigHash:  srv.ConfigHash(),
		Target:      discoveryTarget(srv),
		InitTimeout: time.Duration(srv.TimeoutMS) * time.Millisecond,
	})
	if errors.Is(err, discovery.ErrClosed) {
		return j, &apiError{Status: http.StatusServiceUnavailable, Message: "switchboard is shutting down"}
	}
	return j, err
}

// handleVerify serves POST /servers/:id/verify (htmx). It returns at
// once; progress arrives over SSE.
func (s *Server) handleVerify(c echo.Context) error {
	if _, err := s.startVerify(c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusAccepted)
}

// handleCancelJob serves POST /jobs/:id/cancel (htmx).
func (s *Server) handleCancelJob(c echo.Context) error {
	if !s.runner.Cancel(c.Param("id")) {
		return &apiError{Status: http.StatusNotFound, Message: "no running job with this id"}
	}
	return c.NoContent(http.StatusAccepted)
}

// handleAPIVerify serves POST /api/v1/servers/:id/verify: 202 with the job.
func (s *Server) handleAPIVerify(c echo.Context) error {
	j, err := s.startVerify(c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"job": jobToJSON(j)})
}

// handleAPIJob serves GET /api/v1/jobs/:id.
func (s *Server) handleAPIJob(c echo.Context) error {
	j, ok := s.runner.Job(c.Param("id"))
	if !ok {
		return &apiError{Status: http.StatusNotFound, Message: "no job with this id (finished jobs are kept for a while)"}
	}
	return c.JSON(http.StatusOK, map[string]any{"job": jobToJSON(j)})
}

// handleAPICancelJob serves POST /api/v1/jobs/:id/cancel.
func (s *Server) handleAPICancelJob(c echo.Context) error {
	if !s.runner.Cancel(c.Param("id")) {
		return &apiError{Status: http.StatusNotFound, Message: "no running job with this id"}
	}
	j, _ := s.runner.Job(c.Param("id"))
	return c.JSON(http.StatusAccepted, map[string]any{"job": jobToJSON(j)})
}

// jobStarted records that a job left the queue.
func (s *Server) jobStarted(j discovery.Job) {
	if err := s.store.MarkRunning(j.ServerID, j.ID, j.StartedAt); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Error("mark verification running", "server", j.ServerID, "err", err)
	}
}

// jobFinished records a job's outcome in the store.
func (s *Server) jobFinished(j discovery.Job, res *discovery.Result, verr *discovery.Error) error {
	var err error
	now := time.Now()
	if verr != nil {
		status := store.StatusFailed
		switch verr.Class {
		case discovery.ClassTimeout:
			status = store.StatusTimeout
		case discovery.ClassCancelled:
			status = store.StatusCancelled
		}
		err = s.store.RecordFailure(j.ServerID, store.Failure{
			JobID: j.ID, ConfigHash: j.ConfigHash, Status: status, StartedAt: startOf(j), FinishedAt: now,
			Timings: storeTimings(j.Timings),
			Error: store.VerifyError{Class: verr.Class, Phase: verr.Phase, Message: verr.Message,
				Suggestion: verr.Suggestion, StderrTail: verr.StderrTail},
		})
	} else {
		v := store.Verification{
			JobID: j.ID, ConfigHash: j.ConfigHash, StartedAt: startOf(j), FinishedAt: now,
			Timings: storeTimings(res.Timings), ProtocolVersion: res.ProtocolVersion,
			ServerName: res.ServerName, ServerVersion: res.ServerVersion, Capabilities: res.Capabilities,
			Instructions: res.Instructions, Warnings: res.Warnings,
		}
		for _, t := range res.Tools {
			v.Tools = append(v.Tools, store.Tool{
				Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
				OutputSchema: t.OutputSchema, Annotations: t.Annotations, Raw: t.Raw, Pin: t.Pin,
				State: t.State, Problems: t.Problems, // discovery's states are the store's
			})
		}
		err = s.store.RecordSuccess(j.ServerID, v)
	}
	switch {
	case errors.Is(err, store.ErrConfigChanged):
		return discovery.NewError(discovery.ClassCancelled, discovery.PhaseSaving, "the server's configuration changed while it was being verified; the result was discarded")
	case errors.Is(err, store.ErrNotFound):
		return discovery.NewError(discovery.ClassCancelled, discovery.PhaseSaving, "the server was deleted while it was being verified")
	}
	return err
}

func startOf(j discovery.Job) time.Time {
	if j.StartedAt.IsZero() {
		return j.QueuedAt
	}
	return j.StartedAt
}

func storeTimings(ts []discovery.Timing) []store.PhaseTiming {
	out := make([]store.PhaseTiming, 0, len(ts))
	for _, t := range ts {
		out = append(out, store.PhaseTiming{Phase: t.Phase, MS: t.Duration.Milliseconds()})
	}
	return out
}
