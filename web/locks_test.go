package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/sealed"
)

// 500 concurrent routed tools/call from one client (all of loopback is
// one) are all answered, right: a connection limit sheds stalled or idle
// connections, never an authenticated request (issue 34, H1). The
// slow-body attack still holds off (TestSlowBodiesCannotHoldTheServer).
func TestConcurrentCallsAllAnswered(t *testing.T) {
	m := newMCPSetup(t)
	c := mcptest.Connect(t, m.base, testMCPToken)
	const calls = 500
	var ok atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan string, calls)
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Call("alpha__read", map[string]any{})
			switch {
			case err != nil:
				errs <- err.Error()
			case res.IsError:
				errs <- mcptest.Text(res)
			default:
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if n := ok.Load(); n != calls {
		var first []string
		for e := range errs {
			if len(first) < 5 {
				first = append(first, e)
			}
		}
		t.Errorf("%d of %d concurrent calls answered; first failures: %q", n, calls, first)
	}
}

// A secret in a remote server's URL query (?api_key=, ?token=) is shown
// masked in the API and on its pages, like env values; sending the masked
// URL back keeps the stored one (issue 34, L9).
func TestSecretInURLQueryIsMasked(t *testing.T) {
	e := newEnv(t)
	const secret = "sk-live-0123456789abcdef"
	e.secrets = append(e.secrets, secret)
	real := "https://mcp.example.com/mcp?api_key=" + secret + "&region=eu"
	got := e.createServer(map[string]any{"id": "remote", "name": "Remote", "transport": "http", "url": real})
	want := "https://mcp.example.com/mcp?api_key=********&region=eu"
	if got.URL != want {
		t.Errorf("API url = %q; want %q", got.URL, want)
	}
	b := e.login()
	for _, page := range []string{"/servers/remote", "/servers/remote/edit", "/servers/remote/confirm"} {
		if body := b.get(page).Body.String(); strings.Contains(body, secret) {
			t.Errorf("%s shows the URL's secret", page)
		}
	}
	body := map[string]any{"id": "remote", "name": "Remote again", "transport": "http", "url": got.URL}
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/remote", body), http.StatusOK)
	stored, err := e.db.Server(t.Context(), "remote")
	if err != nil || stored.URL != real {
		t.Errorf("stored URL after a PUT of the masked one = %q, %v; want the real one kept", stored.URL, err)
	}
}

// A concrete resource has a policy control of its own, on the server page
// and through the API (issue 34 M1): set to deny there, the resource is
// refused with its reason, although an offered template of the same
// server matches its URI; the template still reads every other URI, and
// allowing the resource again on the page brings it back.
func TestResourcePolicyControl(t *testing.T) {
	s := server.NewMCPServer("notes", "1", server.WithResourceCapabilities(false, false))
	read := func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "contents of " + req.Params.URI}}, nil
	}
	s.AddResource(mcp.NewResource("note://secret", "secret"), read)
	s.AddResourceTemplate(mcp.NewResourceTemplate("note://{name}", "note"), read)
	// No tools: the session that reads resources lists none (a modern
	// mcp-go server answers tools/list with a 404 here).
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)

	e := newEnv(t)
	e.createServer(map[string]any{"id": "notes", "name": "Notes", "transport": "http", "url": ts.URL + "/mcp", "default_policy": "allow"})
	if job := e.verify("notes"); job.Status != "success" {
		t.Fatalf("verify = %+v", job)
	}
	srv, _ := e.liveServer()
	c := mcptest.Connect(t, srv.URL, testMCPToken)
	const secret = "switchboard://notes/note://secret"
	if got, err := c.Read(secret); err != nil || len(got.Contents) != 1 {
		t.Fatalf("read of the allowed resource = %+v, %v", got, err)
	}

	type policyAnswer struct {
		Kind string    `json:"kind"`
		Item apiListed `json:"item"`
	}
	rec := e.api(http.MethodPut, "/api/v1/servers/notes/listed/policy", map[string]any{"kind": "resource", "key": "note://secret", "policy": "deny"})
	wantStatus(t, rec, http.StatusOK)
	if got := decodeAs[policyAnswer](t, rec); got.Kind != "resource" || got.Item.URI != "note://secret" || got.Item.Policy != "deny" || got.Item.EffectivePolicy != "deny" {
		t.Errorf("PUT listed/policy answered %+v; want the resource at deny", got)
	}
	if r, _ := findListed(e.resources("notes").Resources, func(l apiListed) bool { return l.URI == "note://secret" }); r.Policy != "deny" {
		t.Errorf("the resource lists at %q; want deny", r.Policy)
	}
	if got, err := c.Read(secret); err == nil || !strings.Contains(err.Error(), "deny") {
		t.Errorf("read of the denied resource = %+v, %v; want refused, saying it is denied", got, err)
	}
	if got, err := c.Read("switchboard://notes/note://other"); err != nil || len(got.Contents) != 1 {
		t.Errorf("read of another URI through the template = %+v, %v; want it read", got, err)
	}

	// Bad requests name their fields; unknown entries are 404.
	rec = e.api(http.MethodPut, "/api/v1/servers/notes/listed/policy", map[string]any{"kind": "tool", "key": "", "policy": "maybe"})
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if got := decodeAs[apiError](t, rec); got.Fields["kind"] == "" || got.Fields["key"] == "" || got.Fields["policy"] == "" {
		t.Errorf("bad request answered %+v; want kind, key and policy named", got)
	}
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/notes/listed/policy", map[string]any{"kind": "resource", "key": "note://none", "policy": "deny"}), http.StatusNotFound)
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/none/listed/policy", map[string]any{"kind": "resource", "key": "note://secret", "policy": "deny"}), http.StatusNotFound)

	// The page shows the resource's control, and its form sets it.
	b := e.login()
	doc := parseHTML(t, b.get("/servers/notes").Body.String())
	form := doc.Find(testID("resources-section")).Find(testID("listed-policy-form"))
	if form.Length() != 1 || form.Find(`select[name="policy"] option[selected]`).AttrOr("value", "") != "deny" {
		t.Errorf("the resources section has %d policy forms, selected %q; want one at deny", form.Length(), form.Find("option[selected]").AttrOr("value", ""))
	}
	b.setListedPolicy("notes", "resource", "note://secret", "allow")
	if got, err := c.Read(secret); err != nil || len(got.Contents) != 1 {
		t.Errorf("read after the page allowed it = %+v, %v", got, err)
	}
}

// An agent that answers its own question with "Always allow" widens no
// one else's access (issue 34 M2): the answer is kept on its client's
// token only (shown, revocable), the tool's policy stays ask for every
// other client, and a token whose profile narrows the view, or one set
// to "dashboard", is never asked in its client at all. Both eras.
func TestInClientAlwaysAllowIsPerClient(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			m := newMCPSetup(t)
			e := m.e
			e.secrets = slices.DeleteFunc(e.secrets, func(s string) bool { return s == testMCPToken }) // the Agents page shows it
			tokA, tokB := e.connectWithProfile("Agent A", "default"), e.connectWithProfile("Agent B", "default")
			clients := func() map[string]apiClient {
				t.Helper()
				out := map[string]apiClient{}
				for _, c := range decodeAs[struct {
					Clients []apiClient `json:"clients"`
				}](t, e.api(http.MethodGet, "/api/v1/clients", nil)).Clients {
					out[c.Name] = c
				}
				return out
			}
			selfA, selfB := &mcptest.Asker{Answer: mcptest.Answering("always_allow")}, &mcptest.Asker{Answer: mcptest.Answering("always_allow")}
			a, b := mcptest.ConnectAsker(t, m.base, tokA, version, selfA), mcptest.ConnectAsker(t, m.base, tokB, version, selfB)
			call := func(c *mcptest.Client) (*mcp.CallToolResult, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "alpha__write", Arguments: map[string]any{"text": "hi"}}})
				return res, mcptest.Refused(res, err) // a refusal is the tool's error
			}

			if res, err := call(a); err != nil || !strings.HasPrefix(mcptest.Text(res), "write ") {
				t.Fatalf("A's call answered Always allow by A itself = %q, %v; want it through", mcptest.Text(res), err)
			}
			if got, _ := selfA.Choices.Load().([]string); strings.Join(got, " ") != "allow_once always_allow deny" {
				t.Errorf("A's question offered %v; want always_allow among them", got)
			}
			if got := e.lastCall(1); got.DecidedBy != "client" || !strings.Contains(got.Reason, "this connected client only") {
				t.Errorf("audited = %+v; want decided in the client, for this client only", got)
			}
			if p, by := e.policyOf("alpha", "write"); p != "ask" {
				t.Errorf("the tool's policy after A's Always allow = %s (set by %q); want ask, for everyone else", p, by)
			}
			if allowed := clients()["Agent A"].Allowed; len(allowed) != 1 || allowed[0].ServerID != "alpha" || allowed[0].Tool != "write" || allowed[0].Pin == "" {
				t.Errorf("A's allowances = %+v; want alpha/write at its pin", allowed)
			}
			if res, err := call(a); err != nil || !strings.HasPrefix(mcptest.Text(res), "write ") || selfA.Asked.Load() != 1 {
				t.Errorf("A's next call = %q, %v, asked %d times; want it through, not asked again", mcptest.Text(res), err, selfA.Asked.Load())
			}
			if got := e.lastCall(2); got.Decision != "approved" || got.DecidedBy != "client allowance" {
				t.Errorf("A's next call audited %+v; want approved by its allowance", got)
			}

			// B is asked: A's answer is not B's.
			selfB.Answer = mcptest.Answering("deny")
			if _, err := call(b); err == nil || selfB.Asked.Load() != 1 {
				t.Errorf("B's call = %v, asked %d; want B asked and refused", err, selfB.Asked.Load())
			}

			// The Agents page shows A's allowance; revoking it asks again.
			br := e.login()
			doc := parseHTML(t, br.get("/agents").Body.String())
			if got := doc.Find(testID("client-allowed")).Text(); !strings.Contains(got, "alpha / write") {
				t.Errorf("the Agents page's allowances = %q; want alpha / write", got)
			}
			idA := clients()["Agent A"].ID
			wantStatus(t, e.api(http.MethodDelete, "/api/v1/clients/"+idA+"/allowed/alpha/write", nil), http.StatusNoContent)
			wantStatus(t, e.api(http.MethodDelete, "/api/v1/clients/"+idA+"/allowed/alpha/write", nil), http.StatusNotFound)
			selfA.Answer = mcptest.Answering("allow_once")
			if _, err := call(a); err != nil || selfA.Asked.Load() != 2 {
				t.Errorf("A's call after the revoke = %v, asked %d times; want asked again", err, selfA.Asked.Load())
			}
			// The page's "Ask again" does the same as the API.
			selfA.Answer = mcptest.Answering("always_allow")
			if _, err := call(a); err != nil || len(clients()["Agent A"].Allowed) != 1 {
				t.Fatalf("A's Always allow again = %v, allowances %+v", err, clients()["Agent A"].Allowed)
			}
			wantStatus(t, br.post("/agents/clients/"+idA+"/allowed/revoke", url.Values{"server_id": {"alpha"}, "tool": {"write"}}), http.StatusSeeOther)
			if got := clients()["Agent A"].Allowed; len(got) != 0 {
				t.Errorf("allowances after the page's Ask again = %+v; want none", got)
			}
			// The page's setting, too.
			wantStatus(t, br.post("/agents/clients/"+idA+"/approvals", url.Values{"approvals": {"dashboard"}}), http.StatusSeeOther)
			if got := clients()["Agent A"]; got.Approvals != "dashboard" {
				t.Errorf("approvals after the page's form = %q; want dashboard", got.Approvals)
			}
			wantStatus(t, br.post("/agents/clients/"+idA+"/approvals", url.Values{"approvals": {""}}), http.StatusSeeOther)
			asked := selfA.Asked.Load()

			// Set to the dashboard only, A is not asked in its client: with
			// no tab open its call is refused, saying why.
			rec := e.api(http.MethodPut, "/api/v1/clients/"+idA, map[string]any{"approvals": "dashboard"})
			wantStatus(t, rec, http.StatusOK)
			if got := decodeAs[apiClient](t, rec); got.Approvals != "dashboard" || got.ApprovalsInClient {
				t.Errorf("PUT answered %+v; want dashboard approvals", got)
			}
			if _, err := call(a); err == nil || !strings.Contains(err.Error(), "approved on the Switchboard dashboard only") || selfA.Asked.Load() != asked {
				t.Errorf("A's call on the dashboard only = %v, asked %d more times; want refused unasked", err, selfA.Asked.Load()-asked)
			}
			rec = e.api(http.MethodPut, "/api/v1/clients/"+idA, map[string]any{"approvals": "anywhere"})
			wantStatus(t, rec, http.StatusUnprocessableEntity)
			if got := decodeAs[apiError](t, rec); got.Fields["approvals"] == "" {
				t.Errorf("a bad setting answered %+v; want the approvals field named", got)
			}

			// A narrowed profile's token is on the dashboard only by default.
			e.createProfile(map[string]any{"id": "alpha-only", "name": "Alpha only", "mode": "servers", "servers": []string{"alpha"}})
			selfN := &mcptest.Asker{Answer: mcptest.Answering("always_allow")}
			n := mcptest.ConnectAsker(t, m.base, e.connectWithProfile("Narrow", "alpha-only"), version, selfN)
			if got := clients()["Narrow"]; got.Approvals != "" || got.ApprovalsInClient {
				t.Errorf("the narrowed client = %+v; want approvals on the dashboard by default", got)
			}
			if _, err := call(n); err == nil || selfN.Asked.Load() != 0 {
				t.Errorf("the narrowed client's call = %v, asked %d times; want refused, never asked in the client", err, selfN.Asked.Load())
			}
			// ... unless the profile says the client.
			rec = e.api(http.MethodPut, "/api/v1/profiles/alpha-only", map[string]any{"name": "Alpha only", "mode": "servers", "servers": []string{"alpha"}, "approvals": "client"})
			wantStatus(t, rec, http.StatusOK)
			selfN.Answer = mcptest.Answering("allow_once")
			if _, err := call(n); err != nil || selfN.Asked.Load() != 1 {
				t.Errorf("the call of a client whose profile asks in the client = %v, asked %d times; want asked, through", err, selfN.Asked.Load())
			}
			rec = e.api(http.MethodPut, "/api/v1/profiles/alpha-only", map[string]any{"name": "Alpha only", "mode": "servers", "servers": []string{"alpha"}, "approvals": "anywhere"})
			wantStatus(t, rec, http.StatusUnprocessableEntity)
			if got := decodeAs[apiError](t, rec); got.Fields["approvals"] == "" {
				t.Errorf("a profile's bad setting answered %+v; want the approvals field named", got)
			}
			if p, _ := e.policyOf("alpha", "write"); p != "ask" {
				t.Errorf("the tool's policy at the end = %s; want ask", p)
			}
		})
	}
}

// damagedStore answers every list of servers with err, as a damaged file
// (store/bolt) or a secret that does not open (store/sealed) does.
// once failing is set.
// damagedStore fails Summaries with err for the requests marked damaged
// (see damagedKey), and only them: the application's own reads (its
// refresher's, on a tick) go through, and log nothing.
type damagedStore struct {
	store.Store
	err error
}

// damagedKey marks the context of a request that finds the store damaged.
type damagedKey struct{}

func (d *damagedStore) Summaries(ctx context.Context) ([]store.Summary, error) {
	if ctx.Value(damagedKey{}) != nil {
		return nil, d.err
	}
	return d.Store.Summaries(ctx)
}

// A damaged database and a secret that does not open are answered with
// what to do, not a generic 500 (issue 34 L5): the person restores a
// backup, or gives the right key.
func TestDamagedStoreSaysWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("store: /x/sb.db is damaged: %w", store.ErrDamaged), "restore a backup"},
		{fmt.Errorf("%w: sealed under another secret key", sealed.ErrSecret), "does not open with the key"},
	} {
		db, err := bolt.Open(filepath.Join(t.TempDir(), "sb.db"), bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		st := &damagedStore{Store: sealed.New(db, testRing).Store(), err: tc.err}
		e := newEnvOn(t, st)
		r := newRequest(http.MethodGet, "/api/v1/servers", nil)
		r.Header.Set("Authorization", "Bearer "+testToken)
		rec := e.serve(r.WithContext(context.WithValue(r.Context(), damagedKey{}, true)))
		wantStatus(t, rec, http.StatusInternalServerError)
		e.logs.ForgetErrors() // the failure is logged as the error it is
		if got := decodeAs[apiError](t, rec); !strings.Contains(got.Error, tc.want) {
			t.Errorf("GET /api/v1/servers on %v = %+v; want it to say %q", tc.err, got, tc.want)
		}
	}
}
