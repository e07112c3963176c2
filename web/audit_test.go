package web_test

import (
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/store"
)

// A call's arguments are not recorded by default: the call log keeps
// their hash, and the Agents page says where to turn the recording on.
// Turned on from the server page, a routed tools/call through /mcp keeps
// them, redacted (the value of a secret-looking key, the server's own env
// secret value) and capped at 4 KiB, shown escaped on the Agents page and
// given by GET /api/v1/calls; neither secret appears in any answer or log
// line (env.serve and the log recorder check every one). The API sets it
// too: a PUT that leaves it out keeps it.
func TestAuditArguments(t *testing.T) {
	e := newEnv(t, func(c *webConfig) { c.MCP.Pool = discovery.PoolConfig{Idle: 700 * time.Millisecond} })
	// The Agents page shows the endpoint's own token, by design.
	e.secrets = slices.DeleteFunc(e.secrets, func(s string) bool { return s == testMCPToken })
	const envSecret, argSecret = "env-secret-value-4711", "arg-secret-value-0815"
	e.secrets = append(e.secrets, envSecret, argSecret)
	srv, _ := e.liveServer()
	file := filepath.Join(t.TempDir(), "tools.json")
	writeTools(t, file, "1", "search")
	e.createServer(map[string]any{"id": "files", "name": "Files", "transport": "stdio", "command": fixtureBin,
		"args": []string{"-tools-file", file}, "env": map[string]string{"API_TOKEN": envSecret}})
	if job := e.verify("files"); job.Status != "success" {
		t.Fatalf("verify = %+v", job)
	}
	e.setPolicy("files", "search", "allow")
	agent := mcptest.Connect(t, srv.URL, testMCPToken)
	call := func(t *testing.T, args map[string]any) {
		t.Helper()
		res, err := agent.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "files__search", Arguments: args}})
		if err != nil || res.IsError {
			t.Fatalf("call files__search = %+v, %v", res, err)
		}
	}
	b := e.login()
	hostile := "<script>alert(1)</script>"

	t.Run("not recorded by default", func(t *testing.T) {
		e := e.in(t)
		if s := e.server("files"); s.RecordArgs == nil || *s.RecordArgs {
			t.Fatalf("record_arguments of a new server = %v; want false", s.RecordArgs)
		}
		call(t, map[string]any{"query": hostile, "api_key": argSecret})
		if got := e.waitCall(1); got.Arguments != "" || got.ArgumentsTruncated || len(got.ArgsHash) != 64 {
			t.Errorf("audited call = %+v; want only the hash", got)
		}
		page := parseHTML(t, b.in(t).get("/agents").Body.String())
		off := mustOne(t, page, testID("call-args-off"))
		if href := off.Find("a").AttrOr("href", ""); href != "/servers/files#record-arguments" || page.Find(testID("call-args")).Length() != 0 {
			t.Errorf("the call row: link %q, %d arguments; want a link to the server's setting and none", href, page.Find(testID("call-args")).Length())
		}
		server := parseHTML(t, b.in(t).get("/servers/files").Body.String())
		if !strings.Contains(testIDText(t, server, "record-arguments-state"), "not recorded") || server.Find(testID("record-arguments-on")).Length() != 1 {
			t.Errorf("the server page says %q; want not recorded, and a button to turn it on", testIDText(t, server, "record-arguments-state"))
		}
	})

	t.Run("turned on from the server page", func(t *testing.T) {
		e := e.in(t)
		rec := b.in(t).post("/servers/files/record-arguments", url.Values{"record_arguments": {"on"}})
		wantStatus(t, rec, http.StatusSeeOther)
		if loc := rec.Header().Get("Location"); loc != "/servers/files#record-arguments" {
			t.Errorf("redirect to %q", loc)
		}
		if s := e.server("files"); s.RecordArgs == nil || !*s.RecordArgs {
			t.Errorf("record_arguments after turning it on = %v; want true", s.RecordArgs)
		}
		server := parseHTML(t, b.in(t).get("/servers/files").Body.String())
		if !strings.HasPrefix(testIDText(t, server, "record-arguments-state"), "recorded") || server.Find(testID("record-arguments-off")).Length() != 1 {
			t.Errorf("the server page says %q; want recorded, and a button to turn it off", testIDText(t, server, "record-arguments-state"))
		}
		wantStatus(t, b.in(t).post("/servers/nope/record-arguments", url.Values{"record_arguments": {"on"}}), http.StatusNotFound)
	})

	t.Run("a routed call keeps its arguments, redacted and capped", func(t *testing.T) {
		e := e.in(t)
		call(t, map[string]any{"query": hostile, "api_key": argSecret, "note": "uses " + envSecret, "n": 7})
		call(t, map[string]any{"blob": strings.Repeat("x", store.MaxCallArguments), "password": argSecret})
		calls := e.waitCalls(3)
		const want = `{"api_key":"[redacted]","n":7,"note":"uses [redacted]","query":"<script>alert(1)</script>"}`
		if got := calls[1]; got.Arguments != want || got.ArgumentsTruncated || got.ServerID != "files" {
			t.Errorf("the call's record: %q, truncated %v; want %s, whole", got.Arguments, got.ArgumentsTruncated, want)
		}
		if got := calls[0]; !got.ArgumentsTruncated || len(got.Arguments) != store.MaxCallArguments || !strings.HasPrefix(got.Arguments, `{"blob":"xxx`) {
			t.Errorf("the long call's record: %d bytes, truncated %v; want %d, truncated", len(got.Arguments), got.ArgumentsTruncated, store.MaxCallArguments)
		}
		body := b.in(t).get("/agents").Body.String()
		page := parseHTML(t, body)
		shown := page.Find(testID("call-args"))
		if shown.Length() != 2 || shown.Eq(1).AttrOr("open", "none") != "none" || strings.TrimSpace(shown.Eq(1).Find("pre").Text()) != want {
			t.Errorf("the page shows %d recorded arguments; want 2, collapsed, the first %q", shown.Length(), strings.TrimSpace(shown.Eq(1).Find("pre").Text()))
		}
		if strings.Contains(body, hostile) || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Error("the arguments are not shown escaped")
		}
		if shown.Eq(0).Find(testID("call-args-truncated")).Length() != 1 || shown.Eq(1).Find(testID("call-args-truncated")).Length() != 0 {
			t.Error("the page does not say which arguments were cut")
		}
		fragment := b.in(t).htmx(http.MethodGet, "/fragments/calls", nil)
		if parseHTML(t, fragment.Body.String()).Find(testID("call-args")).Length() != 2 {
			t.Error("the live calls fragment does not show the arguments")
		}
	})

	t.Run("set through the API", func(t *testing.T) {
		e := e.in(t)
		put := func(set map[string]any) apiServer {
			t.Helper()
			body := map[string]any{"id": "files", "name": "Files", "transport": "stdio", "command": fixtureBin,
				"args": []string{"-tools-file", file}, "env": map[string]string{"API_TOKEN": "********"}}
			for k, v := range set {
				body[k] = v
			}
			rec := e.api(http.MethodPut, "/api/v1/servers/files", body)
			wantStatus(t, rec, http.StatusOK)
			return decodeAs[apiServer](t, rec)
		}
		if s := put(map[string]any{"name": "Files again"}); s.RecordArgs == nil || !*s.RecordArgs {
			t.Errorf("record_arguments after a PUT without it = %v; want kept (true)", s.RecordArgs)
		}
		if s := put(map[string]any{"record_arguments": false}); s.RecordArgs == nil || *s.RecordArgs {
			t.Fatalf("record_arguments after a PUT of false = %v", s.RecordArgs)
		}
		call(t, map[string]any{"api_key": argSecret})
		if got := e.waitCalls(4)[0]; got.Arguments != "" {
			t.Errorf("a call after turning it off kept %q", got.Arguments)
		}
	})
}

// What a server may ask of the calling agents is allowed by default, and
// set per kind on its page (What it may ask agents) or through the API
// ("asks"), a kind left out of a PUT keeping its policy; a wrong policy
// is a field error that changes nothing.
func TestServerAsksSettings(t *testing.T) {
	e := newEnv(t)
	e.createServer(map[string]any{"id": "files", "name": "Files", "transport": "stdio", "command": fixtureBin})
	if got := e.server("files").Asks; got["sampling"] != "allow" || got["elicitation"] != "allow" || got["roots"] != "allow" {
		t.Errorf("a new server's asks = %v; want allow for each", got)
	}
	b := e.login()
	page := parseHTML(t, b.get("/servers/files").Body.String())
	for _, kind := range []string{"sampling", "elicitation", "roots"} {
		if v := page.Find(testID("ask-"+kind)+" option[selected]").AttrOr("value", ""); v != "allow" {
			t.Errorf("the page's %s policy = %q; want allow", kind, v)
		}
	}
	rec := b.post("/servers/files/asks", url.Values{"ask_sampling": {"deny"}, "ask_elicitation": {"ask"}, "ask_roots": {"allow"}})
	if loc := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || loc != "/servers/files#asks" {
		t.Fatalf("POST asks = %d %q; want 303 to the section", rec.Code, loc)
	}
	if got := e.server("files").Asks; got["sampling"] != "deny" || got["elicitation"] != "ask" || got["roots"] != "allow" {
		t.Errorf("asks after the form = %v; want sampling deny, elicitation ask, roots allow", got)
	}
	page = parseHTML(t, b.get("/servers/files").Body.String())
	if v := page.Find(testID("ask-sampling")+" option[selected]").AttrOr("value", ""); v != "deny" {
		t.Errorf("the page's sampling policy after the form = %q; want deny", v)
	}
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/files", map[string]any{"transport": "stdio", "command": fixtureBin, "asks": map[string]string{"roots": "deny"}}), http.StatusOK)
	if got := e.server("files").Asks; got["sampling"] != "deny" || got["elicitation"] != "ask" || got["roots"] != "deny" {
		t.Errorf("asks after a PUT of roots only = %v; want roots deny, the others kept", got)
	}
	rec = e.api(http.MethodPut, "/api/v1/servers/files", map[string]any{"transport": "stdio", "command": fixtureBin, "asks": map[string]string{"sampling": "sometimes"}})
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if msg := decodeAs[apiError](t, rec).Fields["asks.sampling"]; msg == "" {
		t.Errorf("a PUT of a wrong policy: fields = %v; want asks.sampling", decodeAs[apiError](t, rec).Fields)
	}
	if got := e.server("files").Asks; got["sampling"] != "deny" {
		t.Errorf("asks after a refused PUT = %v; want unchanged", got)
	}
}

// The call log narrows to a server, a client, a decision or an outcome,
// and its filters offer the values the kept calls have; a live refresh
// keeps the filter (the section sends the form along).
func TestTheCallLogFilters(t *testing.T) {
	e := newEnv(t)
	b := e.login()
	for _, id := range []string{"alpha", "beta"} {
		body := fixtureServer(id)
		body["default_policy"] = "allow"
		e.createServer(body)
		if job := e.verify(id); job.Status != "success" {
			t.Fatalf("verify %s = %+v", id, job)
		}
	}
	e.setPolicy("beta", "tool_000", "deny")
	srv, _ := e.liveServer()
	c := mcptest.Connect(t, srv.URL, testMCPToken)
	if err := mcptest.Refused(c.Call("alpha__tool_000", map[string]any{})); err != nil {
		t.Fatalf("alpha's call = %v", err)
	}
	_ = mcptest.Refused(c.Call("beta__tool_000", map[string]any{}))
	e.waitCalls(2)

	rows := func(query string) []string {
		t.Helper()
		page := parseHTML(t, b.htmx(http.MethodGet, "/fragments/calls"+query, nil).Body.String())
		var out []string
		page.Find(testID("call-row")).Each(func(_ int, r *goquery.Selection) { out = append(out, strings.Join(strings.Fields(r.Text()), " ")) })
		return out
	}
	if got := rows(""); len(got) != 2 {
		t.Fatalf("unfiltered rows %q; want both calls", got)
	}
	for query, want := range map[string]string{"?server=beta": "beta", "?decision=denied": "beta", "?outcome=ok": "alpha"} {
		if got := rows(query); len(got) != 1 || !strings.Contains(got[0], want) {
			t.Errorf("rows of %s = %q; want only %s's call", query, got, want)
		}
	}
	// The page shows the endpoint's shared token (behind a reveal).
	e.secrets = slices.DeleteFunc(e.secrets, func(s string) bool { return s == testMCPToken })
	page := parseHTML(t, b.get("/agents").Body.String())
	if opts := page.Find(`[data-testid="calls-server"] option`).Length(); opts != 3 { // every server, alpha, beta
		t.Errorf("the server filter has %d options; want every server, alpha and beta", opts)
	}
	if inc := page.Find(`[data-testid="calls"]`).AttrOr("hx-include", ""); inc != "#calls-filter" {
		t.Errorf("the live refresh includes %q; want the filter form", inc)
	}
	if opts := page.Find(`[data-testid="calls-by"] option`).Length(); opts < 2 { // anyone, and who decided
		t.Errorf("the decided-by filter has %d options; want anyone and those who decided", opts)
	}
	if got, none := rows("?by=policy"), rows("?by=ann@example.com"); len(got) != 2 || len(none) != 0 {
		t.Errorf("decided by policy: %d rows, by ann: %d; want both calls, and none", len(got), len(none))
	}
	if got := rows("?server=alpha&decision=denied"); len(got) != 0 {
		t.Errorf("rows matching nothing = %q; want none", got)
	}
}
