package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/views"
)

// handleHealth serves GET /healthz.
func (s *Server) handleHealth(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// handleLoginPage serves GET /login. With ?code= it redeems the one-time
// login code printed at start, sets the session cookie and redirects to a
// clean URL; otherwise it shows the token form.
func (s *Server) handleLoginPage(c echo.Context) error {
	code := c.QueryParam("code")
	if code == "" {
		return render(c, http.StatusOK, views.LoginPage(""))
	}
	if err := s.limitAuth(c); err != nil {
		return err
	}
	if !s.sessions.redeemCode(code) {
		s.authLimit.failed(clientOf(c))
		return render(c, http.StatusUnauthorized, views.LoginPage("This login link was already used or is not valid. Paste the access token instead."))
	}
	return s.startSession(c)
}

// handleLogin serves POST /login: logging in with the access token.
func (s *Server) handleLogin(c echo.Context) error {
	if err := s.limitAuth(c); err != nil {
		return err
	}
	if !s.sessions.validToken(c.FormValue("token")) {
		s.authLimit.failed(clientOf(c))
		return render(c, http.StatusUnauthorized, views.LoginPage("That token is not valid."))
	}
	return s.startSession(c)
}

func (s *Server) startSession(c echo.Context) error {
	id, _ := s.sessions.create()
	c.SetCookie(&http.Cookie{
		Name:     sessionCookie,
		Value:    id,
		Path:     "/",
		MaxAge:   int(sessionTTL.Seconds()),
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		Secure:   c.Request().TLS != nil,
	})
	return c.Redirect(http.StatusSeeOther, "/")
}

// handleLogout serves POST /logout.
func (s *Server) handleLogout(c echo.Context) error {
	if ck, err := c.Cookie(sessionCookie); err == nil {
		s.sessions.delete(ck.Value)
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return c.Redirect(http.StatusSeeOther, "/login")
}
