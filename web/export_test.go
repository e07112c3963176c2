package web

import "github.com/switchboard-dev/switchboard/web/internal/hub"

// RouteTable lists every registered route as method and path, so that
// tests can hold each one to the security rules.
func (s *Server) RouteTable() [][2]string {
	var out [][2]string
	for _, r := range s.echo.Routes() {
		out = append(out, [2]string{r.Method, r.Path})
	}
	return out
}

// HubOf is the hub of s's live updates, for tests that publish to it or
// count its connections.
func HubOf(s *Server) *hub.Hub { return s.live.hub }

// RouteRoles is the least role of each route behind a sign-in (see
// access.go), by "METHOD path".
func RouteRoles() map[string]string {
	out := map[string]string{}
	for k, v := range routeRoles {
		out[k] = string(v)
	}
	return out
}
