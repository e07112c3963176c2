package web

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// A server's preset decides how its new tools start (see
// store.PresetPolicy); its existing tools follow a preset only when a
// person applies it to them. Several tools' policies can be set at once:
// the tools named, or those a selection picks by their annotations.

// setPreset records the server's preset and, if apply, sets its existing
// tools' policies by it. It returns the tools it changed.
func (s *Server) setPreset(ctx context.Context, id string, p store.Preset, apply bool, by string) ([]store.ToolEntry, error) {
	srv, err := s.deps.Store.Server(ctx, id)
	if err != nil {
		return nil, notFound(err)
	}
	if srv.Preset != p {
		srv.Preset = p
		srv.UpdatedBy = byOf(ctx)
		if err := s.deps.Store.UpdateServer(ctx, srv); err != nil {
			return nil, notFound(err)
		}
	}
	if !apply {
		return nil, nil
	}
	tools, err := s.deps.Store.Tools(ctx, id)
	if err != nil {
		return nil, notFound(err)
	}
	out, err := s.deps.Store.SetPolicies(ctx, id, store.PresetChanges(p, tools), by)
	return out, notFound(err)
}

// setPolicies applies a bulk policy to the server's tools, all or none;
// fields says what is wrong with it, if anything.
func (s *Server) setPolicies(ctx context.Context, id string, b store.BulkPolicy, by string) ([]store.ToolEntry, map[string]string, error) {
	if fields := b.Check(); fields != nil {
		return nil, fields, nil
	}
	tools, err := s.deps.Store.Tools(ctx, id)
	if err != nil {
		return nil, nil, notFound(err)
	}
	out, err := s.deps.Store.SetPolicies(ctx, id, b.Changes(tools), by)
	return out, nil, notFound(err)
}

// handleAPISetPolicies serves POST /api/v1/servers/:id/policies:
// {"policy": P, "tools": [names]} or {"policy": P, "select": S}; all or
// none, answered with the tools changed.
func (s *Server) handleAPISetPolicies(c echo.Context) error {
	ctx := c.Request().Context()
	var body struct {
		Policy string   `json:"policy"`
		Tools  []string `json:"tools"`
		Select string   `json:"select"`
	}
	if err := decodeJSON(c, 1<<20, &body); err != nil {
		return err
	}
	tools, fields, err := s.setPolicies(ctx, c.Param("id"), store.BulkPolicy{Policy: store.Policy(body.Policy), Tools: body.Tools, Select: store.Selection(body.Select)}, actorOf(c).name())
	switch {
	case err != nil:
		return err
	case fields != nil:
		return validationError(fields)
	}
	return c.JSON(http.StatusOK, map[string]any{"tools": toolsToJSON(tools)})
}

// handleAPISetPreset serves PUT /api/v1/servers/:id/preset: {"preset":
// P, "apply": true to set the existing tools' policies by it too}.
func (s *Server) handleAPISetPreset(c echo.Context) error {
	var body struct {
		Preset string `json:"preset"`
		Apply  bool   `json:"apply"`
	}
	if err := decodeJSON(c, 4096, &body); err != nil {
		return err
	}
	if !store.Preset(body.Preset).Valid() {
		return validationError(map[string]string{"preset": "must be ask_all, read_only or allow_all"})
	}
	tools, err := s.setPreset(c.Request().Context(), c.Param("id"), store.Preset(body.Preset), body.Apply, actorOf(c).name())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"preset": body.Preset, "tools": toolsToJSON(tools)})
}

// handlePoliciesForm serves POST /servers/:id/policies, the tools
// section's bulk form and preset form (htmx): it answers with the
// section, or its error.
func (s *Server) handlePoliciesForm(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	form, err := c.FormParams()
	if err != nil {
		return err
	}
	if _, ok := form["preset"]; ok { // the preset form
		p := form.Get("preset")
		if !store.Preset(p).Valid() {
			return &apiError{Status: http.StatusUnprocessableEntity, Message: "choose one of the presets"}
		}
		if _, err := s.setPreset(ctx, id, store.Preset(p), form.Get("apply") != "", actorOf(c).name()); err != nil {
			return err
		}
	} else {
		b := store.BulkPolicy{Policy: store.Policy(form.Get("policy")), Select: store.Selection(form.Get("select"))}
		if b.Select == "checked" {
			b.Select, b.Tools = "", form["tool"]
		}
		_, fields, err := s.setPolicies(ctx, id, b, actorOf(c).name())
		switch {
		case err != nil:
			return err
		case fields["tools"] != "" && b.Select == "":
			return &apiError{Status: http.StatusUnprocessableEntity, Message: "check the tools to change first"}
		case fields != nil:
			return &apiError{Status: http.StatusUnprocessableEntity, Message: "choose a policy and which tools"}
		}
	}
	sum, tools, err := s.summaryAndTools(ctx, id)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.SavedToolsBody(s.serverDetail(ctx, sum, tools)))
}

// handleRecordArgsForm serves POST /servers/:id/record-arguments: whether
// the call log keeps the server's calls' arguments (see web/gateway).
func (s *Server) handleRecordArgsForm(c echo.Context) error {
	ctx := c.Request().Context()
	srv, err := s.deps.Store.Server(ctx, c.Param("id"))
	if err == nil {
		srv.RecordArgs = c.FormValue("record_arguments") == "on"
		srv.UpdatedBy = byOf(ctx)
		err = s.deps.Store.UpdateServer(ctx, srv)
	}
	if err != nil {
		return notFound(err)
	}
	return c.Redirect(http.StatusSeeOther, "/servers/"+srv.ID+"#record-arguments")
}

// handleAsksForm serves POST /servers/:id/asks: what the server may ask
// of the calling agents, per kind (allow, ask, deny). A value that is not
// one of them changes nothing and says so.
func (s *Server) handleAsksForm(c echo.Context) error {
	ctx := c.Request().Context()
	srv, err := s.deps.Store.Server(ctx, c.Param("id"))
	if err != nil {
		return notFound(err)
	}
	for _, kind := range store.AskKinds {
		v := c.FormValue("ask_" + kind)
		if v == "" {
			continue
		}
		p := store.Policy(v)
		if !p.Valid() {
			return validationError(map[string]string{"ask_" + kind: "must be allow, ask or deny"})
		}
		srv.Asks.Set(kind, p)
	}
	srv.UpdatedBy = byOf(ctx)
	if err := s.deps.Store.UpdateServer(ctx, srv); err != nil {
		return notFound(err)
	}
	return c.Redirect(http.StatusSeeOther, "/servers/"+srv.ID+"#asks")
}
