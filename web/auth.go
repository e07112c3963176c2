package web

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/cluster"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/session"
)

// handleHealth serves GET /healthz: which replica answers, whether it
// leads (a Switchboard on its own is the "local" leader) and whether it
// is ready (see ready): 200 "ok", else 503 with why.
func (s *Server) handleHealth(c echo.Context) error {
	checks, ok := s.ready(c.Request().Context())
	status, word := http.StatusOK, "ok"
	if !ok {
		status, word = http.StatusServiceUnavailable, "not ready"
	}
	return c.JSON(status, map[string]any{"status": word, "replica": s.deps.Cluster.ID(), "leader": s.deps.Verify.Leading(), "checks": checks})
}

// handleLive serves GET /livez: the process answers (200, always).
func (s *Server) handleLive(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"status": "alive", "replica": s.deps.Cluster.ID()})
}

// handleReady serves GET /readyz: 200 when this replica can serve (see
// ready), else 503 with the checks that failed; a load balancer sends it
// requests only then.
func (s *Server) handleReady(c echo.Context) error {
	checks, ok := s.ready(c.Request().Context())
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
	}
	return c.JSON(status, map[string]any{"ready": ok, "replica": s.deps.Cluster.ID(), "checks": checks})
}

// readyCheck bounds each readiness check.
const readyCheck = 3 * time.Second

// ready checks that the store answers a read, and (on a team's etcd) that
// this replica holds its session, someone leads and its watch of the
// store is current: each check "ok" or why not.
func (s *Server) ready(ctx context.Context) (map[string]string, bool) {
	ctx, cancel := context.WithTimeout(ctx, readyCheck)
	defer cancel()
	checks, ok := map[string]string{"store": "ok"}, true
	if _, err := s.deps.Store.Users(ctx); err != nil {
		checks["store"], ok = err.Error(), false
	}
	if r, isTeam := s.deps.Cluster.(interface{ Ready(context.Context) error }); isTeam {
		checks["cluster"] = "ok"
		if err := r.Ready(ctx); err != nil {
			checks["cluster"], ok = err.Error(), false
		}
	}
	return checks, ok
}

// handleEvents serves GET /events: the live updates of the session's tab,
// until the tab goes away, the session is logged out or it expires.
func (s *Server) handleEvents(c echo.Context) error {
	sess, _ := c.Get(ctxSession).(session.Session)
	s.live.hub.ServeSession(c.Response(), c.Request(), sess.ID, sess.Expires)
	s.live.lastTab.Store(s.cfg.Now().UnixNano()) // a page load closes one tab before the next opens
	return nil
}

// approvers is how many can answer a call waiting for a person now: the
// open tabs, else one if a tab closed in the last 5 s (a page being
// loaded) or a program read the waiting calls through the API in the
// last 30 s (it may answer there).
func (s *Server) approvers() int {
	if n := s.live.hub.Connections(); n > 0 {
		return n
	}
	now := s.cfg.Now()
	if now.Sub(time.Unix(0, s.live.lastTab.Load())) < 5*time.Second || now.Sub(time.Unix(0, s.live.lastAPIPoll.Load())) < 30*time.Second {
		return 1
	}
	return 0
}

// handleLoginPage serves GET /login. With ?code= it redeems the one-time
// login code printed at start, sets the session cookie and redirects to a
// clean URL; otherwise it shows the token form.
//
// A code is redeemed only when the person opened the link themselves
// (Sec-Fetch-Site "none": typed, pasted or opened from another program)
// or from this origin; a browser that sends no Fetch Metadata (curl) is
// taken at its word. A page of another site that navigates to the link
// (a frame, a link, a redirect) neither redeems a code nor spends the
// budget of wrong codes: it only gets the login page back.
func (s *Server) handleLoginPage(c echo.Context) error {
	code := c.QueryParam("code")
	if code == "" {
		return render(c, http.StatusOK, s.loginPage(""))
	}
	switch c.Request().Header.Get("Sec-Fetch-Site") {
	case "", "none", "same-origin":
	default:
		return render(c, http.StatusForbidden, s.loginPage(
			"This login link was opened from another web page, so it was not used. Paste the link from Switchboard's output into the address bar, or paste the access token."))
	}
	if s.cfg.NoSharedToken {
		// The link logs in as the shared token's holder, who is off.
		return render(c, http.StatusUnauthorized, s.loginPage("Login links are off here (the shared token is turned off): sign in with your personal token."))
	}
	if err := limitBy(s.doors.codeLimit, c); err != nil {
		return err
	}
	if !s.doors.sessions.RedeemCode(code) {
		s.doors.codeLimit.Failed(clientOf(c))
		return render(c, http.StatusUnauthorized, s.loginPage("This login link was already used or is not valid. Paste the access token instead."))
	}
	return s.startSession(c, "")
}

// handleLogin serves POST /login: logging in with the access token.
func (s *Server) handleLogin(c echo.Context) error {
	if err := c.Request().ParseForm(); err != nil {
		// Over maxLoginBody, cut off by BodyTimeout, or not a form:
		// not an attempt at the token, so not counted.
		return render(c, statusOfBodyError(err), s.loginPage("The login form could not be read; type the token again."))
	}
	a, ok := s.tokenActor(c, c.FormValue("token"), "dashboard")
	if !ok {
		if err := wrongToken(s.doors.tokenLimit, c); err != nil {
			return err
		}
		return render(c, http.StatusUnauthorized, s.loginPage("That token is not valid."))
	}
	return s.startSession(c, a.UserID)
}

// statusOfBodyError is the status for a body that could not be read: 413
// when it was over its cap, else 400.
func statusOfBodyError(err error) int {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// startSession signs the browser in as the person userID ("" for the
// shared token's holder).
func (s *Server) startSession(c echo.Context, userID string) error {
	if err := s.doors.sessions.Start(c.Response(), c.Request(), userID); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/")
}

// handleLogout serves POST /logout, ending the session's event streams
// at once in every tab: they carry approval cards with call arguments.
func (s *Server) handleLogout(c echo.Context) error {
	s.live.hub.EndSession(s.doors.sessions.End(c.Response(), c.Request()))
	return c.Redirect(http.StatusSeeOther, "/login")
}

// handleLogoutEverywhere serves POST /logout/everywhere and DELETE /api/v1/sessions
// ({"ended": n}): every browser's session ends, the caller's too, with its streams.
func (s *Server) handleLogoutEverywhere(c echo.Context) error {
	n, err := s.doors.sessions.EndAll(c.Response(), c.Request())
	switch s.live.hub.EndSessions(); {
	case err != nil:
		return err
	case c.Request().Method == http.MethodDelete:
		return c.JSON(http.StatusOK, map[string]int{"ended": n})
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}

// handleAPIReplicas serves GET /api/v1/replicas: this replica and those
// heard of in the last 15 s, who leads, the store revision each has seen
// (a replica whose revision stays behind the others' lags), and the calls
// waiting on each.
func (s *Server) handleAPIReplicas(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"replicas": s.approvals.Replicas()})
}

// handleReplicasPage serves GET /replicas: the replicas heard of (as GET
// /api/v1/replicas), and this replica's readiness (as GET /readyz).
func (s *Server) handleReplicasPage(c echo.Context) error {
	v := views.ReplicasView{Team: s.deps.Cluster.ID() != (&cluster.Local{}).ID()}
	var newest int64
	rows := s.approvals.Replicas()
	revs := make([]int64, len(rows))
	for i, r := range rows {
		revs[i] = revisionNumber(r.Revision)
		newest = max(newest, revs[i])
	}
	for i, r := range rows {
		row := views.ReplicaRow{ID: r.ID, Self: r.Self, Leader: r.Leader, Waiting: r.Waiting, LastSeen: r.LastSeen}
		if revs[i] > 0 {
			row.Revision = strconv.FormatInt(revs[i], 10)
			row.Behind = newest - revs[i]
		}
		v.Replicas = append(v.Replicas, row)
	}
	checks, ok := s.ready(c.Request().Context())
	v.Ready = ok
	for _, name := range slices.Sorted(maps.Keys(checks)) {
		v.Checks = append(v.Checks, views.ReadyCheck{Name: name, OK: checks[name] == "ok", Detail: checks[name]})
	}
	return render(c, http.StatusOK, views.ReplicasPage(s.page(c, "Replicas"), v))
}

// revisionNumber is the number at the end of a store revision ("<store
// id>-<n>"), 0 if there is none.
func revisionNumber(rev string) int64 {
	i := strings.LastIndexByte(rev, '-')
	n, err := strconv.ParseInt(rev[i+1:], 10, 64)
	if err != nil {
		return 0
	}
	return n
}
