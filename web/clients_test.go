package web_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/store"
)

// mcpStatus is what /mcp at base answers an initialize with token.
func mcpStatus(t *testing.T, base, token string) int {
	t.Helper()
	status, err := mcptest.InitializeStatus(base, token)
	if err != nil {
		t.Fatal(err)
	}
	return status
}

// Each connected client gets its own token, shown once: it reaches /mcp,
// its calls are named in the call log, and revoking it refuses it at once
// while the endpoint's own token and the other clients keep working.
func TestConnectedClientTokens(t *testing.T) {
	m := newMCPSetup(t)
	e := m.e
	// The Agents page shows the endpoint's own token, by design.
	e.secrets = slices.DeleteFunc(e.secrets, func(s string) bool { return s == testMCPToken })
	var token string
	var created apiClient

	if !t.Run("a token, shown once", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodPost, "/api/v1/clients", map[string]any{"name": "Claude Desktop"})
		wantStatus(t, rec, http.StatusCreated)
		body := decodeAs[struct {
			Client apiClient `json:"client"`
			Token  string    `json:"token"`
		}](t, rec)
		token, created = body.Token, body.Client
		if !strings.HasPrefix(token, "sbc_") || created.Name != "Claude Desktop" || created.Fingerprint != store.HashToken(token)[:12] {
			t.Fatalf("connect = %+v; want an sbc_ token and its client with the token's fingerprint", body)
		}
		list := decodeAs[struct {
			Clients []apiClient `json:"clients"`
		}](t, e.api(http.MethodGet, "/api/v1/clients", nil))
		if len(list.Clients) != 1 || !reflect.DeepEqual(list.Clients[0], created) {
			t.Errorf("clients = %+v; want the one made", list.Clients)
		}
		if strings.Contains(e.api(http.MethodGet, "/api/v1/clients", nil).Body.String(), token) {
			t.Error("the token is listed again")
		}
	}) {
		return
	}

	t.Run("its calls are named", func(t *testing.T) {
		e := e.in(t)
		tr, err := transport.NewStreamableHTTP(m.base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			t.Fatal(err)
		}
		c := client.NewClient(tr)
		defer c.Close()
		if err := c.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20251125,
			ClientInfo: mcp.Implementation{Name: "desktop", Version: "1"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "alpha__read"}}); err != nil {
			t.Fatal(err)
		}
		if got := e.waitCall(1); got.ConnectedAs != "Claude Desktop" || got.Client != "desktop 1" {
			t.Errorf("audited call = %+v; want it made with Claude Desktop's token", got)
		}
		if page := e.login().get("/agents").Body.String(); !strings.Contains(page, "token of Claude Desktop") || strings.Contains(page, token) {
			t.Errorf("the Agents page does not name the client in the calls, or shows its token again")
		}
	})

	t.Run("revoked at once, nothing else", func(t *testing.T) {
		e := e.in(t)
		if got := mcpStatus(t, m.base, token); got != http.StatusOK {
			t.Fatalf("the client's token before revoking: %d", got)
		}
		wantStatus(t, e.api(http.MethodDelete, "/api/v1/clients/"+created.ID, nil), http.StatusNoContent)
		if got := mcpStatus(t, m.base, token); got != http.StatusUnauthorized {
			t.Errorf("the revoked token: %d; want 401", got)
		}
		if got := mcpStatus(t, m.base, testMCPToken); got != http.StatusOK {
			t.Errorf("the endpoint's own token after a revocation: %d", got)
		}
		wantStatus(t, e.api(http.MethodDelete, "/api/v1/clients/"+created.ID, nil), http.StatusNotFound)
	})

	t.Run("a name is required", func(t *testing.T) {
		e := e.in(t)
		for _, name := range []string{"", "   ", strings.Repeat("x", 101)} {
			rec := e.api(http.MethodPost, "/api/v1/clients", map[string]any{"name": name})
			wantStatus(t, rec, http.StatusUnprocessableEntity)
			if err := decodeAs[apiError](t, rec); err.Fields["name"] == "" {
				t.Errorf("name %q: %+v; want a field error on name", name, err)
			}
		}
	})

	t.Run("on the Agents page", func(t *testing.T) {
		e := e.in(t)
		b := e.loginWithToken()
		rec := b.post("/agents/clients", url.Values{"name": {"Cursor"}})
		wantStatus(t, rec, http.StatusCreated)
		page := parseHTML(t, rec.Body.String())
		shown := strings.TrimSpace(page.Find(`[data-testid="new-token"]`).Text())
		if !strings.HasPrefix(shown, "sbc_") || mcpStatus(t, m.base, shown) != http.StatusOK {
			t.Fatalf("the new token shown = %q; want a working sbc_ token", shown)
		}
		again := parseHTML(t, b.get("/agents").Body.String())
		if strings.Contains(again.Text(), shown) || again.Find(`[data-testid="connected-client"]`).Length() != 1 {
			t.Errorf("the Agents page after: shows the token again, or not one connected client")
		}
		id := strings.TrimSuffix(strings.TrimPrefix(again.Find(`[data-testid="connected-client"] form`).AttrOr("action", ""), "/agents/clients/"), "/revoke")
		wantStatus(t, b.post("/agents/clients/"+id+"/revoke", nil), http.StatusSeeOther)
		if mcpStatus(t, m.base, shown) != http.StatusUnauthorized {
			t.Error("the token revoked on the page still works")
		}
		rec = b.post("/agents/clients", url.Values{"name": {""}})
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		if parseHTML(t, rec.Body.String()).Find(`[data-testid="client-error"]`).Length() != 1 {
			t.Error("an empty name shows no error on the form")
		}
	})
}

// The Agents page connects a client: it shows the change to the client's
// own config file first, writes it (with a backup, the rest kept) only if
// the file is still as shown, and the token written is the client's own.
func TestConnectFromTheAgentsPage(t *testing.T) {
	home := t.TempDir()
	m := newMCPSetup(t, func(c *webConfig) { c.ImportHome = home })
	e := m.e
	e.secrets = slices.DeleteFunc(e.secrets, func(s string) bool { return s == testMCPToken })
	path := filepath.Join(home, ".cursor", "mcp.json")
	// The last entry holds a secret: the page's diff shows that line (a
	// comma is added after it) but never its values.
	const original = "{\n  // mine\n  \"mcpServers\": {\n    \"linear\": {\"url\": \"https://mcp.linear.app/sse\", \"headers\": {\"Authorization\": \"Bearer lin-secret-123\"}}\n  }\n}\n"
	e.secrets = append(e.secrets, "lin-secret-123")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	b := e.loginWithToken()
	preview := func() (string, string) {
		page := parseHTML(t, b.post("/agents/connect/preview", url.Values{"client": {"cursor"}}).Body.String())
		before, _ := page.Find(`[data-testid="connect-change"] input[name="before"]`).Attr("value")
		return page.Find(`[data-testid="connect-diff"]`).Text(), before
	}

	diff, before := preview()
	if !strings.Contains(diff, `+    "switchboard": {`) || !strings.Contains(diff, "made when you write it") || strings.Contains(diff, "sbc_") {
		t.Fatalf("preview diff = %s", diff)
	}
	if got, _ := os.ReadFile(path); string(got) != original {
		t.Fatal("the preview wrote the file")
	}

	// Changed since the preview: shown again, not written.
	changed := strings.Replace(original, "// mine", "// mine, edited", 1)
	os.WriteFile(path, []byte(changed), 0o600)
	page := parseHTML(t, b.post("/agents/connect", url.Values{"client": {"cursor"}, "before": {before}}).Body.String())
	if page.Find(`[data-testid="connect-diff"]`).Length() != 1 || page.Find(`[data-testid="connect-done"]`).Length() != 0 {
		t.Errorf("a write after the file changed was not shown again")
	}
	if got, _ := os.ReadFile(path); string(got) != changed {
		t.Fatal("a file changed since the preview was written")
	}

	_, before = preview()
	rec := b.post("/agents/connect", url.Values{"client": {"cursor"}, "before": {before}})
	wantStatus(t, rec, http.StatusOK)
	if done := parseHTML(t, rec.Body.String()).Find(`[data-testid="connect-done"]`).Text(); !strings.Contains(done, "Connected Cursor") || !strings.Contains(done, path) {
		t.Errorf("after writing: %q", done)
	}
	written, _ := os.ReadFile(path)
	token := regexp.MustCompile(`sbc_[0-9a-f]{64}`).FindString(string(written))
	if token == "" || !strings.Contains(string(written), "// mine, edited") || !strings.Contains(string(written), "lin-secret-123") {
		t.Fatalf("written file:\n%s", written)
	}
	if got := mcpStatus(t, m.base, token); got != http.StatusOK {
		t.Errorf("/mcp with the written token: %d", got)
	}

	// Connecting again replaces the entry and revokes its token; the page
	// never shows either token.
	diff, before = preview()
	if strings.Contains(diff, token) {
		t.Errorf("the preview shows the written token")
	}
	wantStatus(t, b.post("/agents/connect", url.Values{"client": {"cursor"}, "before": {before}}), http.StatusOK)
	again, _ := os.ReadFile(path)
	if newToken := regexp.MustCompile(`sbc_[0-9a-f]{64}`).FindString(string(again)); newToken == token || mcpStatus(t, m.base, newToken) != http.StatusOK {
		t.Errorf("connecting again wrote %q (was %q)", newToken, token)
	}
	if got := mcpStatus(t, m.base, token); got != http.StatusUnauthorized {
		t.Errorf("the replaced entry's token: %d; want it revoked", got)
	}
	if backups, _ := filepath.Glob(path + ".switchboard-backup-*"); len(backups) != 2 {
		t.Errorf("backups = %v; want one per write", backups)
	}
}

// A connected client's state is what the gateway sees, on the Agents page
// and in the API: never connected until an agent uses its token;
// connected while it holds a session, with the protocol version and the
// clientInfo it declared (shown escaped); last seen once the session
// ended. A 2026-07-28 client, which holds no session, is connected for a
// while after a request. The endpoint's own token is no client's.
func TestClientStateIsReal(t *testing.T) {
	m := newMCPSetup(t)
	e := m.e
	e.secrets = slices.DeleteFunc(e.secrets, func(s string) bool { return s == testMCPToken })
	connect := func(name string) string {
		t.Helper()
		rec := e.api(http.MethodPost, "/api/v1/clients", map[string]any{"name": name})
		wantStatus(t, rec, http.StatusCreated)
		body := decodeAs[struct {
			Client apiClient `json:"client"`
			Token  string    `json:"token"`
		}](t, rec)
		if body.Client.State != "never" || body.Client.LastSeenAt != "" || body.Client.Sessions != 0 {
			t.Errorf("a new client = %+v; want never connected", body.Client)
		}
		return body.Token
	}
	desktop, cli := connect("Claude Desktop"), connect("Codex")
	e.secrets = append(e.secrets, desktop, cli)
	b := e.login()
	// state is the client named name in the API and on the page.
	state := func(t *testing.T, name string) (apiClient, string, *goquery.Selection) {
		t.Helper()
		list := decodeAs[struct {
			Clients []apiClient `json:"clients"`
		}](t, e.in(t).api(http.MethodGet, "/api/v1/clients", nil))
		body := b.in(t).get("/agents").Body.String()
		var li *goquery.Selection
		parseHTML(t, body).Find(testID("connected-client")).Each(func(_ int, s *goquery.Selection) {
			if s.Find("strong").Text() == name {
				li = s
			}
		})
		for _, c := range list.Clients {
			if c.Name == name && li != nil {
				return c, body, li
			}
		}
		t.Fatalf("no client %q in %+v or on the page", name, list.Clients)
		return apiClient{}, "", nil
	}

	t.Run("never connected", func(t *testing.T) {
		mcptest.Connect(t, m.base, testMCPToken) // the endpoint's own token
		for _, name := range []string{"Claude Desktop", "Codex"} {
			c, _, li := state(t, name)
			if c.State != "never" || li.AttrOr("data-state", "") != "never" || textOf(li.Find(testID("client-state"))) != "never connected" {
				t.Errorf("%s = %+v, on the page %q; want never connected", name, c, textOf(li.Find(testID("client-state"))))
			}
		}
	})

	var session string
	t.Run("connected in a session", func(t *testing.T) {
		agent := mcptest.ConnectAs(t, m.base, desktop, mcp.ProtocolVersion20251125, mcp.Implementation{Name: "desk<b>top</b>", Version: "2"})
		session = agent.GetSessionId()
		c, body, li := state(t, "Claude Desktop")
		if c.State != "connected" || c.Sessions != 1 || c.ProtocolVersion != mcp.ProtocolVersion20251125 || c.ClientInfo != "desk<b>top</b> 2" || c.LastSeenAt == "" {
			t.Errorf("the client in a session = %+v; want connected, with its protocol and clientInfo", c)
		}
		if got := textOf(li.Find(testID("client-state"))); got != "connected now" {
			t.Errorf("on the page: %q; want connected now", got)
		}
		if got := textOf(li.Find(testID("client-declared"))); !strings.Contains(got, "desk<b>top</b> 2") || !strings.Contains(got, "MCP "+mcp.ProtocolVersion20251125) {
			t.Errorf("what it declared, on the page: %q", got)
		}
		if strings.Contains(body, "desk<b>") {
			t.Error("the clientInfo is not escaped")
		}
		if c, _, _ := state(t, "Codex"); c.State != "never" {
			t.Errorf("Codex = %+v; another client's session made it connected", c)
		}
	})

	t.Run("last seen after the session ended", func(t *testing.T) {
		if session == "" {
			t.Skip("no session")
		}
		// The agent ends its session. (mcp-go's client.Close sends its
		// DELETE without the Authorization header: refused.)
		before := time.Now()
		r := newRequest(http.MethodDelete, "/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+desktop)
		r.Header.Set("Mcp-Session-Id", session)
		wantStatus(t, e.in(t).serve(r), http.StatusOK)
		c, _, li := state(t, "Claude Desktop")
		seen, err := time.Parse(time.RFC3339Nano, c.LastSeenAt)
		if c.State != "seen" || c.Sessions != 0 || err != nil || seen.Before(before.Add(-time.Second)) || c.ClientInfo != "desk<b>top</b> 2" {
			t.Errorf("after the session ended = %+v; want seen just now, what it declared kept", c)
		}
		if got := textOf(li.Find(testID("client-state"))); !strings.HasPrefix(got, "last seen ") || li.AttrOr("data-state", "") != "seen" {
			t.Errorf("on the page: %q; want last seen …", got)
		}
	})

	t.Run("a stateless client", func(t *testing.T) {
		mcptest.ConnectAs(t, m.base, cli, mcp.ProtocolVersion20260728, mcp.Implementation{Name: "codex", Version: "1"})
		c, _, _ := state(t, "Codex")
		if c.State != "connected" || c.ProtocolVersion != mcp.ProtocolVersion20260728 || c.ClientInfo != "codex 1" || c.Sessions != 0 {
			t.Errorf("after a 2026-07-28 request = %+v; want connected, with its protocol and clientInfo", c)
		}
	})
}

// The Agents page says, per client whose config is here, what reaches its
// agent around the gate; connecting from the page moves the entries of the
// servers Switchboard has behind it in the same write (issue 37 #1), and
// the page then says what still goes around.
func TestTheAgentsPageSaysWhatReachesAClientAroundTheGate(t *testing.T) {
	home := t.TempDir()
	m := newMCPSetup(t, func(c *webConfig) { c.ImportHome = home })
	e := m.e
	e.secrets = slices.DeleteFunc(e.secrets, func(s string) bool { return s == testMCPToken })
	path := filepath.Join(home, ".claude.json")
	const original = `{
  "mcpServers": {
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"},
    "notes": {"command": "notes-mcp"}
  },
  "projects": {"/home/me/app": {"mcpServers": {"gh": {"type": "http", "url": "https://api.githubcopilot.com/mcp"}}}}
}
`
	if err := os.WriteFile(path, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	e.createServer(map[string]any{"id": "github", "transport": "http", "url": "https://api.githubcopilot.com/mcp/"})
	b := e.loginWithToken()
	gate := func(doc *goquery.Document) (state string, entries map[string]string) {
		g := doc.Find(`[data-testid="client-gate"][data-client="claude-code"]`)
		state, _ = g.Attr("data-state")
		entries = map[string]string{}
		g.Find(`[data-testid="around-entry"]`).Each(func(_ int, s *goquery.Selection) {
			entries[s.Find("code").First().Text()], _ = s.Attr("data-server")
		})
		return state, entries
	}
	state, entries := gate(parseHTML(t, b.get("/agents").Body.String()))
	if state != "direct" || len(entries) != 3 || entries["github"] != "github" || entries["gh"] != "github" || entries["notes"] != "" {
		t.Fatalf("before connecting: %s %v; want direct, github and gh as Switchboard's github, notes not in Switchboard", state, entries)
	}
	if doc := parseHTML(t, b.get("/agents").Body.String()); doc.Find(`[data-testid="client-gate"][data-client="cursor"]`).Length() != 0 {
		t.Error("a client without a config here is listed")
	}

	page := parseHTML(t, b.post("/agents/connect/preview", url.Values{"client": {"claude-code"}}).Body.String())
	movedText := page.Find(`[data-testid="connect-change"] [data-testid="connect-moved"]`).Text()
	if !strings.Contains(movedText, "github") || !strings.Contains(movedText, "gh") || !strings.Contains(movedText, "/home/me/app") || strings.Contains(movedText, "notes") {
		t.Errorf("the preview's moved entries: %q", movedText)
	}
	diff := page.Find(`[data-testid="connect-diff"]`).Text()
	if !strings.Contains(diff, `-    "github"`) || !strings.Contains(diff, `+    "switchboard"`) {
		t.Errorf("the preview's diff does not show the move:\n%s", diff)
	}
	before, _ := page.Find(`[data-testid="connect-change"] input[name="before"]`).Attr("value")
	rec := b.post("/agents/connect", url.Values{"client": {"claude-code"}, "before": {before}})
	wantStatus(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	if done := doc.Find(`[data-testid="connect-done"]`).Text(); !strings.Contains(done, "Moved behind Switchboard") || !strings.Contains(done, path+".switchboard-moved") {
		t.Errorf("after writing: %q", done)
	}
	state, entries = gate(doc)
	if state != "around" || len(entries) != 1 || entries["notes"] != "" {
		t.Errorf("after connecting: %s %v; want notes alone around the gate", state, entries)
	}
	written, _ := os.ReadFile(path)
	if strings.Contains(string(written), "githubcopilot") {
		t.Fatalf("the moved entries are still in the file:\n%s", written)
	}
	if kept, err := os.ReadFile(path + ".switchboard-moved"); err != nil || !strings.Contains(string(kept), "githubcopilot") {
		t.Errorf("the moved entries are not kept: %v\n%s", err, kept)
	}

	// Once notes is in Switchboard too, connecting again moves it: nothing
	// goes around the gate.
	e.createServer(map[string]any{"id": "notes", "transport": "stdio", "command": "notes-mcp"})
	page = parseHTML(t, b.post("/agents/connect/preview", url.Values{"client": {"claude-code"}}).Body.String())
	before, _ = page.Find(`[data-testid="connect-change"] input[name="before"]`).Attr("value")
	state, _ = gate(parseHTML(t, b.post("/agents/connect", url.Values{"client": {"claude-code"}, "before": {before}}).Body.String()))
	if state != "gated" {
		t.Errorf("after moving notes too: %s; want gated", state)
	}
}
