// Package profiles serves the profiles (store.Profile) to people and
// programs: the JSON API under /api/v1/profiles and the Profiles pages.
// What a profile offers is the gateway's (Offer); this package reads and
// writes profiles, checks them against the catalog through the gateway,
// and shows them.
package profiles

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/gateway"
	"github.com/switchboard-dev/switchboard/web/internal/apijson"
)

// Store is what the handlers read and write in the store.
type Store interface {
	Profile(ctx context.Context, id string) (store.Profile, error)
	Profiles(ctx context.Context) ([]store.Profile, error)
	CreateProfile(ctx context.Context, p store.Profile) error
	UpdateProfile(ctx context.Context, p store.Profile) error
	DeleteProfile(ctx context.Context, id string) error
	Summaries(ctx context.Context) ([]store.Summary, error)
	Catalog(ctx context.Context, fn func(*store.Summary, store.ToolEntry) error) (revision string, err error)
	ClientTokens(ctx context.Context) ([]store.ClientToken, error)
}

// Offer is what the handlers need of the gateway.
type Offer interface {
	CheckProfile(ctx context.Context, p store.Profile) (map[string]string, error)
	Preview(id string) ([]gateway.OfferedTool, bool, error)
	PreviewListed(id string) ([]gateway.OfferedEntry, bool, error)
}

// Handlers serves the profiles. Page makes a page's frame, Render writes
// a page with a status; Now is the clock (time.Now if nil).
type Handlers struct {
	Store  Store
	Offer  Offer
	Page   func(c echo.Context, title string) views.Page
	Render func(c echo.Context, status int, comp templ.Component) error
	Now    func() time.Time
}

// Error is a request refused: the status, a message fit to show, and
// what is wrong by field.
type Error = apijson.Refusal

// maxBody caps a profile's JSON.
const maxBody = 256 << 10

// input is a profile as the API takes it.
type input struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Mode      string   `json:"mode"`
	Servers   []string `json:"servers"`
	Tools     []ref    `json:"tools"`
	Overrides []struct {
		ref
		Policy store.Policy `json:"policy"`
	} `json:"overrides"`
	Search bool  `json:"search"`
	Pinned []ref `json:"pinned"`
	// Approvals: "client", "dashboard" or "" (dashboard when the profile
	// narrows the view, see store.InClientApprovals).
	Approvals string `json:"approvals"`
	// Approvers, if any, are the only people (emails) who answer its
	// clients' waiting calls.
	Approvers []string `json:"approvers"`
}

type ref struct {
	ServerID string `json:"server_id"`
	Tool     string `json:"tool"`
}

// APIList serves GET /api/v1/profiles: every profile, the default first.
func (h *Handlers) APIList(c echo.Context) error {
	list, err := h.Store.Profiles(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"profiles": list})
}

// APIGet serves GET /api/v1/profiles/:id.
func (h *Handlers) APIGet(c echo.Context) error {
	p, err := h.Store.Profile(c.Request().Context(), c.Param("id"))
	if err != nil {
		return refusal(err)
	}
	return c.JSON(http.StatusOK, map[string]any{"profile": p})
}

// APICreate serves POST /api/v1/profiles: 201 with the profile; 422
// with what is wrong by field.
func (h *Handlers) APICreate(c echo.Context) error {
	p, err := decode(c)
	if err != nil {
		return err
	}
	if p, err = h.save(c.Request().Context(), p, false); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{"profile": p})
}

// APIUpdate serves PUT /api/v1/profiles/:id.
func (h *Handlers) APIUpdate(c echo.Context) error {
	p, err := decode(c)
	if err != nil {
		return err
	}
	if p.ID != "" && p.ID != c.Param("id") {
		return &Error{Status: http.StatusUnprocessableEntity, Message: "validation failed", Fields: map[string]string{"id": "the id is the one in the URL"}}
	}
	p.ID = c.Param("id")
	if p, err = h.save(c.Request().Context(), p, true); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"profile": p})
}

// APIDelete serves DELETE /api/v1/profiles/:id: 409 while connected
// clients' tokens belong to it.
func (h *Handlers) APIDelete(c echo.Context) error {
	if err := h.Store.DeleteProfile(c.Request().Context(), c.Param("id")); err != nil {
		return refusal(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// APIPreview serves GET /api/v1/profiles/:id/preview: the tools the
// profile offers now, with their agent names and the policy that
// applies, and its resources, resource templates and prompts ("listed").
func (h *Handlers) APIPreview(c echo.Context) error {
	tools, ok, err := h.Offer.Preview(c.Param("id"))
	if err != nil {
		return err
	}
	if !ok {
		return refusal(store.ErrProfileNotFound)
	}
	listed, _, err := h.Offer.PreviewListed(c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"profile": c.Param("id"), "tools": tools, "listed": listed})
}

// decode reads a profile from the request's JSON, strictly.
func decode(c echo.Context) (store.Profile, error) {
	var in input
	if err := apijson.DecodeStrict(http.MaxBytesReader(c.Response(), c.Request().Body, maxBody), &in); err != nil {
		return store.Profile{}, err
	}
	p := store.Profile{ID: in.ID, Name: in.Name, Mode: in.Mode, Servers: in.Servers, Search: in.Search, Approvals: in.Approvals, Approvers: in.Approvers}
	for _, r := range in.Tools {
		p.Tools = append(p.Tools, store.ToolRef(r))
	}
	for _, r := range in.Pinned {
		p.Pinned = append(p.Pinned, store.ToolRef(r))
	}
	for _, o := range in.Overrides {
		if p.Overrides == nil {
			p.Overrides = map[store.ToolRef]store.Policy{}
		}
		p.Overrides[store.ToolRef(o.ref)] = o.Policy
	}
	return p, nil
}

// save checks p against the catalog and stores it, new or (update) in
// place of the one with its id; it returns the profile as stored.
func (h *Handlers) save(ctx context.Context, p store.Profile, update bool) (store.Profile, error) {
	p = clean(p)
	if update && p.ID == store.DefaultProfile {
		return p, refusal(store.ErrProfileBuiltIn)
	}
	bad, err := h.Offer.CheckProfile(ctx, p)
	if err != nil {
		return p, err
	}
	for _, a := range p.Approvers {
		if addr, err := mail.ParseAddress(a); err != nil || addr.Address != a {
			if bad == nil {
				bad = map[string]string{}
			}
			bad["approvers"] = fmt.Sprintf("%q is not an email address: name approvers by the emails they sign in with", a)
		}
	}
	if len(bad) > 0 {
		return p, &Error{Status: http.StatusUnprocessableEntity, Message: "validation failed", Fields: bad}
	}
	now := time.Now().UTC()
	if h.Now != nil {
		now = h.Now().UTC()
	}
	p.CreatedAt, p.UpdatedAt = now, now
	if update {
		err = h.Store.UpdateProfile(ctx, p)
	} else {
		err = h.Store.CreateProfile(ctx, p)
	}
	if errors.Is(err, store.ErrProfileExists) {
		return p, &Error{Status: http.StatusUnprocessableEntity, Message: "validation failed", Fields: map[string]string{"id": "a profile with this id exists"}}
	}
	if err != nil {
		return p, refusal(err)
	}
	return h.Store.Profile(ctx, p.ID)
}

// clean keeps of p what its mode uses, its name trimmed.
func clean(p store.Profile) store.Profile {
	p.ID, p.Name = strings.TrimSpace(p.ID), strings.TrimSpace(p.Name)
	if p.Mode != store.ProfileServers {
		p.Servers = nil
	}
	if p.Mode != store.ProfileTools {
		p.Tools = nil
	}
	var approvers []string
	for _, a := range p.Approvers {
		if a = store.NormalEmail(a); a != "" && !slices.Contains(approvers, a) {
			approvers = append(approvers, a)
		}
	}
	p.Approvers = approvers
	return p
}

// refusal is the answer to a store error about a profile.
func refusal(err error) error {
	switch {
	case errors.Is(err, store.ErrProfileNotFound):
		return &Error{Status: http.StatusNotFound, Message: "no profile with this id"}
	case errors.Is(err, store.ErrProfileInUse):
		return &Error{Status: http.StatusConflict, Message: "connected clients' tokens belong to this profile: revoke them (Agents) before deleting it"}
	case errors.Is(err, store.ErrProfileBuiltIn):
		return &Error{Status: http.StatusConflict, Message: "the default profile is built in: it cannot be changed or deleted"}
	}
	return err
}

// Options are the profiles a new client's token can belong to, the
// default first.
func Options(ctx context.Context, st interface {
	Profiles(ctx context.Context) ([]store.Profile, error)
}) ([]views.Option, error) {
	list, err := st.Profiles(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]views.Option, 0, len(list))
	for _, p := range list {
		out = append(out, views.Option{Value: p.ID, Title: p.Name})
	}
	return out, nil
}

// List serves GET /profiles: the profiles with what each offers now.
func (h *Handlers) List(c echo.Context) error {
	ctx := c.Request().Context()
	list, err := h.Store.Profiles(ctx)
	if err != nil {
		return err
	}
	tokens, err := h.Store.ClientTokens(ctx)
	if err != nil {
		return err
	}
	var v views.ProfilesView
	for _, p := range list {
		tools, _, err := h.Offer.Preview(p.ID)
		if err != nil {
			return err
		}
		row := views.ProfileRow{ID: p.ID, Name: p.Name, Mode: p.Mode, BuiltIn: p.ID == store.DefaultProfile, Offered: len(tools)}
		for _, ct := range tokens {
			if cmp.Or(ct.Profile, store.DefaultProfile) == p.ID {
				row.Clients++
			}
		}
		v.Profiles = append(v.Profiles, row)
	}
	return h.Render(c, http.StatusOK, views.ProfilesPage(h.Page(c, "Profiles"), v))
}

// New serves GET /profiles/new: the empty form.
func (h *Handlers) New(c echo.Context) error {
	return h.form(c, http.StatusOK, store.Profile{Mode: store.ProfileAll}, false, nil)
}

// Edit serves GET /profiles/:id: the profile's form and what its agents
// see now.
func (h *Handlers) Edit(c echo.Context) error {
	id := c.Param("id")
	if id == store.DefaultProfile {
		return c.Redirect(http.StatusSeeOther, "/profiles")
	}
	p, err := h.Store.Profile(c.Request().Context(), id)
	if err != nil {
		return refusal(err)
	}
	return h.form(c, http.StatusOK, p, true, nil)
}

// Create serves POST /profiles.
func (h *Handlers) Create(c echo.Context) error { return h.submit(c, false) }

// Update serves POST /profiles/:id.
func (h *Handlers) Update(c echo.Context) error { return h.submit(c, true) }

// Delete serves POST /profiles/:id/delete.
func (h *Handlers) Delete(c echo.Context) error {
	if err := h.Store.DeleteProfile(c.Request().Context(), c.Param("id")); err != nil {
		return refusal(err)
	}
	return c.Redirect(http.StatusSeeOther, "/profiles")
}

// submit saves the form's profile, or shows the form again with the
// person's input and what is wrong.
func (h *Handlers) submit(c echo.Context, update bool) error {
	form, err := c.FormParams()
	if err != nil {
		return &Error{Status: http.StatusBadRequest, Message: "the form could not be read"}
	}
	p := fromForm(form)
	if update {
		p.ID = c.Param("id")
	}
	saved, err := h.save(c.Request().Context(), p, update)
	var bad *Error
	if errors.As(err, &bad) && bad.Fields != nil {
		return h.form(c, http.StatusUnprocessableEntity, p, update, bad.Fields)
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/profiles/"+saved.ID)
}

// fromForm is the profile a form describes: tools and overrides name a
// tool by its key (server id, a space, tool name), an override as its
// policy, a space and the key.
func fromForm(form url.Values) store.Profile {
	p := store.Profile{ID: form.Get("id"), Name: form.Get("name"), Mode: form.Get("mode"), Servers: form["server"], Search: form.Get("search") != "",
		Approvals: form.Get("approvals"), Approvers: strings.FieldsFunc(form.Get("approvers"), func(r rune) bool { return r == ',' || r == '\n' || r == ' ' || r == '\r' })}
	for _, k := range form["tool"] {
		if r, ok := refOf(k); ok {
			p.Tools = append(p.Tools, r)
		}
	}
	for _, k := range form["pinned"] {
		if r, ok := refOf(k); ok {
			p.Pinned = append(p.Pinned, r)
		}
	}
	for _, v := range form["override"] {
		pol, k, _ := strings.Cut(v, " ")
		if r, ok := refOf(k); ok {
			if p.Overrides == nil {
				p.Overrides = map[store.ToolRef]store.Policy{}
			}
			p.Overrides[r] = store.Policy(pol)
		}
	}
	return p
}

func refOf(key string) (store.ToolRef, bool) {
	server, tool, ok := strings.Cut(key, " ")
	return store.ToolRef{ServerID: server, Tool: tool}, ok && server != "" && tool != ""
}

// form renders the profile's form with the catalog's servers and tools
// to choose from, and for a saved profile what it offers now.
func (h *Handlers) form(c echo.Context, status int, p store.Profile, edit bool, errs map[string]string) error {
	ctx := c.Request().Context()
	f := views.ProfileFormView{Edit: edit, ID: p.ID, Name: p.Name, Mode: p.Mode, Search: p.Search, Approvals: p.Approvals, Approvers: strings.Join(p.Approvers, ", "), Errors: errs}
	sums, err := h.Store.Summaries(ctx)
	if err != nil {
		return err
	}
	index := map[string]int{}
	for _, s := range sums {
		index[s.Server.ID] = len(f.Servers)
		f.Servers = append(f.Servers, views.ProfileServer{ID: s.Server.ID, Name: s.Server.Name, Chosen: slices.Contains(p.Servers, s.Server.ID)})
	}
	if _, err := h.Store.Catalog(ctx, func(sum *store.Summary, t store.ToolEntry) error {
		r := store.ToolRef{ServerID: t.ServerID, Tool: t.Name}
		if i, ok := index[t.ServerID]; ok && t.State != store.ToolMissing {
			f.Servers[i].Tools = append(f.Servers[i].Tools, views.ProfileToolChoice{Name: t.Name, Key: t.ServerID + " " + t.Name,
				Chosen: slices.Contains(p.Tools, r), Pinned: slices.Contains(p.Pinned, r), Policy: string(t.Effective), Override: string(p.Overrides[r])})
		}
		return nil
	}); err != nil {
		return err
	}
	if edit {
		tools, _, err := h.Offer.Preview(p.ID)
		if err != nil {
			return err
		}
		for _, t := range tools {
			f.Preview = append(f.Preview, views.ProfileTool{AgentName: t.AgentName, ServerID: t.ServerID, Tool: t.Tool, Policy: string(t.Policy),
				Pinned: slices.Contains(p.Pinned, store.ToolRef{ServerID: t.ServerID, Tool: t.Tool})})
		}
		listed, _, err := h.Offer.PreviewListed(p.ID)
		if err != nil {
			return err
		}
		for _, l := range listed {
			f.PreviewListed = append(f.PreviewListed, views.ProfileEntry{Kind: strings.ReplaceAll(string(l.Kind), "_", " "), Name: l.Name, ServerID: l.ServerID, Policy: string(l.Policy)})
		}
	}
	title := "New profile"
	if edit {
		title = "Profile " + p.Name
	}
	return h.Render(c, status, views.ProfileFormPage(h.Page(c, title), f))
}
