package web

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/apijson"
	"github.com/switchboard-dev/switchboard/web/internal/listed"
	"github.com/switchboard-dev/switchboard/web/internal/present"
)

func (s *Server) page(c echo.Context, title string) views.Page {
	rev, _ := c.Get(ctxRevision).(string)
	return views.Page{Title: title, CSRF: csrfOf(c), Flash: flash(c), Revision: rev, Role: string(actorOf(c).Role)}
}

// flash is the notice a redirect asked for. Only notices Switchboard
// wrote can show: a link cannot put text of its own into the page.
func flash(c echo.Context) string {
	if id := c.QueryParam("deleted"); serverconfig.IDPattern.MatchString(id) {
		return "Deleted " + id
	}
	return importedNotice(c.QueryParam("imported"))
}

func (s *Server) items(ctx context.Context) ([]views.ServerItem, error) {
	sums, err := s.deps.Store.Summaries(ctx)
	if err != nil {
		return nil, err
	}
	items := make([]views.ServerItem, 0, len(sums))
	for _, sum := range sums {
		items = append(items, s.serverItem(ctx, sum))
	}
	return items, nil
}

// handleServersPage serves GET /: the list of servers.
func (s *Server) handleServersPage(c echo.Context) error {
	ctx := c.Request().Context()
	items, err := s.items(ctx)
	if err != nil {
		return err
	}
	s.onboarding(c, items)
	return render(c, http.StatusOK, views.ServersPage(s.page(c, "Servers"), items, s.holds.batches.Latest()))
}

// handleServersFragment serves GET /fragments/servers: the list's table,
// reloaded by htmx when servers are added or removed.
func (s *Server) handleServersFragment(c echo.Context) error {
	ctx := c.Request().Context()
	items, err := s.items(ctx)
	if err != nil {
		return err
	}
	s.onboarding(c, items)
	return render(c, http.StatusOK, views.ServerTable(items))
}

// handleServerPage serves GET /servers/:id: one server and its tools.
func (s *Server) handleServerPage(c echo.Context) error {
	ctx := c.Request().Context()
	sum, tools, err := s.summaryAndTools(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	d := s.serverDetail(ctx, sum, tools)
	if d.History, d.HistoryTotal, err = s.historyItems(ctx, sum.Server.ID); err != nil {
		return err
	}
	if d.Listed, err = listed.Items(ctx, s.deps.Store, sum.Server.ID); err != nil {
		return err
	}
	if sum.Discovery.Stale() {
		d.ListedAsOf = sum.Discovery.VerifiedAt
	}
	return render(c, http.StatusOK, views.ServerPage(s.page(c, sum.Server.Name), d))
}

func (s *Server) summaryAndTools(ctx context.Context, id string) (store.Summary, []store.ToolEntry, error) {
	sum, err := s.deps.Store.Summary(ctx, id)
	if err != nil {
		return sum, nil, notFound(err)
	}
	tools, err := s.deps.Store.Tools(ctx, id)
	return sum, tools, notFound(err)
}

// notFound maps the store's not-found errors to 404s.
func notFound(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &apiError{Status: http.StatusNotFound, Message: "no server with this id"}
	case errors.Is(err, store.ErrToolNotFound):
		return &apiError{Status: http.StatusNotFound, Message: "this server has no tool with this name"}
	}
	return err
}

// handleNewServerPage serves GET /servers/new: the empty add form.
func (s *Server) handleNewServerPage(c echo.Context) error {
	f := views.FormView{Form: views.ServerForm{Transport: store.TransportStdio, DefaultPolicy: string(store.PolicyAsk), Enabled: true}, CallbackURL: s.callbackURL(c)}
	return render(c, http.StatusOK, views.FormPage(s.page(c, "Add server"), f))
}

// handleEditServerPage serves GET /servers/:id/edit.
func (s *Server) handleEditServerPage(c echo.Context) error {
	ctx := c.Request().Context()
	srv, err := s.deps.Store.Server(ctx, c.Param("id"))
	if err != nil {
		return notFound(err)
	}
	f := views.FormView{Form: present.ServerForm(srv), Edit: true, CallbackURL: s.callbackURL(c)}
	return render(c, http.StatusOK, views.FormPage(s.page(c, "Edit "+srv.Name), f))
}

// formInput reads the add/edit form, keeping what was typed for a
// re-render.
func formInput(c echo.Context) (serverconfig.Input, views.ServerForm, error) {
	if _, err := c.FormParams(); err != nil {
		return serverconfig.Input{}, views.ServerForm{}, &apiError{Status: http.StatusBadRequest, Message: "could not read the form"}
	}
	in, f := present.ReadForm(c.Request().PostForm)
	return in, f, nil
}

// handleCreateServer serves POST /servers: the add form's submit.
func (s *Server) handleCreateServer(c echo.Context) error {
	ctx := c.Request().Context()
	in, form, err := formInput(c)
	if err != nil {
		return err
	}
	if split, ok := serverconfig.SplitPasted(in); ok {
		return s.renderSplit(c, "Add server", split, form, views.FormView{CallbackURL: s.callbackURL(c)})
	}
	srv, errs := serverconfig.Validate(in, nil)
	if len(errs) == 0 {
		srv.UpdatedBy = byOf(ctx)
		err = s.deps.Store.CreateServer(ctx, srv)
		if errors.Is(err, store.ErrExists) {
			errs["id"] = "A server with this id already exists."
		} else if err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		return render(c, http.StatusUnprocessableEntity, views.FormPage(s.page(c, "Add server"), views.FormView{Form: form, Errors: errs, CallbackURL: s.callbackURL(c)}))
	}
	return c.Redirect(http.StatusSeeOther, present.SavedURL(srv.ID, c.FormValue("next")))
}

// handleUpdateServer serves POST /servers/:id: the edit form's submit.
func (s *Server) handleUpdateServer(c echo.Context) error {
	ctx := c.Request().Context()
	old, err := s.deps.Store.Server(ctx, c.Param("id"))
	if err != nil {
		return notFound(err)
	}
	in, form, err := formInput(c)
	if err != nil {
		return err
	}
	in.ID = old.ID
	form.ID = old.ID
	if split, ok := serverconfig.SplitPasted(in); ok {
		present.MarkStored(&form, old)
		return s.renderSplit(c, "Edit "+old.Name, split, form, views.FormView{Edit: true, CallbackURL: s.callbackURL(c)})
	}
	srv, errs := serverconfig.Validate(in, &old)
	if len(errs) > 0 {
		present.MarkStored(&form, old)
		return render(c, http.StatusUnprocessableEntity, views.FormPage(s.page(c, "Edit "+old.Name), views.FormView{Form: form, Errors: errs, Edit: true, CallbackURL: s.callbackURL(c)}))
	}
	srv.UpdatedBy = byOf(ctx)
	if err := s.deps.Store.UpdateServer(ctx, srv); err != nil {
		return notFound(err)
	}
	s.afterEdit(old)
	return c.Redirect(http.StatusSeeOther, present.SavedURL(srv.ID, c.FormValue("next")))
}

// renderSplit shows the add or edit form (view, titled title) again,
// nothing saved, with the command line pasted into its command split
// (see serverconfig.SplitPasted) for the person to check: the command,
// its arguments, and the variables set before it, whose values the form
// asks for again (it never carries a value back).
func (s *Server) renderSplit(c echo.Context, title string, split serverconfig.Input, form views.ServerForm, view views.FormView) error {
	form.Command, form.Args = split.Command, strings.Join(split.Args, "\n")
	var added []string
	for _, kv := range split.Env {
		if !slices.ContainsFunc(form.Env, func(r views.KV) bool { return r.Key == kv.Key }) {
			form.Env = append(form.Env, views.KV{Key: kv.Key, Retype: true})
			added = append(added, kv.Key)
		}
	}
	note := fmt.Sprintf("Nothing saved yet: the command line you pasted is split into the command %s and %d argument(s) below", strconv.Quote(split.Command), len(split.Args))
	if len(added) > 0 {
		note += ", and the variable(s) " + strings.Join(added, ", ") + " it set, whose value(s) you type again under Environment"
	}
	p := s.page(c, title)
	p.Flash = note + ". Check them, then save."
	view.Form = form
	return render(c, http.StatusOK, views.FormPage(p, view))
}

// handleDeleteServer serves POST /servers/:id/delete.
func (s *Server) handleDeleteServer(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	s.cancelServerJob(id)
	if err := s.deps.Store.DeleteServer(ctx, id); err != nil {
		return notFound(err)
	}
	return c.Redirect(http.StatusSeeOther, "/?deleted="+id)
}

func (s *Server) cancelServerJob(id string) {
	if j, ok := s.deps.Verify.Active(id); ok {
		s.deps.Verify.Cancel(j.ID)
	}
}

// --- JSON API ---

// handleAPIListServers serves GET /api/v1/servers.
func (s *Server) handleAPIListServers(c echo.Context) error {
	ctx := c.Request().Context()
	sums, err := s.deps.Store.Summaries(ctx)
	if err != nil {
		return err
	}
	out := make([]serverJSON, 0, len(sums))
	for _, sum := range sums {
		out = append(out, s.serverToJSON(ctx, sum))
	}
	return c.JSON(http.StatusOK, map[string]any{"servers": out})
}

// handleAPIGetServer serves GET /api/v1/servers/:id.
func (s *Server) handleAPIGetServer(c echo.Context) error {
	ctx := c.Request().Context()
	sum, err := s.deps.Store.Summary(ctx, c.Param("id"))
	if err != nil {
		return notFound(err)
	}
	return c.JSON(http.StatusOK, s.serverToJSON(ctx, sum))
}

// decodeServerJSON reads a Server JSON body strictly.
func decodeServerJSON(c echo.Context) (serverJSON, error) {
	var j serverJSON
	return j, decodeJSON(c, 1<<20, &j)
}

// decodeJSON reads a JSON body of at most limit bytes strictly: unknown
// fields and trailing data are errors.
func decodeJSON(c echo.Context, limit int64, v any) error {
	return apijson.DecodeStrict(http.MaxBytesReader(c.Response(), c.Request().Body, limit), v)
}

// decodeOptionalJSON is decodeJSON for a body that may be left out.
func decodeOptionalJSON(c echo.Context, limit int64, v any) error {
	r := bufio.NewReader(http.MaxBytesReader(c.Response(), c.Request().Body, limit))
	for {
		b, err := r.Peek(1)
		if err == io.EOF {
			return nil // no body, or only white space
		}
		if err != nil || !unicode.IsSpace(rune(b[0])) {
			break
		}
		r.Discard(1)
	}
	return apijson.DecodeStrict(r, v)
}

// validationError refuses a request with one message per invalid field.
func validationError(errs map[string]string) error { return apijson.Invalid(errs) }

// handleAPICreateServer serves POST /api/v1/servers.
func (s *Server) handleAPICreateServer(c echo.Context) error {
	ctx := c.Request().Context()
	j, err := decodeServerJSON(c)
	if err != nil {
		return err
	}
	srv, errs := serverconfig.Validate(j.Input(), nil)
	if len(errs) > 0 {
		return validationError(errs)
	}
	srv.UpdatedBy = byOf(ctx)
	if err := s.deps.Store.CreateServer(ctx, srv); errors.Is(err, store.ErrExists) {
		// A create sent again (its answer lost: a store that did not
		// answer in time may have made it) finds the same server: done.
		if old, err := s.deps.Store.Server(ctx, srv.ID); err != nil || !sameCreate(old, srv) {
			return &apiError{Status: http.StatusConflict, Message: "a server with this id already exists", Fields: map[string]string{"id": "already exists"}}
		}
	} else if err != nil {
		return err
	}
	sum, err := s.deps.Store.Summary(ctx, srv.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, s.serverToJSON(ctx, sum))
}

// sameCreate reports whether the stored server old is what the create of
// srv would have made: its configuration, name, policy, limits and who
// made it.
func sameCreate(old, srv store.Server) bool {
	return old.ConfigHash() == srv.ConfigHash() && old.Name == srv.Name && old.DefaultPolicy == srv.DefaultPolicy &&
		old.TimeoutMS == srv.TimeoutMS && old.MemoryMB == srv.MemoryMB && old.Enabled == srv.Enabled && old.UpdatedBy == srv.UpdatedBy &&
		old.LaunchHash() == srv.LaunchHash()
}

// handleAPIUpdateServer serves PUT /api/v1/servers/:id. Secret values
// sent as "********" (or empty) keep the stored value.
func (s *Server) handleAPIUpdateServer(c echo.Context) error {
	ctx := c.Request().Context()
	old, err := s.deps.Store.Server(ctx, c.Param("id"))
	if err != nil {
		return notFound(err)
	}
	j, err := decodeServerJSON(c)
	if err != nil {
		return err
	}
	if j.ID != "" && j.ID != old.ID {
		return validationError(map[string]string{"id": "the id of a server cannot change"})
	}
	j.ID = old.ID
	srv, errs := serverconfig.Validate(j.Input(), &old)
	if len(errs) > 0 {
		return validationError(errs)
	}
	srv.UpdatedBy = byOf(ctx)
	if err := s.deps.Store.UpdateServer(ctx, srv); err != nil {
		return notFound(err)
	}
	s.afterEdit(old)
	sum, err := s.deps.Store.Summary(ctx, srv.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.serverToJSON(ctx, sum))
}

// handleAPIDeleteServer serves DELETE /api/v1/servers/:id.
func (s *Server) handleAPIDeleteServer(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	s.cancelServerJob(id)
	if err := s.deps.Store.DeleteServer(ctx, id); err != nil {
		return notFound(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// afterEdit re-verifies a server whose edit changed what it is (its
// configuration hash), if Switchboard may: the old tools stay, marked
// stale, until the new verification succeeds. A verification of the old
// configuration still running is cancelled: its result would be
// discarded anyway.
func (s *Server) afterEdit(old store.Server) {
	ctx := context.Background()
	srv, err := s.deps.Store.Server(ctx, old.ID)
	if err != nil || srv.ConfigHash() == old.ConfigHash() {
		return
	}
	if j, ok := s.deps.Verify.Active(srv.ID); ok && j.ConfigHash != srv.ConfigHash() {
		s.deps.Verify.Cancel(j.ID)
	}
	s.deps.Verify.Requeue(srv, store.TriggerEdit)
}
