package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
)

// A tools/call whose arguments are not an object is refused -32602, for
// a session and for a 2026-07-28 client alike, and never reaches the
// server (issue 34, L8).
func TestCallArgumentsMustBeAnObject(t *testing.T) {
	m := newMCPSetup(t)
	c := mcptest.Connect(t, m.base, testMCPToken)
	for _, args := range []any{[]any{1}, "x", 3} {
		a := mcptest.Post(t, m.base, testMCPToken, map[string]string{"Mcp-Session-Id": c.GetSessionId()},
			map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": map[string]any{"name": "alpha__read", "arguments": args}})
		if a.Error == nil || a.Error.Code != mcp.INVALID_PARAMS {
			t.Errorf("session: tools/call with arguments %v = %d %+v %s; want -32602", args, a.Status, a.Error, a.Result)
		}
		modern := mcptest.PostModern(t, m.base, testMCPToken, "tools/call", map[string]any{"name": "alpha__read", "arguments": args}, nil)
		if modern.Error == nil || modern.Error.Code != mcp.INVALID_PARAMS {
			t.Errorf("2026-07-28: tools/call with arguments %v = %d %+v; want -32602", args, modern.Status, modern.Error)
		}
	}
	if n := len(m.e.calls()); n != 0 {
		t.Errorf("%d calls audited; want none reached", n)
	}
}

// Another local user's wrong MCP tokens (all of loopback is one client)
// never lock the owner's agents out: a wrong token is refused 429 once
// the budget is spent, the right one still connects and calls (issue 34,
// L2).
func TestWrongMCPTokensDoNotLockTheOwnerOut(t *testing.T) {
	m := newMCPSetup(t)
	wrong := func() int {
		r, _ := http.NewRequest(http.MethodPost, m.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.Header.Set("Authorization", "Bearer not-the-token")
		r.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 22 {
		wrong()
	}
	if got := wrong(); got != http.StatusTooManyRequests {
		t.Errorf("a wrong token after 22 = %d; want 429", got)
	}
	c := mcptest.Connect(t, m.base, testMCPToken)
	if res, err := c.Call("alpha__read", map[string]any{}); err != nil || res.IsError {
		t.Errorf("the right token after another's 22 wrong ones: call = %v, %v; want it answered", res, err)
	}
}

// An MCP session answers the token that opened it only: another token
// with its id can neither use it nor end it (issue 34, L1).
func TestSessionBoundToItsToken(t *testing.T) {
	m := newMCPSetup(t)
	other := m.e.connectWithProfile("Other agent", "")
	mine := mcptest.Connect(t, m.base, testMCPToken)
	theirs := mcptest.Connect(t, m.base, other)
	use := func(token, session, method string) int {
		r, _ := http.NewRequest(method, m.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`))
		if method == http.MethodDelete {
			r.Body = http.NoBody
		}
		r.Header.Set("Authorization", "Bearer "+token)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Session-Id", session)
		r.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20251125)
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct{ token, session, whose string }{
		{other, mine.GetSessionId(), "the endpoint token's"},
		{testMCPToken, theirs.GetSessionId(), "a client token's"},
	} {
		for _, method := range []string{http.MethodPost, http.MethodDelete} {
			if got := use(tc.token, tc.session, method); got != http.StatusNotFound {
				t.Errorf("%s of %s session with another token = %d; want 404", method, tc.whose, got)
			}
		}
	}
	// Both still work for their own token.
	if names := mine.Names(t); len(names) == 0 {
		t.Error("the endpoint token's session lists nothing after another token's attempts")
	}
	if got := use(other, theirs.GetSessionId(), http.MethodPost); got != http.StatusOK {
		t.Errorf("the client token's own session = %d; want 200", got)
	}
}
