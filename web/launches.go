package web

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/apijson"
	"github.com/switchboard-dev/switchboard/web/internal/batch"
	"github.com/switchboard-dev/switchboard/web/internal/onboard"
	"github.com/switchboard-dev/switchboard/web/internal/present"
)

// Onboarding (see web/internal/onboard): an empty list offers the client
// configs found on this machine, imported all at once; the launches that
// wait for a person are confirmed together, on one page, and verified as
// one batch.

func readFound(path string) ([]byte, error) { return readCapped(path, maxKnownFile) }

// onboarding gives an empty servers list the configs found on this
// machine, through the request's context (see views.Onboarding).
func (s *Server) onboarding(c echo.Context, items []views.ServerItem) {
	if len(items) == 0 {
		v := views.OnboardingView{CSRF: csrfOf(c), Found: onboard.Scan(s.knownFiles(), readFound)}
		c.SetRequest(c.Request().WithContext(views.WithOnboarding(c.Request().Context(), v)))
	}
}

// handleImportAll serves POST /import/all: every server of every config
// found on this machine imported, and what they launch shown for one
// confirmation.
func (s *Server) handleImportAll(c echo.Context) error {
	rep := onboard.ImportAll(c.Request().Context(), s.deps.Store, s.knownFiles(), readFound)
	return s.launchesPage(c, http.StatusOK, rep.Servers, &rep.ImportReport, "")
}

// launchesPage shows the launches waiting for confirmation: all of them
// (ids nil), or those of ids.
func (s *Server) launchesPage(c echo.Context, status int, ids []string, rep *views.ImportReport, notice string) error {
	sums, err := s.deps.Store.Summaries(c.Request().Context())
	if err != nil {
		return err
	}
	v := views.LaunchesView{Import: rep, Notice: notice}
	for _, srv := range onboard.Pending(sums, ids) {
		v.Launches = append(v.Launches, present.Launch(srv, s.deps.Verify.Machine()))
	}
	return render(c, status, views.ConfirmLaunchesPage(s.page(c, "Confirm launches"), v))
}

// handleLaunchesPage serves GET /launches/confirm?server=ID…: the
// launches of those servers (of all, without any) that wait for a
// person's confirmation.
func (s *Server) handleLaunchesPage(c echo.Context) error {
	return s.launchesPage(c, http.StatusOK, c.QueryParams()["server"], nil, "")
}

// handleConfirmLaunches serves POST /launches/confirm: the ticked
// launches, each bound to the hash of the launch shown, confirmed and
// verified together; then the servers list, which shows the progress.
func (s *Server) handleConfirmLaunches(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return err
	}
	ids := form["server"]
	shown := map[string]string{}
	for _, id := range ids {
		shown[id] = c.FormValue("launch-" + id)
	}
	_, err = s.confirmLaunches(c.Request().Context(), shown)
	if ae := (*apiError)(nil); errors.As(err, &ae) && ae.Status != http.StatusServiceUnavailable {
		return s.launchesPage(c, ae.Status, ids, nil, ae.Message)
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/")
}

// confirmLaunches confirms the launches a person was shown (launch hash
// by server id) and starts one verification of those servers together.
// If any launch changed since it was shown, none is confirmed (but for
// one edited between the check and its own confirmation: those before it
// stay confirmed, as they were shown).
func (s *Server) confirmLaunches(ctx context.Context, shown map[string]string) (*batch.Batch, error) {
	if len(shown) == 0 {
		return nil, &apiError{Status: http.StatusUnprocessableEntity, Message: "Tick at least one server to confirm."}
	}
	sums, err := s.deps.Store.Summaries(ctx)
	if err != nil {
		return nil, err
	}
	confirm, changed := onboard.Check(sums, shown)
	for i := 0; len(changed) == 0 && i < len(confirm); i++ {
		srv := confirm[i]
		if err := s.confirmLaunch(ctx, srv, shown[srv.ID]); errors.As(err, new(*launchUnconfirmed)) {
			changed = append(changed, srv.ID) // edited just now
		} else if err != nil {
			return nil, err
		}
	}
	if len(changed) > 0 {
		return nil, &apiError{Status: http.StatusConflict, Message: "Not confirmed: what " + strings.Join(changed, ", ") +
			" would run changed after it was shown, or the server is gone. Review the launches and confirm again."}
	}
	return s.verifyAll(ctx, slices.Sorted(maps.Keys(shown)))
}

// handleAPILaunches serves GET /api/v1/launches: the launches waiting for
// a person's confirmation, with the hash POST /api/v1/verify-all confirms.
func (s *Server) handleAPILaunches(c echo.Context) error {
	sums, err := s.deps.Store.Summaries(c.Request().Context())
	if err != nil {
		return err
	}
	out := []apijson.Launch{}
	for _, srv := range onboard.Pending(sums, nil) {
		out = append(out, apijson.LaunchOf(present.Launch(srv, s.deps.Verify.Machine())))
	}
	return c.JSON(http.StatusOK, map[string]any{"launches": out})
}
