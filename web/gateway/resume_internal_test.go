package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

const resumeToken = "review-token-0123456789abcdef"

func resumeEndpoint(t *testing.T, db *bolt.DB) *Endpoint {
	t.Helper()
	v := discovery.NewVerifier(discovery.Limits{InitTimeout: 5 * time.Second}, nil)
	e, err := New(Config{Token: resumeToken}, Deps{Store: db, Verifier: v,
		Target: func(s store.Server) discovery.Target { return discovery.Target{} },
		Verify: func(store.Server, string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func resumePost(e *Endpoint, sid, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Host = "127.0.0.1:1"
	r.Header.Set("Authorization", "Bearer "+resumeToken)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
		r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	w := httptest.NewRecorder()
	if err := e.Serve(w, r); err != nil {
		if he, ok := err.(*HTTPError); ok {
			w.Code = he.Status
		}
	}
	return w
}

const resumeInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`

// A resumed session's use is written to the store again, so it is not
// pruned as idle while in use (a review found it was set before the
// session was live, and so never).
func TestAResumedSessionKeepsItsUse(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "sb.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := resumeEndpoint(t, db)
	w := resumePost(a, "", resumeInit)
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	a.Close()
	b := resumeEndpoint(t, db)
	defer b.Close()
	if w := resumePost(b, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); w.Code != 200 {
		t.Fatalf("ping after restart: %d %s", w.Code, w.Body)
	}
	if _, due := b.sessions.keepDue(sid, time.Now().Add(2*keepEvery)); !due {
		b.sessions.mu.Lock()
		t.Errorf("resumed session: rec.Hash=%q; keepDue never true, so its last use is never written to the store", b.sessions.live[sid].rec.Hash)
		b.sessions.mu.Unlock()
	}
}

// Concurrent first requests on a kept id after a restart all go through.
func TestConcurrentResumes(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "sb.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := resumeEndpoint(t, db)
	w := resumePost(a, "", resumeInit)
	sid := w.Header().Get("Mcp-Session-Id")
	a.Close()
	b := resumeEndpoint(t, db)
	defer b.Close()
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = resumePost(b, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`).Code
		}()
	}
	wg.Wait()
	for _, c := range codes {
		if c != 200 {
			t.Errorf("codes %v", codes)
			break
		}
	}
}

// An id the store does not keep is never made live, nor taken by an
// initialize (no session fixation).
func TestAForgedSessionIDIsNotResumed(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "sb.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := resumeEndpoint(t, db)
	defer a.Close()
	if w := resumePost(a, "sb-forged", `{"jsonrpc":"2.0","id":2,"method":"ping"}`); w.Code != 404 {
		t.Errorf("forged: %d", w.Code)
	}
	if w := resumePost(a, "sb-forged", resumeInit); w.Header().Get("Mcp-Session-Id") == "sb-forged" {
		t.Errorf("initialize with a forged id got it")
	}
	if a.sessions.known("sb-forged") {
		t.Errorf("forged id known")
	}
}

// In a team, a session idle on replica A but in use on B is ended on A
// only: the store keeps it, and A or a third replica serves it again.
func TestASessionIdleHereButUsedElsewhereIsKept(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "sb.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := resumeEndpoint(t, db)
	defer a.Close()
	b := resumeEndpoint(t, db)
	defer b.Close()
	sid := resumePost(a, "", resumeInit).Header().Get("Mcp-Session-Id")
	if w := resumePost(b, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); w.Code != 200 {
		t.Fatalf("B: %d", w.Code)
	}
	a.endIdleSessions(time.Now().Add(time.Minute)) // A's sweep: unused on A
	if _, err := db.MCPSession(context.Background(), store.HashToken(sid)); err != nil {
		t.Errorf("store record of a session B is serving: %v", err)
	}
	if w := resumePost(a, sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); w.Code != 200 {
		t.Errorf("the session on A again: %d %s", w.Code, w.Body)
	}
	c := resumeEndpoint(t, db)
	defer c.Close()
	if w := resumePost(c, sid, `{"jsonrpc":"2.0","id":4,"method":"ping"}`); w.Code != 200 {
		t.Errorf("on a third replica: %d %s", w.Code, w.Body)
	}
}

// Requests the endpoint answers itself (tools/list) write the session's
// use to the store too.
func TestRequestsAnsweredHereKeepTheSessionsUse(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "sb.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := resumeEndpoint(t, db)
	defer a.Close()
	sid := resumePost(a, "", resumeInit).Header().Get("Mcp-Session-Id")
	old := time.Now().UTC().Add(-2 * keepEvery)
	a.sessions.mu.Lock()
	a.sessions.live[sid].rec.LastUsed = old
	a.sessions.mu.Unlock()
	if w := resumePost(a, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); w.Code != 200 {
		t.Fatalf("tools/list: %d %s", w.Code, w.Body)
	}
	a.sessions.mu.Lock()
	still := a.sessions.live[sid].rec.LastUsed.Equal(old)
	a.sessions.mu.Unlock()
	if still {
		t.Errorf("tools/list on a session last written %v ago wrote nothing to the store", keepEvery*2)
	}
	if w := resumePost(a, sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); w.Code != 200 {
		t.Fatalf("ping: %d", w.Code)
	}
}
