package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/mcptest"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"
)

// TestVerifyNeedsConfirmedLaunch: nothing is started for a server until a
// person confirmed its exact launch, and an edit of the command, args, env
// keys or cwd asks again; a rename or a rotated secret does not.
func TestVerifyNeedsConfirmedLaunch(t *testing.T) {
	e := newEnv(t)
	e.secrets = append(e.secrets, "s3cr3t-value-cf", "rotated-secret-cf", "s3cr3t-value-ui")
	body := fixtureServer("cf")
	body["args"] = confirmArgs
	body["env"] = map[string]string{"FIXTURE_TOKEN": "s3cr3t-value-cf"}
	e.createServer(body)
	wantLine := fixtureBin + " -tools 2 -name 'two words' -name 'rtl\u202eexe.txt'"

	if !t.Run("the API answers 409 with the launch, nothing started", func(t *testing.T) {
		e := e.in(t)
		rec := e.api(http.MethodPost, "/api/v1/servers/cf/verify", nil)
		wantStatus(t, rec, http.StatusConflict)
		launch := decodeAs[apiLaunchRefused](t, rec).Launch
		if launch.CommandLine != wantLine {
			t.Errorf("409 launch.command_line = %q; want %q", launch.CommandLine, wantLine)
		}
		if diff := cmp.Diff([]string{"FIXTURE_TOKEN"}, launch.EnvKeys); diff != "" {
			t.Errorf("409 launch.env_keys (-want +got):\n%s", diff)
		}
		e.checkNoSecrets("409 answer", rec.Body.String())
		if st := e.serverStatus("cf"); st != "never" {
			t.Fatalf("status after an unconfirmed Verify = %q; want never (nothing started)", st)
		}
		wantStatus(t, e.api(http.MethodPost, "/api/v1/servers/cf/verify", map[string]any{"confirm": "yes"}), http.StatusBadRequest)
		wantStatus(t, e.api(http.MethodPost, "/api/v1/servers/cf/verify", map[string]any{"confirm": false}), http.StatusConflict)
	}) {
		return
	}

	if !t.Run("confirmed, it runs, and later Verifies need no confirmation", func(t *testing.T) {
		e := e.in(t)
		if job := e.verify("cf"); job.Status != "success" {
			t.Fatalf("confirmed Verify = %+v; want success", job)
		}
		wantStatus(t, e.api(http.MethodPost, "/api/v1/servers/cf/verify", nil), http.StatusAccepted)
		e.waitIdle("cf")
	}) {
		return
	}

	// edit changes the server's body through e, bound to the step.
	edit := func(e *env, change func(m map[string]any)) {
		e.t.Helper()
		b := fixtureServer("cf")
		b["args"] = body["args"]
		b["env"] = map[string]string{"FIXTURE_TOKEN": "********"}
		change(b)
		wantStatus(e.t, e.api(http.MethodPut, "/api/v1/servers/cf", b), http.StatusOK)
	}
	if !t.Run("a rename or a rotated secret needs no confirmation", func(t *testing.T) {
		e := e.in(t)
		edit(e, func(m map[string]any) {
			m["name"] = "Renamed"
			m["env"] = map[string]string{"FIXTURE_TOKEN": "rotated-secret-cf"}
		})
		wantStatus(t, e.api(http.MethodPost, "/api/v1/servers/cf/verify", nil), http.StatusAccepted)
		e.waitIdle("cf")
	}) {
		return
	}
	// The directory belongs to the test, not to its step: the server is
	// left with it.
	cwd := t.TempDir()
	for what, change := range map[string]func(m map[string]any){
		"args": func(m map[string]any) { m["args"] = []string{"-tools", "3"} },
		"env key": func(m map[string]any) {
			m["env"] = map[string]string{"FIXTURE_TOKEN": "********", "LD_PRELOAD": "/x.so"}
		},
		"cwd": func(m map[string]any) { m["cwd"] = cwd },
	} {
		t.Run("an edit of the "+what+" asks again", func(t *testing.T) {
			e := e.in(t)
			edit(e, change)
			if rec := e.api(http.MethodPost, "/api/v1/servers/cf/verify", nil); rec.Code != http.StatusConflict {
				t.Errorf("Verify after an edit of the %s = %d; want 409 (confirm again)", what, rec.Code)
			}
			e.verify("cf") // confirms the edited launch
		})
	}

	e.createServer(body2("ui"))
	b := e.login()
	// The steps below confirm what the one before showed.
	var hash string
	if !t.Run("the dashboard's Verify button leads to the confirmation page", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		page := parseHTML(t, b.get("/servers/ui").Body.String())
		btn := mustOne(t, page, testID("verify-button"))
		if btn.AttrOr("href", "") != "/servers/ui/confirm" || btn.Is("[hx-post]") {
			t.Fatalf("unconfirmed server's Verify = <%s href=%q hx-post=%q>; want a link to /servers/ui/confirm", goquery.NodeName(btn), btn.AttrOr("href", ""), btn.AttrOr("hx-post", ""))
		}
		// A stale button (rendered before an edit) is redirected there.
		rec := b.htmx(http.MethodPost, "/servers/ui/verify", nil)
		if rec.Code != http.StatusConflict || rec.Header().Get("HX-Redirect") != "/servers/ui/confirm" {
			t.Fatalf("htmx Verify of an unconfirmed server = %d HX-Redirect %q; want 409 to /servers/ui/confirm", rec.Code, rec.Header().Get("HX-Redirect"))
		}
		confirmPage := b.get("/servers/ui/confirm")
		wantStatus(t, confirmPage, http.StatusOK)
		doc := parseHTML(t, confirmPage.Body.String())
		shown := textOf(mustOne(t, doc, testID("confirm-command-line")))
		if !strings.Contains(shown, "'two words'") || !strings.Contains(shown, "U+202E") || strings.Contains(shown, "\u202e") {
			t.Errorf("confirmation shows %q; want the whole command with the bidi override revealed", shown)
		}
		e.checkNoSecrets("confirmation page", confirmPage.Body.String())
		hash = mustOne(t, doc, `[name="confirm"]`).AttrOr("value", "")
	}) {
		return
	}

	if !t.Run("confirming an outdated launch shows the new one instead of running", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		b2 := body2("ui")
		b2["args"] = []string{"-tools", "1"}
		b2["env"] = map[string]string{"FIXTURE_TOKEN": "********"}
		wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/ui", b2), http.StatusOK)
		rec := b.post("/servers/ui/verify", url.Values{"confirm": {hash}})
		wantStatus(t, rec, http.StatusConflict)
		doc := parseHTML(t, rec.Body.String())
		if got := textOf(mustOne(t, doc, testID("confirm-command-line"))); got != fixtureBin+" -tools 1" {
			t.Errorf("after an edit the confirmation shows %q; want the new command", got)
		}
		mustOne(t, doc, testID("confirm-notice"))
		if st := e.serverStatus("ui"); st != "never" {
			t.Fatalf("status after confirming an outdated launch = %q; want never", st)
		}
		hash = mustOne(t, doc, `[name="confirm"]`).AttrOr("value", "")
	}) {
		return
	}

	t.Run("confirming the launch shown starts the Verify", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		rec := b.post("/servers/ui/verify", url.Values{"confirm": {hash}})
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/servers/ui" {
			t.Fatalf("confirm = %d Location %q; want 303 to /servers/ui", rec.Code, rec.Header().Get("Location"))
		}
		e.waitIdle("ui")
		if st := e.serverStatus("ui"); st != "success" {
			t.Errorf("status after confirming = %q; want success", st)
		}
		btn := mustOne(t, parseHTML(t, b.get("/servers/ui").Body.String()), testID("verify-button"))
		if btn.AttrOr("hx-post", "") != "/servers/ui/verify" {
			t.Errorf("confirmed server's Verify button hx-post = %q; want /servers/ui/verify", btn.AttrOr("hx-post", ""))
		}
	})
}

// confirmArgs are fixture arguments a shell would need quoted, one with a
// bidi override that makes it display differently.
var confirmArgs = []string{"-tools", "2", "-name", "two words", "-name", "rtl\u202eexe.txt"}

func body2(id string) map[string]any {
	b := fixtureServer(id)
	b["args"] = confirmArgs
	b["env"] = map[string]string{"FIXTURE_TOKEN": "s3cr3t-value-ui"}
	return b
}

// A launch changed since it was confirmed (here, a variable added)
// withdraws the server's tools from agents until a person confirms it
// again, and says so where the person is: the list's chip, the server
// page's banner with its Confirm link, and the agent's refusal.
func TestAChangedLaunchSaysItsToolsAreWithdrawn(t *testing.T) {
	e := newEnv(t)
	b := e.login()
	body := fixtureServer("wd")
	body["default_policy"] = "allow"
	e.createServer(body)
	if job := e.verify("wd"); job.Status != "success" {
		t.Fatalf("verify = %+v", job)
	}
	body["env"] = map[string]string{"NEW_VARIABLE": "1"}
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/wd", body), http.StatusOK)

	chip := parseHTML(t, b.get("/").Body.String()).Find(`[data-server-id="wd"] [data-testid="status"]`)
	if health, text := chip.AttrOr("data-health", ""), strings.TrimSpace(chip.Text()); health != "withdrawn" || !strings.Contains(text, "confirm the changed launch") {
		t.Errorf("the list's chip = %s %q; want withdrawn, saying to confirm the launch", health, text)
	}
	page := parseHTML(t, b.get("/servers/wd").Body.String())
	panel := page.Find(`[data-testid="status-panel"]`)
	if banner := panel.Find(`[data-testid="launch-changed"]`).Text(); !strings.Contains(banner, "withdrawn from agents") ||
		panel.Find(`[data-testid="verify-button"]`).AttrOr("href", "") != "/servers/wd/confirm" {
		t.Errorf("the server page's status = %q; want a banner saying the tools are withdrawn, beside the link to review the launch", panel.Text())
	}
	srv, _ := e.liveServer()
	c := mcptest.Connect(t, srv.URL, testMCPToken)
	if err := mcptest.Refused(c.Call("wd__tool_000", map[string]any{})); err == nil || !strings.Contains(err.Error(), "awaits a person's confirmation") {
		t.Errorf("an agent's call = %v; want refused, saying the launch awaits confirmation", err)
	}
}
