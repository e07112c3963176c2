package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/web/gateway"
	"github.com/switchboard-dev/switchboard/web/internal/authlimit"
	"github.com/switchboard-dev/switchboard/web/internal/guard"
	"github.com/switchboard-dev/switchboard/web/internal/listed"
	"github.com/switchboard-dev/switchboard/web/internal/session"
)

// headerHXRequest marks requests made by htmx.
const headerHXRequest = "HX-Request"

const (
	sessionCookie = session.Cookie
	csrfHeader    = "X-CSRF-Token"
	csrfField     = "_csrf"
	ctxSession    = "session"
	ctxRevision   = "revision"
)

// Body caps. Every body is capped before anything reads it, authentication
// included: the login form needs a few hundred bytes, and nothing takes
// more than maxBody (the MCP endpoint's 4 MiB). Handlers may cap lower.
const (
	maxLoginBody = 4 << 10
	maxBody      = gateway.MaxBody
)

// limitBodies refuses a request whose declared body is over its route's
// cap at once, and cuts off one that turns out longer while being read
// (a reader then gets an *http.MaxBytesError).
func limitBodies(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		limit, msg := int64(maxBody), func() string { return fmt.Sprintf("the request body is over %d MiB", maxBody>>20) }
		switch {
		case r.URL.Path == "/login":
			limit, msg = maxLoginBody, func() string { return fmt.Sprintf("the login form is over %d KiB", maxLoginBody>>10) }
		case strings.HasPrefix(r.URL.Path, "/import/") || r.URL.Path == "/api/v1/import":
			// A config of maxImport bytes, form- or JSON-encoded.
			limit, msg = 3*maxImport, func() string { return fmt.Sprintf("the config is over %d KiB", maxImport>>10) }
		}
		if r.ContentLength > limit { // the message is made only then
			return &apiError{Status: http.StatusRequestEntityTooLarge, Message: msg()}
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(c.Response(), r.Body, limit)
		}
		return next(c)
	}
}

// equal compares secrets in constant time.
func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// clientOf is the client a request came from (see authlimit.Client).
func clientOf(c echo.Context) string { return authlimit.Client(c.Request().RemoteAddr) }

// limitBy refuses authentication attempts from a client that used up
// l's budget, with 429 and Retry-After.
func limitBy(l *authlimit.Limiter, c echo.Context) error {
	if l.Refused(c.Response().Header(), c.Request().RemoteAddr) {
		return &apiError{Status: http.StatusTooManyRequests, Message: authlimit.Message}
	}
	return nil
}

// wrongToken spends a wrong token of c's client from l's budget: 429 if
// the budget was used up already, else it counts the failure and returns
// nil, for the caller to refuse the request. A right token is checked
// before it and never refused for anyone's failures, the client's own
// included: all of loopback is one client, and another local user's wrong
// tokens must not lock the owner out.
func wrongToken(l *authlimit.Limiter, c echo.Context) error {
	if err := limitBy(l, c); err != nil {
		return err
	}
	l.Failed(clientOf(c))
	return nil
}

// requireBearer guards the JSON API with the bearer token.
func (s *Server) requireBearer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		header := c.Request().Header.Get(echo.HeaderAuthorization)
		// The scheme is case-insensitive (RFC 9110 §11.1).
		scheme, token, _ := strings.Cut(header, " ")
		if strings.EqualFold(scheme, "Bearer") {
			if a, ok := s.tokenActor(c, strings.TrimSpace(token), "api"); ok {
				c.Set(ctxActor, a)
				c.Set(listed.ActorName, a.name())
				withActorName(c, a)
				return next(c)
			}
		}
		if header != "" {
			if err := wrongToken(s.doors.tokenLimit, c); err != nil {
				return err
			}
		}
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
		return &apiError{Status: http.StatusUnauthorized, Message: "missing or invalid bearer token"}
	}
}

// requireSession guards pages, fragments and SSE with the session cookie.
// A page request without one is sent to the login page.
func (s *Server) requireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if sess, ok := s.doors.sessions.Of(c.Request()); ok {
			a, ok := s.sessionActor(c, sess)
			if !ok { // the person was removed: their sessions end
				s.doors.sessions.End(c.Response(), c.Request())
				return echo.NewHTTPError(http.StatusUnauthorized, "you are no longer one of this Switchboard's people; ask an admin")
			}
			c.Set(ctxSession, sess)
			c.Set(ctxActor, a)
			c.Set(listed.ActorName, a.name())
			withActorName(c, a)
			// Before any read: a page shows at least this revision (see Hub's "rev").
			c.Set(ctxRevision, s.deps.Store.Revision())
			return next(c)
		}
		r := c.Request()
		if r.Method == http.MethodGet && r.Header.Get(headerHXRequest) == "" && r.URL.Path != "/events" {
			return c.Redirect(http.StatusSeeOther, "/login")
		}
		return echo.NewHTTPError(http.StatusUnauthorized, "your session has ended; log in again")
	}
}

// csrfProtect refuses state changes that lack the session's CSRF token
// (header for htmx, form field for forms); refuseCrossSite has already
// refused those from another site.
func csrfProtect(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if guard.SafeMethod(r.Method) {
			return next(c)
		}
		token := r.Header.Get(csrfHeader)
		if token == "" {
			token = c.FormValue(csrfField)
		}
		if sess, _ := c.Get(ctxSession).(session.Session); sess.CSRF == "" || !equal(token, sess.CSRF) {
			return echo.NewHTTPError(http.StatusForbidden, "missing or invalid CSRF token; reload the page and try again")
		}
		return next(c)
	}
}

func csrfOf(c echo.Context) string {
	sess, _ := c.Get(ctxSession).(session.Session)
	return sess.CSRF
}
