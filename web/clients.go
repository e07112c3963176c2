package web

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/gateway"
)

// Connected clients: each gets its own MCP token, shown once (see
// gateway.Connect).

type clientJSON struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	// Fingerprint is the start of the token's SHA-256, by which a program
	// holding the token finds its client (see `switchboard disconnect`).
	Fingerprint string `json:"fingerprint"`
}

func clientToJSON(ct store.ClientToken) clientJSON {
	return clientJSON{ID: ct.ID, Name: ct.Name, CreatedAt: ct.CreatedAt, Fingerprint: ct.Hash[:12]}
}

// handleAPIClients serves GET /api/v1/clients.
func (s *Server) handleAPIClients(c echo.Context) error {
	list, err := s.mcp.Clients(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]clientJSON, 0, len(list))
	for _, ct := range list {
		out = append(out, clientToJSON(ct))
	}
	return c.JSON(http.StatusOK, map[string]any{"clients": out})
}

// handleAPIConnect serves POST /api/v1/clients {"name": N}: 201 with the
// client and its token, which is never shown again.
func (s *Server) handleAPIConnect(c echo.Context) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := decodeJSON(c, 4096, &body); err != nil {
		return err
	}
	token, ct, err := s.mcp.Connect(c.Request().Context(), body.Name)
	if errors.Is(err, gateway.ErrClientName) {
		return validationError(map[string]string{"name": err.Error()})
	} else if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{"client": clientToJSON(ct), "token": token})
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
	token, ct, err := s.mcp.Connect(c.Request().Context(), c.FormValue("name"))
	v, verr := s.agentsView(c)
	if verr != nil {
		return verr
	}
	status := http.StatusCreated
	switch {
	case errors.Is(err, gateway.ErrClientName):
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
