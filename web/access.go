package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/web/internal/session"
)

// Who may do what. Every request to a page, form, fragment, stream or API
// route is made by an actor: a person (signed in through the identity
// provider or with a personal token) with their role, or the holder of
// the shared API token (or the login link), who is admin. One rule table
// (routeRoles) names the least role of each route; authorize checks it
// after the route is known, and a route without a rule is refused to
// everyone (TestEveryRouteHasARule keeps the table whole).

// ctxActor is where the request's actor is kept.
const ctxActor = "actor"

// actor is who makes a request.
type actor struct {
	UserID string // "" for the shared token's holder
	Email  string
	Role   store.Role
	// Via is how the shared token's holder came: "dashboard" (a browser)
	// or "api".
	Via string
}

// name is how records name the actor: the person's email, else how the
// shared token's holder came (the names records had before people).
func (a actor) name() string {
	if a.Email != "" {
		return a.Email
	}
	return a.Via
}

// actorOf is the request's actor.
func actorOf(c echo.Context) actor {
	a, _ := c.Get(ctxActor).(actor)
	return a
}

// sharedActor is the shared token's holder, come via via.
func sharedActor(via string) actor { return actor{Role: store.RoleAdmin, Via: via} }

// personActor is person u.
func personActor(u store.User, via string) actor {
	return actor{UserID: u.ID, Email: u.Email, Role: u.Role, Via: via}
}

// sessionActor is the actor of a browser session: its person as the store
// has them now (a changed role counts at once; a deleted person is
// nobody), or the shared token's holder.
func (s *Server) sessionActor(c echo.Context, sess session.Session) (actor, bool) {
	if sess.UserID == "" {
		// The shared token's holder's session: nobody's once the shared
		// token is off, whenever it began.
		return sharedActor("dashboard"), !s.cfg.NoSharedToken
	}
	u, ok := s.user(c, func(u store.User) bool { return u.ID == sess.UserID })
	if !ok {
		return actor{}, false
	}
	return personActor(u, "dashboard"), true
}

// user is the first person for whom match says yes.
func (s *Server) user(c echo.Context, match func(store.User) bool) (store.User, bool) {
	users, err := s.deps.Store.Users(c.Request().Context())
	if err != nil {
		return store.User{}, false
	}
	for _, u := range users {
		if match(u) {
			return u, true
		}
	}
	return store.User{}, false
}

// tokenActor is the actor whose token t is: the shared API token's holder
// (unless it is turned off), or the person whose personal token it is.
func (s *Server) tokenActor(c echo.Context, t, via string) (actor, bool) {
	if t == "" {
		return actor{}, false
	}
	if !s.cfg.NoSharedToken && s.doors.sessions.ValidToken(t) {
		return sharedActor(via), true
	}
	if !strings.HasPrefix(t, personalTokenPrefix) {
		return actor{}, false
	}
	hash := store.HashToken(t)
	u, ok := s.user(c, func(u store.User) bool { return u.TokenHash != "" && equal(u.TokenHash, hash) })
	if !ok {
		return actor{}, false
	}
	return personActor(u, via), true
}

// personalTokenPrefix starts every personal API token.
const personalTokenPrefix = "sbu_"

// authorize refuses a request whose actor's role is below its route's
// rule: 403, naming the role it needs. A request that matched no route
// goes on to be answered 404 or 405.
func (s *Server) authorize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := c.Request().Method + " " + c.Path()
		need, ok := routeRoles[key]
		a := actorOf(c)
		switch {
		case !ok && !s.routed[key]:
			return next(c)
		case !ok:
			return &apiError{Status: http.StatusForbidden, Message: "no rule says who may do this, so nobody may"}
		case !a.Role.Allows(need):
			return &apiError{Status: http.StatusForbidden, Message: fmt.Sprintf("this needs the %s role; you are %s", need, roleOrNone(a.Role))}
		}
		return next(c)
	}
}

func roleOrNone(r store.Role) string {
	if r == "" {
		return "signed in with no role"
	}
	return string(r)
}

const (
	viewer   = store.RoleViewer
	approver = store.RoleApprover
	admin    = store.RoleAdmin
)

// routeRoles is the least role of each route behind a sign-in, by method
// and path as routes registers it. Viewers read; approvers also answer
// approvals, set policies and presets, approve changes, confirm launches,
// verify and try tools; admins also add, edit and delete servers and
// their walls and sign-ins, import and export, and manage people, tokens,
// clients and profiles.
var routeRoles = map[string]store.Role{
	// Pages, fragments and the stream.
	"POST /logout":                            viewer,
	"POST /logout/everywhere":                 admin,
	"GET /events":                             viewer,
	"GET /":                                   viewer,
	"GET /fragments/servers":                  viewer,
	"GET /servers/new":                        admin,
	"POST /servers":                           admin,
	"GET /servers/:id":                        viewer,
	"GET /servers/:id/edit":                   admin,
	"POST /servers/:id":                       admin,
	"POST /servers/:id/delete":                admin,
	"GET /servers/:id/confirm":                approver,
	"POST /servers/:id/verify":                approver,
	"POST /servers/:id/sandbox/allow":         admin,
	"POST /servers/:id/sandbox/arg-paths":     admin,
	"POST /servers/:id/signin":                admin,
	"POST /servers/:id/signout":               admin,
	"GET /servers/:id/tools":                  viewer,
	"POST /servers/:id/policy":                approver,
	"POST /servers/:id/listed-policy":         approver,
	"POST /servers/:id/policies":              approver,
	"POST /servers/:id/record-arguments":      admin,
	"POST /servers/:id/asks":                  admin,
	"POST /jobs/:id/cancel":                   approver,
	"GET /servers/:id/history":                viewer,
	"GET /servers/:id/changes":                viewer,
	"POST /servers/:id/approve":               approver,
	"POST /verify-all":                        approver,
	"POST /batches/:id/cancel":                approver,
	"POST /batches/:id/dismiss":               viewer,
	"GET /import":                             admin,
	"POST /import/preview":                    admin,
	"POST /import/apply":                      admin,
	"POST /import/all":                        admin,
	"GET /launches/confirm":                   approver,
	"POST /launches/confirm":                  approver,
	"GET /export":                             admin,
	"POST /export":                            admin,
	"GET /agents":                             viewer,
	"POST /agents/token":                      admin,
	"POST /agents/clients":                    admin,
	"POST /agents/clients/:id/revoke":         admin,
	"POST /agents/clients/:id/approvals":      admin,
	"POST /agents/clients/:id/allowed/revoke": approver,
	"POST /agents/connect/preview":            admin,
	"POST /agents/connect":                    admin,
	"GET /fragments/calls":                    viewer,
	"GET /profiles":                           viewer,
	"GET /profiles/new":                       admin,
	"POST /profiles":                          admin,
	"GET /profiles/:id":                       viewer,
	"POST /profiles/:id":                      admin,
	"POST /profiles/:id/delete":               admin,
	"POST /approvals/:id":                     approver,
	"GET /tools/:agent":                       viewer,
	"POST /tools/:agent/try":                  approver,
	"POST /tools/:agent/try/:call/answer":     approver,
	"POST /tools/:agent/try/:call/cancel":     approver,
	"GET /people":                             admin,
	"POST /people":                            admin,
	"POST /people/:id":                        admin,
	"POST /people/:id/delete":                 admin,
	"POST /people/:id/token":                  admin,
	// The JSON API.
	"GET /api/v1/servers":                              viewer,
	"POST /api/v1/servers":                             admin,
	"GET /api/v1/servers/:id":                          viewer,
	"PUT /api/v1/servers/:id":                          admin,
	"DELETE /api/v1/servers/:id":                       admin,
	"POST /api/v1/servers/:id/verify":                  approver,
	"GET /api/v1/servers/:id/tools":                    viewer,
	"GET /api/v1/servers/:id/resources":                viewer,
	"GET /api/v1/servers/:id/prompts":                  viewer,
	"PUT /api/v1/servers/:id/tools/:name/policy":       approver,
	"POST /api/v1/servers/:id/policies":                approver,
	"PUT /api/v1/servers/:id/preset":                   approver,
	"GET /api/v1/servers/:id/tools/:name":              viewer,
	"POST /api/v1/servers/:id/tools/:name/approve":     approver,
	"POST /api/v1/servers/:id/approve":                 approver,
	"POST /api/v1/servers/:id/listed/approve":          approver,
	"PUT /api/v1/servers/:id/listed/policy":            approver,
	"GET /api/v1/servers/:id/history":                  viewer,
	"POST /api/v1/verify-all":                          approver,
	"GET /api/v1/launches":                             viewer,
	"GET /api/v1/clients":                              viewer,
	"POST /api/v1/clients":                             admin,
	"DELETE /api/v1/clients/:id":                       admin,
	"PUT /api/v1/clients/:id":                          admin,
	"DELETE /api/v1/clients/:id/allowed/:server/:tool": approver,
	"GET /api/v1/profiles":                             viewer,
	"POST /api/v1/profiles":                            admin,
	"GET /api/v1/profiles/:id":                         viewer,
	"PUT /api/v1/profiles/:id":                         admin,
	"DELETE /api/v1/profiles/:id":                      admin,
	"GET /api/v1/profiles/:id/preview":                 viewer,
	"GET /api/v1/batches/:id":                          viewer,
	"POST /api/v1/batches/:id/cancel":                  approver,
	"GET /api/v1/jobs/:id":                             viewer,
	"POST /api/v1/jobs/:id/cancel":                     approver,
	"GET /api/v1/tools":                                viewer,
	"GET /api/v1/backup":                               admin,
	"GET /api/v1/approvals":                            viewer,
	"POST /api/v1/approvals/:id":                       approver,
	"GET /api/v1/calls":                                viewer,
	"GET /api/v1/upstreams":                            viewer,
	"POST /api/v1/import":                              admin,
	"GET /api/v1/export":                               admin,
	"DELETE /api/v1/sessions":                          admin,
	"GET /api/v1/replicas":                             viewer,
	"GET /replicas":                                    viewer,
	"GET /registry":                                    viewer,
	"GET /registry/add":                                admin,
	"POST /registry/add":                               admin,
	"GET /api/v1/registry/servers":                     viewer,
	"POST /api/v1/registry/add":                        admin,
	"POST /api/v1/registry/refresh":                    admin,
	"POST /api/v1/servers/:id/registry-update":         admin,
	"POST /servers/:id/registry-update":                admin,
	"GET /api/v1/users":                                admin,
	"POST /api/v1/users":                               admin,
	"PUT /api/v1/users/:id":                            admin,
	"DELETE /api/v1/users/:id":                         admin,
}

// byKey is where the request's context keeps its actor's name, for code
// that has the context only (see withActorName).
type byKey struct{}

// withActorName returns r with a's name in its context.
func withActorName(c echo.Context, a actor) {
	c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), byKey{}, a.name())))
}

// byOf is the name of the actor whose request ctx is ("" outside one).
func byOf(ctx context.Context) string {
	by, _ := ctx.Value(byKey{}).(string)
	return by
}

// namingStore is the store for an import: the servers it adds or
// changes name who did.
type namingStore struct {
	store.Store
	by string
}

func (n namingStore) CreateServer(ctx context.Context, s store.Server) error {
	s.UpdatedBy = n.by
	return n.Store.CreateServer(ctx, s)
}

func (n namingStore) UpdateServer(ctx context.Context, s store.Server) error {
	s.UpdatedBy = n.by
	return n.Store.UpdateServer(ctx, s)
}
