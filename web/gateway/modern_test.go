package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
)

// What /mcp answers itself for a 2026-07-28 client (tools/list, a call of
// a tool not offered) is refused exactly as mcp-go refuses what it answers
// (prompts/list, prompts/get): same HTTP status, same JSON-RPC error and
// data, the request's id; and a valid list carries the same result fields.
func TestMCPModernChecksAsMCPGo(t *testing.T) {
	m := newMCPSetup(t)
	meta := func(msg map[string]any) map[string]any {
		return msg["params"].(map[string]any)["_meta"].(map[string]any)
	}
	for _, tc := range []struct {
		name string
		edit func(header map[string]string, msg map[string]any)
		// want is the status and error code both must answer.
		want, code int
	}{
		{name: "valid", want: http.StatusOK},
		{name: "no MCP-Protocol-Version header", edit: func(h map[string]string, _ map[string]any) { delete(h, "Mcp-Protocol-Version") },
			want: http.StatusBadRequest, code: mcp.HEADER_MISMATCH},
		{name: "no protocol version in _meta", edit: func(_ map[string]string, msg map[string]any) { delete(meta(msg), mcp.MetaKeyProtocolVersion) },
			want: http.StatusBadRequest, code: mcp.INVALID_PARAMS},
		{name: "header and _meta disagree", edit: func(h map[string]string, _ map[string]any) { h["Mcp-Protocol-Version"] = mcp.ProtocolVersion20251125 },
			want: http.StatusBadRequest, code: mcp.HEADER_MISMATCH},
		{name: "a version not served", edit: func(h map[string]string, msg map[string]any) {
			h["Mcp-Protocol-Version"] = "2099-01-01"
			meta(msg)[mcp.MetaKeyProtocolVersion] = "2099-01-01"
		}, want: http.StatusBadRequest, code: mcp.UNSUPPORTED_PROTOCOL_VERSION},
		{name: "no client capabilities", edit: func(_ map[string]string, msg map[string]any) { delete(meta(msg), mcp.MetaKeyClientCapabilities) },
			want: http.StatusBadRequest, code: mcp.INVALID_PARAMS},
		{name: "client capabilities not an object", edit: func(_ map[string]string, msg map[string]any) { meta(msg)[mcp.MetaKeyClientCapabilities] = "all" },
			want: http.StatusBadRequest, code: mcp.INVALID_PARAMS},
		{name: "no Mcp-Method", edit: func(h map[string]string, _ map[string]any) { delete(h, "Mcp-Method") },
			want: http.StatusBadRequest, code: mcp.HEADER_MISMATCH},
		{name: "Mcp-Method of another method", edit: func(h map[string]string, _ map[string]any) { h["Mcp-Method"] = "resources/list" },
			want: http.StatusBadRequest, code: mcp.HEADER_MISMATCH},
		{name: "Last-Event-ID", edit: func(h map[string]string, _ map[string]any) { h["Last-Event-ID"] = "1" },
			want: http.StatusBadRequest, code: mcp.HEADER_MISMATCH},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours := mcptest.PostModern(t, m.base, testMCPToken, "tools/list", nil, tc.edit)
			theirs := mcptest.PostModern(t, m.base, testMCPToken, "prompts/list", nil, tc.edit)
			compareAnswers(t, ours, theirs, tc.want, tc.code)
			if tc.code == 0 {
				for _, field := range []string{"_meta", "resultType", "ttlMs", "cacheScope"} {
					if !bytes.Equal(ours.Result[field], theirs.Result[field]) {
						t.Errorf("tools/list result %s = %s; want %s, as mcp-go's prompts/list has it", field, ours.Result[field], theirs.Result[field])
					}
				}
			}
		})
	}
	// A call names its tool in Mcp-Name, as prompts/get names its prompt.
	for _, tc := range []struct {
		name string
		edit func(header map[string]string, msg map[string]any)
	}{
		{name: "no Mcp-Name", edit: func(h map[string]string, _ map[string]any) { delete(h, "Mcp-Name") }},
		{name: "Mcp-Name of another", edit: func(h map[string]string, _ map[string]any) { h["Mcp-Name"] = "other" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours := mcptest.PostModern(t, m.base, testMCPToken, "tools/call", map[string]any{"name": "alpha__nope"}, tc.edit)
			theirs := mcptest.PostModern(t, m.base, testMCPToken, "prompts/get", map[string]any{"name": "nope"}, tc.edit)
			compareAnswers(t, ours, theirs, http.StatusBadRequest, mcp.HEADER_MISMATCH)
		})
	}
	if calls := m.e.calls(); len(calls) != 0 {
		t.Errorf("audited calls = %v; want none: no call was valid", calls)
	}
}

func compareAnswers(t *testing.T, ours, theirs mcptest.Answer, status, code int) {
	t.Helper()
	if ours.Status != status || theirs.Status != status {
		t.Errorf("status: /mcp's own answer %d, mcp-go's %d; want %d", ours.Status, theirs.Status, status)
	}
	if string(ours.ID) != "41" || string(theirs.ID) != "41" {
		t.Errorf("id: /mcp's own answer %s, mcp-go's %s; want the request's, 41", ours.ID, theirs.ID)
	}
	switch {
	case code == 0 && (ours.Error != nil || theirs.Error != nil):
		t.Errorf("errors: /mcp's own %+v, mcp-go's %+v; want none", ours.Error, theirs.Error)
	case code == 0:
	case ours.Error == nil || theirs.Error == nil:
		t.Errorf("errors: /mcp's own %+v, mcp-go's %+v; want code %d", ours.Error, theirs.Error, code)
	case ours.Error.Code != code || theirs.Error.Code != code || !bytes.Equal(ours.Error.Data, theirs.Error.Data):
		t.Errorf("errors: /mcp's own %d %s, mcp-go's %d %s; want code %d, the same data", ours.Error.Code, ours.Error.Data, theirs.Error.Code, theirs.Error.Data, code)
	}
}

// Calls from a 2026-07-28 client and from a session run at once, as agents
// do; each is audited under its own name.
func TestMCPModernAndSessionCallsTogether(t *testing.T) {
	m := newMCPSetup(t)
	old := mcptest.Connect(t, m.base, testMCPToken)
	c := mcptest.ConnectAs(t, m.base, testMCPToken, mcp.ProtocolVersion20260728, mcptest.ModernAgent)
	var wg sync.WaitGroup
	for i := range 10 {
		for _, cl := range []*mcptest.Client{old, c} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if res, err := cl.Call("beta__read", map[string]any{"i": i}); err != nil || !strings.HasPrefix(mcptest.Text(res), "read ") {
					t.Errorf("call %d = %q, %v", i, mcptest.Text(res), err)
				}
			}()
		}
	}
	wg.Wait()
	clients := map[string]int{}
	for _, call := range m.e.waitCalls(20) {
		clients[call.Session+" "+call.Client]++
	}
	if len(clients) != 2 || clients["stateless modern-agent 0.2"] != 10 {
		t.Errorf("audited calls by session and client = %v; want 10 stateless of modern-agent 0.2 and 10 of the session", clients)
	}
}

// A subscriptions/listen stream ends when the endpoint closes, as a
// session's stream does, so that it holds no shutdown up.
func TestMCPListenEndsWithTheEndpoint(t *testing.T) {
	e := newEnv(t)
	c := mcptest.ConnectAs(t, e.base, testMCPToken, mcp.ProtocolVersion20260728, mcptest.ModernAgent)
	ended := make(chan error, 1)
	go func() { ended <- c.Listen(context.Background(), mcp.SubscriptionFilter{ToolsListChanged: true}) }()
	waitFor(t, 5*time.Second, "the listen stream acknowledged", func() bool { return c.Acknowledged.Load() == 1 })
	start := time.Now()
	e.ep.Close()
	select {
	case <-ended:
		if d := time.Since(start); d > time.Second {
			t.Errorf("the listen stream ended %s after Close; want it within serve's 1 s shutdown deadline", d)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the listen stream is still open 2s after the endpoint closed")
	}
}
