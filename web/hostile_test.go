package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The tests in this file take hostile tool data (hostile-servers.md
// #26–#34) from the fixture through the whole app: Verify, the store, the
// JSON API and the review page.

// apiTools returns a server's tools from the API, by name.
func (e *env) apiTools(id string) map[string]apiTool {
	e.t.Helper()
	rec := e.api(http.MethodGet, "/api/v1/servers/"+id+"/tools", nil)
	wantStatus(e.t, rec, http.StatusOK)
	out := map[string]apiTool{}
	for _, tool := range decodeAs[toolsAnswer](e.t, rec).Tools {
		out[tool.Name] = tool
	}
	return out
}

// verifyFixture registers the fixture with args and verifies it; the job
// must succeed.
func (e *env) verifyFixture(id string, args ...string) {
	e.t.Helper()
	body := fixtureServer(id)
	body["args"] = args
	e.createServer(body)
	if job := e.verify(id); job.Status != "success" {
		e.t.Fatalf("verify %s: %+v", id, job)
	}
}

// setPolicy sets a policy through the API and returns the tool.
func (e *env) setPolicy(id, tool, policy string) apiTool {
	e.t.Helper()
	rec := e.api(http.MethodPut, "/api/v1/servers/"+id+"/tools/"+url.PathEscape(tool)+"/policy", map[string]any{"policy": policy})
	wantStatus(e.t, rec, http.StatusOK)
	return decodeAs[toolAnswer](e.t, rec).Tool
}

// TestHostileToolsNotOffered checks #17, #19, #27, #28 and #31–#33:
// flagged tools are listed for review with their problems, but never
// offered to agents (no agent name, effectively denied whatever policy a
// person sets), and the review page shows why.
var revisionQuery = regexp.MustCompile(`rev=[0-9a-f-]+`)

func TestHostileToolsNotOffered(t *testing.T) {
	e := newEnv(t)
	b := e.login()
	servers := []struct {
		id      string
		args    []string
		sound   int               // tools offered
		flagged map[string]string // tool → state
	}{
		{"names", []string{"-mode", "hostile-names", "-tools", "1"}, 2, map[string]string{
			`<script>alert(1)</script>`: "invalid", `say "hi" it's`: "invalid", "two\nlines": "invalid",
			"../../etc/passwd": "invalid", strings.Repeat("x", 10_000): "invalid", "r\u0435ad_file": "invalid"}},
		{"dupes", []string{"-mode", "duplicate-names", "-tools", "1"}, 1, map[string]string{"files": "invalid"}},
		{"utf8", []string{"-mode", "invalid-utf8", "-tools", "1"}, 1, map[string]string{"bad_utf8": "invalid"}},
		{"keys", []string{"-mode", "duplicate-keys", "-tools", "1"}, 1, map[string]string{"dup_keys": "invalid"}},
		{"big", []string{"-mode", "huge-schema", "-tools", "1", "-schema-bytes", "100000"}, 1, map[string]string{"huge_schema": "oversized"}},
		{"deep", []string{"-mode", "deep-schema", "-tools", "1"}, 1, map[string]string{"deep_schema": "oversized"}},
		{"inject", []string{"-mode", "injection", "-tools", "1", "-description-bytes", "20000"}, 1, map[string]string{"add": "oversized"}},
	}
	for _, s := range servers {
		t.Run(s.id, func(t *testing.T) {
			e, b := e.in(t), b.in(t)
			e.verifyFixture(s.id, s.args...)
			tools := e.apiTools(s.id)
			if len(tools) != len(s.flagged)+s.sound {
				t.Errorf("%s: %d tools, want %d", s.id, len(tools), len(s.flagged)+s.sound)
			}
			for name, tool := range tools {
				state, bad := s.flagged[name]
				if !bad {
					if tool.State != "active" || !strings.HasPrefix(tool.AgentName, s.id+"__") || tool.EffectivePolicy != "ask" {
						t.Errorf("%s: sound tool %.300v", s.id, tool)
					}
					continue
				}
				if tool.State != state || tool.AgentName != "" || tool.EffectivePolicy != "deny" || len(tool.Problems) == 0 {
					t.Errorf("%s: tool %.40q: state %v, agent_name %q, effective %v, problems %v; want %s, none, deny, some",
						s.id, name, tool.State, tool.AgentName, tool.EffectivePolicy, tool.Problems, state)
				}
				// Allowing it changes the policy, not what agents get.
				got := e.setPolicy(s.id, name, "allow")
				if got.Policy != "allow" || got.EffectivePolicy != "deny" || got.State != state {
					t.Errorf("%s: allowed %.40q: %.300v", s.id, name, got)
				}
			}

			rec := b.get("/servers/" + s.id)
			wantStatus(t, rec, http.StatusOK)
			doc := parseHTML(t, rec.Body.String())
			rows := doc.Find(testID("tool-row"))
			shown := 0
			for _, row := range rows.EachIter() {
				name := row.AttrOr("data-tool-name", "")
				state, bad := s.flagged[name]
				if got := testIDText(t, row, "tool-state"); got != map[bool]string{true: state, false: "active"}[bad] {
					t.Errorf("%s: row %.40q shows state %q", s.id, name, got)
				}
				if n := row.Find(testID("tool-problem")).Length(); bad != (n > 0) {
					t.Errorf("%s: row %.40q shows %d problems", s.id, name, n)
				}
				if bad {
					shown++
				}
			}
			if shown != len(s.flagged) {
				t.Errorf("%s: %d flagged rows shown, want %d", s.id, shown, len(s.flagged))
			}
			// No tool name reaches an attribute where it could act. (The
			// layout's navigation is fixed text: its /profiles holds the
			// tool name "files".)
			for _, n := range doc.Find("*").Not("nav > a").Nodes {
				for _, a := range n.Attr {
					risky := a.Key == "id" || a.Key == "href" || a.Key == "action" || a.Key == "src" ||
						strings.HasPrefix(a.Key, "hx-") || strings.HasPrefix(a.Key, "sse-")
					// The store's revision is random hex, which can spell a
					// short name such as "add": it is not the tool's.
					val := revisionQuery.ReplaceAllString(a.Val, "rev=")
					for name := range s.flagged {
						if risky && strings.Contains(val, name) {
							t.Errorf("%s: <%s %s=%.60q> carries tool name %.40q", s.id, n.Data, a.Key, a.Val, name)
						}
					}
				}
			}
		})
	}

	t.Run("the catalog agents read offers none of them", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodGet, "/api/v1/tools", nil)
		wantStatus(t, rec, http.StatusOK)
		for _, tool := range decodeAs[toolsAnswer](t, rec).Tools {
			offered := tool.AgentName != ""
			sound := tool.State == "active"
			if offered != sound {
				t.Errorf("catalog: tool %.40q in state %v has agent_name %q", tool.Name, tool.State, tool.AgentName)
			}
		}
	})
}

// TestHostileSchemaRefs checks #29 and #30: a $ref to a URL is shown as
// text and never fetched, and a $ref cycle renders.
func TestHostileSchemaRefs(t *testing.T) {
	var fetched atomic.Int32
	ref := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fetched.Add(1) }))
	defer ref.Close()
	refURL := ref.URL + "/schema.json"

	e := newEnv(t)
	b := e.login()
	e.verifyFixture("refs", "-mode", "schema-refs", "-tools", "1", "-ref-url", refURL)
	rec := b.get("/servers/refs")
	wantStatus(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	schemas := map[string]string{}
	for _, row := range doc.Find(testID("tool-row")).EachIter() {
		schemas[row.AttrOr("data-tool-name", "")] = testIDText(t, row, "input-schema")
	}
	if !strings.Contains(schemas["net_ref"], `"$ref": "`+refURL+`"`) {
		t.Errorf("net_ref schema shown as %q, want the URL as text", schemas["net_ref"])
	}
	if !strings.Contains(schemas["cyclic_ref"], `"$ref": "#/$defs/a"`) {
		t.Errorf("cyclic_ref schema shown as %q", schemas["cyclic_ref"])
	}
	for _, n := range doc.Find("*").Nodes {
		for _, a := range n.Attr {
			if strings.Contains(a.Val, ref.URL) {
				t.Errorf("<%s %s=%q> carries the $ref URL", n.Data, a.Key, a.Val)
			}
		}
	}
	if tools := e.apiTools("refs"); tools["net_ref"].State != "active" || tools["cyclic_ref"].State != "active" {
		t.Errorf("tools %v: a $ref is not a reason to refuse a tool", tools)
	}
	if n := fetched.Load(); n != 0 {
		t.Errorf("the $ref URL was fetched %d times", n)
	}
}

// TestHostileRugPull is #34: a tool whose definition changes after a
// person approved it becomes changed and is denied, whatever its policy
// said, until the person approves the new definition; a tool that
// vanished is kept as missing with its policy.
func TestHostileRugPull(t *testing.T) {
	e := newEnv(t)
	b := e.login()
	state := filepath.Join(t.TempDir(), "runs")
	body := fixtureServer("rug")
	// The server writes its state file: in its working directory, the
	// one place its walls let it write.
	body["args"], body["cwd"] = []string{"-mode", "change-on-second-run", "-unchanged-runs", "2", "-state-file", state, "-tools", "3"}, filepath.Dir(state)
	e.createServer(body)
	if job := e.verify("rug"); job.Status != "success" {
		t.Fatalf("verify rug: %+v", job)
	}
	e.setPolicy("rug", "tool_000", "allow")
	e.setPolicy("rug", "tool_002", "allow")
	before := e.apiTools("rug")

	// The steps below approve the definition this one finds.
	var after map[string]apiTool
	if !t.Run("a changed tool is denied whatever its policy, a vanished one kept missing", func(t *testing.T) {
		e := e.in(t)
		if job := e.verify("rug"); job.Status != "success" {
			t.Fatalf("second verify: %+v", job)
		}
		after = e.apiTools("rug")
		for _, c := range []struct {
			name, state, policy, effective string
		}{
			{"tool_000", "changed", "allow", "deny"},  // its description changed
			{"tool_001", "active", "ask", "ask"},      // untouched
			{"tool_002", "missing", "allow", "allow"}, // gone; its policy kept
			{"extra_tool", "active", "ask", "ask"},    // new: the default policy
		} {
			tool := after[c.name]
			if tool.State != c.state || tool.Policy != c.policy || tool.EffectivePolicy != c.effective {
				t.Errorf("%s after the change: state %v, policy %v, effective %v; want %s, %s, %s",
					c.name, tool.State, tool.Policy, tool.EffectivePolicy, c.state, c.policy, c.effective)
			}
		}
		if before["tool_000"].Pin == after["tool_000"].Pin {
			t.Error("the changed tool kept its pin")
		}
	}) {
		return
	}
	t.Run("the changed tool's row says it is denied", func(t *testing.T) {
		b := b.in(t)
		rec := b.get("/servers/rug")
		doc := parseHTML(t, rec.Body.String())
		for _, row := range doc.Find(testID("tool-row")).EachIter() {
			if row.AttrOr("data-tool-name", "") == "tool_000" {
				if got := testIDText(t, row, "effective-policy"); got != "effective: deny" {
					t.Errorf("changed tool's row says %q", got)
				}
			}
		}
	})
	t.Run("a policy edit does not approve the change", func(t *testing.T) {
		e := e.in(t)
		if got := e.setPolicy("rug", "tool_000", "allow"); got.State != "changed" || got.EffectivePolicy != "deny" {
			t.Errorf("policy set on the changed tool: %.300v; want still changed, denied", got)
		}
	})
	// The review page shows the diff: the description line, approved on
	// the left and current on the right, nothing else.
	t.Run("the review page shows the description's diff only", func(t *testing.T) {
		b := b.in(t)
		doc := parseHTML(t, b.get("/servers/rug/changes").Body.String())
		changes := doc.Find(testID("change"))
		if changes.Length() != 1 || changes.AttrOr("data-tool-name", "") != "tool_000" {
			t.Fatalf("review page lists %d changes; want tool_000 only", changes.Length())
		}
		diffs := changes.Find(testID("diff"))
		if diffs.Length() != 1 || diffs.AttrOr("data-field", "") != "description" {
			t.Fatalf("review page shows %d differing fields; want the description only", diffs.Length())
		}
		row := mustOne(t, diffs, `[data-kind="change"]`)
		if l, r := testIDText(t, row, "diff-left"), testIDText(t, row, "diff-right"); strings.HasSuffix(l, "(changed)") || !strings.HasSuffix(r, "(changed)") {
			t.Errorf("diff row: approved %q, current %q; want the change on the right only", l, r)
		}
	})
	t.Run("approving a version nobody was shown is refused", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodPost, "/api/v1/servers/rug/tools/tool_000/approve", map[string]any{"pin": before["tool_000"].Pin})
		wantStatus(t, rec, http.StatusConflict)
	})
	if !t.Run("approving the shown version keeps the policy set meanwhile", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodPost, "/api/v1/servers/rug/tools/tool_000/approve", map[string]any{"pin": after["tool_000"].Pin})
		wantStatus(t, rec, http.StatusOK)
		if got := decodeAs[toolAnswer](t, rec).Tool; got.State != "active" || got.EffectivePolicy != "allow" || got.Pin != after["tool_000"].Pin {
			t.Errorf("approved: %.300v", got)
		}
	}) {
		return
	}
	// A third run lists what the second did: nothing changes.
	t.Run("a verify that changes nothing keeps it approved", func(t *testing.T) {
		e := e.in(t)
		if job := e.verify("rug"); job.Status != "success" {
			t.Fatalf("third verify: %+v", job)
		}
		if tool := e.apiTools("rug")["tool_000"]; tool.State != "active" || tool.EffectivePolicy != "allow" {
			t.Errorf("after a verify that changed nothing: %.300v", tool)
		}
	})
}

// TestLateWarningsAreRecorded: a server that starts a background process
// when it is stopped — after its success was recorded — still gets the
// warning about that process on its record and in the API.
func TestLateWarningsAreRecorded(t *testing.T) {
	e := newEnv(t)
	body := fixtureServer("late")
	body["args"] = []string{"-mode", "setsid-on-exit", "-tools", "2"}
	e.createServer(body)
	if job := e.verify("late"); job.Status != "success" {
		t.Fatalf("verify = %+v; want success", job)
	}
	waitFor(t, 10*time.Second, "late warning on the record", func() bool {
		rec := e.api(http.MethodGet, "/api/v1/servers/late", nil)
		return strings.Contains(rec.Body.String(), "left its process group")
	})
}
