package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/store"
)

// Sessions that outlive the process. A session-based agent (2025-11-25
// and earlier) keeps its Mcp-Session-Id for as long as it runs, and the
// SDKs do not open a new session when the endpoint answers 404: a restart
// of the dashboard would leave the agent broken. So each session is kept
// in the store (the hash of its id, the token that opened it and the
// agent's initialize as it sent it; see store.MCPSession), and a request
// on an id this process does not know brings it back: the endpoint
// replays the agent's initialize into mcp-go under the same id (see
// resumeResolver), so the session has again what its agent declared.
// In a team, any replica serves a session this way.
//
// What a session held only in memory does not come back: its open GET
// stream (the agent opens it again), questions and approvals waiting on
// it (denied when the process stopped), resource subscriptions (the
// agent's next subscribe makes them again).

// maxKeptInit caps the initialize params kept per session: an agent that
// declares more is served as before, but not resumed.
const maxKeptInit = 64 << 10

// keepEvery is how often a used session's last use is written to the
// store: often enough that a session in use is never pruned as idle.
const keepEvery = mcpSessionIdle / 8

// resumeKey marks the initialize that brings a kept session back: the
// session as kept.
type resumeKey struct{}

// resumeResolver is the session id manager of the endpoint's mcp-go
// handler: the sessions (mcpSessions), but for the initialize that
// resumes a kept session, whose id is the kept one.
type resumeResolver struct{ m *mcpSessions }

// ResolveSessionIdManager implements server.SessionIdManagerResolver.
func (r resumeResolver) ResolveSessionIdManager(req *http.Request) server.SessionIdManager {
	if req != nil {
		if kept, ok := req.Context().Value(resumeKey{}).(*resumed); ok {
			return kept
		}
	}
	return r.m
}

// resumed is a kept session coming back.
type resumed struct {
	*mcpSessions
	id      string
	started time.Time
}

// Generate gives the kept id to the session mcp-go makes for the replayed
// initialize.
func (r *resumed) Generate() string {
	r.add(r.id, r.started)
	return r.id
}

// keepSession keeps the session of id, initialized with params, in the
// store (see AfterInitialize in mountMCPGo). A resumed one is kept
// already.
func (e *Endpoint) keepSession(ctx context.Context, id, tokenID string, params mcp.InitializeParams) {
	if _, resuming := ctx.Value(resumeKey{}).(*resumed); resuming {
		return
	}
	init, err := json.Marshal(params)
	if err != nil || len(init) > maxKeptInit {
		return
	}
	now := time.Now().UTC()
	rec := store.MCPSession{Hash: store.HashToken(id), TokenID: tokenID, Init: init, Started: now, LastUsed: now}
	e.sessions.kept(id, rec)
	if err := e.st.PutMCPSession(ctx, rec, now.Add(-mcpSessionIdle)); err != nil {
		e.log.Warn("keep an MCP session", "err", err) // it is served, but not after a restart
	}
}

// keepUse writes the last use of session id to the store if it was
// written more than keepEvery ago.
func (e *Endpoint) keepUse(ctx context.Context, id string) {
	rec, due := e.sessions.keepDue(id, time.Now().UTC())
	if !due {
		return
	}
	if err := e.st.PutMCPSession(ctx, rec, rec.LastUsed.Add(-mcpSessionIdle)); err != nil {
		e.log.Warn("keep an MCP session's use", "err", err)
	}
}

// forgetSession forgets the kept session of id: its agent ended it, or
// it was idle too long here (idle). (A session ended because the process
// stops is kept: see mcpSessions.closing.) One idle here may be in use on
// another replica: the store forgets it only if it is idle there too.
func (e *Endpoint) forgetSession(id string, idle bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hash := store.HashToken(id)
	if idle {
		rec, err := e.st.MCPSession(ctx, hash)
		if err != nil || time.Since(rec.LastUsed) < mcpSessionIdle {
			return // gone already, or used on another replica
		}
	}
	if err := e.st.DeleteMCPSession(ctx, hash); err != nil {
		e.log.Warn("forget an MCP session", "err", err)
	}
}

// resumeSession brings back the kept session id, if the store keeps it, it is
// not idle, and the request's token (tokenID, "" for the endpoint's own)
// is the one that opened it. Otherwise the request goes on as it is, and
// mcp-go answers 404 for the unknown id.
func (e *Endpoint) resumeSession(r *http.Request, id, tokenID string) {
	e.resuming.Lock()
	defer e.resuming.Unlock()
	if e.sessions.known(id) {
		return // resumed meanwhile
	}
	rec, err := e.st.MCPSession(r.Context(), store.HashToken(id))
	if err != nil || rec.TokenID != tokenID || time.Since(rec.LastUsed) > mcpSessionIdle {
		return
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "switchboard-resume", "method": "initialize", "params": rec.Init})
	if err != nil {
		return
	}
	kept := &resumed{mcpSessions: e.sessions, id: id, started: rec.Started}
	req := httptest.NewRequestWithContext(context.WithValue(r.Context(), resumeKey{}, kept), http.MethodPost, "/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", r.Header.Get("Authorization"))
	req.Host = r.Host // mcp-go checks it (DNS rebinding)
	w := httptest.NewRecorder()
	if e.h.ServeHTTP(w, req); w.Code != http.StatusOK || !e.sessions.known(id) {
		e.log.Warn("resume an MCP session", "status", w.Code, "answer", cutString(w.Body.String(), 200))
		return
	}
	// Kept as it is, its use written from now on (see keepUse); the
	// session is live only now.
	e.sessions.kept(id, rec)
	e.log.Info("resumed an MCP session", "client", e.sessions.client(id))
}
