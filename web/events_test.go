package web_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/r3labs/sse/v2"

	"github.com/switchboard-dev/switchboard/store"
)

// sseEvent is one event as a browser's EventSource sees it.
type sseEvent struct {
	name string
	data []string // one entry per data: line
}

func (ev sseEvent) text() string { return strings.Join(ev.data, "\n") }

// sseStream is an open /events connection read in the background.
type sseStream struct {
	resp   *http.Response
	events chan sseEvent // closed when the stream ends
}

// liveServer serves the app on a real listener. Its cleanup closes the app
// first, so open streams end and the server can close.
func (e *env) liveServer() (*httptest.Server, *http.Client) {
	e.t.Helper()
	// The server as serve runs it: its timeouts and connection limits.
	srv := httptest.NewUnstartedServer(e.app)
	srv.Config, srv.Listener = e.app.HTTPServer(srv.Listener)
	srv.Start()
	tr := &http.Transport{}
	e.t.Cleanup(func() {
		e.stop()
		srv.CloseClientConnections()
		srv.Close()
		tr.CloseIdleConnections()
	})
	return srv, &http.Client{Transport: tr}
}

// openEvents opens /events. Events named in drop keep only their name.
func (b *browser) openEvents(srv *httptest.Server, client *http.Client, drop ...string) *sseStream {
	b.e.t.Helper()
	return b.openEventsAt(srv, client, "/events", drop...)
}

// openEventsAt opens the stream at path, such as a page's sse-connect.
func (b *browser) openEventsAt(srv *httptest.Server, client *http.Client, path string, drop ...string) *sseStream {
	t := b.e.t
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(b.cookie)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /events: %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	s := &sseStream{resp: resp, events: make(chan sseEvent, 10000)}
	go s.read(drop)
	return s
}

func (s *sseStream) read(drop []string) {
	defer close(s.events)
	sc := bufio.NewScanner(s.resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev sseEvent
	var hasData bool
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if hasData {
				for _, d := range drop {
					if ev.name == d {
						ev.data = nil
					}
				}
				select {
				case s.events <- ev:
				default: // the test stopped listening; keep reading
				}
			}
			ev, hasData = sseEvent{}, false
		case strings.HasPrefix(line, ":"):
			// comment (ping)
		case strings.HasPrefix(line, "data: "):
			ev.data = append(ev.data, strings.TrimPrefix(line, "data: "))
			hasData = true
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id:"), strings.HasPrefix(line, "retry:"):
		default:
			// A line without a field name: multi-line data not split.
			ev.data = append(ev.data, "!unsplit!"+line)
			hasData = true
		}
	}
}

// until reads events until one satisfies ok, and returns every event read
// so far. It fails the test at the deadline or if the stream ends.
// waitEnded fails t unless the stream ends within d.
func (s *sseStream) waitEnded(t testing.TB, d time.Duration, what string) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return
			}
		case <-timer.C:
			t.Fatalf("%s: stream still open after %s", what, d)
		}
	}
}

func (s *sseStream) until(t *testing.T, d time.Duration, what string, ok func(sseEvent) bool) []sseEvent {
	t.Helper()
	var seen []sseEvent
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev, open := <-s.events:
			if !open {
				t.Fatalf("stream ended while waiting for %s", what)
			}
			seen = append(seen, ev)
			if ok(ev) {
				return seen
			}
		case <-timer.C:
			names := make([]string, 0, len(seen))
			for _, ev := range seen[max(0, len(seen)-20):] {
				names = append(names, ev.name)
			}
			t.Fatalf("timed out waiting for %s; got %d events, the last: %v", what, len(seen), names)
		}
	}
}

func named(name string) func(sseEvent) bool {
	return func(ev sseEvent) bool { return ev.name == name }
}

func TestEventsSnapshotAndLiveVerify(t *testing.T) {
	e := newEnv(t)
	const secret = "sse-secret-value-5"
	e.secrets = append(e.secrets, secret)
	body := fixtureServer("live")
	body["env"] = map[string]string{"SOME_TOKEN": secret}
	e.createServer(body)
	b := e.login()
	srv, client := e.liveServer()
	s := b.openEvents(srv, client)

	// The snapshot: the server's row and status panel.
	var row, status *sseEvent
	s.until(t, 5*time.Second, "snapshot", func(ev sseEvent) bool {
		switch ev.name {
		case "row-live":
			row = &ev
		case "status-live":
			status = &ev
		}
		return row != nil && status != nil
	})
	if !strings.Contains(row.text(), `href="/servers/live"`) || !strings.Contains(row.text(), `data-status="never"`) {
		t.Errorf("row snapshot = %q", row.text())
	}
	if !strings.Contains(status.text(), `data-testid="verify-button"`) {
		t.Errorf("status snapshot = %q", status.text())
	}

	// A verification is pushed live, ending with success.
	rec := e.api(http.MethodPost, "/api/v1/servers/live/verify", confirmed)
	wantStatus(t, rec, http.StatusAccepted)
	seen := s.until(t, 20*time.Second, "status success", func(ev sseEvent) bool {
		return ev.name == "status-live" && strings.Contains(ev.text(), `data-status="success"`)
	})
	var running, tools, rowSuccess bool
	for _, ev := range seen {
		for _, d := range ev.data {
			if strings.HasPrefix(d, "!unsplit!") {
				t.Errorf("event %s: data line without data: prefix: %q", ev.name, d)
			}
			if strings.Contains(d, secret) || strings.Contains(d, testToken) {
				t.Errorf("event %s carries a secret", ev.name)
			}
		}
		switch {
		case ev.name == "status-live" && strings.Contains(ev.text(), `data-testid="cancel-button"`):
			running = true
		case ev.name == "tools-live":
			tools = true
		case ev.name == "row-live" && strings.Contains(ev.text(), `data-status="success"`):
			rowSuccess = true
		}
	}
	if !running {
		t.Error("no running status (with a cancel button) was pushed")
	}
	if !tools {
		t.Error("no tools-live event before success")
	}
	final := seen[len(seen)-1].text()
	if !strings.Contains(final, `data-testid="tool-count">5<`) || !strings.Contains(final, "<span>mcp-fixture</span> <span>1.0.0</span>") {
		t.Errorf("final status = %q", final)
	}
	if !rowSuccess {
		s.until(t, 5*time.Second, "row success", func(ev sseEvent) bool {
			return ev.name == "row-live" && strings.Contains(ev.text(), `data-status="success"`)
		})
	}

	// Adding and deleting a server tells the list to reload.
	e.createServer(fixtureServer("second"))
	s.until(t, 5*time.Second, "servers changed", func(ev sseEvent) bool { return ev.name == "servers" && ev.text() == "changed" })
	wantStatus(t, e.api(http.MethodDelete, "/api/v1/servers/second", nil), http.StatusNoContent)
	s.until(t, 5*time.Second, "servers changed", func(ev sseEvent) bool { return ev.name == "servers" && ev.text() == "changed" })
}

func TestEventsSplitDataAndEmptyEvents(t *testing.T) {
	e := newEnv(t)
	b := e.login()
	srv, client := e.liveServer()
	s := b.openEvents(srv, client)
	waitFor(t, 5*time.Second, "connection registered", func() bool { return e.hub.Connections() == 1 })

	// An event with empty data would end every r3labs connection.
	e.hub.Publish(&sse.Event{Event: []byte("empty")}, &sse.Event{Event: []byte("empty2"), Data: []byte{}})
	e.hub.Publish(&sse.Event{Event: []byte("multi"), Data: []byte("line one\n<p>line two</p>\n\nline four")})
	seen := s.until(t, 5*time.Second, "multi", named("multi"))
	for _, ev := range seen {
		if strings.HasPrefix(ev.name, "empty") {
			t.Errorf("event %q with empty data was sent", ev.name)
		}
	}
	got := seen[len(seen)-1].data
	want := []string{"line one", "<p>line two</p>", "", "line four"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("data lines = %q, want %q", got, want)
	}
	if e.hub.Connections() != 1 {
		t.Errorf("%d connections after an empty event", e.hub.Connections())
	}
}

func TestEventsStalledClientDoesNotBlock(t *testing.T) {
	e := newEnv(t)
	e.createServer(fixtureServer("st"))
	b := e.login()
	srv, client := e.liveServer()
	reader := b.openEvents(srv, client, "flood")
	reader.until(t, 5*time.Second, "snapshot", named("row-st"))

	// A client that sends its request and then never reads.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /events HTTP/1.1\r\nHost: %s\r\nCookie: %s=%s\r\nAccept: text/event-stream\r\n\r\n",
		srv.Listener.Addr().String(), b.cookie.Name, b.cookie.Value)
	waitFor(t, 5*time.Second, "stalled connection registered", func() bool { return e.hub.Connections() == 2 })

	// Far more than the stream buffers and socket buffers hold.
	data := bytes.Repeat([]byte("x"), 32<<10)
	done := make(chan time.Duration, 1)
	go func() {
		var slowest time.Duration
		for range 1500 {
			start := time.Now()
			e.hub.Publish(&sse.Event{Event: []byte("flood"), Data: data})
			slowest = max(slowest, time.Since(start))
		}
		done <- slowest
	}()
	select {
	case slowest := <-done:
		if slowest > 250*time.Millisecond {
			t.Errorf("one Publish took %v", slowest)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Publish blocked on a stalled client")
	}

	// The reading client still gets the latest state.
	put := fixtureServer("st")
	put["name"] = "Latest Name"
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/st", put), http.StatusOK)
	reader.until(t, 10*time.Second, "latest state", func(ev sseEvent) bool {
		return ev.name == "row-st" && strings.Contains(ev.text(), "Latest Name")
	})

	// Once the stalled client goes away, its connection ends.
	conn.Close()
	waitFor(t, 10*time.Second, "stalled connection to end", func() bool { return e.hub.Connections() == 1 })
}

func TestEventsSnapshotOfManyServers(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	const n = 400
	for i := range n {
		s := store.Server{ID: fmt.Sprintf("srv-%03d", i), Name: fmt.Sprintf("S%03d", i), Transport: "stdio", Command: "true", DefaultPolicy: "ask", Enabled: true}
		if err := e.db.CreateServer(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	b := e.login()
	srv, client := e.liveServer()
	s := b.openEvents(srv, client)
	got := map[string]bool{}
	s.until(t, 10*time.Second, "every server's row", func(ev sseEvent) bool {
		if strings.HasPrefix(ev.name, "row-") {
			got[ev.name] = true
		}
		return len(got) == n
	})
	// And live updates flow afterwards.
	last := fmt.Sprintf("srv-%03d", n-1)
	put := map[string]any{"id": last, "name": "Renamed Last", "transport": "stdio", "command": "true"}
	wantStatus(t, e.api(http.MethodPut, "/api/v1/servers/"+last, put), http.StatusOK)
	s.until(t, 10*time.Second, "live update", func(ev sseEvent) bool {
		return ev.name == "row-"+last && strings.Contains(ev.text(), "Renamed Last")
	})
}

// streamRecorder is a ResponseWriter for in-process streaming requests,
// safe to read while the handler writes.
type streamRecorder struct {
	mu      sync.Mutex
	header  http.Header
	code    int
	body    bytes.Buffer
	flushed chan struct{}
	once    sync.Once
}

func newStreamRecorder() *streamRecorder {
	return &streamRecorder{header: http.Header{}, flushed: make(chan struct{})}
}

func (w *streamRecorder) Header() http.Header { return w.header }
func (w *streamRecorder) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.code == 0 {
		w.code = code
	}
}
func (w *streamRecorder) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.body.Write(p)
}
func (w *streamRecorder) Flush() { w.once.Do(func() { close(w.flushed) }) }
func (w *streamRecorder) status() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.code
}

func TestEventsConnectDisconnectNoLeak(t *testing.T) {
	e := newEnv(t)
	e.createServer(fixtureServer("c1"))
	e.createServer(fixtureServer("c2"))
	b := e.login()
	cycle := func() {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r := b.request(http.MethodGet, "/events", nil).WithContext(ctx)
		w := newStreamRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.app.ServeHTTP(w, r)
		}()
		select {
		case <-w.flushed:
		case <-done:
			t.Fatalf("/events ended at once with %d", w.status())
		case <-time.After(5 * time.Second):
			t.Fatal("/events did not start streaming")
		}
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("/events did not end when the client went away")
		}
	}
	for range 20 {
		cycle()
	}
	base := settledGoroutines()
	start := time.Now()
	for range 1000 {
		cycle()
	}
	t.Logf("1000 cycles in %v", time.Since(start))
	waitFor(t, 5*time.Second, "no connections", func() bool { return e.hub.Connections() == 0 })
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base+2 {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines grew from %d to %d after 1000 connections:\n%s", base, n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settledGoroutines waits until the goroutine count stops changing.
func settledGoroutines() int {
	prev := runtime.NumGoroutine()
	for range 100 {
		time.Sleep(20 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == prev {
			return n
		}
		prev = n
	}
	return prev
}

func TestEventsEndOnShutdown(t *testing.T) {
	e := newEnv(t)
	e.createServer(fixtureServer("sd"))
	b := e.login()
	srv, client := e.liveServer()
	var streams []*sseStream
	for range 5 {
		s := b.openEvents(srv, client)
		s.until(t, 5*time.Second, "snapshot", named("status-sd"))
		streams = append(streams, s)
	}
	start := time.Now()
	go e.stop()
	for i, s := range streams {
		timer := time.NewTimer(time.Second - time.Since(start))
	drain:
		for {
			select {
			case _, open := <-s.events:
				if !open {
					break drain
				}
			case <-timer.C:
				t.Fatalf("stream %d still open 1 s after Close", i)
			}
		}
		timer.Stop()
	}
	t.Logf("all streams ended %v after Close", time.Since(start))
	waitFor(t, 5*time.Second, "no connections", func() bool { return e.hub.Connections() == 0 })

	// After Close, nothing new starts.
	r := b.request(http.MethodGet, "/events", nil)
	w := newStreamRecorder()
	e.app.ServeHTTP(w, r)
	if w.status() != http.StatusServiceUnavailable {
		t.Errorf("/events after Close: %d, want 503", w.status())
	}
	wantStatus(t, e.api(http.MethodPost, "/api/v1/servers/sd/verify", confirmed), http.StatusServiceUnavailable)
	e.logs.ForgetErrors() // the 503 is logged as an error
}

// TestEventsCatchUpWithThePage: a page's stream names the store revision
// the page was read at. Tools that changed after the page was read, with
// their signal gone out before the stream connected, are signalled in
// the first snapshot; a page as new as the store gets no such signal.
func TestEventsCatchUpWithThePage(t *testing.T) {
	e := newEnv(t)
	e.createServer(fixtureServer("cu"))
	b := e.login()
	srv, client := e.liveServer()
	streamOf := func() string {
		t.Helper()
		page := parseHTML(t, b.get("/servers/cu").Body.String())
		path := mustOne(t, page, "body").AttrOr("sse-connect", "")
		if !strings.HasPrefix(path, "/events?rev=") || len(path) == len("/events?rev=") {
			t.Fatalf("sse-connect = %q; want /events?rev=<revision>", path)
		}
		return path
	}
	// toolsSignalled reads the snapshot, then the servers event a new server
	// causes, and reports whether tools-cu came in between.
	toolsSignalled := func(path, marker string) bool {
		t.Helper()
		s := b.openEventsAt(srv, client, path)
		s.until(t, 5*time.Second, "snapshot", named("status-cu"))
		e.createServer(fixtureServer(marker))
		seen := s.until(t, 5*time.Second, "servers changed", named("servers"))
		for _, ev := range seen {
			if ev.name == "tools-cu" {
				return true
			}
		}
		return false
	}

	old := streamOf()
	e.verify("cu") // the tools change after the page was read
	if !toolsSignalled(old, "m1") {
		t.Error("a page read before its tools changed got no tools-cu signal on connect")
	}
	if toolsSignalled(streamOf(), "m2") {
		t.Error("a page as new as the store got a tools-cu signal on connect; want none")
	}
}
