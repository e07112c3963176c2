package listed

import (
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

// Approval is one entry a person approves: its kind and key, and the pin
// of the version they reviewed; ConfirmFlagged says they confirmed it
// again, as a flagged version needs.
type Approval struct {
	Kind           store.ListedKind `json:"kind"`
	Key            string           `json:"key"`
	Pin            string           `json:"pin"`
	ConfirmFlagged bool             `json:"confirm_flagged"`
}

// check says, by field (each name after prefix), what is wrong with a:
// empty if nothing.
func (a Approval) check(prefix string) map[string]string {
	errs := map[string]string{}
	if !a.Kind.Valid() {
		errs[prefix+"kind"] = "must be prompt, resource_template or resource"
	}
	if a.Key == "" {
		errs[prefix+"key"] = "required: the prompt's name, the template's URI template or the resource's URI"
	}
	if a.Pin == "" {
		errs[prefix+"pin"] = "required: the pin of the version you reviewed"
	}
	return errs
}

// Check is the 422 refusal of approvals with a field in error (named
// listed.<i>.<field>), or nil.
func Check(as []Approval) error {
	errs := map[string]string{}
	for i, a := range as {
		maps.Copy(errs, a.check("listed."+strconv.Itoa(i)+"."))
	}
	if len(errs) > 0 {
		return apijson.Invalid(errs)
	}
	return nil
}

// FormApprovals reads the entries an approval form names, in threes of
// listed_kind, listed_key and listed_pin; a key among the form's
// confirm_flagged values is confirmed. A form whose threes do not add up,
// or are in error, is refused (422).
func FormApprovals(form url.Values) ([]Approval, error) {
	kinds, keys, pins := form["listed_kind"], form["listed_key"], form["listed_pin"]
	if len(kinds) != len(keys) || len(keys) != len(pins) {
		return nil, &apijson.Refusal{Status: http.StatusUnprocessableEntity, Message: "the form must name each entry by kind and key with the pin of the version shown"}
	}
	out := make([]Approval, 0, len(kinds))
	for i := range kinds {
		out = append(out, Approval{Kind: store.ListedKind(kinds[i]), Key: keys[i], Pin: pins[i], ConfirmFlagged: slices.Contains(form["confirm_flagged"], keys[i])})
	}
	return out, Check(out)
}

// Pins are the approvals as the store takes them.
func Pins(as []Approval) []store.ListedPin {
	out := make([]store.ListedPin, 0, len(as))
	for _, a := range as {
		out = append(out, store.ListedPin{Kind: a.Kind, Key: a.Key, Pin: a.Pin})
	}
	return out
}

// Unconfirmed says which of the approvals of server id names a flagged
// version (see flagsOf) without its confirmation ("" if none): such a
// version is approved only with that second, explicit confirmation. Only
// the version reviewed counts, and only if it awaits approval: the store
// refuses the others. It refuses (404) an approval of no such server or
// entry.
func Unconfirmed(ctx context.Context, r Reader, id string, as []Approval) (string, error) {
	if len(as) == 0 {
		return "", nil
	}
	entries, err := r.Listed(ctx, id)
	if err != nil {
		return "", refusal(err)
	}
	for _, a := range as {
		i := slices.IndexFunc(entries, func(e store.ListedEntry) bool { return e.Kind == a.Kind && e.Key == a.Key })
		if i < 0 {
			return "", refusal(fmt.Errorf("%w: %s %q", store.ErrToolNotFound, a.Kind, a.Key))
		}
		cur := entries[i]
		if f := flagsOf(cur); f.Any() && cur.State == store.ToolChanged && cur.Pin == a.Pin && !a.ConfirmFlagged {
			return fmt.Sprintf("the new version of %s %q is flagged: %s", views.KindTitle(string(a.Kind)), a.Key, f), nil
		}
	}
	return "", nil
}

// approve approves a of server id if it is not flagged, or confirmed; it
// returns the entry as approved, or why not: what is flagged when the
// confirmation is missing, else a refusal or the store's error.
func approve(ctx context.Context, ap Approver, id string, a Approval, by string) (e store.ListedEntry, flagged string, err error) {
	if flagged, err = Unconfirmed(ctx, ap, id, []Approval{a}); err != nil || flagged != "" {
		return e, flagged, err
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
		var a Approval
		if err := apijson.DecodeStrict(http.MaxBytesReader(c.Response(), c.Request().Body, 64<<10), &a); err != nil {
			return err
		}
		if errs := a.check(""); len(errs) > 0 {
			return apijson.Invalid(errs)
		}
		e, flagged, err := approve(c.Request().Context(), ap, c.Param("id"), a, By(c, "api"))
		switch {
		case err != nil:
			return refusal(err)
		case flagged != "":
			return apijson.Invalid(map[string]string{"confirm_flagged": flagged + `: send "confirm_flagged": true once a person read it`})
		}
		return c.JSON(http.StatusOK, map[string]any{"kind": e.Kind, "item": ItemOf(e)})
	}
}
