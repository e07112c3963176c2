package web

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/apijson"
	"github.com/switchboard-dev/switchboard/web/internal/present"
	"github.com/switchboard-dev/switchboard/web/internal/record"
)

// startVerify queues a verification of the server with its current
// configuration, or joins the one already in flight. A launch nobody has
// confirmed yet is confirmed with confirmed (the launch hash the person
// saw), or refused with a *launchUnconfirmed.
// A confirmation may choose the server's preset for its new tools (see
// setPreset); the tools it has keep their policies.
func (s *Server) startVerify(ctx context.Context, id, confirmed string, preset store.Preset) (discovery.Job, error) {
	srv, err := s.store.Server(ctx, id)
	if err != nil {
		return discovery.Job{}, notFound(err)
	}
	if err := s.confirmLaunch(ctx, srv, confirmed); err != nil {
		return discovery.Job{}, err
	}
	if confirmed != "" && preset.Valid() {
		if _, err := s.setPreset(ctx, id, preset, false, "dashboard"); err != nil {
			return discovery.Job{}, err
		}
	}
	return s.submit(srv, store.TriggerManual)
}

// submit queues a verification of srv as it is now (whose launch must be
// confirmed), or joins the one in flight here or on another replica.
func (s *Server) submit(srv store.Server, trigger string) (discovery.Job, error) {
	j, _, err := s.jobs.Submit(context.Background(), discovery.Request{
		Trigger:     trigger,
		ServerID:    srv.ID,
		ConfigHash:  srv.ConfigHash(),
		Target:      s.target(srv),
		InitTimeout: time.Duration(srv.TimeoutMS) * time.Millisecond,
	})
	if errors.Is(err, discovery.ErrClosed) {
		return j, &apiError{Status: http.StatusServiceUnavailable, Message: "switchboard is shutting down"}
	}
	return j, err
}

// jobEvent publishes a job's change (its server's fragments and, if it
// belongs to the latest "Verify all", that batch's progress); logs its end.
func (s *Server) jobEvent(j discovery.Job) {
	s.jobs.Event(j)
	record.Log(s.log, j)
	s.publishServer(j.ServerID)
	if _, ok := s.batches.Update(j); ok {
		s.publishBatch()
	}
}

// handleVerify serves POST /servers/:id/verify: from the Verify button
// (htmx), which returns at once while progress arrives over SSE, or from
// the confirmation page's form (with the confirmed launch hash), which
// leads back to the server's page. A Verify button whose launch needs
// confirming sends the browser to the confirmation page.
func (s *Server) handleVerify(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	_, err := s.startVerify(ctx, id, c.FormValue("confirm"), store.Preset(c.FormValue("preset")))
	var lu *launchUnconfirmed
	switch {
	case errors.As(err, &lu) && c.Request().Header.Get(headerHXRequest) != "":
		c.Response().Header().Set("HX-Redirect", "/servers/"+id+"/confirm")
		return c.NoContent(http.StatusConflict)
	case errors.As(err, &lu):
		return render(c, http.StatusConflict, views.ConfirmPage(s.page(c, "Confirm "+lu.srv.Name), present.Launch(lu.srv, s.verifier.Machine()), lu.Error()))
	case err != nil:
		return err
	case c.Request().Header.Get(headerHXRequest) != "":
		return c.NoContent(http.StatusAccepted)
	}
	return c.Redirect(http.StatusSeeOther, "/servers/"+id)
}

// handleCancelJob serves POST /jobs/:id/cancel (htmx).
func (s *Server) handleCancelJob(c echo.Context) error {
	if !s.jobs.Cancel(c.Param("id")) {
		return &apiError{Status: http.StatusNotFound, Message: "no running job with this id"}
	}
	return c.NoContent(http.StatusAccepted)
}

// handleAPIVerify serves POST /api/v1/servers/:id/verify: 202 with the
// job. A launch not yet confirmed answers 409 with the launch to show; the
// same POST with {"confirm": true} confirms it and starts.
func (s *Server) handleAPIVerify(c echo.Context) error {
	ctx := c.Request().Context()
	var body struct {
		Confirm bool   `json:"confirm"`
		Preset  string `json:"preset"` // chosen with the confirmation
	}
	if err := decodeOptionalJSON(c, 4096, &body); err != nil {
		return err
	}
	if body.Preset != "" && (!body.Confirm || !store.Preset(body.Preset).Valid()) {
		return validationError(map[string]string{"preset": `must be ask_all, read_only or allow_all, with "confirm": true`})
	}
	id := c.Param("id")
	confirmed := ""
	if body.Confirm {
		srv, err := s.store.Server(ctx, id)
		if err != nil {
			return notFound(err)
		}
		confirmed = srv.LaunchHash()
	}
	j, err := s.startVerify(ctx, id, confirmed, store.Preset(body.Preset))
	if lu := (*launchUnconfirmed)(nil); errors.As(err, &lu) {
		return c.JSON(http.StatusConflict, map[string]any{
			"error":  lu.Error() + `; send {"confirm": true} to confirm this launch and start`,
			"launch": apijson.LaunchOf(present.Launch(lu.srv, s.verifier.Machine())),
		})
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"job": s.jobJSON(ctx, j)})
}

// apijson.Job is a job as the API shows it, with what its verification
// changed once it succeeded.
func (s *Server) jobJSON(ctx context.Context, j discovery.Job) apijson.Job {
	out := apijson.JobOf(j)
	if j.Status == discovery.JobSuccess {
		if h, err := s.store.JobHistory(ctx, j.ServerID, j.ID); err == nil {
			out.Delta = apijson.DeltaOf(h.Delta)
		}
	}
	return out
}

// handleAPIJob serves GET /api/v1/jobs/:id.
func (s *Server) handleAPIJob(c echo.Context) error {
	ctx := c.Request().Context()
	j, ok := s.jobs.Job(c.Param("id"))
	if !ok {
		return &apiError{Status: http.StatusNotFound, Message: "no job with this id (finished jobs are kept for a while)"}
	}
	return c.JSON(http.StatusOK, map[string]any{"job": s.jobJSON(ctx, j)})
}

// handleAPICancelJob serves POST /api/v1/jobs/:id/cancel.
func (s *Server) handleAPICancelJob(c echo.Context) error {
	ctx := c.Request().Context()
	if !s.jobs.Cancel(c.Param("id")) {
		return &apiError{Status: http.StatusNotFound, Message: "no running job with this id"}
	}
	j, _ := s.jobs.Job(c.Param("id"))
	return c.JSON(http.StatusAccepted, map[string]any{"job": s.jobJSON(ctx, j)})
}

// jobStarted records that a job left the queue.
func (s *Server) jobStarted(j discovery.Job) {
	ctx := context.Background()
	if err := s.store.MarkRunning(ctx, j.ServerID, j.ID, j.StartedAt); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Error("mark verification running", "server", j.ServerID, "err", err)
	}
}

// jobFinished records a job's outcome in the store. An outcome that
// cannot be saved makes the job fail (see saveFailed).
func (s *Server) jobFinished(j discovery.Job, res *discovery.Result, verr *discovery.Error) error {
	ctx := context.Background()
	var err error
	now := s.cfg.Now()
	if verr != nil {
		err = s.store.RecordFailure(ctx, j.ServerID, record.Failure(j, verr, now))
	} else {
		err = s.store.RecordSuccess(ctx, j.ServerID, record.Success(j, res, now))
	}
	if verr := record.Discarded(err); verr != nil {
		return verr
	}
	if err != nil {
		return s.saveFailed(j, now, err)
	}
	return nil
}

// jobLateWarnings records warnings found after a job's success was
// recorded (a process left behind when its server stopped), unless a
// newer verification owns the record by now.
func (s *Server) jobLateWarnings(j discovery.Job, warnings []string) {
	ctx := context.Background()
	err := s.store.AddLateWarnings(ctx, j.ServerID, j.ID, warnings)
	if err != nil && !errors.Is(err, store.ErrOtherJob) && !errors.Is(err, store.ErrNotFound) {
		s.log.Error("record late warnings", "server", j.ServerID, "err", err)
	}
}
