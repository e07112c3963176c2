package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/web"
)

// rank orders the roles.
var rank = map[string]int{"viewer": 1, "approver": 2, "admin": 3}

// routeRole is the role the rule table asks of a request, "" for a route
// it does not know (a public one, or none).
type routeRole struct{ router *echo.Echo }

func newRouteRole() routeRole {
	e := echo.New()
	for key := range web.RouteRoles() {
		method, path, _ := strings.Cut(key, " ")
		e.Add(method, path, func(echo.Context) error { return nil })
	}
	return routeRole{e}
}

func (r routeRole) of(method, target string) string {
	path, _, _ := strings.Cut(target, "?")
	c := r.router.NewContext(nil, nil)
	r.router.Router().Find(method, path, c)
	return web.RouteRoles()[method+" "+c.Path()]
}

// What a person may not do is not offered to them: every control of a
// page (a form, an htmx request, a link) whose route needs a higher role
// than the person's is marked with data-needs (on it or around it),
// which the style sheet hides for their role (issue 38: a viewer saw
// every button, and learnt from a refusal). The marks are held to the
// rule table itself.
func TestControlsAPersonMayNotUseAreNotOffered(t *testing.T) {
	e := newEnv(t)
	e.verifyFixture("fx", "-tools", "2")
	wantStatus(t, e.api(http.MethodPost, "/api/v1/profiles", map[string]any{"id": "ops", "name": "Ops", "mode": "all"}), http.StatusCreated)
	tokens := map[string]string{}
	for _, role := range []string{"viewer", "approver"} {
		rec := e.api(http.MethodPost, "/api/v1/users", map[string]any{"email": role + "@example.com", "role": role})
		wantStatus(t, rec, http.StatusCreated)
		var made struct{ Token string }
		json.Unmarshal(rec.Body.Bytes(), &made)
		tokens[role] = made.Token
		e.secrets = append(e.secrets, made.Token)
	}
	roles := newRouteRole()
	pages := []string{"/", "/servers/fx", "/servers/fx/history", "/agents", "/profiles", "/replicas", "/people", "/import", "/export", "/servers/fx/changes", "/profiles/ops", "/servers/fx/confirm"}
	for role, token := range tokens {
		b := e.loginAs(token)
		for _, page := range pages {
			rec := b.get(page)
			if rec.Code != http.StatusOK {
				continue // a page the role may not read is refused whole (TestEachRoleReachesOnlyItsRoutes)
			}
			doc := parseHTML(t, rec.Body.String())
			if doc.Find("body[sse-connect]").Length() == 0 {
				continue // a fragment, not a page
			}
			if got, _ := doc.Find("body").Attr("data-role"); got != role {
				t.Fatalf("%s: the page's body says role %q; want %q", page, got, role)
			}
			check := func(sel, attr, method string) {
				doc.Find(sel).Each(func(_ int, s *goquery.Selection) {
					target, _ := s.Attr(attr)
					m := method
					if m == "" {
						m = strings.ToUpper(s.AttrOr("method", "get"))
					}
					need := roles.of(m, target)
					if need == "" || rank[need] <= rank[role] {
						return
					}
					marked := s.Closest("[data-needs]")
					if marked.Length() == 0 || rank[marked.AttrOr("data-needs", "")] < rank[need] {
						html, _ := goquery.OuterHtml(s)
						t.Errorf("%s as %s: %s %s needs %s, and is offered unmarked: %.160s", page, role, m, target, need, html)
					}
				})
			}
			check("form[action]", "action", "")
			check("[hx-post]", "hx-post", http.MethodPost)
			check("a[href]", "href", http.MethodGet)
		}
	}
}
