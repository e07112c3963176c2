package gateway

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/web/internal/authlimit"
)

// The HTTP side of /mcp: Serve checks the token and the session's owner,
// caps the body, answers what the endpoint answers itself (see offer.go)
// and hands everything else to mcp-go's handler; serveModern does the
// same for a 2026-07-28 request, which has no session.

// HTTPError is a request to /mcp refused before MCP: the status to
// answer with and a message fit to show.
type HTTPError struct {
	Status  int
	Message string
}

func (e *HTTPError) Error() string { return e.Message }

// Serve serves a request to /mcp (GET, POST or DELETE): the bearer token
// and a capped body for every request; tools/list from the offer and
// calls of tools not offered refused, for a live session or a valid
// 2026-07-28 request; everything else through mcp-go. It answers the
// request unless it returns an error: an *HTTPError, or one of the store
// (an internal error), for the caller to answer.
func (e *Endpoint) Serve(w http.ResponseWriter, r *http.Request) error {
	header := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	client, connected := e.clientOf(token)
	if !strings.EqualFold(scheme, "Bearer") || !connected && subtle.ConstantTimeCompare([]byte(token), []byte(e.Token())) != 1 {
		// Only a wrong token spends the budget, or is refused for it: a
		// right one never is, whoever failed before (see web's wrongToken).
		if header != "" {
			if e.authLimit.Refused(w.Header(), r.RemoteAddr) {
				return &HTTPError{Status: http.StatusTooManyRequests, Message: authlimit.Message}
			}
			e.authLimit.Failed(authlimit.Client(r.RemoteAddr))
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard-mcp"`)
		return &HTTPError{Status: http.StatusUnauthorized, Message: "missing or invalid MCP bearer token (see Agents in the dashboard)"}
	}
	if connected {
		r = r.WithContext(context.WithValue(r.Context(), connectionKey{}, client))
		e.sessions.tokenSeen(client.ID)
	}
	if sid := r.Header.Get(server.HeaderKeySessionID); sid != "" && !e.sessions.known(sid) {
		e.resumeSession(r, sid, client.ID) // kept by the store: a restart, or another replica (see resume.go)
	}
	if sid := r.Header.Get(server.HeaderKeySessionID); sid != "" && !e.sessions.ownedBy(sid, client.ID) {
		// As if it did not exist: another token learns nothing of it.
		return &HTTPError{Status: http.StatusNotFound, Message: "unknown MCP session"}
	}
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return &HTTPError{Status: http.StatusRequestEntityTooLarge, Message: "request body over 4 MiB"}
			}
			return &HTTPError{Status: http.StatusBadRequest, Message: "cannot read the request body"}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if taskCall(body) { // see tasks.go
			if req, ok := parseRequest(r, body); ok && req.modern(r.Header) {
				body = withoutTask(r, body)
			} else {
				r = forTask(r)
			}
		}
		if !e.offeredCall(r, body) { // else mcp-go takes it: nothing to answer here
			if e.lateAnswer(r.Header.Get(server.HeaderKeySessionID), body) {
				w.WriteHeader(http.StatusAccepted)
				return nil
			}
			if req, ok := parseRequest(r, body); ok {
				if req.modern(r.Header) {
					return e.serveModern(w, r, req)
				}
				if e.sessions.touch(r.Header.Get(server.HeaderKeySessionID)) {
					sid := r.Header.Get(server.HeaderKeySessionID)
					e.keepUse(r.Context(), sid)
					if answered, err := e.answer(w, r, req, agent{session: sid, asks: e.sessions.asks(sid)}); answered {
						return err
					}
				}
			}
		}
	}
	if e.sessions.touch(r.Header.Get(server.HeaderKeySessionID)) {
		e.keepUse(r.Context(), r.Header.Get(server.HeaderKeySessionID))
	}
	if r.Method == http.MethodGet { // a session's stream, open as long as the agent is there
		defer e.sessions.streaming(r.Header.Get(server.HeaderKeySessionID))()
	}
	sid := r.Header.Get(server.HeaderKeySessionID)
	e.h.ServeHTTP(questionWriter{ResponseWriter: w, e: e, session: sid, listChanged: func(method string) bool {
		return e.sessions.viewChanged(sid, method, e.viewHashes(profileOf(r.Context())))
	}}, r)
	return nil
}

// serveModern serves a 2026-07-28 request. One that passes the checks
// mcp-go would make (see checkModern) is known by its clientInfo; its
// tools/list, or call of a tool not offered, is answered here, and a
// check that fails is answered as mcp-go would answer it. Everything else
// goes to mcp-go, which makes the same checks.
func (e *Endpoint) serveModern(w http.ResponseWriter, r *http.Request, req rpcRequest) error {
	o, err := e.current()
	if err != nil {
		return err
	}
	view := o.view(profileOf(r.Context()))
	if failed := e.checkModern(r.Header, req, view.tools); failed != nil {
		if req.Method == string(mcp.MethodToolsList) || req.Method == string(mcp.MethodToolsCall) || strings.HasPrefix(req.Method, "tasks/") {
			return writeRPCError(w, r, true, req.ID, *failed)
		}
	} else if strings.HasPrefix(req.Method, "tasks/") {
		// The tasks extension's (see modern_tasks.go); never mcp-go's,
		// whose tasks are of sessions, and of session "" here: any
		// client's.
		return e.answerTasks(w, r, req)
	} else {
		client := req.client()
		ct, _ := connectedClient(r.Context())
		e.sessions.tokenDeclared(ct.ID, req.Params.Meta.ProtocolVersion(), client, true)
		if req.Method == string(mcp.MethodSubscriptionsListen) {
			defer e.sessions.listening(client)()
			defer e.sessions.tokenListening(ct.ID)()
			r = e.endWithEndpoint(r)
			var stop func()
			if r, stop, err = e.listenResources(w, r, req); err != nil || stop == nil {
				return err // answered: a resource it cannot subscribe to
			}
			defer stop()
			seen := &viewSeen{last: e.viewHashes(profileOf(r.Context()))}
			w = questionWriter{ResponseWriter: w, e: e, listChanged: func(method string) bool {
				return seen.changed(method, e.viewHashes(profileOf(r.Context())))
			}}
		} else {
			e.sessions.seen(client)
		}
		from := agent{session: statelessSession, client: client, modern: true, asks: req.asks()}
		if _, offered := view.tools[req.Params.Name]; offered && req.Method == string(mcp.MethodToolsCall) {
			if answered, err := e.answerTaskCall(w, r, req, o, from); answered {
				return err
			}
		}
		if answered, err := e.answer(w, r, req, from); answered {
			return err
		}
	}
	e.h.ServeHTTP(w, r)
	return nil
}

// endWithEndpoint returns r with a context that also ends when the
// endpoint closes. A subscriptions/listen stream lasts until its request
// ends, and mcp-go's Shutdown ends the streams of sessions but not these,
// which belong to none: they would hold the HTTP server's shutdown up.
func (e *Endpoint) endWithEndpoint(r *http.Request) *http.Request {
	ctx, cancel := context.WithCancel(r.Context())
	go func() { // ends with the request or the endpoint
		defer cancel()
		select {
		case <-e.quit:
		case <-ctx.Done():
		}
	}()
	return r.WithContext(ctx)
}

// agent is who sent a request: a session, or a 2026-07-28 client, which
// has none.
type agent struct {
	session, client string
	modern          bool
	asks            discovery.Asks // what it declared it answers (see needs.go)
}

// statelessSession stands for the session in the audit and on approval
// cards of a call from a 2026-07-28 client, which has none.
const statelessSession = "stateless"
