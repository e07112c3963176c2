package discovery

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// watchRun runs Watch in the background and collects its events.
type watchRun struct {
	mu     sync.Mutex
	events []WatchEvent
	cancel context.CancelFunc
	done   chan error
}

// startWatch watches target with v (a default Verifier if nil), the
// handshake bounded by 5 s; cleanup cancels the watch and waits for it.
func startWatch(t *testing.T, v *Verifier, target Target, ping time.Duration) *watchRun {
	t.Helper()
	if v == nil {
		v = NewVerifier(Limits{}, nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchRun{cancel: cancel, done: make(chan error, 1)}
	go func() {
		w.done <- v.Watch(ctx, target, 5*time.Second, ping, func(ev WatchEvent) {
			w.mu.Lock()
			w.events = append(w.events, ev)
			w.mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
			t.Error("Watch did not return after cancel")
		}
	})
	return w
}

func (w *watchRun) count(kind string) (n int, last WatchEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ev := range w.events {
		if ev.Kind == kind {
			n++
			last = ev
		}
	}
	return n, last
}

func (w *watchRun) waitCount(t *testing.T, kind string, n int) WatchEvent {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, last := w.count(kind)
		if got >= n {
			return last
		}
		select {
		case err := <-w.done:
			w.done <- err
			t.Fatalf("Watch returned %v after %d %s events; want %d", err, got, kind, n)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s events after 10 s; want %d", got, kind, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// running fails the test if Watch has returned.
func (w *watchRun) running(t *testing.T) {
	t.Helper()
	select {
	case err := <-w.done:
		w.done <- err
		t.Fatalf("Watch returned %v; want it still watching", err)
	default:
	}
}

// stop cancels the watch and returns what Watch returned.
func (w *watchRun) stop(t *testing.T) error {
	t.Helper()
	w.cancel()
	select {
	case err := <-w.done:
		w.done <- err // for the cleanup
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return within 5 s of cancel")
		return nil
	}
}

// ended waits up to within for Watch to return on its own, and returns
// its error, which must be an *Error.
func (w *watchRun) ended(t *testing.T, within time.Duration) *Error {
	t.Helper()
	select {
	case err := <-w.done:
		w.done <- err
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("Watch = %v (%T); want an *Error", err, err)
		}
		if want := Suggestion(e.Class); e.Suggestion != want && (e.Class != ClassHTTPStatus || e.Suggestion != statusSuggestion(e.HTTPStatus, want)) {
			t.Errorf("Watch error suggestion = %q; want the one of %q", e.Suggestion, e.Class)
		}
		return e
	case <-time.After(within):
		t.Fatalf("Watch still running after %s", within)
		return nil
	}
}

func testMCPServer() *server.MCPServer {
	s := server.NewMCPServer("watched", "1.2.3", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("first"), nil)
	return s
}

// remoteVariant is a way to serve an in-process mcp-go server.
type remoteVariant struct {
	name      string
	transport string
	legacy    bool // Streamable HTTP before 2026-07-28: notifications on the GET stream
}

var remoteVariants = []remoteVariant{
	{"http", TransportHTTP, false},
	{"http-legacy", TransportHTTP, true},
	{"sse", TransportSSE, false},
}

// served is an in-process server behind httptest, with a handler that
// lets a test see and bend what happens.
type served struct {
	ts  *httptest.Server
	url string // the MCP endpoint
	// gets counts the GET requests (the legacy notification stream).
	gets atomic.Int32
	// hang, once set, makes new POSTs wait until their client gives up.
	hang atomic.Bool
	// getStream, if set, serves GETs instead of the server.
	getStream http.HandlerFunc
}

// serve serves s as the variant says.
func serve(t *testing.T, s *server.MCPServer, v remoteVariant) *served {
	t.Helper()
	sv := &served{}
	var h http.Handler
	sv.ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			sv.gets.Add(1)
			if sv.getStream != nil {
				sv.getStream(w, r)
				return
			}
		}
		if r.Method == http.MethodPost && sv.hang.Load() {
			// Read whole, so that the server notices when the client
			// gives up (it looks only once the body is read).
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		h.ServeHTTP(w, r)
	}))
	base := "http://" + sv.ts.Listener.Addr().String()
	switch {
	case v.transport == TransportSSE:
		sse := server.NewSSEServer(s, server.WithBaseURL(base))
		// The SSE server's goroutines end with its sessions.
		t.Cleanup(func() { sse.Shutdown(context.Background()) })
		h, sv.url = sse, base+"/sse"
	case v.legacy:
		h = server.NewStreamableHTTPServer(s, server.WithStreamableHTTPProtocolVersions(
			mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250326))
		sv.url = base + "/mcp"
	default:
		h, sv.url = server.NewStreamableHTTPServer(s), base+"/mcp"
	}
	sv.ts.Start()
	t.Cleanup(sv.ts.Close)
	return sv
}

// Over Streamable HTTP (2026-07-28 and before) and legacy SSE, a held
// session reports who the server is and each list change, coalescing a
// burst of them, and outlives the per-request timeouts of a
// verification (mcp-go would set one on the whole GET stream).
func TestWatchRemote(t *testing.T) {
	for _, rv := range remoteVariants {
		t.Run(rv.name, func(t *testing.T) {
			s := testMCPServer()
			sv := serve(t, s, rv)
			const listTimeout = 300 * time.Millisecond
			w := startWatch(t, NewVerifier(Limits{ListTimeout: listTimeout}, nil), Target{Transport: rv.transport, URL: sv.url}, time.Minute)
			ev := w.waitCount(t, WatchConnected, 1)
			if want := (WatchEvent{Kind: WatchConnected, ServerName: "watched", ServerVersion: "1.2.3", ListChanged: true}); ev != want {
				t.Errorf("connected = %+v; want %+v", ev, want)
			}
			time.Sleep(3 * listTimeout)
			w.running(t)
			s.AddTool(mcp.NewTool("second"), nil)
			w.waitCount(t, WatchToolsChanged, 1)

			// A burst of 200 changes is one or two events, not 200.
			start := time.Now()
			for i := range 200 {
				s.AddTool(mcp.NewTool(fmt.Sprintf("burst_%d", i)), nil)
			}
			w.waitCount(t, WatchToolsChanged, 2)
			time.Sleep(WatchCoalesce + 300*time.Millisecond)
			n, _ := w.count(WatchToolsChanged)
			if limit := 3 + int(time.Since(start)/WatchCoalesce); n > limit {
				t.Errorf("%d events for a burst; want at most %d (one per %s)", n, limit, WatchCoalesce)
			}
			// The notifications came on the stream of the era: one GET
			// stream, never reopened, on legacy Streamable HTTP; none on
			// 2026-07-28 (subscriptions/listen is a POST).
			switch gets := sv.gets.Load(); {
			case rv.transport == TransportHTTP && rv.legacy && gets != 1:
				t.Errorf("%d GET streams; want 1", gets)
			case rv.transport == TransportHTTP && !rv.legacy && gets != 0:
				t.Errorf("%d GET streams; want none on 2026-07-28", gets)
			}
			if err := w.stop(t); err != nil {
				t.Errorf("Watch after cancel = %v; want nil", err)
			}
		})
	}
}

// A server whose prompts or resources change (and that has no tools that
// do) is heard too, in every era: a verification walks those lists.
func TestWatchRemoteListedChanges(t *testing.T) {
	for _, rv := range remoteVariants {
		t.Run(rv.name, func(t *testing.T) {
			s := server.NewMCPServer("watched", "1", server.WithPromptCapabilities(true), server.WithResourceCapabilities(false, true))
			sv := serve(t, s, rv)
			w := startWatch(t, NewVerifier(Limits{}, nil), Target{Transport: rv.transport, URL: sv.url}, time.Minute)
			if ev := w.waitCount(t, WatchConnected, 1); !ev.ListChanged {
				t.Errorf("connected = %+v; want ListChanged (prompts and resources declare it)", ev)
			}
			// Changed until heard: the listen stream (2026-07-28) opens
			// after the connected event, and a change before it is lost.
			changeUntilHeard := func(want int, change func(i int)) {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for i := 0; ; i++ {
					if n, _ := w.count(WatchToolsChanged); n >= want {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("no change heard within 10 s (want %d)", want)
					}
					change(i)
					time.Sleep(200 * time.Millisecond)
				}
			}
			changeUntilHeard(1, func(i int) {
				s.AddPrompt(mcp.NewPrompt(fmt.Sprintf("fresh_%d", i)), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) { return nil, nil })
			})
			time.Sleep(WatchCoalesce)
			before, _ := w.count(WatchToolsChanged)
			changeUntilHeard(before+1, func(i int) {
				s.AddResource(mcp.NewResource(fmt.Sprintf("test://fresh/%d", i), "fresh"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil })
			})
			if err := w.stop(t); err != nil {
				t.Errorf("Watch after cancel = %v; want nil", err)
			}
		})
	}
}

// A remote server that goes away ends the watch with a network error,
// within the ping interval.
func TestWatchRemoteLost(t *testing.T) {
	for _, rv := range remoteVariants {
		t.Run(rv.name, func(t *testing.T) {
			sv := serve(t, testMCPServer(), rv)
			const ping = 200 * time.Millisecond
			w := startWatch(t, nil, Target{Transport: rv.transport, URL: sv.url}, ping)
			w.waitCount(t, WatchConnected, 1)
			sv.ts.CloseClientConnections()
			sv.ts.Close()
			e := w.ended(t, ping+time.Second)
			if e.Class != ClassNetwork || e.Phase != PhaseWatching {
				t.Errorf("Watch of a server that went away = %v; want a network error in phase watching", e)
			}
		})
	}
}

// A remote server that stops answering, its connections open, ends the
// watch when a ping is not answered within the init timeout (over
// 2026-07-28 the ping is server/discover: mcp-go's Ping sends nothing).
func TestWatchRemotePingTimeout(t *testing.T) {
	for _, rv := range remoteVariants[:2] {
		t.Run(rv.name, func(t *testing.T) {
			sv := serve(t, testMCPServer(), rv)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			start := time.Now()
			var connected atomic.Bool
			go func() {
				done <- NewVerifier(Limits{}, nil).Watch(ctx, Target{Transport: rv.transport, URL: sv.url}, 500*time.Millisecond, 100*time.Millisecond, func(ev WatchEvent) {
					if ev.Kind == WatchConnected {
						connected.Store(true)
					}
				})
			}()
			defer func() { cancel(); <-done }()
			for !connected.Load() {
				if time.Since(start) > 5*time.Second {
					t.Fatal("not connected within 5 s")
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond) // pings answered
			hung := time.Now()
			sv.hang.Store(true)
			var err error
			select {
			case err = <-done:
				done <- err
			case <-time.After(5 * time.Second):
				t.Fatal("Watch still running 5 s after its server hung")
			}
			var e *Error
			if !errors.As(err, &e) || e.Class != ClassTimeout || e.Phase != PhaseWatching || !strings.Contains(e.Message, "ping") {
				t.Errorf("Watch of a hung server = %v; want a timeout of a ping in phase watching", err)
			}
			// The next ping within 100 ms, its deadline 500 ms later;
			// then the stop (a legacy session's DELETE is not answered
			// either, and its wait is mcp-go's).
			if d := time.Since(hung); d > 2*time.Second {
				t.Errorf("Watch returned %s after the server hung; want about 600 ms", d)
			}
		})
	}
}

// On a remote event stream, a flood of notifications (hostile #16) and
// an endless event (#15) end the watch with too_large, the memory bounded
// by the limits, and the caller not flooded.
func TestWatchRemoteFlood(t *testing.T) {
	const notification = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
	for _, c := range []struct {
		name   string
		limits Limits
		stream func(w http.ResponseWriter) error
		want   string
	}{
		{
			name:   "notifications",
			limits: Limits{TotalBytes: 64 << 10},
			stream: func(w http.ResponseWriter) error {
				_, err := w.Write([]byte(strings.Repeat("data: "+notification+"\n\n", 100)))
				return err
			},
			want: fmt.Sprintf("more than %d bytes within %s", 64<<10, WatchWindow),
		},
		{
			name:   "endless event",
			limits: Limits{MessageBytes: 16 << 10},
			stream: func(w http.ResponseWriter) error {
				_, err := w.Write([]byte(strings.Repeat("x", 4096)))
				return err
			},
			want: fmt.Sprintf("a message larger than %d bytes", 16<<10),
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			sv := serve(t, testMCPServer(), remoteVariants[1])
			sv.getStream = func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				if c.name == "endless event" {
					w.Write([]byte("data: "))
				}
				for r.Context().Err() == nil && c.stream(w) == nil {
					w.(http.Flusher).Flush()
				}
			}
			start := time.Now()
			w := startWatch(t, NewVerifier(c.limits, nil), Target{Transport: TransportHTTP, URL: sv.url}, time.Minute)
			e := w.ended(t, 10*time.Second)
			if e.Class != ClassTooLarge || !strings.Contains(e.Message, c.want) {
				t.Errorf("Watch of a flooding server = %v; want too_large, %q", e, c.want)
			}
			if n, _ := w.count(WatchToolsChanged); n > 1+int(time.Since(start)/WatchCoalesce) {
				t.Errorf("%d WatchToolsChanged events in %s; want at most one a second", n, time.Since(start))
			}
		})
	}
}

// A stdio server is held as a process in its own group: a change of its
// tools file is heard, a new version is reported (2026-07-28 has no
// handshake to repeat: a ping asks), and cancelling ends the whole
// group.
func TestWatchStdio(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tools.json")
	write := func(version string, names ...string) {
		var tools []map[string]any
		for _, n := range names {
			tools = append(tools, map[string]any{"name": n, "inputSchema": map[string]any{"type": "object"}})
		}
		data, _ := json.Marshal(map[string]any{"version": version, "tools": tools})
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("4.5.6", "a")
	target, groupGone := withGroupCheck(t, Target{Transport: TransportStdio, Command: fixture, Args: []string{"-tools-file", file}})
	w := startWatch(t, nil, target, 100*time.Millisecond)
	if ev := w.waitCount(t, WatchConnected, 1); ev.ServerName != "mcp-fixture" || ev.ServerVersion != "4.5.6" || !ev.ListChanged {
		t.Errorf("connected = %+v; want mcp-fixture 4.5.6 with listChanged", ev)
	}
	write("4.5.6", "a", "b")
	w.waitCount(t, WatchToolsChanged, 1)
	write("4.6.0", "a", "b")
	if ev := w.waitCount(t, WatchConnected, 2); ev.ServerVersion != "4.6.0" {
		t.Errorf("connected again = %+v; want version 4.6.0", ev)
	}
	if err := w.stop(t); err != nil {
		t.Errorf("Watch after cancel = %v; want nil", err)
	}
	groupGone()
}

// A stdio server that sends requests to the client (sampling,
// elicitation, roots) is refused, and the watch goes on.
func TestWatchStdioClientRequests(t *testing.T) {
	target, groupGone := withGroupCheck(t, fixtureTarget("client-requests"))
	w := startWatch(t, nil, target, 50*time.Millisecond)
	w.waitCount(t, WatchConnected, 1)
	time.Sleep(200 * time.Millisecond) // pings answered
	w.running(t)
	if err := w.stop(t); err != nil {
		t.Errorf("Watch after cancel = %v; want nil", err)
	}
	groupGone()
}

// testServerEnv, set in a child's environment, makes this test binary a
// stdio MCP server (see serveTestServer) instead of running the tests.
const testServerEnv = "DISCOVERY_TEST_SERVER"

// serveTestServer is a stdio MCP server for what the fixture does not
// do: it answers the handshake (2025-06-18, tools.listChanged) and pings,
// and once initialized sends notifications/tools/list_changed, one each
// millisecond (mode "paced") or as fast as they are read ("flood"). It
// returns when stdin ends.
func serveTestServer(mode string) int {
	var mu sync.Mutex // stdout
	send := func(b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := os.Stdout.Write(b)
		return err
	}
	notification := []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n")
	notify := func() {
		switch mode {
		case "paced":
			for range time.Tick(time.Millisecond) {
				if send(notification) != nil {
					return
				}
			}
		case "flood":
			burst := []byte(strings.Repeat(string(notification), 100))
			for send(burst) == nil {
			}
		}
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.Method == "" {
			continue
		}
		var answer string
		switch m.Method {
		case "initialize":
			answer = `"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"notifier","version":"1"}}`
		case "ping":
			answer = `"result":{}`
		case "notifications/initialized":
			go notify()
			continue
		default:
			if len(m.ID) == 0 {
				continue
			}
			answer = `"error":{"code":-32601,"message":"Method not found"}`
		}
		send([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,` + answer + "}\n"))
	}
	return 0
}

// testServer returns a target that runs this test binary as a stdio
// server in the mode (see serveTestServer), and the check that its group
// is gone (see withGroupCheck).
func testServer(t *testing.T, mode string) (Target, func()) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return withGroupCheck(t, Target{Transport: TransportStdio, Command: self, Env: map[string]string{testServerEnv: mode}})
}

// Over stdio, notifications a thousand a second are coalesced to one
// event a second, for as long as they stay within the byte budget of each
// window, though their total exceeds it many times; a flood beyond that
// rate, or one before the handshake is done (hostile #16), ends the watch
// with too_large. Either way, the caller is not flooded, and the group is
// gone after.
func TestWatchStdioFlood(t *testing.T) {
	limits := Limits{TotalBytes: 32 << 10}
	for _, c := range []struct {
		name    string
		target  func(t *testing.T) (Target, func())
		window  time.Duration
		tooLong bool   // ends with too_large
		phase   string // where it ends
	}{
		{name: "paced", target: func(t *testing.T) (Target, func()) { return testServer(t, "paced") }, window: 250 * time.Millisecond},
		{name: "flood", target: func(t *testing.T) (Target, func()) { return testServer(t, "flood") }, tooLong: true, phase: PhaseWatching},
		{name: "before the handshake", target: func(t *testing.T) (Target, func()) {
			return withGroupCheck(t, fixtureTarget("notify-flood"))
		}, tooLong: true, phase: PhaseInitializing},
	} {
		t.Run(c.name, func(t *testing.T) {
			target, groupGone := c.target(t)
			v := NewVerifier(limits, nil)
			v.watchWindow = c.window
			start := time.Now()
			w := startWatch(t, v, target, 100*time.Millisecond)
			if c.tooLong {
				e := w.ended(t, 10*time.Second)
				if e.Class != ClassTooLarge || e.Phase != c.phase {
					t.Errorf("Watch of a flood = %v; want too_large in phase %s", e, c.phase)
				}
			} else {
				w.waitCount(t, WatchConnected, 1)
				time.Sleep(2500 * time.Millisecond) // some 150 KiB, 15 KiB a window
				w.running(t)
				if n, _ := w.count(WatchToolsChanged); n < 2 {
					t.Errorf("%d WatchToolsChanged events in 2.5 s of notifications; want one a second", n)
				}
				if err := w.stop(t); err != nil {
					t.Errorf("Watch after cancel = %v; want nil", err)
				}
			}
			if n, _ := w.count(WatchToolsChanged); n > 1+int(time.Since(start)/WatchCoalesce) {
				t.Errorf("%d WatchToolsChanged events in %s; want at most one a second", n, time.Since(start))
			}
			groupGone()
		})
	}
}

// A watch's HTTP bodies cap each message: an event of an event stream
// (blank lines, LF or CRLF, end one; its framing gets messageSlack), or a
// whole other body; the budget is not the bound.
func TestCappedBodyMessages(t *testing.T) {
	small := "data: " + strings.Repeat("x", 900) + "\n\n"
	big := "event: message\ndata: " + strings.Repeat("x", 900) + "\r\ndata: " + strings.Repeat("y", 900) + "\r\n"
	for _, c := range []struct {
		name   string
		body   string
		events bool
		cut    bool
	}{
		{"many events within", strings.Repeat(small, 100), true, false},
		{"CRLF events within", strings.Repeat(big+"\r\n", 100), true, false},
		{"one event over", strings.Repeat(big, 4), true, true},
		{"an endless line", "data: " + strings.Repeat("z", 1000+messageSlack), true, true},
		{"a body within", strings.Repeat("j", 1000), false, false},
		{"a body over", strings.Repeat("j", 1001), false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tally := &httpTally{}
			b := &cappedBody{rc: io.NopCloser(iotest.HalfReader(strings.NewReader(c.body))), budget: newByteBudget(1<<20, 0),
				message: 1000, events: c.events, tally: tally}
			_, err := io.ReadAll(b)
			var tooLarge errTooLarge
			if got := errors.As(err, &tooLarge); got != c.cut || (tally.tooLarge() != nil) != c.cut {
				t.Errorf("reading %d bytes: %v (tally %v); want cut %v", len(c.body), err, tally.tooLarge(), c.cut)
			}
		})
	}
}
