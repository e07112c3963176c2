package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// onboardHome is a home with a Claude Desktop config and a Cursor config
// that list six fixture servers between them, one with a bidi override in
// an argument and a token in its env; the Cursor file also repeats one
// of Claude's servers as it is, and names another with other args.
func onboardHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	write := func(rel string, servers map[string]any) {
		p := filepath.Join(home, filepath.FromSlash(rel))
		data, _ := json.Marshal(map[string]any{"mcpServers": servers})
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fixture := func(args ...string) map[string]any { return map[string]any{"command": fixtureBin, "args": args} }
	one := fixture("-tools", "1")
	write(".config/Claude/claude_desktop_config.json", map[string]any{
		"one":   one,
		"two":   fixture("-tools", "2", "-name", "two words"),
		"three": map[string]any{"command": fixtureBin, "args": []string{"-tools", "3", "-name", "rtl\u202eexe.txt"}, "env": map[string]string{"FIXTURE_TOKEN": onboardSecret}},
	})
	write(".cursor/mcp.json", map[string]any{
		"four": fixture("-tools", "4"),
		"five": fixture("-tools", "5", "-page-size", "2"),
		"six":  fixture("-tools", "6", "-name", strings.Repeat("long-", 40)+"end"),
		"one":  one,                    // the same as Claude's: skipped
		"two":  fixture("-tools", "9"), // another "two": skipped, with why
	})
	return home
}

const onboardSecret = "onboard-s3cr3t-0123456789"

var onboardIDs = []string{"five", "four", "one", "six", "three", "two"}

// From an empty list: the configs found on this machine are offered,
// Import all imports every server of both, the servers added lead to one
// confirmation page that shows every launch in full, and confirming it
// verifies them together, as one batch; a launch changed after the page
// was shown is refused, and nothing happens without the CSRF token.
func TestOnboardImportAllAndConfirm(t *testing.T) {
	home := onboardHome(t)
	e := newEnv(t, func(c *webConfig) { c.ImportHome, c.ImportCwd = home, t.TempDir() })
	e.secrets = append(e.secrets, onboardSecret)
	b := e.login()

	if !t.Run("the empty list offers the configs found, with Import all", func(t *testing.T) {
		b := b.in(t)
		doc := parseHTML(t, b.get("/").Body.String())
		empty := mustOne(t, doc, testID("empty"))
		found := empty.Find(testID("found-config"))
		if found.Length() != 2 {
			t.Fatalf("found configs = %d; want 2", found.Length())
		}
		want := [][2]string{{"Claude Desktop", ".config/Claude/claude_desktop_config.json"}, {"Cursor", ".cursor/mcp.json"}}
		counts := []string{"3 servers", "5 servers"}
		for i, f := range found.EachIter() {
			if text := textOf(f); !strings.HasPrefix(text, want[i][0]+":") || !strings.HasSuffix(textOf(f.Find(testID("found-path"))), want[i][1]) {
				t.Errorf("found config %d = %q; want %s %s", i, text, want[i][0], want[i][1])
			}
			if got := textOf(f.Find(testID("found-count"))); got != counts[i] {
				t.Errorf("found config %d count = %q; want %q", i, got, counts[i])
			}
		}
		form := mustOne(t, empty, `form:has([data-testid="import-all"])`)
		if form.AttrOr("action", "") != "/import/all" || form.AttrOr("method", "") != "post" || form.Find(`[name="_csrf"]`).AttrOr("value", "") != b.csrf {
			t.Errorf("Import all form = action %q method %q; want a POST to /import/all with the CSRF token", form.AttrOr("action", ""), form.AttrOr("method", ""))
		}
		// The list's fragment (reloaded by htmx) offers the same.
		frag := parseFragment(t, b.get("/fragments/servers").Body.String())
		if n := frag.Find(testID("found-config")).Length(); n != 2 {
			t.Errorf("fragment: %d found configs; want 2", n)
		}
		// The Import page offers Import all too.
		mustOne(t, parseHTML(t, b.get("/import").Body.String()), `form[action="/import/all"] `+testID("import-all"))
	}) {
		return
	}

	t.Run("without the CSRF token Import all is refused", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		r := b.request(http.MethodPost, "/import/all", strings.NewReader(""))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		wantStatus(t, e.serve(r), http.StatusForbidden)
		if n := len(e.listServers()); n != 0 {
			t.Fatalf("%d servers after a refused Import all; want 0", n)
		}
	})

	// The steps below confirm what this one showed.
	var form url.Values
	if !t.Run("Import all imports six servers from two files and shows their launches together", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		rec := b.post("/import/all", nil)
		wantStatus(t, rec, http.StatusOK)
		body := rec.Body.String()
		e.checkNoSecrets("the batch confirmation", body)
		doc := parseHTML(t, body)
		if got := testIDText(t, doc, "import-report-summary"); got != "Imported: 6 added, 2 skipped" {
			t.Errorf("report = %q; want 6 added, 2 skipped", got)
		}
		var lines []string
		for _, l := range doc.Find(testID("import-report-line")).EachIter() {
			lines = append(lines, textOf(l))
		}
		for _, want := range []string{"one: skipped: the same server is already there as one", "two: skipped: a different server two is already there (args differ)"} {
			if !strings.Contains(strings.Join(lines, "\n"), want) {
				t.Errorf("report lines %q; want one that says %q", lines, want)
			}
		}
		var ids []string
		for _, s := range e.listServers() {
			ids = append(ids, s.ID)
		}
		if diff := cmp.Diff(onboardIDs, ids); diff != "" {
			t.Fatalf("servers after Import all (-want +got):\n%s", diff)
		}

		launches := doc.Find(testID("batch-launch"))
		if launches.Length() != 6 {
			t.Fatalf("%d launches on the confirmation page; want 6", launches.Length())
		}
		form = url.Values{}
		for _, l := range launches.EachIter() {
			id := l.AttrOr("data-server-id", "")
			srv := e.server(id)
			line := textOf(l.Find(testID("confirm-command-line")))
			want := fixtureBin + " " + strings.Join(srv.Args, " ")
			switch id {
			case "two":
				want = fixtureBin + " -tools 2 -name 'two words'"
			case "three":
				want = fixtureBin + " -tools 3 -name 'rtl⟨U+202E right-to-left override⟩exe.txt'"
				if got := textOf(l.Find(testID("confirm-env-key"))); got != "FIXTURE_TOKEN" {
					t.Errorf("three's env keys = %q; want FIXTURE_TOKEN (its value masked)", got)
				}
			}
			if line != want {
				t.Errorf("%s's command line = %q; want %q, in full, hidden characters revealed", id, line, want)
			}
			check := l.Find(`input[type="checkbox"][name="server"]`)
			if check.AttrOr("value", "") != id || !check.Is("[checked]") {
				t.Errorf("%s's checkbox = value %q checked %v; want its id, checked", id, check.AttrOr("value", ""), check.Is("[checked]"))
			}
			form.Add("server", id)
			form.Set("launch-"+id, l.Find(`[name="launch-`+id+`"]`).AttrOr("value", ""))
		}
		if strings.Contains(body, "\u202e") {
			t.Error("the bidi override reaches the page as it is; want it revealed")
		}
		if got := testIDText(t, doc, "confirm-launches-button"); got != "Confirm and verify 6 servers" {
			t.Errorf("button = %q", got)
		}
	}) {
		return
	}

	t.Run("the list links to the launches waiting", func(t *testing.T) {
		b := b.in(t)
		doc := parseHTML(t, b.get("/").Body.String())
		if a := mustOne(t, doc, testID("confirm-launches-link")); a.AttrOr("href", "") != "/launches/confirm" || textOf(a) != "Confirm 6 launches" {
			t.Errorf("link = %q to %q; want Confirm 6 launches to /launches/confirm", textOf(a), a.AttrOr("href", ""))
		}
		if n := parseHTML(t, b.get("/launches/confirm?server=one&server=two").Body.String()).Find(testID("batch-launch")).Length(); n != 2 {
			t.Errorf("the page for two servers shows %d launches", n)
		}
	})

	t.Run("without the CSRF token nothing is confirmed", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		r := b.request(http.MethodPost, "/launches/confirm", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		wantStatus(t, e.serve(r), http.StatusForbidden)
		if st := e.serverStatus("one"); st != "never" {
			t.Errorf("one's status = %q; want never", st)
		}
	})

	if !t.Run("a launch changed after the page was shown is refused, and nothing is confirmed", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		six := fixtureServer("six")
		six["args"] = []string{"-tools", "1"}
		wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/six", six), http.StatusOK)
		rec := b.post("/launches/confirm", form)
		wantStatus(t, rec, http.StatusConflict)
		doc := parseHTML(t, rec.Body.String())
		if notice := testIDText(t, doc, "launches-notice"); !strings.Contains(notice, "six") {
			t.Errorf("notice = %q; want it to name six", notice)
		}
		shown := mustOne(t, doc, `[data-testid="batch-launch"][data-server-id="six"]`)
		if got := textOf(shown.Find(testID("confirm-command-line"))); got != fixtureBin+" -tools 1" {
			t.Errorf("six is shown again as %q; want its new command", got)
		}
		form.Set("launch-six", shown.Find(`[name="launch-six"]`).AttrOr("value", ""))
		rec = e.api(http.MethodGet, "/api/v1/launches", nil)
		if n := len(decodeAs[launchesAnswer](t, rec).Launches); n != 6 {
			t.Errorf("%d launches wait after the refusal; want 6 (none confirmed)", n)
		}
	}) {
		return
	}

	t.Run("confirming verifies them together, as one batch", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		rec := b.post("/launches/confirm", form)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/" {
			t.Fatalf("confirm = %d to %q; want 303 to /", rec.Code, rec.Header().Get("Location"))
		}
		for _, id := range onboardIDs {
			e.waitIdle(id)
			if st := e.serverStatus(id); st != "success" {
				t.Errorf("%s's status = %q; want success", id, st)
			}
		}
		doc := parseHTML(t, b.get("/").Body.String())
		if got := testIDText(t, doc, "verify-all-summary"); got != "6 of 6 done" {
			t.Errorf("batch progress = %q; want 6 of 6 done", got)
		}
		if doc.Find(testID("confirm-launches-link")).Length() != 0 {
			t.Error("the list still links to launches waiting")
		}
	})
}

// The API confirms launches by their hashes and verifies those servers as
// one batch; a hash that is no longer the launch's is refused.
func TestOnboardConfirmAPI(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"a1", "a2", "a3"} {
		e.createServer(fixtureServer(id))
	}
	rec := e.api(http.MethodGet, "/api/v1/launches", nil)
	wantStatus(t, rec, http.StatusOK)
	launches := decodeAs[launchesAnswer](t, rec).Launches
	if len(launches) != 3 || launches[0].ServerID != "a1" || launches[0].CommandLine != fixtureBin+" -tools 5 -page-size 2" {
		t.Fatalf("launches = %+v", launches)
	}
	hashes := map[string]string{"a1": launches[0].Hash, "a2": "not-the-hash"}
	wantStatus(t, e.api(http.MethodPost, "/api/v1/verify-all", map[string]any{"confirm": hashes}), http.StatusConflict)
	if st := e.serverStatus("a1"); st != "never" {
		t.Fatalf("a1 after a refused confirmation = %q; want never", st)
	}
	hashes["a2"] = launches[1].Hash
	rec = e.api(http.MethodPost, "/api/v1/verify-all", map[string]any{"confirm": hashes})
	wantStatus(t, rec, http.StatusAccepted)
	batch := decodeAs[batchAnswer](t, rec).Batch
	if batch.Total != 2 || len(batch.Skipped) != 0 {
		t.Errorf("batch = %+v; want a1 and a2 only", batch)
	}
	for _, id := range []string{"a1", "a2"} {
		e.waitIdle(id)
		if st := e.serverStatus(id); st != "success" {
			t.Errorf("%s = %q; want success", id, st)
		}
	}
	if st := e.serverStatus("a3"); st != "never" {
		t.Errorf("a3 = %q; want never (not confirmed)", st)
	}
}
