package listed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/apijson"
	"github.com/switchboard-dev/switchboard/web/internal/present"
	"github.com/switchboard-dev/switchboard/web/internal/tooldiff"
)

// Approver reads a server's listed entries and approves the current
// definition of a changed one, at the pin a person was shown (the store
// refuses another with store.ErrPinMismatch).
type Approver interface {
	Reader
	ApproveListed(ctx context.Context, ref store.ListedRef, pin, by string) (store.ListedEntry, error)
}

// Rerender answers a form with the server's changes page again, status and
// a notice at its top (see Changes).
type Rerender func(c echo.Context, status int, notice string) error

// Changes is every changed entry of server id, each with the diff of the
// definition its policy approved and the current one and the current
// one's flags, as the changes page reviews them after the tools. The
// page's element id of each is views.ChangeAnchor of its pin, which the
// server page's row links to.
func Changes(ctx context.Context, r Reader, id string) ([]views.ToolChange, error) {
	entries, err := r.Listed(ctx, id)
	if err != nil {
		return nil, err
	}
	out := []views.ToolChange{}
	for _, e := range entries {
		if e.State != store.ToolChanged {
			continue
		}
		f := flagsOf(e)
		out = append(out, views.ToolChange{
			Key: e.Pin, Kind: string(e.Kind), Name: e.Key, Pin: e.Pin, Policy: string(e.Policy.Policy),
			ApprovedKnown: e.Approved != nil, Fields: tooldiff.Objects(e.Approved, e.Raw), Markers: f.Markers, Hidden: f.Hidden,
		})
	}
	return out, nil
}

// flagsOf is what the server page flags in e's row (injection markers,
// hidden characters): a version so flagged is approved only with a
// second, explicit confirmation.
func flagsOf(e store.ListedEntry) present.Flags {
	row := rowOf(e)
	return present.Flags{Markers: row.InjectionMarkers(), Hidden: row.HasHidden()}
}

// approval is one entry a person approves: its kind and key, and the pin
// of the version they reviewed; Confirmed says they confirmed it again
// because it is flagged.
type approval struct {
	Kind           store.ListedKind `json:"kind"`
	Key            string           `json:"key"`
	Pin            string           `json:"pin"`
	ConfirmFlagged bool             `json:"confirm_flagged"` // needed for a flagged version
}

// check says, by field, what is wrong with a: nil if nothing.
func (a approval) check() map[string]string {
	errs := map[string]string{}
	if !a.Kind.Valid() {
		errs["kind"] = "must be prompt, resource_template or resource"
	}
	if a.Key == "" {
		errs["key"] = "required: the prompt's name, the template's URI template or the resource's URI"
	}
	if a.Pin == "" {
		errs["pin"] = "required: the pin of the version you reviewed"
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// approve approves a of server id if it is not flagged, or confirmed; it
// returns the entry as approved, or why not: "flagged", with what, when
// the confirmation is missing, else the store's error.
func approve(ctx context.Context, ap Approver, id string, a approval, by string) (e store.ListedEntry, flagged string, err error) {
	entries, err := ap.Listed(ctx, id)
	if err != nil {
		return e, "", err
	}
	i := slices.IndexFunc(entries, func(e store.ListedEntry) bool { return e.Kind == a.Kind && e.Key == a.Key })
	if i < 0 {
		return e, "", fmt.Errorf("%w: %s %q", store.ErrToolNotFound, a.Kind, a.Key)
	}
	// The flags of the version approved, not of a newer one (refused below
	// for its pin), nor of one that awaits no approval (refused too).
	cur := entries[i]
	if f := flagsOf(cur); f.Any() && cur.State == store.ToolChanged && cur.Pin == a.Pin && !a.ConfirmFlagged {
		return e, fmt.Sprintf("the new version of %s %q is flagged: %s", views.KindTitle(string(a.Kind)), a.Key, f), nil
	}
	e, err = ap.ApproveListed(ctx, store.ListedRef{ServerID: id, Kind: a.Kind, Key: a.Key}, a.Pin, by)
	return e, "", err
}

// refusal is the answer to a store error of an approval.
func refusal(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &apijson.Refusal{Status: http.StatusNotFound, Message: "no server with this id"}
	case errors.Is(err, store.ErrToolNotFound):
		return &apijson.Refusal{Status: http.StatusNotFound, Message: "this server has no such prompt, resource template or resource"}
	case errors.Is(err, store.ErrPinMismatch):
		return &apijson.Refusal{Status: http.StatusConflict, Message: err.Error() + "; review the current version (GET the server's prompts or resources) and approve its pin"}
	case errors.Is(err, store.ErrNotChanged):
		return &apijson.Refusal{Status: http.StatusConflict, Message: err.Error()}
	}
	return err
}

// APIApprove serves POST /api/v1/servers/:id/listed/approve with
// {"kind": "prompt"|"resource_template"|"resource", "key": "...", "pin":
// "<the version reviewed>"} (and "confirm_flagged": true for a flagged
// version): it approves the current definition of a changed entry and
// answers {"kind": ..., "item": <the entry, see ItemOf>}.
func APIApprove(ap Approver) echo.HandlerFunc {
	return func(c echo.Context) error {
		var a approval
		if err := apijson.DecodeStrict(http.MaxBytesReader(c.Response(), c.Request().Body, 64<<10), &a); err != nil {
			return err
		}
		if errs := a.check(); errs != nil {
			return apijson.Invalid(errs)
		}
		e, flagged, err := approve(c.Request().Context(), ap, c.Param("id"), a, "api")
		switch {
		case err != nil:
			return refusal(err)
		case flagged != "":
			return apijson.Invalid(map[string]string{"confirm_flagged": flagged + `: send "confirm_flagged": true once a person read it`})
		}
		return c.JSON(http.StatusOK, map[string]any{"kind": e.Kind, "item": ItemOf(e)})
	}
}

// ApproveForm serves POST /servers/:id/listed/approve (kind, key, pin,
// and confirm_flagged, the key again, for a flagged version), the changes
// page's approval of one entry's version: it goes back to that page, or
// shows it again (rerender) saying why nothing was approved: 422 for a
// form in error or a flagged version not confirmed, 409 for a version
// that is no longer the current one.
func ApproveForm(ap Approver, rerender Rerender) echo.HandlerFunc {
	return func(c echo.Context) error {
		a := approval{Kind: store.ListedKind(c.FormValue("kind")), Key: c.FormValue("key"), Pin: c.FormValue("pin")}
		if err := c.Request().ParseForm(); err != nil {
			return &apijson.Refusal{Status: http.StatusBadRequest, Message: "could not read the form"}
		}
		a.ConfirmFlagged = a.Key != "" && slices.Contains(c.Request().PostForm["confirm_flagged"], a.Key)
		if errs := a.check(); errs != nil {
			return rerender(c, http.StatusUnprocessableEntity, "Nothing was approved: the form must name the entry's kind, key and the pin of the version shown.")
		}
		id := c.Param("id")
		_, flagged, err := approve(c.Request().Context(), ap, id, a, "dashboard")
		switch {
		case errors.Is(err, store.ErrPinMismatch), errors.Is(err, store.ErrNotChanged):
			return rerender(c, http.StatusConflict, "Nothing was approved: it changed again, or was approved meanwhile. Review what is shown now.")
		case err != nil:
			return refusal(err)
		case flagged != "":
			return rerender(c, http.StatusUnprocessableEntity, "Nothing was approved: "+flagged+". Read it, then tick the confirmation beside it.")
		}
		return c.Redirect(http.StatusSeeOther, "/servers/"+id+"/changes")
	}
}
