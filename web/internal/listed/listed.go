// Package listed serves a server's resources, resource templates and
// prompts: the JSON API answers, the server page's rows, the form and
// API that set the policy of each, and the review and
// approval of a changed one (review.go; the review page's approval form
// is the tools', which reads the entries with FormApprovals).
package listed

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/apijson"
)

// Reader reads a server's listed entries.
type Reader interface {
	Listed(ctx context.Context, id string) ([]store.ListedEntry, error)
}

// Setter sets the policy of one entry.
type Setter interface {
	SetListedPolicy(ctx context.Context, ref store.ListedRef, p store.Policy, by string) (store.ListedEntry, error)
}

// Item is one entry as the API answers it.
type Item struct {
	URI             string                 `json:"uri,omitempty"`
	URITemplate     string                 `json:"uri_template,omitempty"`
	Name            string                 `json:"name"`
	Title           string                 `json:"title,omitempty"`
	Description     string                 `json:"description,omitempty"`
	MIMEType        string                 `json:"mime_type,omitempty"`
	Size            *int64                 `json:"size,omitempty"`
	Annotations     json.RawMessage        `json:"annotations,omitempty"`
	Arguments       []store.PromptArgument `json:"arguments,omitempty"`
	State           store.ToolState        `json:"state"`
	Problems        []string               `json:"problems,omitempty"`
	Policy          store.Policy           `json:"policy"`
	EffectivePolicy store.Policy           `json:"effective_policy"`
	Pin             string                 `json:"pin"`
	// Approved is, for a changed entry, the definition (as the server
	// sent it) its policy approved, to review against this one; absent
	// otherwise, or when not known.
	Approved  json.RawMessage `json:"approved,omitempty"`
	FirstSeen time.Time       `json:"first_seen"`
	LastSeen  time.Time       `json:"last_seen"`
}

// ItemOf is e as the API answers it.
func ItemOf(e store.ListedEntry) Item {
	it := Item{Name: e.Name, Title: e.Title, Description: e.Description, MIMEType: e.MIMEType, Size: e.Size,
		Annotations: e.Annotations, Arguments: e.Arguments, State: e.State, Problems: e.Problems,
		Policy: e.Policy.Policy, EffectivePolicy: e.Effective, Pin: e.Pin, FirstSeen: e.FirstSeen, LastSeen: e.LastSeen}
	if e.State == store.ToolChanged {
		it.Approved = e.Approved
	}
	switch e.Kind {
	case store.KindResource:
		it.URI = e.Key
	case store.KindResourceTemplate:
		it.URITemplate = e.Key
	}
	return it
}

// ItemsOf is entries as the API answers them.
func ItemsOf(entries []store.ListedEntry) []Item {
	out := make([]Item, 0, len(entries))
	for _, e := range entries {
		out = append(out, ItemOf(e))
	}
	return out
}

// byKind groups the API items of entries by kind.
func byKind(entries []store.ListedEntry) map[store.ListedKind][]Item {
	out := map[store.ListedKind][]Item{store.KindResource: {}, store.KindResourceTemplate: {}, store.KindPrompt: {}}
	for _, e := range entries {
		out[e.Kind] = append(out[e.Kind], ItemOf(e))
	}
	return out
}

// Resources serves GET /api/v1/servers/:id/resources:
// {"resources": [...], "resource_templates": [...]}. notFound maps the
// store's errors to answers.
func Resources(r Reader, notFound func(error) error) echo.HandlerFunc {
	return func(c echo.Context) error {
		entries, err := r.Listed(c.Request().Context(), c.Param("id"))
		if err != nil {
			return notFound(err)
		}
		g := byKind(entries)
		return c.JSON(http.StatusOK, map[string][]Item{"resources": g[store.KindResource], "resource_templates": g[store.KindResourceTemplate]})
	}
}

// Prompts serves GET /api/v1/servers/:id/prompts: {"prompts": [...]}.
func Prompts(r Reader, notFound func(error) error) echo.HandlerFunc {
	return func(c echo.Context) error {
		entries, err := r.Listed(c.Request().Context(), c.Param("id"))
		if err != nil {
			return notFound(err)
		}
		return c.JSON(http.StatusOK, map[string][]Item{"prompts": byKind(entries)[store.KindPrompt]})
	}
}

// PolicyForm serves POST /servers/:id/listed-policy (kind, key,
// policy): it sets the policy of one resource, resource template or
// prompt and goes back to the server page.
func PolicyForm(st Setter) echo.HandlerFunc {
	return func(c echo.Context) error {
		ref, p := store.ListedRef{ServerID: c.Param("id"), Kind: store.ListedKind(c.FormValue("kind")), Key: c.FormValue("key")}, store.Policy(c.FormValue("policy"))
		if errs := policyProblems(ref, p); errs != nil {
			return echo.NewHTTPError(http.StatusUnprocessableEntity, strings.Join(slices.Sorted(maps.Values(errs)), "; "))
		}
		if _, err := st.SetListedPolicy(c.Request().Context(), ref, p, By(c, "dashboard")); err != nil {
			return refusal(err)
		}
		return c.Redirect(http.StatusSeeOther, "/servers/"+ref.ServerID)
	}
}

// APIPolicy serves PUT /api/v1/servers/:id/listed/policy: {"kind":
// "resource"|"resource_template"|"prompt", "key": the URI, URI template
// or name, "policy": "allow"|"ask"|"deny"}. It answers {"kind", "item"}
// (see ItemOf), 404 for an unknown server or entry, 422 with per-field
// errors for a bad kind or policy.
func APIPolicy(st Setter) echo.HandlerFunc {
	return func(c echo.Context) error {
		var body struct {
			Kind   store.ListedKind `json:"kind"`
			Key    string           `json:"key"`
			Policy store.Policy     `json:"policy"`
		}
		if err := apijson.DecodeStrict(http.MaxBytesReader(c.Response(), c.Request().Body, 64<<10), &body); err != nil {
			return err
		}
		ref := store.ListedRef{ServerID: c.Param("id"), Kind: body.Kind, Key: body.Key}
		if errs := policyProblems(ref, body.Policy); errs != nil {
			return apijson.Invalid(errs)
		}
		e, err := st.SetListedPolicy(c.Request().Context(), ref, body.Policy, By(c, "api"))
		if err != nil {
			return refusal(err)
		}
		return c.JSON(http.StatusOK, map[string]any{"kind": e.Kind, "item": ItemOf(e)})
	}
}

// policyProblems is what is wrong with setting ref's policy to p, by
// field; nil if nothing.
func policyProblems(ref store.ListedRef, p store.Policy) map[string]string {
	errs := map[string]string{}
	if !ref.Kind.Valid() {
		errs["kind"] = "must be resource, resource_template or prompt"
	}
	if ref.Key == "" {
		errs["key"] = "must name the entry: its URI, URI template or name"
	}
	if !p.Valid() {
		errs["policy"] = "must be allow, ask or deny"
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// Items reads the server page's rows of server id.
func Items(ctx context.Context, r Reader, id string) ([]views.ListedItem, error) {
	entries, err := r.Listed(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]views.ListedItem, 0, len(entries))
	for _, e := range entries {
		out = append(out, rowOf(e))
	}
	return out, nil
}

// rowOf is e as the server page's row shows it.
func rowOf(e store.ListedEntry) views.ListedItem {
	it := views.ListedItem{Kind: string(e.Kind), Key: e.Key, Name: e.Name, Title: e.Title, Description: e.Description,
		MIMEType: e.MIMEType, State: string(e.State), Problems: e.Problems, Policy: string(e.Policy.Policy), Effective: string(e.Effective), Pin: e.Pin}
	if e.Size != nil {
		it.Size = strconv.FormatInt(*e.Size, 10) + " bytes"
	}
	for _, a := range e.Arguments {
		it.Arguments = append(it.Arguments, views.ListedArgument{Name: a.Name, Description: a.Description, Required: a.Required})
	}
	return it
}

// ActorName is where the web face keeps the name of the request's actor
// (a person's email, or "dashboard"/"api" for the shared token's holder).
const ActorName = "actor-name"

// By is the name of the request's actor, or fallback if none is kept.
func By(c echo.Context, fallback string) string {
	if n, _ := c.Get(ActorName).(string); n != "" {
		return n
	}
	return fallback
}
