package web

import (
	"cmp"
	"errors"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/internal/service"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/gateway"
	"github.com/switchboard-dev/switchboard/web/internal/apijson"
)

// Connected clients: each gets its own MCP token, shown once (see
// gateway.Connect).

// handleAPIClients serves GET /api/v1/clients: each with whether an
// agent uses it now (see gateway.ClientUse).
func (s *Server) handleAPIClients(c echo.Context) error {
	list, err := s.mcp.Clients(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]apijson.Client, 0, len(list))
	for _, ct := range list {
		client, err := s.clientJSON(c, ct)
		if err != nil {
			return err
		}
		out = append(out, client)
	}
	return c.JSON(http.StatusOK, map[string]any{"clients": out})
}

// clientJSON is ct as API answers give it.
func (s *Server) clientJSON(c echo.Context, ct store.ClientToken) (apijson.Client, error) {
	p, err := s.deps.Store.Profile(c.Request().Context(), cmp.Or(ct.Profile, store.DefaultProfile))
	if err != nil {
		return apijson.Client{}, err
	}
	return apijson.ClientOf(ct, p, s.mcp.ClientUse(ct.ID)), nil
}

// handleAPISetClient serves PUT /api/v1/clients/:id {"approvals":
// "client"|"dashboard"|""}: where the client's calls to ask tools may be
// answered. It answers the client.
func (s *Server) handleAPISetClient(c echo.Context) error {
	var body struct {
		Approvals string `json:"approvals"`
	}
	if err := decodeJSON(c, 4096, &body); err != nil {
		return err
	}
	ct, err := s.mcp.SetClientApprovals(c.Request().Context(), c.Param("id"), body.Approvals)
	switch {
	case errors.Is(err, gateway.ErrClientApprovals):
		return validationError(map[string]string{"approvals": err.Error()})
	case errors.Is(err, store.ErrNotFound):
		return &apiError{Status: http.StatusNotFound, Message: "no connected client with this id"}
	case err != nil:
		return err
	}
	client, err := s.clientJSON(c, ct)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, client)
}

// handleAPIDisallow serves DELETE /api/v1/clients/:id/allowed/:server/:tool:
// the client's next call of the tool asks again.
func (s *Server) handleAPIDisallow(c echo.Context) error {
	if err := s.mcp.Disallow(c.Request().Context(), c.Param("id"), store.ToolRef{ServerID: c.Param("server"), Tool: c.Param("tool")}); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return &apiError{Status: http.StatusNotFound, Message: "no connected client with this id always allows this tool"}
		}
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// handleClientApprovalsForm serves POST /agents/clients/:id/approvals
// (approvals: client, dashboard or "" for the profile's).
func (s *Server) handleClientApprovalsForm(c echo.Context) error {
	_, err := s.mcp.SetClientApprovals(c.Request().Context(), c.Param("id"), c.FormValue("approvals"))
	switch {
	case errors.Is(err, gateway.ErrClientApprovals):
		return &apiError{Status: http.StatusUnprocessableEntity, Message: err.Error()}
	case errors.Is(err, store.ErrNotFound):
		return &apiError{Status: http.StatusNotFound, Message: "no connected client with this id"}
	case err != nil:
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/agents")
}

// handleDisallowForm serves POST /agents/clients/:id/allowed/revoke
// (server_id, tool).
func (s *Server) handleDisallowForm(c echo.Context) error {
	ref := store.ToolRef{ServerID: c.FormValue("server_id"), Tool: c.FormValue("tool")}
	if err := s.mcp.Disallow(c.Request().Context(), c.Param("id"), ref); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return &apiError{Status: http.StatusNotFound, Message: "no connected client with this id always allows this tool"}
		}
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/agents")
}

// handleAPIConnect serves POST /api/v1/clients {"name": N}: 201 with the
// client and its token, which is never shown again.
func (s *Server) handleAPIConnect(c echo.Context) error {
	var body struct {
		Name    string `json:"name"`
		Profile string `json:"profile"`
	}
	if err := decodeJSON(c, 4096, &body); err != nil {
		return err
	}
	token, ct, err := s.mcp.Connect(c.Request().Context(), body.Name, body.Profile, actorOf(c).name())
	if field := gateway.ConnectField(err); field != "" {
		return validationError(map[string]string{field: err.Error()})
	} else if err != nil {
		return err
	}
	client, err := s.clientJSON(c, ct)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{"client": client, "token": token})
}

// handleAPIDisconnect serves DELETE /api/v1/clients/:id.
func (s *Server) handleAPIDisconnect(c echo.Context) error {
	if err := s.mcp.Disconnect(c.Request().Context(), c.Param("id")); err != nil {
		return notFound(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// handleConnectForm serves POST /agents/clients: a token for a client
// named in the form, shown once on the Agents page.
func (s *Server) handleConnectForm(c echo.Context) error {
	token, ct, err := s.mcp.Connect(c.Request().Context(), c.FormValue("name"), c.FormValue("profile"), actorOf(c).name())
	v, verr := s.agentsView(c)
	if verr != nil {
		return verr
	}
	status := http.StatusCreated
	switch {
	case gateway.ConnectField(err) != "":
		v.ClientError, v.ClientName, status = err.Error(), c.FormValue("name"), http.StatusUnprocessableEntity
	case err != nil:
		return err
	default:
		v.NewToken, v.NewTokenFor = token, ct.Name
	}
	return render(c, status, views.AgentsPage(s.page(c, "Agents"), v))
}

// handleDisconnectForm serves POST /agents/clients/:id/revoke.
func (s *Server) handleDisconnectForm(c echo.Context) error {
	if err := s.mcp.Disconnect(c.Request().Context(), c.Param("id")); err != nil {
		return notFound(err)
	}
	return c.Redirect(http.StatusSeeOther, "/agents")
}

// connectPlan is the change that connects client key, with the entry's
// token (a placeholder for a preview): its entry written, the entries of
// the servers Switchboard has moved out of its files.
func (s *Server) connectPlan(c echo.Context, key, token string) (serverconfig.Connection, error) {
	m, err := s.managed(c.Request().Context())
	if err != nil {
		return serverconfig.Connection{}, err
	}
	exe, _ := os.Executable()
	exe = service.StableExe(service.Env{GOOS: runtime.GOOS, Home: s.home(), Getenv: os.Getenv}, exe) // the service's, if installed
	host := c.Request().Host
	p, err := serverconfig.PlanConnectHere(key, s.home(), serverconfig.Endpoint{URL: "http://" + host + "/mcp", Addr: host, Exe: exe, Token: token}, m)
	if errors.Is(err, serverconfig.ErrUnknownClient) {
		return p, &apiError{Status: http.StatusUnprocessableEntity, Message: err.Error()}
	}
	return p, err
}

// connectView is the page's view of a planned connection.
func connectView(key string, p serverconfig.Connection) *views.ConnectView {
	v := &views.ConnectView{Client: key, Diff: p.PageDiff(), Before: p.Fingerprint(), MovesPath: p.MovesPath()}
	if len(p.Files) > 0 {
		v.Path = p.Main().Path
	}
	for _, m := range p.Moved() {
		v.Moved = append(v.Moved, views.MovedEntry{Name: m.Name, Project: m.Where})
	}
	return v
}

// handleConnectPreview serves POST /agents/connect/preview: the change
// connecting a client would make to its config files, token left out.
func (s *Server) handleConnectPreview(c echo.Context) error {
	v, err := s.agentsView(c)
	if err != nil {
		return err
	}
	p, err := s.connectPlan(c, c.FormValue("client"), "<a token of its own, made when you write it>")
	v.Connect = connectView(c.FormValue("client"), p)
	if err != nil {
		v.Connect.Error = err.Error()
	}
	return render(c, http.StatusOK, views.AgentsPage(s.page(c, "Agents"), v))
}

// handleConnect serves POST /agents/connect: makes the client's token and
// writes its entry, after a backup, if the files are still as previewed.
func (s *Server) handleConnect(c echo.Context) error {
	ctx := c.Request().Context()
	key := c.FormValue("client")
	client, _ := serverconfig.ClientByKey(key)
	if p, err := s.connectPlan(c, key, ""); err != nil || p.Fingerprint() != c.FormValue("before") {
		return s.handleConnectPreview(c) // changed since the preview: show it again
	}
	token, ct, err := s.mcp.Connect(ctx, client.Name, "", actorOf(c).name())
	if err != nil {
		return err
	}
	p, err := s.connectPlan(c, key, token)
	var backups []string
	if err == nil {
		backups, err = p.Write(time.Now())
	}
	v, verr := s.agentsView(c)
	if verr != nil {
		return verr
	}
	if !serverconfig.MainWritten(err) {
		s.mcp.Disconnect(ctx, ct.ID) // no token without its entry
	} else if p.Old != nil { // the entry it replaced had a token of its own
		if err := s.mcp.DisconnectToken(ctx, serverconfig.TokenOf(*p.Old)); err != nil {
			s.log.Warn("revoke the token of a replaced entry", "client", client.Name, "err", err)
		}
	}
	if err != nil {
		v.Connect = &views.ConnectView{Client: key, Path: p.Main().Path, Error: err.Error()}
		return render(c, http.StatusUnprocessableEntity, views.AgentsPage(s.page(c, "Agents"), v))
	}
	v.Connected = connectView(client.Name, p)
	v.Connected.Backup = strings.Join(backups, ", ")
	return render(c, http.StatusOK, views.AgentsPage(s.page(c, "Agents"), v))
}
