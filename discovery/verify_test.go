package discovery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/internal/fixturetest"
)

// startRemoteFixture runs the fixture with -transport http|sse and returns
// the URL it prints. The process is killed and reaped in t.Cleanup.
func startRemoteFixture(t *testing.T, transport string, args ...string) string {
	t.Helper()
	return fixturetest.Start(t, fixture, transport, args...)
}

// checkTools checks the tools of a fixture with n tools: names in order,
// Raw exactly the tool's JSON with a matching name, and Pin its canonical
// hash.
func checkTools(t *testing.T, tools []Tool, n int) {
	t.Helper()
	if len(tools) != n {
		t.Fatalf("got %d tools, want %d", len(tools), n)
	}
	for i, tool := range tools {
		want := fmt.Sprintf("tool_%03d", i)
		if tool.Name != want {
			t.Errorf("tool %d is %q, want %q", i, tool.Name, want)
		}
		var raw map[string]any
		if err := json.Unmarshal(tool.Raw, &raw); err != nil {
			t.Fatalf("tool %s: Raw is not valid JSON: %v: %s", tool.Name, err, tool.Raw)
		}
		if raw["name"] != tool.Name {
			t.Errorf("tool %s: Raw name is %v", tool.Name, raw["name"])
		}
		if raw["description"] != tool.Description || tool.Description == "" {
			t.Errorf("tool %s: Description %q, Raw has %v", tool.Name, tool.Description, raw["description"])
		}
		if len(tool.InputSchema) == 0 || !json.Valid(tool.InputSchema) {
			t.Errorf("tool %s: InputSchema %q", tool.Name, tool.InputSchema)
		}
		canon, err := jcs.Transform(tool.Raw)
		if err != nil {
			t.Fatalf("tool %s: jcs: %v", tool.Name, err)
		}
		sum := sha256.Sum256(canon)
		if got := hex.EncodeToString(sum[:]); tool.Pin != got {
			t.Errorf("tool %s: Pin %s, want %s", tool.Name, tool.Pin, got)
		}
	}
	// Same definition => same pin; different definition => different pin.
	if n >= 2 && tools[0].Pin == tools[1].Pin {
		t.Errorf("two different tools share the pin %s", tools[0].Pin)
	}
}

// transport says whether the verification listed as a client that
// answers too (not over HTTP+SSE).
func checkFixtureResult(t *testing.T, res *Result, tools, pages int, transport string) {
	t.Helper()
	if res.Pages != pages {
		t.Errorf("Pages = %d, want %d", res.Pages, pages)
	}
	checkTools(t, res.Tools, tools)
	if res.ProtocolVersion == "" {
		t.Error("ProtocolVersion is empty")
	}
	if res.ServerName != "mcp-fixture" || res.ServerVersion != "1.0.0" {
		t.Errorf("server %q %q, want mcp-fixture 1.0.0", res.ServerName, res.ServerVersion)
	}
	var caps map[string]any
	if err := json.Unmarshal(res.Capabilities, &caps); err != nil || caps["tools"] == nil {
		t.Errorf("Capabilities %s do not declare tools (%v)", res.Capabilities, err)
	}
	var phases []string
	for _, tm := range res.Timings {
		phases = append(phases, tm.Phase)
		if tm.Duration < 0 {
			t.Errorf("timing %s is negative: %v", tm.Phase, tm.Duration)
		}
	}
	want := []string{PhaseStarting, PhaseInitializing, PhaseListing, PhaseAskTools}
	if transport == TransportSSE {
		want = want[:3]
	}
	if !slices.Equal(phases, want) {
		t.Errorf("timings for %v, want %v", phases, want)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("unexpected warnings: %q", res.Warnings)
	}
}

func TestVerifyFixtureStdio(t *testing.T) {
	res, e, d := verify(t, Limits{}, Target{Transport: TransportStdio, Command: fixture, Args: []string{"-tools", "25", "-page-size", "10"}}, nil)
	if e != nil {
		t.Fatalf("Verify: %v (stderr %q)", e, e.StderrTail)
	}
	checkFixtureResult(t, res, 25, 3, TransportStdio)
	t.Logf("stdio fixture verified in %v (protocol %s)", d, res.ProtocolVersion)
}

func TestVerifyFixtureRemote(t *testing.T) {
	for _, tr := range []string{TransportHTTP, TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			u := startRemoteFixture(t, tr, "-tools", "25", "-page-size", "10")
			res, e, d := verify(t, Limits{}, Target{Transport: tr, URL: u}, nil)
			if e != nil {
				t.Fatalf("Verify %s: %v", u, e)
			}
			checkFixtureResult(t, res, 25, 3, tr)
			if res.StderrTail != "" {
				t.Errorf("remote StderrTail = %q", res.StderrTail)
			}
			t.Logf("%s fixture verified in %v (protocol %s)", tr, d, res.ProtocolVersion)
		})
	}
}

func TestVerifyPinsStableAcrossTransports(t *testing.T) {
	// The same tools served over stdio and http pin to the same values:
	// Raw is the server's JSON, not a transport-specific re-encoding.
	resStdio, e, _ := verify(t, Limits{}, Target{Transport: TransportStdio, Command: fixture, Args: []string{"-tools", "3"}}, nil)
	if e != nil {
		t.Fatal(e)
	}
	u := startRemoteFixture(t, TransportHTTP, "-tools", "3")
	resHTTP, e, _ := verify(t, Limits{}, Target{Transport: TransportHTTP, URL: u}, nil)
	if e != nil {
		t.Fatal(e)
	}
	for i := range 3 {
		if resStdio.Tools[i].Pin != resHTTP.Tools[i].Pin {
			t.Errorf("tool %s: stdio pin %s, http pin %s", resStdio.Tools[i].Name, resStdio.Tools[i].Pin, resHTTP.Tools[i].Pin)
		}
	}
}

func TestVerifyProgress(t *testing.T) {
	var got []Progress
	_, e, _ := verify(t, Limits{}, Target{Transport: TransportStdio, Command: fixture, Args: []string{"-tools", "25", "-page-size", "10"}},
		func(p Progress) { got = append(got, p) })
	if e != nil {
		t.Fatal(e)
	}
	want := []Progress{{Phase: PhaseStarting}, {Phase: PhaseInitializing}, {Phase: PhaseListing, Page: 1}, {Phase: PhaseListing, Page: 2}, {Phase: PhaseListing, Page: 3}, {Phase: PhaseAskTools}}
	if len(got) != len(want) {
		t.Fatalf("progress %+v, want phases %+v", got, want)
	}
	var last time.Duration
	for i := range want {
		if got[i].Phase != want[i].Phase || got[i].Page != want[i].Page {
			t.Errorf("progress %d = %s page %d, want %s page %d", i, got[i].Phase, got[i].Page, want[i].Phase, want[i].Page)
		}
		if got[i].Elapsed < last {
			t.Errorf("progress %d: Elapsed went back from %v to %v", i, last, got[i].Elapsed)
		}
		last = got[i].Elapsed
	}
}

func TestVerifyHangInit(t *testing.T) {
	limits := Limits{InitTimeout: 500 * time.Millisecond, Grace: 200 * time.Millisecond}
	t.Run("stdio", func(t *testing.T) {
		_, e, d := verify(t, limits, fixtureTarget("hang-init"), nil)
		wantClass(t, e, ClassTimeout, PhaseInitializing)
		if d < limits.InitTimeout || d > 3*time.Second {
			t.Errorf("Verify took %v, want between %v and 3s", d, limits.InitTimeout)
		}
		t.Logf("stdio hang-init: %v after %v", e, d)
	})
	t.Run("stdio initTimeout argument", func(t *testing.T) {
		// Verify's initTimeout argument overrides the limit.
		v := NewVerifier(Limits{Grace: 200 * time.Millisecond}, nil)
		target, groupGone := withGroupCheck(t, fixtureTarget("hang-init"))
		start := time.Now()
		_, err := v.Verify(context.Background(), target, 300*time.Millisecond, nil)
		d := time.Since(start)
		groupGone()
		var e *Error
		if !errors.As(err, &e) || e.Class != ClassTimeout {
			t.Fatalf("err = %v, want timeout", err)
		}
		if d < 300*time.Millisecond || d > 3*time.Second {
			t.Errorf("Verify took %v with a 300ms init timeout", d)
		}
	})
	for _, tr := range []string{TransportHTTP, TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			u := startRemoteFixture(t, tr, "-mode", "hang-init")
			_, e, d := verify(t, limits, Target{Transport: tr, URL: u}, nil)
			wantClass(t, e, ClassTimeout, "")
			if e.Phase != PhaseStarting && e.Phase != PhaseInitializing {
				t.Errorf("phase %q", e.Phase)
			}
			if d > 3*time.Second {
				t.Errorf("Verify took %v", d)
			}
			t.Logf("%s hang-init: %v after %v", tr, e, d)
		})
	}
}

func TestVerifyCancel(t *testing.T) {
	target, groupGone := withGroupCheck(t, fixtureTarget("hang-init"))
	v := NewVerifier(Limits{Grace: 200 * time.Millisecond}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	_, err := v.Verify(ctx, target, 0, func(p Progress) {
		if p.Phase == PhaseInitializing {
			time.AfterFunc(200*time.Millisecond, cancel)
		}
	})
	cancel()
	var e *Error
	if !errors.As(err, &e) || e.Class != ClassCancelled || e.Phase != PhaseInitializing {
		t.Fatalf("err = %v, want cancelled in initializing", err)
	}
	groupGone()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancelled Verify took %v", d)
	}
}

func TestVerifyCrash(t *testing.T) {
	_, e, d := verify(t, Limits{}, fixtureTarget("crash"), nil)
	wantClass(t, e, ClassExited, "")
	if e.ExitCode != 3 {
		t.Errorf("ExitCode = %d, want 3", e.ExitCode)
	}
	if !strings.Contains(e.StderrTail, "mcp-fixture: simulated crash: database unreachable") {
		t.Errorf("StderrTail = %q, want the crash line", e.StderrTail)
	}
	if !strings.Contains(e.Message, "code 3") {
		t.Errorf("Message = %q", e.Message)
	}
	if d > 3*time.Second {
		t.Errorf("Verify of a crashing server took %v", d)
	}
}

// ---- in-process mcp-go servers ----

func newToolServer(n int, opts ...server.ServerOption) *server.MCPServer {
	s := server.NewMCPServer("inproc", "0.1.0", append([]server.ServerOption{server.WithToolCapabilities(false)}, opts...)...)
	for i := range n {
		s.AddTool(mcp.NewTool(fmt.Sprintf("tool_%03d", i), mcp.WithDescription(fmt.Sprintf("Tool number %d.", i)), mcp.WithString("q")),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("ok"), nil
			})
	}
	return s
}

func serveStreamable(t *testing.T, s *server.MCPServer) string {
	t.Helper()
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

func serveSSE(t *testing.T, s *server.MCPServer) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	sse := server.NewSSEServer(s, server.WithBaseURL("http://"+ts.Listener.Addr().String()))
	ts.Config.Handler = sse
	ts.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		sse.Shutdown(ctx)
		ts.Close()
	})
	return ts.URL + "/sse"
}

// listHook returns a server option that rewrites every tools/list result.
// listHook calls fn with each tools/list result to a client that
// declares no features: a verification's plain listing, not the one
// that declares every feature beside it (see features.go), which lists
// the same tools here and so finds none of its own.
func listHook(fn func(*mcp.ListToolsResult)) server.ServerOption {
	hooks := &server.Hooks{}
	hooks.AddAfterListTools(func(ctx context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		if cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok && cs.GetClientCapabilities().Sampling != nil {
			return
		}
		if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientCapabilities != nil && info.ClientCapabilities.Sampling != nil {
			return
		}
		fn(res)
	})
	return server.WithHooks(hooks)
}

func TestVerifyInProcessStreamable(t *testing.T) {
	u := serveStreamable(t, newToolServer(5, server.WithInstructions("Use the tools wisely.")))
	res, e, _ := verify(t, Limits{}, Target{Transport: TransportHTTP, URL: u}, nil)
	if e != nil {
		t.Fatal(e)
	}
	checkTools(t, res.Tools, 5)
	if res.ServerName != "inproc" || res.Pages != 1 || res.Instructions != "Use the tools wisely." {
		t.Errorf("server %q pages %d instructions %q", res.ServerName, res.Pages, res.Instructions)
	}
}

// TestVerifyCapsServerText checks the limits on what a server says about
// itself and on a tool's title and annotations: the server's name,
// version and instructions are cut with a warning; a tool whose title or
// annotations are over the limit is kept oversized, its title cut and
// its annotations dropped.
func TestVerifyCapsServerText(t *testing.T) {
	name, version := strings.Repeat("n", 300), strings.Repeat("é", 150) // 300 bytes
	instructions := strings.Repeat("i", 20_000)
	s := server.NewMCPServer(name, version, server.WithToolCapabilities(false), server.WithInstructions(instructions))
	s.AddTool(mcp.NewTool("titled", mcp.WithTitleAnnotation(strings.Repeat("a", 20_000))), nil) // annotations over 16 KiB
	long := mcp.NewTool("long_title", mcp.WithDescription("Its title is long."))
	long.Title = strings.Repeat("t", 2000)
	s.AddTool(long, nil)
	s.AddTool(mcp.NewTool("plain", mcp.WithDescription("Nothing over a limit.")), nil)
	res, e, _ := verify(t, Limits{}, Target{Transport: TransportHTTP, URL: serveStreamable(t, s)}, nil)
	if e != nil {
		t.Fatal(e)
	}
	if res.ServerName != name[:256] || res.ServerVersion != version[:256] || res.Instructions != instructions[:16<<10] {
		t.Errorf("name of %d bytes, version of %d, instructions of %d; want 256, 256, 16384",
			len(res.ServerName), len(res.ServerVersion), len(res.Instructions))
	}
	for _, want := range []string{
		"the server's name is 300 bytes; the first 256 are kept",
		"the server's version is 300 bytes; the first 256 are kept",
		"the server's instructions is 20000 bytes; the first 16384 are kept",
	} {
		if !slices.Contains(res.Warnings, want) {
			t.Errorf("warnings %q, want %q", res.Warnings, want)
		}
	}
	tools := map[string]Tool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}
	if tl := tools["long_title"]; tl.State != ToolOversized || tl.Title != strings.Repeat("t", 1024) || tl.Raw != nil ||
		!slices.Contains(tl.Problems, "its title is 2000 bytes; the first 1024 are kept") {
		t.Errorf("long_title: State %q, title of %d bytes, Problems %q; want oversized, 1024, the title cut", tl.State, len(tl.Title), tl.Problems)
	}
	if tt := tools["titled"]; tt.State != ToolOversized || tt.Annotations != nil || len(tt.Problems) != 1 ||
		!strings.HasPrefix(tt.Problems[0], "its annotations are 20") || !strings.HasSuffix(tt.Problems[0], "bytes (limit 16384); not kept") {
		t.Errorf("titled: State %q, annotations of %d bytes, Problems %q; want oversized, none kept", tt.State, len(tt.Annotations), tt.Problems)
	}
	if p := tools["plain"]; p.State != "" || p.Annotations == nil {
		t.Errorf("plain: State %q, Problems %q, annotations %s; want sound, annotations kept", p.State, p.Problems, p.Annotations)
	}
}

func TestVerifyNoToolsCapability(t *testing.T) {
	s := server.NewMCPServer("bare", "1") // no tools capability
	res, e, _ := verify(t, Limits{}, Target{Transport: TransportHTTP, URL: serveStreamable(t, s)}, nil)
	if e != nil {
		t.Fatal(e)
	}
	if len(res.Tools) != 0 || res.Pages != 0 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "no tools capability") {
		t.Errorf("tools %d pages %d warnings %q", len(res.Tools), res.Pages, res.Warnings)
	}
}

func TestVerifyPaginationGuards(t *testing.T) {
	t.Run("repeated cursor", func(t *testing.T) {
		var calls atomic.Int32
		// Always the same cursor (base64 "A", which sorts before every
		// name, so each page is the whole list again).
		s := newToolServer(4, listHook(func(r *mcp.ListToolsResult) { calls.Add(1); r.NextCursor = "QQ==" }))
		done := make(chan struct{})
		var res *Result
		var e *Error
		go func() {
			defer close(done)
			res, e, _ = verify(t, Limits{ListTimeout: 5 * time.Second}, Target{Transport: TransportHTTP, URL: serveStreamable(t, s)}, nil)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the walk did not stop")
		}
		if e != nil {
			t.Fatal(e)
		}
		if res.Pages != 2 || calls.Load() != 2 {
			t.Errorf("Pages = %d after %d calls, want 2", res.Pages, calls.Load())
		}
		checkTools(t, res.Tools, 4)
		if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "repeated cursor") }) {
			t.Errorf("no repeated-cursor warning in %q", res.Warnings)
		}
		if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "more than once") }) {
			t.Errorf("no duplicate-tool warning in %q", res.Warnings)
		}
	})
	t.Run("cursor back to the first page", func(t *testing.T) {
		// Page 2 points back at page 1's cursor: a cycle of two.
		var calls atomic.Int32
		s := newToolServer(4, listHook(func(r *mcp.ListToolsResult) {
			if calls.Add(1)%2 == 1 {
				r.NextCursor = "QQ==" // "A"
			} else {
				r.NextCursor = "Qg==" // "B"
			}
		}))
		res, e, _ := verify(t, Limits{}, Target{Transport: TransportHTTP, URL: serveStreamable(t, s)}, nil)
		if e != nil {
			t.Fatal(e)
		}
		if res.Pages != 3 || !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "repeated cursor") }) {
			t.Errorf("Pages %d warnings %q", res.Pages, res.Warnings)
		}
	})
	t.Run("page cap", func(t *testing.T) {
		s := newToolServer(10, server.WithPaginationLimit(1))
		res, e, _ := verify(t, Limits{MaxPages: 3}, Target{Transport: TransportHTTP, URL: serveStreamable(t, s)}, nil)
		if e != nil {
			t.Fatal(e)
		}
		if res.Pages != 3 || len(res.Tools) != 3 {
			t.Errorf("Pages %d, tools %d, want 3 and 3", res.Pages, len(res.Tools))
		}
		if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "page limit") }) {
			t.Errorf("no page-limit warning in %q", res.Warnings)
		}
	})
	t.Run("tool cap", func(t *testing.T) {
		s := newToolServer(25, server.WithPaginationLimit(10))
		_, e, _ := verify(t, Limits{MaxTools: 12}, Target{Transport: TransportHTTP, URL: serveStreamable(t, s)}, nil)
		wantClass(t, e, ClassTooLarge, PhaseListing)
		if !strings.Contains(e.Message, "12 tools") {
			t.Errorf("Message = %q", e.Message)
		}
	})
	t.Run("tool cap reached exactly", func(t *testing.T) {
		s := newToolServer(25, server.WithPaginationLimit(10))
		res, e, _ := verify(t, Limits{MaxTools: 25}, Target{Transport: TransportHTTP, URL: serveStreamable(t, s)}, nil)
		if e != nil {
			t.Fatal(e)
		}
		if len(res.Tools) != 25 || res.Pages != 3 {
			t.Errorf("tools %d pages %d", len(res.Tools), res.Pages)
		}
	})
	t.Run("tool without a name", func(t *testing.T) {
		hooks := &server.Hooks{} // for every client: a listing declaring features would find the tool
		hooks.AddAfterListTools(func(_ context.Context, _ any, _ *mcp.ListToolsRequest, r *mcp.ListToolsResult) { r.Tools[1].Name = "" })
		s := newToolServer(3, server.WithHooks(hooks))
		res, e, _ := verify(t, Limits{}, Target{Transport: TransportHTTP, URL: serveStreamable(t, s)}, nil)
		if e != nil {
			t.Fatal(e)
		}
		if len(res.Tools) != 2 || !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "without a name") }) {
			t.Errorf("tools %d warnings %q", len(res.Tools), res.Warnings)
		}
	})
}

func TestVerifySSEListingOutlivesInitTimeout(t *testing.T) {
	// The init deadline bounds start + initialize only. Listing that goes
	// on past it must still work over SSE, whose stream belongs to the
	// context given to Start.
	s := newToolServer(3, server.WithPaginationLimit(1), listHook(func(*mcp.ListToolsResult) { time.Sleep(400 * time.Millisecond) }))
	res, e, d := verify(t, Limits{InitTimeout: time.Second, ListTimeout: 5 * time.Second}, Target{Transport: TransportSSE, URL: serveSSE(t, s)}, nil)
	if e != nil {
		t.Fatalf("after %v: %v", d, e)
	}
	// mcp-go's pagination ends with an empty fourth page.
	if len(res.Tools) != 3 || res.Pages != 4 {
		t.Errorf("tools %d pages %d", len(res.Tools), res.Pages)
	}
	if d < time.Second {
		t.Errorf("took only %v: the test did not outlive the init timeout", d)
	}
}

func TestVerifyInProcessSSE(t *testing.T) {
	res, e, _ := verify(t, Limits{}, Target{Transport: TransportSSE, URL: serveSSE(t, newToolServer(12, server.WithPaginationLimit(5)))}, nil)
	if e != nil {
		t.Fatal(e)
	}
	checkTools(t, res.Tools, 12)
	if res.Pages != 3 {
		t.Errorf("Pages = %d", res.Pages)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestVerifyRemoteErrors(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		addr := freePort(t)
		for _, tr := range []string{TransportHTTP, TransportSSE} {
			path := map[string]string{TransportHTTP: "/mcp", TransportSSE: "/sse"}[tr]
			_, e, d := verify(t, Limits{}, Target{Transport: tr, URL: "http://" + addr + path}, nil)
			wantClass(t, e, ClassNetwork, "")
			if e.Lasting() {
				t.Errorf("%s: a refused connection is lasting; want it to count as one that may pass", tr)
			}
			if d > 2*time.Second {
				t.Errorf("%s: took %v, want < 2s", tr, d)
			}
			if !strings.Contains(e.Message, "refused") {
				t.Errorf("%s: Message = %q", tr, e.Message)
			}
		}
	})
	t.Run("status", func(t *testing.T) {
		for _, c := range []struct {
			status      int
			credentials bool
			lasting     bool // will not pass by itself
		}{{401, true, true}, {403, true, true}, {404, false, true}, {405, false, true}, {429, false, false}, {500, false, false}, {503, false, false}} {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "no", c.status)
			}))
			for _, tr := range []string{TransportHTTP, TransportSSE} {
				_, e, d := verify(t, Limits{InitTimeout: 3 * time.Second}, Target{Transport: tr, URL: ts.URL}, nil)
				if e == nil || e.Class != ClassHTTPStatus {
					t.Errorf("%s %d: got %v, want http_status", tr, c.status, e)
					continue
				}
				if got := strings.Contains(e.Message, "credentials"); got != c.credentials {
					t.Errorf("%s %d: Message %q, mentions credentials: %v", tr, c.status, e.Message, got)
				}
				if e.HTTPStatus != c.status || e.Lasting() != c.lasting {
					t.Errorf("%s %d: HTTPStatus %d, Lasting %v; want %d, %v", tr, c.status, e.HTTPStatus, e.Lasting(), c.status, c.lasting)
				}
				// The advice matches the status: credentials only for 401/403.
				if got := strings.Contains(e.Suggestion, "credentials"); got != c.credentials {
					t.Errorf("%s %d: Suggestion %q, mentions credentials: %v", tr, c.status, e.Suggestion, got)
				}
				if c.status == 404 && !strings.Contains(e.Suggestion, "path") {
					t.Errorf("%s 404: Suggestion %q; want it to point at the URL's path", tr, e.Suggestion)
				}
				if c.status == 405 && tr == TransportHTTP && !strings.Contains(e.Suggestion, "set the transport to SSE") {
					t.Errorf("%s 405: Suggestion %q; want it to suggest the SSE transport", tr, e.Suggestion)
				}
				if d > 2*time.Second {
					t.Errorf("%s %d: took %v", tr, c.status, d)
				}
			}
			ts.Close()
		}
	})
	forbiddenTarget := func(t *testing.T, e *Error) {
		t.Helper()
		wantClass(t, e, ClassNetwork, "")
		if !strings.Contains(e.Message, "link-local") || !strings.Contains(e.Message, "metadata") {
			t.Errorf("Message = %q, want it to say link-local/metadata", e.Message)
		}
	}
	t.Run("metadata address", func(t *testing.T) {
		for _, tr := range []string{TransportHTTP, TransportSSE} {
			for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[fe80::1]:8080/mcp", "http://[::ffff:169.254.169.254]/"} {
				_, e, d := verify(t, Limits{InitTimeout: 2 * time.Second}, Target{Transport: tr, URL: u}, nil)
				forbiddenTarget(t, e)
				if d > 2*time.Second {
					t.Errorf("%s %s: took %v", tr, u, d)
				}
			}
		}
	})
	t.Run("redirect to metadata address", func(t *testing.T) {
		ts := httptest.NewServer(http.RedirectHandler("http://169.254.169.254/latest/meta-data/", http.StatusTemporaryRedirect))
		defer ts.Close()
		for _, tr := range []string{TransportHTTP, TransportSSE} {
			_, e, _ := verify(t, Limits{InitTimeout: 2 * time.Second}, Target{Transport: tr, URL: ts.URL + "/mcp"}, nil)
			forbiddenTarget(t, e)
		}
	})
	t.Run("not MCP", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>hello</html>")
		}))
		defer ts.Close()
		_, e, _ := verify(t, Limits{InitTimeout: 2 * time.Second}, Target{Transport: TransportHTTP, URL: ts.URL}, nil)
		if e == nil || (e.Class != ClassProtocol && e.Class != ClassHTTPStatus) {
			t.Errorf("got %v, want protocol", e)
		}
	})
	t.Run("unknown transport", func(t *testing.T) {
		_, e, _ := verify(t, Limits{}, Target{Transport: "carrier-pigeon"}, nil)
		wantClass(t, e, ClassInternal, PhaseStarting)
	})
}

func TestVerifyServerEverything(t *testing.T) {
	entry, err := filepath.Abs(everythingEntry)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("@modelcontextprotocol/server-everything is not installed (%v): run `npm ci --prefix e2e` in the repository root", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not installed: %v", err)
	}
	target := Target{Transport: TransportStdio, Command: "node", Args: []string{entry, "stdio"}}
	var phases []string
	res, e, d := verify(t, Limits{}, target, func(p Progress) { phases = append(phases, p.Phase) })
	if e != nil {
		t.Fatalf("Verify: %v\nstderr: %s", e, e.StderrTail)
	}
	if res.ServerName != "mcp-servers/everything" {
		t.Errorf("ServerName = %q", res.ServerName)
	}
	// 13 for every client, and 4 it lists only to a client that
	// declares what they ask (its registerConditionalTools).
	if len(res.Tools) != 17 {
		t.Errorf("got %d tools, want 17", len(res.Tools))
	}
	needs := map[string][]string{
		"trigger-sampling-request":    {FeatureSampling},
		"trigger-elicitation-request": {FeatureElicitation, FeatureURLElicitation},
		"trigger-url-elicitation":     {FeatureURLElicitation},
		"get-roots-list":              {FeatureRoots},
	}
	var names []string
	for _, tool := range res.Tools {
		if !slices.Equal(tool.Needs, needs[tool.Name]) {
			t.Errorf("%s needs %q, want %q", tool.Name, tool.Needs, needs[tool.Name])
		}
		names = append(names, tool.Name)
		if tool.Pin == "" || !json.Valid(tool.Raw) {
			t.Errorf("tool %s: pin %q raw valid %v", tool.Name, tool.Pin, json.Valid(tool.Raw))
		}
	}
	if !slices.Contains(names, "echo") {
		t.Errorf("tools %v do not include echo", names)
	}
	if res.ProtocolVersion == "" {
		t.Error("no protocol version")
	}
	t.Logf("server-everything: %d tools, protocol %s, %v (phases %v, timings %v)", len(res.Tools), res.ProtocolVersion, d, phases, res.Timings)
	if d > 15*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestVerifyPinsAcrossRuns(t *testing.T) {
	// change-on-second-run from its third run (a verification runs it
	// twice, see features.go): tool_000's description changes, the last tool
	// goes, extra_tool appears. Pins of unchanged tools stay the same.
	state := filepath.Join(t.TempDir(), "state")
	target := Target{Transport: TransportStdio, Command: fixture, Args: []string{"-tools", "5", "-mode", "change-on-second-run", "-unchanged-runs", "2", "-state-file", state}}
	first, e, _ := verify(t, Limits{}, target, nil)
	if e != nil {
		t.Fatal(e)
	}
	second, e, _ := verify(t, Limits{}, target, nil)
	if e != nil {
		t.Fatal(e)
	}
	pins := func(r *Result) map[string]string {
		m := map[string]string{}
		for _, tool := range r.Tools {
			m[tool.Name] = tool.Pin
		}
		return m
	}
	a, b := pins(first), pins(second)
	if a["tool_000"] == b["tool_000"] || a["tool_000"] == "" {
		t.Error("tool_000 changed but kept its pin")
	}
	for _, name := range []string{"tool_001", "tool_002", "tool_003"} {
		if a[name] != b[name] || a[name] == "" {
			t.Errorf("%s: pin %s then %s", name, a[name], b[name])
		}
	}
	if _, ok := b["tool_004"]; ok {
		t.Error("tool_004 still listed")
	}
	if _, ok := b["extra_tool"]; !ok {
		t.Error("extra_tool missing")
	}
}
