package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFormUnits: the form takes the start timeout in seconds (decimals
// allowed) and the memory cap in MiB, stores milliseconds and MiB, and
// refuses what is out of range with the unit and range named, the input
// kept and the advanced settings open.
func TestFormUnits(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	b := e.login()

	t.Run("the add form starts with the advanced settings closed", func(t *testing.T) {
		b := b.in(t)
		doc := parseHTML(t, b.get("/servers/new").Body.String())
		adv := mustOne(t, doc, testID("advanced"))
		if adv.Is("[open]") {
			t.Error("advanced settings open on an empty add form; want closed")
		}
		if got := mustOne(t, adv, `[data-for-transport="stdio"] input#memory_mb`).Length(); got != 1 {
			t.Error("the memory cap is not shown for stdio only")
		}
		for id, unit := range map[string]string{"timeout_s": "s", "memory_mb": "MiB", "ttl_seconds": "s"} {
			if got := textOf(mustOne(t, adv, "#"+id+" + .unit")); got != unit {
				t.Errorf("unit beside %s = %q; want %q", id, got, unit)
			}
		}
	})

	t.Run("2.5 s and 512 MiB are stored as 2500 ms and 512 MiB", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		rec := b.post("/servers", url.Values{"id": {"units"}, "transport": {"stdio"}, "command": {fixtureBin},
			"timeout_s": {"2.5"}, "memory_mb": {"512"}, "ttl_seconds": {"600"}, "enabled": {"on"}})
		wantStatus(t, rec, http.StatusSeeOther)
		srv, err := e.db.Server(ctx, "units")
		if err != nil {
			t.Fatal(err)
		}
		if srv.TimeoutMS != 2500 || srv.MemoryMB != 512 || srv.TTLSeconds != 600 {
			t.Errorf("stored timeout %d ms, memory %d MiB, ttl %d s; want 2500, 512, 600", srv.TimeoutMS, srv.MemoryMB, srv.TTLSeconds)
		}
		if got := e.server("units").TimeoutMS; got != 2500 {
			t.Errorf("API timeout_ms = %d; want 2500 (the API keeps milliseconds)", got)
		}
		doc := parseHTML(t, b.get("/servers/units/edit").Body.String())
		if !mustOne(t, doc, testID("advanced")).Is("[open]") {
			t.Error("advanced settings closed on the edit form of a server that sets them; want open")
		}
		for name, want := range map[string]string{"timeout_s": "2.5", "memory_mb": "512", "ttl_seconds": "600"} {
			if got := inputValue(t, doc, name); got != want {
				t.Errorf("edit form %s = %q; want %q", name, got, want)
			}
		}
	})

	t.Run("out of range: the unit and range named, the input kept, the settings open", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		typed := map[string]string{"timeout_s": "200", "memory_mb": "8", "ttl_seconds": "5"}
		form := url.Values{"id": {"range"}, "transport": {"stdio"}, "command": {fixtureBin}}
		for k, v := range typed {
			form.Set(k, v)
		}
		rec := b.post("/servers", form)
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		doc := parseHTML(t, rec.Body.String())
		if !mustOne(t, doc, testID("advanced")).Is("[open]") {
			t.Error("advanced settings closed with an error in them; want open")
		}
		for field, want := range map[string]string{
			"timeout_s":   "seconds from 1 to 120",
			"memory_mb":   "MiB from 16 to 1048576",
			"ttl_seconds": "seconds from 10 to 604800",
		} {
			if got := testIDText(t, doc, "error-"+field); !strings.Contains(got, want) {
				t.Errorf("error-%s = %q; want it to contain %q", field, got, want)
			}
			if got := inputValue(t, doc, field); got != typed[field] {
				t.Errorf("input %s = %q; want %q kept", field, got, typed[field])
			}
		}
		if _, err := e.db.Server(ctx, "range"); err == nil {
			t.Error("a server with out-of-range settings was stored")
		}
	})

	t.Run("a remote server ignores the hidden memory cap", func(t *testing.T) {
		e, b := e.in(t), b.in(t)
		rec := b.post("/servers", url.Values{"id": {"remote"}, "transport": {"http"}, "url": {"http://127.0.0.1:9/mcp"},
			"memory_mb": {"512"}, "timeout_s": {"4"}, "enabled": {"on"}})
		wantStatus(t, rec, http.StatusSeeOther)
		if srv, _ := e.db.Server(ctx, "remote"); srv.MemoryMB != 0 || srv.TimeoutMS != 4000 {
			t.Errorf("remote server stored memory %d MiB, timeout %d ms; want 0 (stdio only), 4000", srv.MemoryMB, srv.TimeoutMS)
		}
	})
}

// TestEditRemovesRows: each env or header row of the edit form has a
// Remove button named after it; a row left out on save deletes its
// variable or header, and a row kept with its value empty keeps the
// stored secret.
func TestEditRemovesRows(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	b := e.login()
	e.secrets = append(e.secrets, "keep-me-secret-1", "drop-me-secret-2", "header-secret-3", "header-secret-4")
	body := fixtureServer("rows")
	body["env"] = map[string]string{"KEEP": "keep-me-secret-1", "DROP": "drop-me-secret-2"}
	e.createServer(body)
	e.createServer(map[string]any{"id": "hdr", "transport": "http", "url": "http://127.0.0.1:9/mcp",
		"headers": map[string]string{"Authorization": "header-secret-3", "X-Drop": "header-secret-4"}})

	for _, tc := range []struct {
		server, prefix, keep, drop, keptValue string
		form                                  url.Values
	}{
		{server: "rows", prefix: "env", keep: "KEEP", drop: "DROP", keptValue: "keep-me-secret-1",
			form: url.Values{"transport": {"stdio"}, "command": {fixtureBin}, "args": {"-tools\n5\n-page-size\n2"}}},
		{server: "hdr", prefix: "header", keep: "Authorization", drop: "X-Drop", keptValue: "header-secret-3",
			form: url.Values{"transport": {"http"}, "url": {"http://127.0.0.1:9/mcp"}}},
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			e, b := e.in(t), b.in(t)
			doc := parseHTML(t, b.get("/servers/"+tc.server+"/edit").Body.String())
			var labels []string
			for _, btn := range doc.Find(`#` + tc.prefix + `-rows > .row-pair ` + testID("remove-"+tc.prefix)).EachIter() {
				labels = append(labels, btn.AttrOr("aria-label", ""))
			}
			want := []string{"Remove " + tc.keep, "Remove " + tc.drop}
			if tc.prefix == "env" {
				want = []string{"Remove " + tc.drop, "Remove " + tc.keep}
			}
			if diff := cmp.Diff(want, labels); diff != "" {
				t.Errorf("Remove buttons' labels (-want +got):\n%s", diff)
			}
			// The person removed the drop row and left the other as it was.
			form := url.Values{tc.prefix + "_key": {tc.keep}, tc.prefix + "_value": {""}, "enabled": {"on"}}
			for k, v := range tc.form {
				form[k] = v
			}
			wantStatus(t, b.post("/servers/"+tc.server, form), http.StatusSeeOther)
			srv, err := e.db.Server(ctx, tc.server)
			if err != nil {
				t.Fatal(err)
			}
			got := srv.Env
			if tc.prefix == "header" {
				got = srv.Headers
			}
			if diff := cmp.Diff(map[string]string{tc.keep: tc.keptValue}, got); diff != "" {
				t.Errorf("%s after removing %s (-want +got):\n%s", tc.prefix, tc.drop, diff)
			}
		})
	}
}

// TestReconfirmShowsWhatChanged: after an edit of a confirmed launch, the
// confirmation page (and the API's 409) says exactly what changed: the
// argument before and after, the variable added, and "value changed" for
// a new secret value, never the value.
func TestReconfirmShowsWhatChanged(t *testing.T) {
	e := newEnv(t)
	b := e.login()
	const oldSecret, newSecret = "diff-secret-old-1", "diff-secret-new-2"
	e.secrets = append(e.secrets, oldSecret, newSecret, "diff-secret-added-3")
	body := fixtureServer("diff")
	body["env"] = map[string]string{"FIXTURE_TOKEN": oldSecret}
	e.createServer(body)
	if job := e.verify("diff"); job.Status != "success" {
		t.Fatalf("first Verify = %+v; want success", job)
	}
	doc := parseHTML(t, b.get("/servers/diff/confirm").Body.String())
	if doc.Find(testID("launch-diff")).Length() != 0 || doc.Find(testID("launch-changed")).Length() != 0 {
		t.Error("the confirmation page of a confirmed launch says it changed")
	}

	// The edit: the third argument changed, a variable added, the token's
	// value changed; saved with "Save and review the launch".
	rec := b.post("/servers/diff", url.Values{
		"name": {"Fixture diff"}, "transport": {"stdio"}, "command": {fixtureBin},
		"args":    {"-tools\n3\n-page-size\n2"},
		"env_key": {"FIXTURE_TOKEN", "EXTRA"}, "env_value": {newSecret, "diff-secret-added-3"},
		"default_policy": {"ask"}, "enabled": {"on"}, "next": {"confirm"},
	})
	wantStatus(t, rec, http.StatusSeeOther)
	if loc := rec.Header().Get("Location"); loc != "/servers/diff/confirm" {
		t.Fatalf("Save and review the launch: Location = %q; want /servers/diff/confirm", loc)
	}

	page := b.get("/servers/diff/confirm")
	wantStatus(t, page, http.StatusOK)
	e.checkNoSecrets("the re-confirmation page", page.Body.String())
	doc = parseHTML(t, page.Body.String())
	mustOne(t, doc, testID("launch-changed"))
	var got []string
	for _, li := range mustOne(t, doc, testID("launch-diff")).Find(testID("launch-change")).EachIter() {
		line := textOf(li.Find(testID("change-what"))) + " " + textOf(li.Find(testID("change-name"))) + ": " + textOf(li.Find(testID("change-kind")))
		if old := li.Find(testID("change-old")); old.Length() > 0 {
			line += " " + textOf(old) + " → " + textOf(li.Find(testID("change-new")))
		}
		got = append(got, line)
	}
	want := []string{
		"Argument 2 : changed 5 → 3",
		"Environment variable EXTRA: added",
		"Environment variable FIXTURE_TOKEN: value changed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what changed (-want +got):\n%s", diff)
	}

	rec = e.api(http.MethodPost, "/api/v1/servers/diff/verify", nil)
	wantStatus(t, rec, http.StatusConflict)
	changes := decodeAs[apiLaunchRefused](t, rec).Launch.Changes
	wantAPI := []apiLaunchChange{
		{What: "Argument 2", Change: "changed", Old: "5", New: "3"},
		{What: "Environment variable", Name: "EXTRA", Change: "added"},
		{What: "Environment variable", Name: "FIXTURE_TOKEN", Change: "value changed"},
	}
	if diff := cmp.Diff(wantAPI, changes); diff != "" {
		t.Errorf("409 launch.changes (-want +got):\n%s", diff)
	}

	hash := mustOne(t, doc, `[name="confirm"]`).AttrOr("value", "")
	wantStatus(t, b.post("/servers/diff/verify", url.Values{"confirm": {hash}}), http.StatusSeeOther)
	e.waitIdle("diff")
	if st := e.serverStatus("diff"); st != "success" {
		t.Errorf("status after confirming the change = %q; want success", st)
	}
	if parseHTML(t, b.get("/servers/diff/confirm").Body.String()).Find(testID("launch-diff")).Length() != 0 {
		t.Error("after confirming, the confirmation page still shows changes")
	}
}

// A command line pasted whole into Command is split by shell rules into
// the command, its arguments and the variables set before it, and shown
// for the person to check before anything is saved; saved as shown, the
// server runs that command with those arguments.
func TestAPastedCommandLineIsSplit(t *testing.T) {
	e := newEnv(t)
	b := e.login()
	line := `LOG_LEVEL=debug ` + fixtureBin + ` -tools 2 -name "pasted server"`
	rec := b.post("/servers", url.Values{"id": {"pasted"}, "transport": {"stdio"}, "command": {line}, "default_policy": {"allow"}})
	wantStatus(t, rec, http.StatusOK)
	page := parseHTML(t, rec.Body.String())
	if got := page.Find(`#command`).AttrOr("value", ""); got != fixtureBin {
		t.Errorf("command after the split = %q; want %q", got, fixtureBin)
	}
	if got := page.Find(`#args`).Text(); got != "-tools\n2\n-name\npasted server" {
		t.Errorf("arguments after the split = %q; want one a line, the quoted one whole", got)
	}
	if flash := page.Find(`[data-testid="flash"]`).Text(); !strings.Contains(flash, "Nothing saved yet") || !strings.Contains(flash, "LOG_LEVEL") {
		t.Errorf("the notice = %q; want it to say nothing was saved, and name the variable", flash)
	}
	if rec := e.api(http.MethodGet, "/api/v1/servers/pasted", nil); rec.Code != http.StatusNotFound {
		t.Errorf("the server after the split = %d; want nothing saved", rec.Code)
	}
	// Saved as shown (the variable's value typed again).
	rec = b.post("/servers", url.Values{"id": {"pasted"}, "transport": {"stdio"}, "command": {fixtureBin}, "default_policy": {"allow"},
		"args": {"-tools\n2\n-name\npasted server"}, "env_key": {"LOG_LEVEL"}, "env_value": {"debug"}})
	wantStatus(t, rec, http.StatusSeeOther)
	if job := e.verify("pasted"); job.Status != "success" || job.ToolCount != 2 {
		t.Errorf("verify of the server saved from the split = %+v; want it running with the arguments", job)
	}
}
