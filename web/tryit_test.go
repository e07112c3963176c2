package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/switchboard-dev/switchboard/internal/proctest"
)

// Try it against the fixture's try-it tools: an array of objects edited
// as rows and checked against the schema, images and sounds shown as
// data: URLs (hostile ones as notes), progress live over SSE and in the
// result.
func TestTryItRowsMediaAndProgress(t *testing.T) {
	e := newEnv(t)
	e.createServer(map[string]any{"id": "tri", "name": "Try", "transport": "stdio", "command": fixtureBin,
		"args": []string{"-mode", "try-it", "-tools", "0"}, "default_policy": "allow"})
	if job := e.verify("tri"); job.Status != "success" {
		t.Fatalf("verify tri = %+v", job)
	}
	b := e.login()
	srv, client := e.liveServer()
	s := b.openEvents(srv, client)

	t.Run("an array of objects is edited as rows and checked against the schema", func(t *testing.T) {
		b := b.in(t)
		doc := parseHTML(t, b.get("/tools/tri__plan_trip").Body.String())
		// traveller f0, stops f1 (city f2, nights f3, by f4, booked f5),
		// tags f6 (item f7), budget f8.
		mustOne(t, doc, testID("try-rows-f1")+` template [name="f2-__row__"]`)
		mustOne(t, doc, testID("try-add-f1"))
		if n := doc.Find(testID("try-rows-f1") + " > " + testID("try-row-f1")).Length(); n != 1 {
			t.Errorf("a required array starts with %d rows; want 1", n)
		}
		form := url.Values{"f0": {"Ann"}, "f1": {"5", "1"}, "f2-5": {"Oslo"}, "f3-5": {"2"}, "f4-5": {"0"}, "f5-5": {"true"},
			"f2-1": {"Bergen"}, "f3-1": {"3"}, "f6": {"0"}, "f7-0": {"<fjords>"}}
		rec := b.post("/tools/tri__plan_trip/try", form)
		wantStatus(t, rec, http.StatusOK)
		out := testIDText(t, parseHTML(t, rec.Body.String()), "try-json")
		for _, want := range []string{`"city": "Oslo"`, `"nights": 2`, `"by": "train"`, `"booked": true`, `"city": "Bergen"`, `"<fjords>"`} {
			if !strings.Contains(out, want) {
				t.Errorf("plan_trip result = %s; want %s (the rows in page order)", out, want)
			}
		}
		if i, j := strings.Index(out, "Oslo"), strings.Index(out, "Bergen"); i > j {
			t.Errorf("rows out of page order: %s", out)
		}
		// nights 0 breaks the schema's minimum: the error is on that
		// row's field, the input is kept, nothing is called.
		form.Set("f3-1", "0")
		rec = b.post("/tools/tri__plan_trip/try", form)
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		doc = parseHTML(t, rec.Body.String())
		if msg := testIDText(t, doc, "try-error-f3-1"); !strings.Contains(msg, "minimum") {
			t.Errorf("error of the second row's nights = %q; want the minimum rule", msg)
		}
		if v := inputValue(t, doc, "f2-1"); v != "Bergen" {
			t.Errorf("second row's city after the error = %q; want Bergen kept", v)
		}
		if doc.Find(testID("try-result")).Length() != 0 {
			t.Error("a refused form shows a result")
		}
	})

	t.Run("images and sounds are data: URLs of allowed types", func(t *testing.T) {
		b := b.in(t)
		doc := parseHTML(t, b.post("/tools/tri__media/try", nil).Body.String())
		if src := mustOne(t, doc, testID("try-image")).AttrOr("src", ""); !strings.HasPrefix(src, "data:image/png;base64,iVBOR") {
			t.Errorf("image src = %.60q; want a PNG data: URL", src)
		}
		if src := mustOne(t, doc, testID("try-audio")).AttrOr("src", ""); !strings.HasPrefix(src, "data:audio/wav;base64,UklGR") {
			t.Errorf("audio src = %.60q; want a WAV data: URL", src)
		}
		raw := testIDText(t, doc, "try-raw")
		if !strings.Contains(raw, "characters of base64") || strings.Contains(raw, "iVBOR") {
			t.Errorf("the whole result's JSON = %.300s; want the media data left out", raw)
		}
	})

	t.Run("hostile media are notes, never elements", func(t *testing.T) {
		b := b.in(t)
		body := b.post("/tools/tri__hostile_media/try", nil).Body.String()
		doc := parseHTML(t, body)
		if n := doc.Find(testID("try-output") + " img, " + testID("try-output") + " audio").Length(); n != 0 {
			t.Errorf("hostile media made %d img/audio elements; want 0", n)
		}
		var notes []string
		doc.Find(testID("try-refused")).Each(func(_ int, sel *goquery.Selection) { notes = append(notes, sel.Text()) })
		wants := []string{"image/svg+xml", "not valid base64", "larger than 512 KiB", "text/html", "it looks like text/plain"}
		if len(notes) != len(wants) {
			t.Fatalf("notes = %q; want %d", notes, len(wants))
		}
		for i, want := range wants {
			if !strings.Contains(notes[i], want) {
				t.Errorf("note %d = %q; want it to say %q", i, notes[i], want)
			}
		}
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "data:image/svg") {
			t.Error("hostile media reached the page")
		}
	})

	t.Run("progress arrives live and stays in the result", func(t *testing.T) {
		b := b.in(t)
		const call = "0123456789abcdef"
		page := parseHTML(t, b.get("/tools/tri__slow_steps").Body.String())
		if id := inputValue(t, page, "_call"); len(id) != 16 {
			t.Errorf("the page's call id = %q; want 16 hex digits", id)
		}
		done := make(chan string, 1)
		go func() {
			rec := b.post("/tools/tri__slow_steps/try", url.Values{"_call": {call}, "f0": {"150"}, "f1": {"3"}})
			done <- rec.Body.String()
		}()
		s.until(t, 10*time.Second, "a live progress event", func(ev sseEvent) bool {
			return ev.name == "try-"+call && strings.Contains(ev.text(), "of 3") && strings.Contains(ev.text(), "step 1 of 3 &lt;done&gt;")
		})
		doc := parseHTML(t, <-done)
		if got := testIDText(t, doc, "try-result-progress"); !strings.Contains(got, "3 notifications") || !strings.Contains(got, "3 of 3") {
			t.Errorf("result progress = %q; want 3 notifications, 3 of 3", got)
		}
		if got := testIDText(t, doc, "try-text"); got != "done after 3 steps" {
			t.Errorf("result = %q", got)
		}
	})
}

// Verify all can be cancelled (its queued and running verifications end
// cancelled, their processes gone) and dismissed (the panel goes, the
// batch stays readable); both from the panel and the API.
func TestVerifyAllCancelAndDismiss(t *testing.T) {
	e := newEnv(t, func(c *webConfig) { c.Concurrency = 1 })
	marker := "verify-all-cancel-marker"
	for _, id := range []string{"va", "vb", "vc"} {
		body := fixtureServer(id)
		body["args"] = []string{"-tools", "1", "-startup-delay", "20s", "-name", marker}
		e.createServer(body)
		srv, err := e.db.Server(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.db.ConfirmLaunch(t.Context(), id, srv.LaunchHash(), ""); err != nil {
			t.Fatal(err)
		}
	}
	b := e.login()
	rec := e.api(http.MethodPost, "/api/v1/verify-all", nil)
	wantStatus(t, rec, http.StatusAccepted)
	batch := decodeAs[batchAnswer](t, rec).Batch
	waitFor(t, 10*time.Second, "one verification running", func() bool { return proctest.Count(marker) == 1 })

	panel := parseHTML(t, b.get("/").Body.String())
	cancel := mustOne(t, panel, testID("verify-all-cancel")).AttrOr("hx-post", "")
	dismiss := mustOne(t, panel, testID("verify-all-dismiss")).AttrOr("hx-post", "")
	if rec := b.htmx(http.MethodPost, cancel, nil); rec.Code != http.StatusAccepted {
		t.Fatalf("the panel's Cancel (%s) = %d; want 202", cancel, rec.Code)
	}
	var got apiBatch
	waitFor(t, 10*time.Second, "the batch to end cancelled", func() bool {
		rec := e.api(http.MethodGet, "/api/v1/batches/"+batch.ID, nil)
		got = decodeAs[batchAnswer](t, rec).Batch
		return got.Done
	})
	if got.Cancelled != 3 || got.Failed != 0 || !got.Stopped {
		t.Errorf("batch after Cancel = %+v; want 3 cancelled, stopped", got)
	}
	for _, j := range got.Jobs {
		if j.Status != "cancelled" {
			t.Errorf("job of %s = %s; want cancelled", j.ServerID, j.Status)
		}
	}
	waitFor(t, 5*time.Second, "no fixture process left", func() bool { return proctest.Count(marker) == 0 })
	page := parseHTML(t, b.get("/").Body.String())
	if got := testIDText(t, page, "verify-all-cancelled"); got != "3 cancelled" {
		t.Errorf("panel says %q; want 3 cancelled", got)
	}
	if page.Find(testID("verify-all-cancel")).Length() != 0 {
		t.Error("a finished batch still offers Cancel")
	}

	if rec := b.htmx(http.MethodPost, dismiss, nil); rec.Code != http.StatusAccepted {
		t.Fatalf("the panel's Dismiss (%s) = %d; want 202", dismiss, rec.Code)
	}
	page = parseHTML(t, b.get("/").Body.String())
	mustOne(t, page, testID("verify-all-dismissed"))
	if page.Find(testID("verify-all-progress")).Length() != 0 {
		t.Error("a dismissed batch's panel still shows")
	}
	wantStatus(t, e.api(http.MethodGet, "/api/v1/batches/"+batch.ID, nil), http.StatusOK)

	// The API: cancelling again is harmless; an unknown batch is a 404;
	// the browser routes need the CSRF token.
	rec = e.api(http.MethodPost, "/api/v1/batches/"+batch.ID+"/cancel", nil)
	wantStatus(t, rec, http.StatusAccepted)
	if again := decodeAs[batchAnswer](t, rec).Batch; again.Cancelled != 3 || !again.Stopped {
		t.Errorf("API cancel answer = %+v", again)
	}
	wantStatus(t, e.api(http.MethodPost, "/api/v1/batches/nope/cancel", nil), http.StatusNotFound)
	r := b.request(http.MethodPost, cancel, nil)
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set("HX-Request", "true")
	if rec := e.serve(r); rec.Code != http.StatusForbidden {
		t.Errorf("Cancel without the CSRF token = %d; want 403", rec.Code)
	}
}

// What a server asks during a Try it call is asked of the person on the
// page, live, as an agent's client would ask: a model's message (the
// person writes the reply), a form (checked against its schema: a wrong
// answer is shown again, the question still waiting), the roots; a
// declined form is the server's to handle; the result then comes back.
// The questions are in the call log as the dashboard's.
func TestTryItAnswersWhatTheServerAsks(t *testing.T) {
	e := newEnv(t)
	e.createServer(map[string]any{"id": "ask", "name": "Asks", "transport": "stdio", "command": fixtureBin,
		"args": []string{"-mode", "asks", "-tools", "0"}, "default_policy": "allow"})
	if job := e.verify("ask"); job.Status != "success" {
		t.Fatalf("verify ask = %+v", job)
	}
	b := e.login()
	srv, client := e.liveServer()
	s := b.openEvents(srv, client)
	try := func(t *testing.T, tool, call string, form url.Values, answers ...url.Values) *goquery.Document {
		t.Helper()
		b := b.in(t)
		form.Set("_call", call)
		done := make(chan string, 1)
		go func() { done <- b.post("/tools/ask__"+tool+"/try", form).Body.String() }()
		for _, a := range answers {
			s.until(t, 30*time.Second, "the server's question on the page", func(ev sseEvent) bool {
				return ev.name == "try-question-"+call && strings.Contains(ev.text(), `data-testid="try-question"`)
			})
			rec := b.htmx(http.MethodPost, "/tools/ask__"+tool+"/try/"+call+"/answer", a)
			wantStatus(t, rec, http.StatusNoContent)
		}
		return parseHTML(t, <-done)
	}
	resultText := func(doc *goquery.Document) string { return strings.TrimSpace(doc.Find(testID("try-result")).Text()) }

	t.Run("a model's message, written by the person", func(t *testing.T) {
		doc := try(t, "ask_model", "00000000000000a1", url.Values{"f0": {"tell me a joke"}},
			url.Values{"_action": {"accept"}, "_model": {"me"}, "_reply": {"Why did the <gopher> cross the road?"}})
		if got := resultText(doc); !strings.Contains(got, "me: Why did the <gopher> cross the road?") {
			t.Errorf("result = %q; want the person's reply as the model's", got)
		}
	})
	t.Run("a form, checked against its schema", func(t *testing.T) {
		// The name is required: a first answer without it is shown again.
		doc := try(t, "ask_person", "00000000000000a2", url.Values{},
			url.Values{"_action": {"accept"}, "f0": {""}}, url.Values{"_action": {"accept"}, "f0": {"Ada"}})
		if got := resultText(doc); !strings.Contains(got, `accept {"name":"Ada"}`) {
			t.Errorf("result = %q; want the form's content", got)
		}
	})
	t.Run("a declined form", func(t *testing.T) {
		doc := try(t, "ask_person", "00000000000000a3", url.Values{}, url.Values{"_action": {"decline"}})
		if got := resultText(doc); !strings.Contains(got, "decline") {
			t.Errorf("result = %q; want the server told it was declined", got)
		}
	})
	t.Run("the roots", func(t *testing.T) {
		doc := try(t, "list_roots", "00000000000000a4", url.Values{},
			url.Values{"_action": {"accept"}, "_roots": {"file:///work\r\nfile:///tmp\r\n"}})
		if got := resultText(doc); !strings.Contains(got, "file:///work") || !strings.Contains(got, "file:///tmp") {
			t.Errorf("result = %q; want the roots given", got)
		}
	})
	t.Run("no question waiting", func(t *testing.T) {
		wantStatus(t, b.in(t).htmx(http.MethodPost, "/tools/ask__ask_person/try/00000000000000ff/answer", url.Values{"_action": {"accept"}}), http.StatusNotFound)
	})
	var asked []string
	for _, c := range e.waitCalls(8) { // the four calls and their questions
		if c.Method == "sampling/createMessage" || c.Method == "elicitation/create" || c.Method == "roots/list" {
			asked = append(asked, c.Method+" "+c.Decision)
		}
	}
	if len(asked) != 4 {
		t.Errorf("questions in the call log = %q; want the four", asked)
	}
}
