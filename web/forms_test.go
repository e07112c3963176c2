package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/switchboard-dev/switchboard/store"
)

func TestFormValidationKeepsInput(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	b := e.login()
	const typedSecret = "typed-secret-value-987"
	// The secrets are added before the steps, where the check at the
	// test's end sees them (see env.in).
	e.secrets = append(e.secrets, typedSecret, "form-secret-1")
	t.Run("an invalid form says what is wrong and keeps the input", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		rec := b.post("/servers", url.Values{
			"id":           {"Bad Id!"},
			"name":         {"My <b>nice</b> server"},
			"transport":    {"stdio"},
			"command":      {""},
			"args":         {"--flag\nvalue with space"},
			"env_key":      {"1X", "GOOD_KEY"},
			"env_value":    {typedSecret, ""},
			"timeout_s":    {"0.5"},
			"memory_mb":    {"lots"},
			"ttl_seconds":  {"5"},
			"auto_refresh": {"sometimes"},
			"enabled":      {"on"},
		})
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		doc := parseHTML(t, rec.Body.String())
		for field, want := range map[string]string{
			"id":           "lower-case letters",
			"command":      "Command is required",
			"env":          `"1X"`,
			"timeout_s":    "seconds from 1 to 120",
			"memory_mb":    "from 16 to 1048576",
			"ttl_seconds":  "from 10 to 604800",
			"auto_refresh": "on, off or the default",
		} {
			if got := testIDText(t, doc, "error-"+field); !strings.Contains(got, want) {
				t.Errorf("error-%s = %q, want it to contain %q", field, got, want)
			}
		}
		for _, field := range []string{"name", "url", "transport", "default_policy", "header"} {
			if n := doc.Find(testID("error-" + field)).Length(); n != 0 {
				t.Errorf("unexpected error-%s", field)
			}
		}
		if doc.Find(testID("form-errors")).Length() != 1 {
			t.Error("no form-errors summary")
		}
		for name, want := range map[string]string{
			"id":          "Bad Id!",
			"name":        "My <b>nice</b> server",
			"timeout_s":   "0.5",
			"memory_mb":   "lots",
			"ttl_seconds": "5",
			"command":     "",
			"args":        "--flag\nvalue with space",
			"env_key":     "1X",
		} {
			if got := inputValue(t, doc, name); got != want {
				t.Errorf("input %s = %q, want %q", name, got, want)
			}
		}
		if !strings.Contains(rec.Body.String(), "My &lt;b&gt;nice&lt;/b&gt; server") {
			t.Error("the typed name is not escaped in the page")
		}
		// The typed secret is not echoed back (checked by e.serve); its row
		// asks for it again, the empty one does not.
		var placeholders []string
		for _, n := range doc.Find(`input[name="env_value"]`).EachIter() {
			placeholders = append(placeholders, n.AttrOr("placeholder", ""))
		}
		// The last env_value input is the add-row template's.
		if len(placeholders) < 2 || !strings.Contains(placeholders[0], "enter the value again") || strings.Contains(placeholders[1], "again") {
			t.Errorf("env value placeholders = %q, want the first to ask for the value again", placeholders)
		}
		// The stdio option stays selected.
		sel := doc.Find(`option[value="stdio"]`)
		if sel.Length() != 1 || !sel.Is("[selected]") {
			t.Error("transport stdio not kept")
		}
		if _, err := e.db.Server(ctx, "Bad Id!"); err == nil {
			t.Error("invalid server was stored")
		}
	})

	t.Run("a remote server at a metadata or malformed address is refused", func(t *testing.T) {
		b := b.in(t)
		rec := b.post("/servers", url.Values{"id": {"meta"}, "transport": {"http"}, "url": {"http://169.254.169.254/latest/meta-data"}})
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		doc := parseHTML(t, rec.Body.String())
		if got := testIDText(t, doc, "error-url"); !strings.Contains(got, "169.254") {
			t.Errorf("error-url = %q", got)
		}
		if got := inputValue(t, doc, "url"); got != "http://169.254.169.254/latest/meta-data" {
			t.Errorf("url input = %q", got)
		}
		for _, u := range []string{"http://[fe80::1]:8080/", "ftp://example.com/", "http://user:pw@example.com/", "", "http:///x", "http://[::ffff:169.254.169.254]/"} {
			rec = b.post("/servers", url.Values{"id": {"remote"}, "transport": {"http"}, "url": {u}})
			wantStatus(t, rec, http.StatusUnprocessableEntity)
			testIDText(t, parseHTML(t, rec.Body.String()), "error-url")
		}
	})

	t.Run("a valid form is stored, and the same id again refused", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		valid := url.Values{
			"id": {"good-1"}, "name": {"Good"}, "transport": {"stdio"}, "command": {fixtureBin},
			"args": {"-tools\r\n5\r\n"}, "env_key": {"API_KEY"}, "env_value": {"form-secret-1"},
			"timeout_s": {"5"}, "default_policy": {"deny"}, "enabled": {"on"},
		}
		rec := b.post("/servers", valid)
		wantStatus(t, rec, http.StatusSeeOther)
		if loc := rec.Header().Get("Location"); loc != "/servers/good-1" {
			t.Errorf("Location = %q", loc)
		}
		srv, err := e.db.Server(ctx, "good-1")
		if err != nil {
			t.Fatal(err)
		}
		if srv.Name != "Good" || srv.Command != fixtureBin || strings.Join(srv.Args, "|") != "-tools|5" ||
			srv.Env["API_KEY"] != "form-secret-1" || srv.TimeoutMS != 5000 || srv.DefaultPolicy != "deny" || !srv.Enabled {
			t.Errorf("stored server = %+v", srv)
		}
		rec = b.post("/servers", valid)
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		if got := testIDText(t, parseHTML(t, rec.Body.String()), "error-id"); !strings.Contains(got, "already exists") {
			t.Errorf("duplicate id error = %q", got)
		}
		wantStatus(t, b.get("/servers/good-1"), http.StatusOK)
	})
}

func TestReservedServerID(t *testing.T) {
	// /servers/new is the add form, so a server with id "new" could never
	// be shown.
	e := newEnv(t)
	b := e.login()
	rec := b.post("/servers", url.Values{"id": {"new"}, "transport": {"stdio"}, "command": {"true"}})
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	testIDText(t, parseHTML(t, rec.Body.String()), "error-id")
	rec = e.api(http.MethodPost, "/api/v1/servers", map[string]any{"id": "new", "transport": "stdio", "command": "true"})
	wantStatus(t, rec, http.StatusUnprocessableEntity)
}

func TestEditKeepsSecrets(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	b := e.login()
	const secret = "s3cret-value-123"
	e.secrets = append(e.secrets, secret, "new-secret-456")
	body := fixtureServer("sec")
	body["env"] = map[string]string{"API_KEY": secret, "OTHER": "other-secret-789"}
	e.secrets = append(e.secrets, "other-secret-789")
	e.createServer(body)

	t.Run("the edit form and the page hold no secret value", func(t *testing.T) {
		b := b.in(t)
		rec := b.get("/servers/sec/edit")
		wantStatus(t, rec, http.StatusOK)
		if strings.Contains(rec.Body.String(), secret) {
			t.Fatal("the edit form contains the secret value")
		}
		doc := parseHTML(t, rec.Body.String())
		keys := doc.Find(`[name="env_key"]`)
		var rows []string
		for _, k := range keys.EachIter() {
			if v := k.AttrOr("value", ""); v != "" {
				rows = append(rows, v)
			}
		}
		if strings.Join(rows, ",") != "API_KEY,OTHER" {
			t.Errorf("env rows = %v", rows)
		}
		for _, v := range doc.Find(`[name="env_value"]`).EachIter() {
			if v.AttrOr("value", "") != "" || v.AttrOr("type", "") != "password" {
				t.Errorf("env value input %v", v.Nodes[0].Attr)
			}
		}
		if inputValue(t, doc, "id") != "sec" || inputValue(t, doc, "name") != "Fixture sec" || inputValue(t, doc, "command") != fixtureBin {
			t.Error("edit form not filled from the server")
		}
		// The detail page shows the names only.
		rec = b.get("/servers/sec")
		wantStatus(t, rec, http.StatusOK)
		if !strings.Contains(rec.Body.String(), "API_KEY") {
			t.Error("detail page does not list the env key")
		}
	})

	// The steps below send this form, changed as they go.
	form := url.Values{
		"name": {"Renamed"}, "transport": {"stdio"}, "command": {fixtureBin},
		"args":    {"-tools\n5\n-page-size\n2"},
		"env_key": {"API_KEY", "OTHER"}, "env_value": {"", "********"},
		"default_policy": {"ask"}, "enabled": {"on"},
	}
	if !t.Run("an edit with empty or masked values keeps the secrets", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		rec := b.post("/servers/sec", form)
		wantStatus(t, rec, http.StatusSeeOther)
		srv, err := e.db.Server(ctx, "sec")
		if err != nil {
			t.Fatal(err)
		}
		if srv.Name != "Renamed" || srv.Env["API_KEY"] != secret || srv.Env["OTHER"] != "other-secret-789" {
			t.Errorf("after edit with empty values: name %q env %v", srv.Name, srv.Env)
		}
	}) {
		return
	}

	// A failed edit does not echo the stored or typed values either, and
	// marks stored rows as set.
	t.Run("a failed edit echoes no value and changes nothing", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		bad := url.Values{"name": {"Renamed"}, "transport": {"stdio"}, "command": {""}, "env_key": {"API_KEY"}, "env_value": {"new-secret-456"}}
		rec := b.post("/servers/sec", bad)
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		doc := parseHTML(t, rec.Body.String())
		testIDText(t, doc, "error-command")
		if got := inputValue(t, doc, "id"); got != "sec" {
			t.Errorf("id input in failed edit = %q", got)
		}
		if srv, _ := e.db.Server(ctx, "sec"); srv.Env["API_KEY"] != secret {
			t.Error("a failed edit changed the secret")
		}
	})

	if !t.Run("a new value replaces it, and a removed row removes the variable", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		form.Set("env_value", "new-secret-456")
		form["env_key"] = []string{"API_KEY"}
		rec := b.post("/servers/sec", form)
		wantStatus(t, rec, http.StatusSeeOther)
		srv, _ := e.db.Server(ctx, "sec")
		if srv.Env["API_KEY"] != "new-secret-456" || len(srv.Env) != 1 {
			t.Errorf("after edit with a new value: %v", srv.Env)
		}
	}) {
		return
	}
	t.Run("the id in the form cannot move the server", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		form.Set("id", "moved")
		wantStatus(t, b.post("/servers/sec", form), http.StatusSeeOther)
		if _, err := e.db.Server(ctx, "moved"); err == nil {
			t.Error("edit created a server under another id")
		}
		wantStatus(t, b.post("/servers/nope", form), http.StatusNotFound)
	})

	t.Run("delete removes the server from the pages", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		rec := b.post("/servers/sec/delete", nil)
		wantStatus(t, rec, http.StatusSeeOther)
		if loc := rec.Header().Get("Location"); !strings.HasPrefix(loc, "/") {
			t.Errorf("Location = %q", loc)
		}
		if _, err := e.db.Server(ctx, "sec"); err == nil {
			t.Error("server still there after delete")
		}
		wantStatus(t, b.get("/servers/sec"), http.StatusNotFound)
		wantStatus(t, b.post("/servers/sec/delete", nil), http.StatusNotFound)
		page := b.get("/")
		wantStatus(t, page, http.StatusOK)
		if parseHTML(t, page.Body.String()).Find(testID("server-row")).Length() != 0 {
			t.Error("deleted server still listed")
		}
	})
}

func TestServerPageAfterVerify(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	b := e.login()
	e.createServer(fixtureServer("fx"))
	t.Run("an unverified server's page says it has no tools", func(t *testing.T) {
		b := b.in(t)
		rec := b.get("/servers/fx")
		wantStatus(t, rec, http.StatusOK)
		doc := parseHTML(t, rec.Body.String())
		if doc.Find(testID("no-tools")).Length() != 1 || doc.Find(testID("tool-row")).Length() != 0 {
			t.Error("unverified server page should say no tools")
		}
		if got := testIDText(t, doc, "status"); got != "Not verified" {
			t.Errorf("status = %q", got)
		}
		if got := testIDText(t, doc, "command-line"); got != fixtureBin+" -tools 5 -page-size 2" {
			t.Errorf("command line = %q", got)
		}
	})

	// The last step waits for a verification other than this one.
	var job apiJob
	if !t.Run("a verified server's page shows its tools, each with its policy", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		job = e.verify("fx")
		if job.Status != "success" {
			t.Fatalf("job = %v", job)
		}
		rec := b.get("/servers/fx")
		wantStatus(t, rec, http.StatusOK)
		doc := parseHTML(t, rec.Body.String())
		rows := doc.Find(testID("tool-row"))
		if rows.Length() != 5 {
			t.Fatalf("%d tool rows, want 5", rows.Length())
		}
		if got := testIDText(t, doc, "tool-count"); got != "5" {
			t.Errorf("tool-count = %q", got)
		}
		if got := testIDText(t, doc, "protocol-version"); len(got) != len("2025-06-18") || !strings.HasPrefix(got, "20") {
			t.Errorf("protocol-version = %q", got)
		}
		if got := testIDText(t, doc, "server-info"); got != "mcp-fixture 1.0.0" {
			t.Errorf("server-info = %q", got)
		}
		if got := mustOne(t, doc, testID("status")).AttrOr("data-status", ""); got != "success" {
			t.Errorf("status = %q", got)
		}
		if doc.Find(testID("tools-stale")).Length() != 0 || doc.Find(testID("verify-error")).Length() != 0 {
			t.Error("a successful verification shows stale or an error")
		}
		for i, r := range rows.EachIter() {
			name := testIDText(t, r, "tool-name")
			if name != r.AttrOr("data-tool-name", "") || !strings.HasPrefix(name, "tool_00") {
				t.Errorf("row %d: name %q", i, name)
			}
			if r.AttrOr("id", "") != "tool-"+string(rune('0'+i)) {
				t.Errorf("row %d: id %q, want an opaque index", i, r.AttrOr("id", ""))
			}
			if got := testIDText(t, r, "tool-description"); !strings.Contains(got, "generated fixture tool") {
				t.Errorf("row %d: description %q", i, got)
			}
			if got := testIDText(t, r, "input-schema"); !json.Valid([]byte(got)) {
				t.Errorf("row %d: schema %q", i, got)
			}
			if got := testIDText(t, r, "tool-state"); got != "active" {
				t.Errorf("row %d: state %q", i, got)
			}
			sel := mustOne(t, r, testID("policy-select"))
			var selected []string
			for _, o := range sel.Find("option").EachIter() {
				if o.Is("[selected]") {
					selected = append(selected, o.AttrOr("value", ""))
				}
			}
			if strings.Join(selected, ",") != "ask" {
				t.Errorf("row %d: selected policy %v", i, selected)
			}
		}
	}) {
		return
	}
	t.Run("the list page shows the count and status too", func(t *testing.T) {
		b := b.in(t)
		rec := b.get("/")
		doc := parseHTML(t, rec.Body.String())
		row := mustOne(t, doc, testID("server-row"))
		if testIDText(t, row, "tool-count") != "5" || mustOne(t, row, testID("status")).AttrOr("data-status", "") != "success" {
			t.Error("list row does not show the verified state")
		}
	})

	if !t.Run("the policy select changes one tool and answers with its row", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		rec := b.htmx(http.MethodPost, "/servers/fx/policy", url.Values{"tool": {"tool_001"}, "key": {"1"}, "policy": {"deny"}})
		wantStatus(t, rec, http.StatusOK)
		frag := parseFragment(t, rec.Body.String())
		r := mustOne(t, frag, testID("tool-row"))
		if r.AttrOr("id", "") != "tool-1" || testIDText(t, r, "tool-name") != "tool_001" {
			t.Errorf("policy answer row: %v", r.Nodes[0].Attr)
		}
		tools, _ := e.db.Tools(ctx, "fx")
		if tools[1].Policy.Policy != "deny" || tools[1].Policy.SetBy != "dashboard" || tools[0].Policy.Policy != "ask" {
			t.Errorf("policies after set: %+v / %+v", tools[0].Policy, tools[1].Policy)
		}
		wantStatus(t, b.htmx(http.MethodPost, "/servers/fx/policy", url.Values{"tool": {"tool_001"}, "policy": {"maybe"}}), http.StatusUnprocessableEntity)
		// The row key becomes an element id and an hx-target selector.
		for _, key := range []string{"", "1, body", "1 x", "-1", "1234567"} {
			wantStatus(t, b.htmx(http.MethodPost, "/servers/fx/policy", url.Values{"tool": {"tool_001"}, "key": {key}, "policy": {"deny"}}), http.StatusUnprocessableEntity)
		}
		wantStatus(t, b.htmx(http.MethodPost, "/servers/fx/policy", url.Values{"tool": {"nope"}, "key": {"1"}, "policy": {"deny"}}), http.StatusNotFound)
	}) {
		return
	}
	t.Run("the tools fragment reflects it", func(t *testing.T) {
		b := b.in(t)
		rec := b.htmx(http.MethodGet, "/servers/fx/tools", nil)
		wantStatus(t, rec, http.StatusOK)
		frag := parseHTML(t, rec.Body.String())
		if n := frag.Find(testID("tool-row")).Length(); n != 5 {
			t.Errorf("tools fragment has %d rows", n)
		}
	})
	t.Run("the verify button answers 202 and starts a job", func(t *testing.T) {
		b := b.in(t)
		wantStatus(t, b.htmx(http.MethodPost, "/servers/fx/verify", nil), http.StatusAccepted)
		waitFor(t, 20*time.Second, "verify from the button to finish", func() bool {
			s, _ := e.db.Summary(ctx, "fx")
			return s.Discovery.Status == store.StatusSuccess && s.Discovery.JobID != job.ID
		})
	})
}

func TestHostileToolIsEscaped(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	b := e.login()
	e.createServer(fixtureServer("evil"))
	srv, err := e.db.Server(ctx, "evil")
	if err != nil {
		t.Fatal(err)
	}
	const (
		name  = `x"><script>alert(1)</script>`
		desc  = `<img src=x onerror=alert(1)> and more`
		title = `<svg onload=alert(2)>`
		ann   = `{"title":"<iframe src=javascript:alert(3)>"}`
	)
	now := time.Now()
	err = e.db.RecordSuccess(ctx, "evil", store.Verification{
		JobID: "job_x", ConfigHash: srv.ConfigHash(), StartedAt: now, FinishedAt: now,
		ProtocolVersion: `<b>2025</b>`, ServerName: `<script>srv</script>`, ServerVersion: "1",
		Instructions: `<script>instr</script>`,
		Warnings:     []string{`<marquee>warn</marquee>`},
		Tools: []store.Tool{
			{Name: name, Title: title, Description: desc, InputSchema: json.RawMessage(`{"type":"object","description":"</pre><script>alert(4)</script>"}`),
				Annotations: json.RawMessage(ann), Raw: json.RawMessage(`{}`), Pin: strings.Repeat("a", 64)},
			{Name: "normal", Raw: json.RawMessage(`{}`), Pin: strings.Repeat("b", 64)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tryLink := regexp.MustCompile(`^/tools/[a-zA-Z0-9_-]{1,64}$`)
	// check fails t unless the page or fragment shows the hostile text
	// as text only.
	check := func(t *testing.T, what, body string, doc *goquery.Document) {
		t.Helper()
		for _, raw := range []string{"<script>alert", "<img", "<svg", "<iframe", "<marquee", "<script>srv", "<b>2025"} {
			if strings.Contains(body, raw) {
				t.Errorf("%s: raw %q in the body", what, raw)
			}
		}
		for _, tag := range []string{"img", "svg", "iframe", "marquee", "b"} {
			if n := doc.Find(tag).Length(); n != 0 {
				t.Errorf("%s: %d <%s> elements", what, n, tag)
			}
		}
		for _, s := range doc.Find("script").EachIter() {
			if !strings.HasPrefix(s.AttrOr("src", ""), "/static/") || textOf(s) != "" {
				t.Errorf("%s: unexpected script %v", what, s.Nodes[0].Attr)
			}
		}
		// The tool's name is data only: never in an id, a URL, an htmx
		// or SSE attribute. The one exception is its agent name, which
		// Switchboard made of [a-zA-Z0-9_-] only, in the Try it link.
		for _, n := range doc.Find("*").Nodes {
			for _, a := range n.Attr {
				if a.Key == "href" && tryLink.MatchString(a.Val) {
					continue
				}
				risky := a.Key == "id" || a.Key == "href" || a.Key == "action" || a.Key == "src" ||
					strings.HasPrefix(a.Key, "hx-") || strings.HasPrefix(a.Key, "sse-")
				if risky && (strings.Contains(a.Val, "script") || strings.Contains(a.Val, "x\"")) {
					t.Errorf("%s: <%s %s=%q> carries the tool name", what, n.Data, a.Key, a.Val)
				}
				if strings.HasPrefix(a.Key, "on") {
					t.Errorf("%s: event handler attribute %s on <%s>", what, a.Key, n.Data)
				}
			}
		}
	}
	t.Run("the server page shows the hostile text in full, as text", func(t *testing.T) {
		b := b.in(t)
		rec := b.get("/servers/evil")
		wantStatus(t, rec, http.StatusOK)
		body := rec.Body.String()
		doc := parseHTML(t, body)
		check(t, "page", body, doc)
		rows := doc.Find(testID("tool-row"))
		if rows.Length() != 2 {
			t.Fatalf("%d rows", rows.Length())
		}
		// The hostile text is shown in full, as text.
		if got := testIDText(t, rows.Eq(1), "tool-name"); got != name {
			t.Errorf("name shown as %q", got)
		}
		if got := rows.Eq(1).AttrOr("data-tool-name", ""); got != name {
			t.Errorf("data-tool-name = %q", got)
		}
		if got := testIDText(t, rows.Eq(1), "tool-description"); got != desc {
			t.Errorf("description shown as %q", got)
		}
		if got := testIDText(t, rows.Eq(1), "tool-title"); got != title {
			t.Errorf("title shown as %q", got)
		}
		if got := testIDText(t, doc, "server-info"); got != "<script>srv</script> 1" {
			t.Errorf("server info shown as %q", got)
		}
	})
	t.Run("the tools fragment and the policy answer escape too", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		rec := b.htmx(http.MethodGet, "/servers/evil/tools", nil)
		check(t, "tools fragment", rec.Body.String(), parseHTML(t, rec.Body.String()))
		rec = b.htmx(http.MethodPost, "/servers/evil/policy", url.Values{"tool": {name}, "key": {"1"}, "policy": {"allow"}})
		wantStatus(t, rec, http.StatusOK)
		check(t, "policy answer", rec.Body.String(), parseFragment(t, rec.Body.String()))
		tools, _ := e.db.Tools(ctx, "evil")
		if tools[1].Name != name || tools[1].Policy.Policy != "allow" {
			t.Errorf("policy of the hostile tool: %+v", tools[1])
		}
	})
	t.Run("the list page escapes too", func(t *testing.T) {
		b := b.in(t)
		rec := b.get("/")
		check(t, "list", rec.Body.String(), parseHTML(t, rec.Body.String()))
	})
}

func TestFailedVerifyKeepsToolsStale(t *testing.T) {
	e := newEnv(t)
	b := e.login()
	e.createServer(fixtureServer("brk"))
	if job := e.verify("brk"); job.Status != "success" {
		t.Fatalf("first verify: %v", job)
	}
	// Break the command (a config change), then verify again.
	if !t.Run("a broken command fails the verification, saying why", func(t *testing.T) {
		e := e.in(t)
		body := fixtureServer("brk")
		body["command"] = "/nonexistent/bin"
		rec := e.api(http.MethodPut, "/api/v1/servers/brk", body)
		wantStatus(t, rec, http.StatusOK)
		job := e.verify("brk")
		if job.Status != "failed" {
			t.Fatalf("second verify: %v", job)
		}
		if jerr := job.Error; jerr == nil || jerr.Class != "not_found" || jerr.Suggestion == "" || jerr.Message == "" {
			t.Errorf("job error = %+v", jerr)
		}
	}) {
		return
	}

	t.Run("the page shows the error and keeps the old tools, stale", func(t *testing.T) {
		b := b.in(t)
		rec := b.get("/servers/brk")
		wantStatus(t, rec, http.StatusOK)
		doc := parseHTML(t, rec.Body.String())
		panel := mustOne(t, doc, testID("status-panel"))
		if got := testIDText(t, mustOne(t, panel, testID("verify-error")), "error-class"); got != "not_found" {
			t.Errorf("error class = %q", got)
		}
		if got := testIDText(t, panel, "error-suggestion"); !strings.Contains(got, "Install") {
			t.Errorf("suggestion = %q", got)
		}
		if got := mustOne(t, panel, testID("status")).AttrOr("data-status", ""); got != "failed" {
			t.Errorf("status = %q", got)
		}
		if doc.Find(testID("tools-stale")).Length() != 1 {
			t.Error("tools not marked stale")
		}
		if n := doc.Find(testID("tool-row")).Length(); n != 5 {
			t.Errorf("%d tool rows after a failure, want the 5 old ones", n)
		}
		if panel.Find(testID("stale")).Length() != 1 {
			t.Error("status badge not marked stale")
		}
	})

	t.Run("the API keeps the old tools, stale, with the error", func(t *testing.T) {
		e := e.in(t)
		d := e.discovery("brk")
		if !d.Stale || d.Status != "failed" || d.VerifiedAt == nil || d.ToolCount != 5 {
			t.Errorf("discovery = %+v", d)
		}
		if d.Error == nil || d.Error.Class != "not_found" {
			t.Errorf("discovery error = %+v", d.Error)
		}
		rec := e.api(http.MethodGet, "/api/v1/servers/brk/tools", nil)
		if n := len(decodeAs[toolsAnswer](t, rec).Tools); n != 5 {
			t.Errorf("API serves %d tools after the failure, want 5", n)
		}
	})
}
