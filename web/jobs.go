package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/verify"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/apijson"
	"github.com/switchboard-dev/switchboard/web/internal/present"
)

// startVerify queues a verification of the server with its current
// configuration, or joins the one already in flight. A launch nobody has
// confirmed yet is confirmed with confirmed (the launch hash the person
// saw), or refused with a *launchUnconfirmed.
// A confirmation may choose the server's preset for its new tools (see
// setPreset); the tools it has keep their policies.
func (s *Server) startVerify(ctx context.Context, id, confirmed string, preset store.Preset) (discovery.Job, error) {
	srv, err := s.deps.Store.Server(ctx, id)
	if err != nil {
		return discovery.Job{}, notFound(err)
	}
	if err := s.confirmLaunch(ctx, srv, confirmed); err != nil {
		return discovery.Job{}, err
	}
	if confirmed != "" && preset.Valid() {
		if _, err := s.setPreset(ctx, id, preset, false, byOf(ctx)); err != nil {
			return discovery.Job{}, err
		}
	}
	return s.submit(srv, store.TriggerManual)
}

// submit queues a verification of srv as it is now (whose launch must be
// confirmed), or joins the one in flight here or on another replica.
func (s *Server) submit(srv store.Server, trigger string) (discovery.Job, error) {
	j, err := s.deps.Verify.Submit(srv, trigger)
	if errors.Is(err, verify.ErrClosed) {
		return j, &apiError{Status: http.StatusServiceUnavailable, Message: "switchboard is shutting down"}
	}
	return j, err
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
		return render(c, http.StatusConflict, views.ConfirmPage(s.page(c, "Confirm "+lu.srv.Name), present.Launch(lu.srv, s.deps.Verify.Machine()), lu.Error()))
	case err != nil:
		return err
	case c.Request().Header.Get(headerHXRequest) != "":
		return c.NoContent(http.StatusAccepted)
	}
	return c.Redirect(http.StatusSeeOther, "/servers/"+id)
}

// handleCancelJob serves POST /jobs/:id/cancel (htmx).
func (s *Server) handleCancelJob(c echo.Context) error {
	if !s.deps.Verify.Cancel(c.Param("id")) {
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
		srv, err := s.deps.Store.Server(ctx, id)
		if err != nil {
			return notFound(err)
		}
		confirmed = srv.LaunchHash()
	}
	j, err := s.startVerify(ctx, id, confirmed, store.Preset(body.Preset))
	if lu := (*launchUnconfirmed)(nil); errors.As(err, &lu) {
		return c.JSON(http.StatusConflict, map[string]any{
			"error":  lu.Error() + `; send {"confirm": true} to confirm this launch and start`,
			"launch": apijson.LaunchOf(present.Launch(lu.srv, s.deps.Verify.Machine())),
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
		if h, err := s.deps.Store.JobHistory(ctx, j.ServerID, j.ID); err == nil {
			out.Delta = apijson.DeltaOf(h.Delta)
		}
	}
	return out
}

// handleAPIJob serves GET /api/v1/jobs/:id.
func (s *Server) handleAPIJob(c echo.Context) error {
	ctx := c.Request().Context()
	j, ok := s.deps.Verify.Job(c.Param("id"))
	if !ok {
		return &apiError{Status: http.StatusNotFound, Message: "no job with this id (finished jobs are kept for a while)"}
	}
	return c.JSON(http.StatusOK, map[string]any{"job": s.jobJSON(ctx, j)})
}

// handleAPICancelJob serves POST /api/v1/jobs/:id/cancel.
func (s *Server) handleAPICancelJob(c echo.Context) error {
	ctx := c.Request().Context()
	if !s.deps.Verify.Cancel(c.Param("id")) {
		return &apiError{Status: http.StatusNotFound, Message: "no running job with this id"}
	}
	j, _ := s.deps.Verify.Job(c.Param("id"))
	return c.JSON(http.StatusAccepted, map[string]any{"job": s.jobJSON(ctx, j)})
}
