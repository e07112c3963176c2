package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/present"
)

// Before Switchboard first starts a server's command (or contacts its
// URL), and again after the command, args, env keys, cwd or URL changed,
// a person sees the exact launch and confirms it (docs/architecture.md "Security
// defaults"). The store keeps the confirmed store.Server.LaunchHash.

// launchUnconfirmed is startVerify's answer for a server whose current
// launch nobody confirmed. Outdated says a confirmation was given, but for
// a launch that has changed since.
type launchUnconfirmed struct {
	srv      store.Server
	outdated bool
}

func (e *launchUnconfirmed) Error() string {
	if e.outdated {
		return "the server's command or URL changed after it was shown; review it and confirm again"
	}
	return "this server's command or URL must be confirmed before Switchboard runs or contacts it"
}

// confirmLaunch makes sure srv's launch is confirmed before it starts:
// already, or now with the launch hash the person confirmed ("" for
// none).
func (s *Server) confirmLaunch(ctx context.Context, srv store.Server, confirmed string) error {
	if srv.LaunchConfirmedNow() {
		return nil
	}
	if confirmed == "" {
		return &launchUnconfirmed{srv: srv}
	}
	if confirmed != srv.LaunchHash() {
		return &launchUnconfirmed{srv: srv, outdated: true}
	}
	err := s.deps.Store.ConfirmLaunch(ctx, srv.ID, confirmed, byOf(ctx))
	switch {
	case errors.Is(err, store.ErrLaunchChanged):
		// Edited since srv was read: show the new launch.
		if now, rerr := s.deps.Store.Server(ctx, srv.ID); rerr == nil {
			srv = now
		}
		return &launchUnconfirmed{srv: srv, outdated: true}
	case err != nil:
		return notFound(err)
	}
	return nil
}

// handleConfirmPage serves GET /servers/:id/confirm: the exact launch and
// a form that confirms it and starts the Verify.
func (s *Server) handleConfirmPage(c echo.Context) error {
	ctx := c.Request().Context()
	srv, err := s.deps.Store.Server(ctx, c.Param("id"))
	if err != nil {
		return notFound(err)
	}
	return render(c, http.StatusOK, views.ConfirmPage(s.page(c, "Confirm "+srv.Name), present.Launch(srv, s.deps.Verify.Machine()), ""))
}
