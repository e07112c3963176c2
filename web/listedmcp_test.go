package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
)

// listedSetup is an app with two fixture servers that serve the
// conformance suite's resources and prompts (-listed), verified, every
// entry allowed by the servers' default.
func listedSetup(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t)
	srv, _ := e.liveServer()
	for _, id := range []string{"one", "two"} {
		e.createServer(map[string]any{"id": id, "name": "Server " + id, "transport": "stdio", "command": fixtureBin,
			"args": []string{"-listed", "-tools", "1"}, "default_policy": "allow"})
		if job := e.verify(id); job.Status != "success" {
			t.Fatalf("verify %s = %+v", id, job)
		}
	}
	return e, srv.URL
}

func promptText(res *mcp.GetPromptResult) string {
	var parts []string
	for _, m := range res.Messages {
		if tc, ok := m.Content.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// setListedPolicy sets a prompt's or template's policy with the server
// page's form.
func (b *browser) setListedPolicy(id, kind, key, policy string) {
	b.e.t.Helper()
	wantStatus(b.e.t, b.post("/servers/"+id+"/listed-policy", url.Values{"kind": {kind}, "key": {key}, "policy": {policy}}), http.StatusSeeOther)
}

// Resources and prompts of two servers through /mcp: offered under
// namespaced names and URIs, read and got through the servers, by their
// own names only when one server of the view has them; each profile sees
// its servers' entries; a policy of deny hides an entry, ask waits for a
// person; every read and get is in the call log; a change reaches the
// agents' streams.
func TestMCPResourcesAndPrompts(t *testing.T) {
	e, base := listedSetup(t)
	e.secrets = slices.DeleteFunc(e.secrets, func(s string) bool { return s == testMCPToken }) // the Agents page shows it
	c := mcptest.Connect(t, base, testMCPToken)
	var promptsChanged atomic.Int32
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationPromptsListChanged {
			promptsChanged.Add(1)
		}
	})

	t.Run("lists are namespaced, the servers' entries in the servers' order", func(t *testing.T) {
		prompts := c.PromptNames(t)
		want := []string{"one__test_prompt_with_arguments", "one__test_prompt_with_embedded_resource", "one__test_prompt_with_image", "one__test_simple_prompt",
			"two__test_prompt_with_arguments", "two__test_prompt_with_embedded_resource", "two__test_prompt_with_image", "two__test_simple_prompt"}
		if !slices.Equal(prompts, want) {
			t.Errorf("prompts = %v; want %v", prompts, want)
		}
		resources, templates := c.ResourceURIs(t)
		if !slices.Equal(resources, []string{"switchboard://one/test://static-binary", "switchboard://one/test://static-text",
			"switchboard://two/test://static-binary", "switchboard://two/test://static-text"}) {
			t.Errorf("resources = %v", resources)
		}
		if !slices.Equal(templates, []string{"switchboard://one/test://template/{id}/data", "switchboard://two/test://template/{id}/data"}) {
			t.Errorf("templates = %v", templates)
		}
	})

	t.Run("a prompt and a templated resource go to their server", func(t *testing.T) {
		got, err := c.Prompt("two__test_prompt_with_arguments", map[string]string{"arg1": "left", "arg2": "right"})
		if err != nil || promptText(got) != "Prompt with arguments: arg1='left', arg2='right'" {
			t.Fatalf("prompts/get = %+v, %v", got, err)
		}
		read, err := c.Read("switchboard://one/test://template/7/data")
		if err != nil || len(read.Contents) != 1 {
			t.Fatalf("resources/read = %+v, %v", read, err)
		}
		txt, _ := read.Contents[0].(mcp.TextResourceContents)
		if !strings.Contains(txt.Text, `"id":"7"`) || txt.URI != "switchboard://one/test://template/7/data" {
			t.Errorf("read = %+v; want the server's text for id 7 under the URI asked for", txt)
		}
		calls := e.waitCalls(2)
		if got := calls[1]; got.Method != "prompts/get" || got.ServerID != "two" || got.Tool != "test_prompt_with_arguments" ||
			got.AgentName != "two__test_prompt_with_arguments" || got.Decision != "allowed" || got.Outcome != "ok" {
			t.Errorf("audited get = %+v", got)
		}
		if got := calls[0]; got.Method != "resources/read" || got.ServerID != "one" || got.Tool != "test://template/7/data" || got.Outcome != "ok" {
			t.Errorf("audited read = %+v", got)
		}
	})

	t.Run("a server's own name works only when one server has it", func(t *testing.T) {
		_, err := c.Prompt("test_simple_prompt", nil)
		if err == nil || !strings.Contains(err.Error(), "several servers offer it") || !strings.Contains(err.Error(), "one__test_simple_prompt") {
			t.Errorf("get of a name two servers have = %v; want refused, naming both", err)
		}
		_, err = c.Read("test://nowhere")
		if !errors.Is(err, mcp.ErrResourceNotFound) && (err == nil || !strings.Contains(err.Error(), "no resource is offered")) {
			t.Errorf("read of an unknown URI = %v; want not found", err)
		}
	})

	t.Run("a profile sees its servers' entries only", func(t *testing.T) {
		e := e.in(t)
		e.createProfile(map[string]any{"id": "two-only", "name": "Two only", "mode": "servers", "servers": []string{"two"}})
		e.createProfile(map[string]any{"id": "picked", "name": "Picked", "mode": "tools", "tools": []map[string]string{{"server_id": "one", "tool": "tool_000"}}})
		two := mcptest.Connect(t, base, e.connectWithProfile("Two", "two-only"))
		if got := two.PromptNames(t); len(got) != 4 || !strings.HasPrefix(got[0], "two__") {
			t.Errorf("two-only prompts = %v; want two's four", got)
		}
		got, err := two.Prompt("test_simple_prompt", nil)
		if err != nil || promptText(got) != "This is a simple prompt for testing." {
			t.Errorf("two-only gets its only server's prompt by its own name = %+v, %v", got, err)
		}
		if _, err := two.Read("switchboard://one/test://static-text"); err == nil {
			t.Error("two-only read one's resource; want refused as not offered")
		}
		picked := mcptest.Connect(t, base, e.connectWithProfile("Picked", "picked"))
		if res, tmpl := picked.ResourceURIs(t); len(picked.PromptNames(t)) != 0 || len(res) != 0 || len(tmpl) != 0 {
			t.Errorf("a profile of chosen tools lists resources %v, templates %v; want none", res, tmpl)
		}
		preview := decodeAs[previewAnswer](t, e.api(http.MethodGet, "/api/v1/profiles/two-only/preview", nil))
		if len(preview.Listed) != 7 || preview.Listed[0].ServerID != "two" || preview.Listed[3].Name != "two__test_simple_prompt" || preview.Listed[6].Kind != "resource_template" {
			t.Errorf("two-only preview lists %+v; want two's 4 prompts, 2 resources and 1 template", preview.Listed)
		}
		if preview := decodeAs[previewAnswer](t, e.api(http.MethodGet, "/api/v1/profiles/picked/preview", nil)); len(preview.Listed) != 0 {
			t.Errorf("picked preview lists %+v; want none", preview.Listed)
		}
		page := parseHTML(t, e.loginWithToken().get("/profiles/two-only").Body.String())
		if n := page.Find(testID("preview-listed")).Length(); n != 7 {
			t.Errorf("two-only's page previews %d resources and prompts; want 7", n)
		}
		if last := e.waitCall(3); last.Profile != "two-only" || last.Method != "prompts/get" || last.ServerID != "two" {
			t.Errorf("audited = %+v; want two-only's get", last)
		}
	})

	b := e.login()
	events := e.openTab(b) // opened here: its server closes the app when the test that opened it ends
	t.Run("deny hides a prompt and tells the agents", func(t *testing.T) {
		before := promptsChanged.Load()
		b.in(t).setListedPolicy("one", "prompt", "test_simple_prompt", "deny")
		waitFor(t, 5*time.Second, "prompts/list_changed", func() bool { return promptsChanged.Load() > before })
		if got := c.PromptNames(t); slices.Contains(got, "one__test_simple_prompt") || len(got) != 7 {
			t.Errorf("prompts after deny = %v", got)
		}
		if _, err := c.Prompt("one__test_simple_prompt", nil); err == nil || !strings.Contains(err.Error(), "no prompt is offered") {
			t.Errorf("get of a denied prompt = %v; want not offered", err)
		}
	})

	t.Run("ask waits for a person, who may always allow", func(t *testing.T) {
		e := e.in(t)
		b.in(t).setListedPolicy("one", "prompt", "test_prompt_with_image", "ask")
		done := make(chan error, 1)
		go func() {
			res, err := c.Prompt("one__test_prompt_with_image", nil)
			if err == nil && len(res.Messages) != 2 {
				err = errors.New("want two messages")
			}
			done <- err
		}()
		id := e.waitApproval()
		cards := e.approvals()
		if len(cards) != 1 || cards[0].Tool != "test_prompt_with_image" || cards[0].ServerID != "one" {
			t.Errorf("approvals = %+v", cards)
		}
		events.until(t, 10*time.Second, "the card, saying what the agent wants", func(ev sseEvent) bool {
			return ev.name == "approvals" && strings.Contains(ev.text(), "An agent wants to get the prompt")
		})
		wantStatus(t, e.api(http.MethodPost, "/api/v1/approvals/"+id, map[string]any{"decision": "always_allow"}), http.StatusOK)
		if err := <-done; err != nil {
			t.Fatalf("approved get = %v", err)
		}
		prompts := e.prompts("one").Prompts
		p, _ := findListed(prompts, func(l apiListed) bool { return l.Name == "test_prompt_with_image" })
		if p.Policy != "allow" {
			t.Errorf("policy after always allow = %q; want allow", p.Policy)
		}
		if got := e.waitCall(4); got.Decision != "approved" || got.DecidedBy != "api" || got.Method != "prompts/get" {
			t.Errorf("audited = %+v; want approved through the API", got)
		}
		page := parseHTML(t, b.in(t).get("/agents").Body.String())
		if methods := page.Find(testID("call-method")).Map(func(_ int, s *goquery.Selection) string { return textOf(s) }); len(methods) != 4 ||
			methods[0] != "prompts/get" || methods[2] != "resources/read" {
			t.Errorf("recent calls mark their methods %v; want every read and get marked, newest first", methods)
		}
	})

	t.Run("a 2026-07-28 client lists, reads, and hears on its listen stream", func(t *testing.T) {
		m := mcptest.ConnectAs(t, base, testMCPToken, mcp.ProtocolVersion20260728, mcptest.ModernAgent)
		var heard atomic.Int32
		m.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == mcp.MethodNotificationPromptsListChanged {
				heard.Add(1)
			}
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go m.Listen(ctx, mcp.SubscriptionFilter{PromptsListChanged: true})
		waitFor(t, 5*time.Second, "the listen stream acknowledged", func() bool { return m.Acknowledged.Load() == 1 })
		read, err := m.Read("test://static-binary") // two servers have it
		if err == nil {
			t.Errorf("read of a URI two servers have = %+v; want refused", read)
		}
		read, err = m.Read("switchboard://two/test://static-binary")
		if err != nil || len(read.Contents) != 1 {
			t.Fatalf("read = %+v, %v", read, err)
		}
		if blob, _ := read.Contents[0].(mcp.BlobResourceContents); blob.MIMEType != "image/png" || blob.Blob == "" {
			t.Errorf("binary read = %+v", read.Contents[0])
		}
		b.in(t).setListedPolicy("two", "prompt", "test_simple_prompt", "deny")
		waitFor(t, 5*time.Second, "prompts/list_changed on the listen stream", func() bool { return heard.Load() > 0 })
		if got := m.PromptNames(t); slices.Contains(got, "two__test_simple_prompt") {
			t.Errorf("prompts = %v; want two__test_simple_prompt gone", got)
		}
	})
}
