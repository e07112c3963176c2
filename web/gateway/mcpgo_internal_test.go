package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// What the endpoint assumes of mcp-go, each pinned by a test that fails
// on an mcp-go that no longer does it (issue 35, step 4; more to come
// here as the endpoint's assumptions are gathered).

// endIdleSessions ends an idle agent session by handing mcp-go's
// handler a DELETE with the session's id, as the agent's own DELETE
// would. It assumes that mcp-go then asks the endpoint's session id
// manager to terminate it (so the next request on it is 404) and forgets
// the session itself (no notification can reach it).
func TestMCPGoEndsASessionOnDelete(t *testing.T) {
	ids := &recordingIDs{terminated: map[string]bool{}}
	mcpSrv := server.NewMCPServer("assumption", "1", server.WithToolCapabilities(false))
	h := server.NewStreamableHTTPServer(mcpSrv, server.WithSessionIdManager(ids))
	ts := httptest.NewServer(h)
	defer ts.Close()
	tr, err := transport.NewStreamableHTTP(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20251125,
		ClientInfo: mcp.Implementation{Name: "agent", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	id := tr.GetSessionId()
	if id == "" {
		t.Fatal("mcp-go gave the session no id")
	}
	request := func(method, body string) int {
		r := httptest.NewRequest(method, "/mcp", strings.NewReader(body))
		r.Header.Set(server.HeaderKeySessionID, id)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	const ping = `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	if code := request(http.MethodPost, ping); code != http.StatusOK {
		t.Fatalf("a ping on the live session = %d; want 200", code)
	}
	if err := mcpSrv.SendNotificationToSpecificClient(id, "notifications/message", nil); err != nil {
		t.Fatalf("a notification to the live session = %v", err)
	}
	if code := request(http.MethodDelete, ""); code != http.StatusOK {
		t.Fatalf("DELETE of the session = %d; want 200", code)
	}
	if !ids.wasTerminated(id) {
		t.Error("mcp-go did not ask the session id manager to terminate the session")
	}
	if code := request(http.MethodPost, ping); code != http.StatusNotFound {
		t.Errorf("a ping on the session after its DELETE = %d; want 404", code)
	}
	if err := mcpSrv.SendNotificationToSpecificClient(id, "notifications/message", nil); err == nil {
		t.Error("a notification reached the session after its DELETE; want mcp-go to have forgotten it")
	}
}

// recordingIDs is a session id manager that remembers what it was asked
// to terminate.
type recordingIDs struct {
	mu         sync.Mutex
	n          int
	terminated map[string]bool
}

func (r *recordingIDs) Generate() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return fmt.Sprintf("session-%d", r.n)
}

func (r *recordingIDs) Validate(id string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.terminated[id], nil
}

func (r *recordingIDs) Terminate(id string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.terminated[id] = true
	return false, nil
}

func (r *recordingIDs) wasTerminated(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.terminated[id]
}
