package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/store"
)

// handleAPIBackup serves GET /api/v1/backup: a consistent copy of the
// database, taken while the dashboard keeps running (its file lock keeps
// `switchboard backup` out). The copy holds every server's env and header
// values, so it is as secret as the token that fetched it.
func (s *Server) handleAPIBackup(c echo.Context) error {
	b, ok := s.deps.Store.(store.Backuper)
	if !ok {
		return &apiError{Status: http.StatusNotImplemented, Message: "this store cannot be backed up from here; use its own backup tools"}
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/octet-stream")
	h.Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="switchboard-%s.db"`, time.Now().UTC().Format("20060102-150405")))
	c.Response().WriteHeader(http.StatusOK)
	if _, err := b.Backup(c.Request().Context(), c.Response()); err != nil {
		// The status is sent: cut the transfer so the client cannot take
		// a partial copy for a whole one.
		s.log.Error("backup", "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}
