package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// handleToolsFragment serves GET /servers/:id/tools: the detail page's
// tools section, reloaded when the server's tools or policies change.
func (s *Server) handleToolsFragment(c echo.Context) error {
	sum, tools, err := s.summaryAndTools(c.Param("id"))
	if err != nil {
		return err
	}
	d := s.serverDetail(sum, tools)
	return render(c, http.StatusOK, views.ToolsSection(d.Item.ID, d.Tools, d.Item.Stale))
}

// handleSetPolicyForm serves POST /servers/:id/policy (htmx, from the
// policy select): the tool name travels in the body, never in the URL.
// It answers with the updated row.
func (s *Server) handleSetPolicyForm(c echo.Context) error {
	policy := c.FormValue("policy")
	if !validPolicy(policy) {
		return &apiError{Status: http.StatusUnprocessableEntity, Message: "policy must be allow, ask or deny"}
	}
	// The key becomes the row's element id and its hx-target selector, so
	// only the row numbers the page itself rendered are accepted.
	key := c.FormValue("key")
	if !rowKeyPattern.MatchString(key) {
		return &apiError{Status: http.StatusUnprocessableEntity, Message: "key must be the row number"}
	}
	e, err := s.store.SetPolicy(c.Param("id"), c.FormValue("tool"), policy, "dashboard")
	if err != nil {
		return notFound(err)
	}
	return render(c, http.StatusOK, views.ToolRow(toolItem(key, e)))
}

var rowKeyPattern = regexp.MustCompile(`^[0-9]{1,6}$`)

// handleAPIServerTools serves GET /api/v1/servers/:id/tools.
func (s *Server) handleAPIServerTools(c echo.Context) error {
	tools, err := s.store.Tools(c.Param("id"))
	if err != nil {
		return notFound(err)
	}
	out := make([]toolJSON, 0, len(tools))
	for _, t := range tools {
		out = append(out, toolToJSON(t))
	}
	return c.JSON(http.StatusOK, map[string]any{"tools": out})
}

// handleAPISetPolicy serves PUT /api/v1/servers/:id/tools/:name/policy
// with {"policy":"allow"|"ask"|"deny"}.
func (s *Server) handleAPISetPolicy(c echo.Context) error {
	// Echo matches on the escaped path only when the request has one that
	// differs from the default encoding (e.g. %2F); otherwise the param is
	// already unescaped and must not be unescaped twice ("50%25off").
	name := c.Param("name")
	if c.Request().URL.RawPath != "" {
		var err error
		if name, err = url.PathUnescape(name); err != nil {
			return &apiError{Status: http.StatusBadRequest, Message: "invalid tool name in path"}
		}
	}
	var body struct {
		Policy string `json:"policy"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return &apiError{Status: http.StatusBadRequest, Message: "invalid JSON body: " + err.Error()}
	}
	if !validPolicy(body.Policy) {
		return validationError(map[string]string{"policy": "must be allow, ask or deny"})
	}
	e, err := s.store.SetPolicy(c.Param("id"), name, body.Policy, "api")
	if err != nil {
		return notFound(err)
	}
	return c.JSON(http.StatusOK, map[string]any{"tool": toolToJSON(e)})
}

// handleAPICatalog serves GET /api/v1/tools: every server's tools. The
// body is rendered once per store revision and served from memory until
// the store changes. Its ETag is a hash of the body, so a change that
// leaves the catalog as it was (a re-verify that found the same tools)
// still answers a client's If-None-Match with a 304.
func (s *Server) handleAPICatalog(c echo.Context) error {
	body, etag, err := s.catalog.get(s.store)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag)
	if etagMatch(c.Request().Header.Get("If-None-Match"), etag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.JSONBlob(http.StatusOK, body)
}

// catalogCache holds the catalog JSON of one store revision.
type catalogCache struct {
	mu   sync.Mutex
	rev  string
	body []byte
	etag string
}

// get returns the catalog at the store's current revision (or a newer
// one), rendering it only when the store changed since the last call.
// Concurrent callers of a stale cache wait for one rendering, which
// streams tool by tool into a buffer sized like the last body, so that
// neither the decoded catalog nor growing copies of it are ever held at
// once (they would stay in the process as heap long after).
func (cc *catalogCache) get(st Store) (body []byte, etag string, err error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.body != nil && cc.rev == st.Revision() {
		return cc.body, cc.etag, nil
	}
	var buf bytes.Buffer
	buf.Grow(len(cc.body) + len(cc.body)/8 + 64)
	buf.WriteString(`{"tools":[`)
	n := 0
	rev, err := st.ForEachTool(func(e store.ToolEntry) error {
		data, err := json.Marshal(toolToJSON(e))
		if err != nil {
			return err
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		buf.Write(data)
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	buf.WriteString("]}")
	sum := sha256.Sum256(buf.Bytes())
	cc.rev, cc.body, cc.etag = rev, buf.Bytes(), `"`+hex.EncodeToString(sum[:16])+`"`
	return cc.body, cc.etag, nil
}

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
