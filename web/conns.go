package web

import (
	"net"
	"net/http"
	"time"

	"github.com/switchboard-dev/switchboard/web/internal/conns"
)

// Connection limits (see package conns): a request's header must arrive
// within Config.HeaderTimeout and its body (capped in size by
// limitBodies) within Config.BodyTimeout of the handler starting; a
// connection between requests is closed after IdleTimeout. There is no
// timeout on the response or on the handler, so the event stream and a
// tool call that waits for a person live as long as they need.
const (
	HeaderTimeout = 10 * time.Second
	BodyTimeout   = 30 * time.Second
	IdleTimeout   = 2 * time.Minute
)

// HTTPServer returns the http.Server that serves the application, with
// its timeouts and connection limits, and the listener to serve it on
// (ln, with the limits applied). Serve it with srv.Serve(listener).
func (s *Server) HTTPServer(ln net.Listener) (*http.Server, net.Listener) {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.HeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    conns.MaxHeaderBytes,
		// No ReadTimeout and no WriteTimeout: either would end the event
		// stream and long tool calls (see conns.Guard.BodyDeadline).
		ConnState:   s.doors.conns.Track,
		ConnContext: s.doors.conns.ConnContext,
	}
	return srv, s.doors.conns.Listener(ln)
}
