package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/listed"
	"github.com/switchboard-dev/switchboard/web/internal/present"
	"github.com/switchboard-dev/switchboard/web/internal/tooldiff"
)

// changes returns a server's changed tools with their diffs.
func (s *Server) changes(ctx context.Context, id string) (store.Server, []views.ToolChange, error) {
	srv, err := s.deps.Store.Server(ctx, id)
	if err != nil {
		return srv, nil, notFound(err)
	}
	tools, err := s.deps.Store.Tools(ctx, id)
	if err != nil {
		return srv, nil, notFound(err)
	}
	out := []views.ToolChange{}
	for _, t := range tools {
		if t.State != store.ToolChanged {
			continue
		}
		cur, approved, err := s.deps.Store.ToolVersions(ctx, t.Ref())
		if errors.Is(err, store.ErrToolNotFound) {
			continue // gone since the list was read
		} else if err != nil {
			return srv, nil, err
		}
		f := present.FlagsOf(cur.Tool)
		out = append(out, views.ToolChange{
			Key: strconv.Itoa(len(out)), Name: cur.Name, Pin: cur.Pin, Policy: string(cur.Policy.Policy),
			ApprovedKnown: approved != nil, Fields: tooldiff.Diff(approved, cur.Tool), Markers: f.Markers, Hidden: f.Hidden,
		})
	}
	return srv, out, nil
}

// handleChangesPage serves GET /servers/:id/changes: every changed tool's
// diff, then every changed resource's, resource template's and prompt's
// (see listed.Changes), with the approvals.
func (s *Server) handleChangesPage(c echo.Context) error {
	return s.renderChanges(c, http.StatusOK, "")
}

func (s *Server) renderChanges(c echo.Context, status int, notice string) error {
	ctx := c.Request().Context()
	srv, changes, err := s.changes(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	listedChanges, err := listed.Changes(ctx, s.deps.Store, srv.ID)
	if err != nil {
		return notFound(err)
	}
	p := s.page(c, "Review changes: "+srv.Name)
	if notice != "" {
		p.Flash = notice
	}
	return render(c, status, views.ChangesPage(p, srv.ID, srv.Name, changes, listedChanges))
}

// handleApproveForm serves POST /servers/:id/approve: the review page's
// approval of one version, or of every version it showed (tool and pin
// repeated, in pairs; resources, templates and prompts in threes, see
// listed.FormApprovals), all or none. A version that changed again since
// the page was rendered approves nothing, and the page shows the new one.
func (s *Server) handleApproveForm(c echo.Context) error {
	ctx := c.Request().Context()
	if _, err := c.FormParams(); err != nil {
		return &apiError{Status: http.StatusBadRequest, Message: "could not read the form"}
	}
	form := c.Request().PostForm
	tools, pins := form["tool"], form["pin"]
	entries, err := listed.FormApprovals(form)
	if err != nil {
		return err
	}
	if len(tools)+len(entries) == 0 || len(tools) != len(pins) {
		return &apiError{Status: http.StatusUnprocessableEntity, Message: "the form must name each tool with the pin of the version shown"}
	}
	want := make(map[string]string, len(tools))
	for i, t := range tools {
		want[t] = pins[i]
	}
	id := c.Param("id")
	if why, err := s.unconfirmed(ctx, id, tools, form["confirm_flagged"], entries); err != nil || why != "" {
		if err != nil {
			return err
		}
		return s.renderChanges(c, http.StatusUnprocessableEntity, "Nothing was approved: "+why+". Read it, then tick the confirmation beside it.")
	}
	_, _, err = s.deps.Store.ApproveAll(ctx, id, want, listed.Pins(entries), actorOf(c).name())
	switch {
	case errors.Is(err, store.ErrPinMismatch), errors.Is(err, store.ErrNotChanged):
		return s.renderChanges(c, http.StatusConflict, "Nothing was approved: a version changed again, or was approved meanwhile. Review what is shown now.")
	case err != nil:
		return notFound(err)
	}
	return c.Redirect(http.StatusSeeOther, "/servers/"+id+"/changes")
}

// unconfirmed is flaggedUnconfirmed for the tools, then
// listed.Unconfirmed for the entries.
func (s *Server) unconfirmed(ctx context.Context, id string, tools, confirmed []string, entries []listed.Approval) (string, error) {
	if why, err := s.flaggedUnconfirmed(ctx, id, tools, confirmed); err != nil || why != "" {
		return why, err
	}
	return listed.Unconfirmed(ctx, s.deps.Store, id, entries)
}

// flaggedUnconfirmed says which of the tools' current definitions is
// flagged (see present.Flags) without being among confirmed: a flagged
// change is approved only with that second, explicit confirmation.
func (s *Server) flaggedUnconfirmed(ctx context.Context, id string, tools, confirmed []string) (string, error) {
	for _, name := range tools {
		cur, _, err := s.deps.Store.ToolVersions(ctx, store.ToolRef{ServerID: id, Tool: name})
		if err != nil {
			return "", approveError(err)
		}
		if f := present.FlagsOf(cur.Tool); f.Any() && !slices.Contains(confirmed, name) {
			return fmt.Sprintf("the new version of %q is flagged: %s", name, f), nil
		}
	}
	return "", nil
}

// toolParam is the :name path parameter, unescaped once. Echo matches on
// the escaped path only when the request has one that differs from the
// default encoding (e.g. %2F); otherwise the param is already unescaped
// and must not be unescaped twice ("50%25off").
func toolParam(c echo.Context) (string, error) {
	name := c.Param("name")
	if c.Request().URL.RawPath != "" {
		var err error
		if name, err = url.PathUnescape(name); err != nil {
			return "", &apiError{Status: http.StatusBadRequest, Message: "invalid tool name in path"}
		}
	}
	return name, nil
}

type diffRowJSON struct {
	Kind  string `json:"kind"`
	Left  string `json:"approved"`
	Right string `json:"current"`
}

type fieldDiffJSON struct {
	Field string        `json:"field"`
	Rows  []diffRowJSON `json:"rows"`
}

// handleAPITool serves GET /api/v1/servers/:id/tools/:name: the tool, the
// definition its policy approved (null if unknown), and for a changed
// tool the diff between the two.
func (s *Server) handleAPITool(c echo.Context) error {
	ctx := c.Request().Context()
	name, err := toolParam(c)
	if err != nil {
		return err
	}
	cur, approved, err := s.deps.Store.ToolVersions(ctx, store.ToolRef{ServerID: c.Param("id"), Tool: name})
	if err != nil {
		return notFound(err)
	}
	out := map[string]any{"tool": toolToJSON(cur), "approved": nil}
	if approved != nil {
		a := toolToJSON(store.ToolEntry{Tool: *approved})
		a.State, a.Policy, a.EffectivePolicy, a.AgentName = "", "", "", ""
		out["approved"] = a
	}
	if cur.State == store.ToolChanged {
		diff := []fieldDiffJSON{}
		for _, f := range tooldiff.Diff(approved, cur.Tool) {
			fd := fieldDiffJSON{Field: f.Field, Rows: []diffRowJSON{}}
			for _, r := range f.Rows {
				fd.Rows = append(fd.Rows, diffRowJSON(r))
			}
			diff = append(diff, fd)
		}
		out["diff"] = diff
	}
	return c.JSON(http.StatusOK, out)
}

// handleAPIApproveTool serves POST /api/v1/servers/:id/tools/:name/approve
// with {"pin": "<the version reviewed>"}.
func (s *Server) handleAPIApproveTool(c echo.Context) error {
	ctx := c.Request().Context()
	name, err := toolParam(c)
	if err != nil {
		return err
	}
	var body struct {
		Pin            string `json:"pin"`
		ConfirmFlagged bool   `json:"confirm_flagged"` // needed for a flagged version
	}
	if err := decodeJSON(c, 4096, &body); err != nil {
		return err
	}
	if body.Pin == "" {
		return validationError(map[string]string{"pin": "required: the pin of the version you reviewed"})
	}
	if why, err := s.flaggedUnconfirmed(ctx, c.Param("id"), []string{name}, nil); err != nil || why != "" && !body.ConfirmFlagged {
		return cmp.Or(err, validationError(map[string]string{"confirm_flagged": why + `: send "confirm_flagged": true once a person read it`}))
	}
	e, err := s.deps.Store.ApproveTool(ctx, store.ToolRef{ServerID: c.Param("id"), Tool: name}, body.Pin, actorOf(c).name())
	if err != nil {
		return approveError(err)
	}
	return c.JSON(http.StatusOK, map[string]any{"tool": toolToJSON(e)})
}

// handleAPIApproveChanges serves POST /api/v1/servers/:id/approve with
// {"tools": {"<name>": "<pin reviewed>", ...}, "listed": [{"kind", "key",
// "pin", "confirm_flagged"}, ...]}: all or none.
func (s *Server) handleAPIApproveChanges(c echo.Context) error {
	ctx := c.Request().Context()
	var body struct {
		Tools          map[string]string `json:"tools"`
		ConfirmFlagged []string          `json:"confirm_flagged"` // the flagged versions a person read
		Listed         []listed.Approval `json:"listed"`
	}
	if err := decodeJSON(c, 1<<20, &body); err != nil {
		return err
	}
	if len(body.Tools)+len(body.Listed) == 0 {
		return validationError(map[string]string{"tools": `required ("tools" or "listed"): each tool name with the pin of the version you reviewed`})
	}
	if err := listed.Check(body.Listed); err != nil {
		return err
	}
	if why, err := s.unconfirmed(ctx, c.Param("id"), slices.Sorted(maps.Keys(body.Tools)), body.ConfirmFlagged, body.Listed); err != nil || why != "" {
		return cmp.Or(err, validationError(map[string]string{"confirm_flagged": why + `: list it in "confirm_flagged" (a tool) or set its "confirm_flagged" (an entry of "listed") once a person read it`}))
	}
	es, ls, err := s.deps.Store.ApproveAll(ctx, c.Param("id"), body.Tools, listed.Pins(body.Listed), actorOf(c).name())
	if err != nil {
		return approveError(err)
	}
	return c.JSON(http.StatusOK, map[string]any{"tools": toolsToJSON(es), "listed": listed.ItemsOf(ls)})
}

func approveError(err error) error {
	switch {
	case errors.Is(err, store.ErrPinMismatch):
		return &apiError{Status: http.StatusConflict, Message: err.Error() + "; review the current version (GET the tool) and approve its pin"}
	case errors.Is(err, store.ErrNotChanged):
		return &apiError{Status: http.StatusConflict, Message: err.Error()}
	}
	return notFound(err)
}
