package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/apijson"
	"github.com/switchboard-dev/switchboard/web/internal/present"
)

// handleToolsFragment serves GET /servers/:id/tools: the detail page's
// tools section, reloaded when the server's tools or policies change.
func (s *Server) handleToolsFragment(c echo.Context) error {
	ctx := c.Request().Context()
	sum, tools, err := s.summaryAndTools(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.ToolsBody(s.serverDetail(ctx, sum, tools)))
}

// handleSetPolicyForm serves POST /servers/:id/policy (htmx, from the
// policy select): the tool name travels in the body, never in the URL.
// It answers with the updated row.
func (s *Server) handleSetPolicyForm(c echo.Context) error {
	ctx := c.Request().Context()
	policy := c.FormValue("policy")
	if !store.Policy(policy).Valid() {
		return &apiError{Status: http.StatusUnprocessableEntity, Message: "policy must be allow, ask or deny"}
	}
	// The key becomes the row's element id and its hx-target selector, so
	// only the row numbers the page itself rendered are accepted.
	key := c.FormValue("key")
	if !rowKeyPattern.MatchString(key) {
		return &apiError{Status: http.StatusUnprocessableEntity, Message: "key must be the row number"}
	}
	e, err := s.deps.Store.SetPolicy(ctx, store.ToolRef{ServerID: c.Param("id"), Tool: c.FormValue("tool")}, store.Policy(policy), actorOf(c).name())
	if err != nil {
		return notFound(err)
	}
	return render(c, http.StatusOK, views.SavedToolRow(present.ToolItem(key, e)))
}

var rowKeyPattern = regexp.MustCompile(`^[0-9]{1,6}$`)

// handleAPIServerTools serves GET /api/v1/servers/:id/tools, rendered
// once per store revision like the catalog, with the same ETag handling.
func (s *Server) handleAPIServerTools(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	return s.serveCached(c, id, func(buf *bytes.Buffer) (string, time.Time, error) {
		rev := s.deps.Store.Revision() // before the read: the body is at least this new
		tools, err := s.deps.Store.Tools(ctx, id)
		if err != nil {
			return "", time.Time{}, notFound(err)
		}
		w := toolsWriter{buf: buf}
		for _, t := range tools {
			if err := w.add(toolToJSON(t)); err != nil {
				return "", time.Time{}, err
			}
		}
		w.end()
		return rev, time.Time{}, nil
	})
}

// handleAPISetPolicy serves PUT /api/v1/servers/:id/tools/:name/policy
// with {"policy":"allow"|"ask"|"deny"}.
func (s *Server) handleAPISetPolicy(c echo.Context) error {
	ctx := c.Request().Context()
	name, err := toolParam(c)
	if err != nil {
		return err
	}
	var body struct {
		Policy string `json:"policy"`
	}
	if err := decodeJSON(c, 4096, &body); err != nil {
		return err
	}
	if !store.Policy(body.Policy).Valid() {
		return validationError(map[string]string{"policy": "must be allow, ask or deny"})
	}
	e, err := s.deps.Store.SetPolicy(ctx, store.ToolRef{ServerID: c.Param("id"), Tool: name}, store.Policy(body.Policy), actorOf(c).name())
	if err != nil {
		return notFound(err)
	}
	return c.JSON(http.StatusOK, map[string]any{"tool": toolToJSON(e)})
}

// handleAPICatalog serves GET /api/v1/tools: every server's tools, each
// with its server's freshness. The body is rendered once per store
// revision and served from memory until the store changes or a server's
// tools turn stale by the clock. Its ETag is a hash of the body, so it
// changes exactly when the catalog does: a change that leaves the
// catalog as it was (a re-verify that found the same tools) still answers
// a client's If-None-Match with a 304. The whole catalog
// streams tool by tool into a buffer sized like the last body, so that
// neither the decoded catalog nor growing copies of it are ever held at
// once (they would stay in the process as heap long after).
func (s *Server) handleAPICatalog(c echo.Context) error {
	ctx := c.Request().Context()
	return s.serveCached(c, catalogKey, func(buf *bytes.Buffer) (string, time.Time, error) {
		w := toolsWriter{buf: buf}
		now := s.cfg.Now()
		var (
			server string
			fresh  apijson.Fresh
			until  time.Time // the first clock-driven change of any freshness
		)
		rev, err := s.deps.Store.Catalog(ctx, func(sum *store.Summary, e store.ToolEntry) error {
			if sum.Server.ID != server {
				server = sum.Server.ID
				f := sum.Freshness(s.deps.Verify.DefaultTTL(), now)
				// Times that move on with every re-verification are left
				// out (GET /api/v1/servers has them), so that the ETag
				// changes only with what an agent would act on.
				fresh = apijson.FreshOf(f)
				fresh.VerifiedAt, fresh.FreshUntil = nil, nil
				if f.State == store.FreshFresh && (until.IsZero() || f.Until.Before(until)) {
					until = f.Until
				}
			}
			j := toolToJSON(e)
			j.Freshness = &fresh
			return w.add(j)
		})
		w.end()
		return rev, until, err
	})
}

// serveCached answers with the body cached under key, rendering it with
// render when the store changed since, and honours If-None-Match.
func (s *Server) serveCached(c echo.Context, key string, render func(*bytes.Buffer) (revision string, until time.Time, err error)) error {
	body, etag, err := s.bodies.Get(s.deps.Store, key, s.cfg.Now, render)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag)
	if etagMatch(c.Request().Header.Get("If-None-Match"), etag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.JSONBlob(http.StatusOK, body)
}

// toolsWriter writes {"tools":[...]} one tool at a time.
type toolsWriter struct {
	buf *bytes.Buffer
	n   int
}

func (w *toolsWriter) add(t toolJSON) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if w.n == 0 {
		w.buf.WriteString(`{"tools":[`)
	} else {
		w.buf.WriteByte(',')
	}
	w.n++
	w.buf.Write(data)
	return nil
}

func (w *toolsWriter) end() {
	if w.n == 0 {
		w.buf.WriteString(`{"tools":[`)
	}
	w.buf.WriteString("]}")
}

// catalogKey is the catalog's key in a bodycache.Cache; server ids are never
// empty.
const catalogKey = ""

// etagMatch reports whether an If-None-Match header names etag (weak
// comparison, as RFC 9110 asks for If-None-Match).
func etagMatch(header, etag string) bool {
	for _, candidate := range strings.Split(header, ",") {
		candidate = strings.TrimPrefix(strings.TrimSpace(candidate), "W/")
		if candidate == "*" || candidate == etag {
			return true
		}
	}
	return false
}
