package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"syscall"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/sealed"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/apijson"
)

// apiError is an error with a status and a message fit to show, and
// optionally one message per invalid field; the subsystems under
// web/internal refuse requests with the same type.
type apiError = apijson.Refusal

// internalMessage is all a person sees of an unexpected error; the cause
// is logged.
const internalMessage = "something went wrong inside Switchboard; the log has the details"

// handleError turns any handler error into a response: JSON for the API
// and the MCP endpoint, an alert fragment for htmx, an error page
// otherwise.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	if errors.Is(err, context.Canceled) && c.Request().Context().Err() != nil {
		// The client went away (or its connection was closed, see
		// conns.Guard): there is no one to answer.
		return
	}
	status, msg, fields := http.StatusInternalServerError, internalMessage, map[string]string(nil)
	var ae *apiError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &ae):
		status, msg, fields = ae.Status, ae.Message, ae.Fields
	case errors.Is(err, syscall.ENOSPC):
		// A create, an edit, a confirmation the store could not write:
		// nothing was changed, and the person can do something about it.
		status, msg = http.StatusInsufficientStorage, "The disk that holds Switchboard's database is full, so nothing was changed: free some space and try again."
	case errors.Is(err, store.ErrDamaged):
		// The file is damaged (see store/bolt): the person must act, and
		// the log names the file.
		status, msg = http.StatusInternalServerError, "Switchboard's database is damaged, so nothing was read or changed: stop Switchboard, move the database file aside and restore a backup (the log names the file)."
	case errors.Is(err, sealed.ErrSecret):
		status, msg = http.StatusInternalServerError, "A secret in Switchboard's store does not open with the key Switchboard was given (another key, or a damaged or moved value); the log says which."
	case errors.Is(err, store.ErrOutcomeUnknown):
		// A change sent whose commit was not confirmed: it may have been
		// made. Saying "nothing changed" would be a lie.
		status, msg = http.StatusServiceUnavailable, "Switchboard's store did not confirm this change in time, so it may or may not have been made: look before trying again (sending the same create again is safe)."
	case errors.Is(err, store.ErrUnavailable):
		// A replica cut off from the team's store: it changes nothing
		// rather than diverge.
		status, msg = http.StatusServiceUnavailable, "Switchboard cannot reach its store now, so nothing was read or changed; try again in a moment ("+err.Error()+")"
	case errors.As(err, &he):
		status = he.Code
		if m, ok := he.Message.(string); ok {
			msg = m
		} else {
			msg = http.StatusText(he.Code)
		}
	}
	if status >= 500 {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	r := c.Request()
	var werr error
	switch {
	case r.Method == http.MethodHead:
		werr = c.NoContent(status)
	case strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/healthz" || r.URL.Path == "/livez" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics" || r.URL.Path == "/mcp":
		body := map[string]any{"error": msg}
		if len(fields) > 0 {
			body["fields"] = fields
		}
		werr = c.JSON(status, body)
	case r.Header.Get(headerHXRequest) != "":
		werr = render(c, status, views.Alert(msg))
	default:
		werr = render(c, status, views.ErrorPage(views.Page{Title: http.StatusText(status), CSRF: csrfOf(c)}, status, msg))
	}
	if werr != nil {
		s.log.Error("write error response", "err", werr)
	}
}
