package web

import (
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/store"
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
	srv, err := s.deps.Store.Server(ctx, id)
	if err != nil {
		return notFound(err)
	}
	sb := serverconfig.Sandbox(srv)
	hosts := c.Request().PostForm["host"]
	if sb == nil || len(hosts) == 0 {
		return &apiError{Status: http.StatusBadRequest, Message: "nothing to allow: a stdio server and one host or more"}
	}
	// Only what its last run was refused for not being listed, and no
	// loopback or private address (sandbox.OneClick): a click never opens
	// this machine's services or this dashboard.
	sum, err := s.deps.Store.Summary(ctx, id)
	if err != nil {
		return notFound(err)
	}
	var refused []string
	if e := sum.Discovery.Error; e != nil && e.Refused != nil {
		for _, h := range e.Refused.Hosts {
			if sandbox.OneClick(h.Entry(), h.Reason) {
				refused = append(refused, h.Entry())
			}
		}
	}
	for _, h := range hosts {
		if !slices.Contains(refused, h) {
			return &apiError{Status: http.StatusBadRequest, Message: "not a host its last run was refused for not being listed: " + strconv.Quote(h) + " (list it on the edit form)"}
		}
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
	srv.UpdatedBy = byOf(ctx)
	if err := s.deps.Store.UpdateServer(ctx, srv); err != nil {
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

// handleSandboxArgPaths serves POST /servers/:id/sandbox/arg-paths: on
// the launch confirmation, a path the server's arguments name is taken
// out of its grants (path), or put back (path and grant=1). The launch
// changed, so the person is shown it again to confirm.
func (s *Server) handleSandboxArgPaths(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	srv, err := s.deps.Store.Server(ctx, id)
	if err != nil {
		return notFound(err)
	}
	sb := serverconfig.Sandbox(srv)
	path := c.Request().PostFormValue("path")
	dirs, files := sandbox.ArgPaths(srv.Args, srv.Cwd)
	if sb == nil || !slices.Contains(dirs, path) && !slices.Contains(files, path) {
		return &apiError{Status: http.StatusBadRequest, Message: "not a path the server's arguments name: " + strconv.Quote(path)}
	}
	out := *sb
	out.SkipArgPaths = slices.DeleteFunc(slices.Clone(sb.SkipArgPaths), func(p string) bool { return p == path })
	if c.Request().PostFormValue("grant") != "1" {
		out.SkipArgPaths = append(out.SkipArgPaths, path)
	}
	srv.Sandbox = &out
	srv.UpdatedBy = byOf(ctx)
	if err := s.deps.Store.UpdateServer(ctx, srv); err != nil {
		return notFound(err)
	}
	return c.Redirect(http.StatusSeeOther, "/servers/"+id+"/confirm")
}
