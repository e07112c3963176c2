package web

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/web/serverconfig"
)

// handleSandboxAllow serves POST /servers/:id/sandbox/allow: learn mode's
// "Allow and verify again". The hosts the walls refused (as the failure
// listed them) join the server's network allow-list, and the person's
// click confirms the launch so widened; then it verifies again. Only a
// server whose launch was confirmed as it stood can be widened this way:
// otherwise the person sees the whole launch first.
func (s *Server) handleSandboxAllow(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	srv, err := s.store.Server(ctx, id)
	if err != nil {
		return notFound(err)
	}
	sb := serverconfig.Sandbox(srv)
	hosts := c.Request().PostForm["host"]
	if sb == nil || len(hosts) == 0 {
		return &apiError{Status: http.StatusBadRequest, Message: "nothing to allow: a stdio server and one host or more"}
	}
	if !srv.LaunchConfirmedNow() {
		return c.Redirect(http.StatusSeeOther, "/servers/"+id+"/confirm")
	}
	p := sandbox.Profile(*sb)
	if p.Network != sandbox.NetworkAny {
		p.Network = sandbox.NetworkAllow
		p.Allow = append(append([]string(nil), p.Allow...), hosts...)
	}
	n, err := p.Normalize()
	if fe := (*sandbox.FieldError)(nil); errors.As(err, &fe) {
		return &apiError{Status: http.StatusBadRequest, Message: fe.Error()}
	}
	out := store.Sandbox(n)
	srv.Sandbox = &out
	if err := s.store.UpdateServer(ctx, srv); err != nil {
		return notFound(err)
	}
	if err := s.confirmLaunch(ctx, srv, srv.LaunchHash()); err != nil {
		return err
	}
	if _, err := s.submit(srv, store.TriggerManual); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/servers/"+id)
}
