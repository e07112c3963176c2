package web_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
	connlimits "github.com/switchboard-dev/switchboard/web/internal/conns"
)

// Repros of an attack run against the dashboard (issue 16), each failing
// against the code before its fix.

// A page of another site that navigates frames to /login?code=… (twelve
// of them, more than the budget) neither redeems a code nor spends the
// owner's budget: right after it, the API token, the token form and the
// genuine one-time link all work.
func TestCrossSiteLoginLinksSpendNothing(t *testing.T) {
	e := newEnv(t)
	navigate := func(code, site string) *http.Request {
		r := newRequest(http.MethodGet, "/login?code="+code, nil)
		r.RemoteAddr = "127.0.0.1:50000"
		r.Header.Set("Sec-Fetch-Mode", "navigate")
		r.Header.Set("Sec-Fetch-Dest", "iframe")
		r.Header.Set("Sec-Fetch-Site", site)
		return r
	}
	t.Run("cross-site login links are refused, saying why", func(t *testing.T) {
		e := e.in(t)
		for i := range 12 {
			rec := e.serve(navigate(fmt.Sprintf("x%d", i), "cross-site"))
			wantStatus(t, rec, http.StatusForbidden)
			if !strings.Contains(rec.Body.String(), "opened from another web page") {
				t.Fatalf("cross-site login link page = %s; want the reason", truncate(rec.Body.String()))
			}
		}
	})
	// Not even the right code is redeemed from another site (nor from
	// another port of this machine, which is "same-site").
	t.Run("the right code is not redeemed from another site", func(t *testing.T) {
		e := e.in(t)
		for _, site := range []string{"cross-site", "same-site"} {
			rec := e.serve(navigate(loginCode, site))
			wantStatus(t, rec, http.StatusForbidden)
			if len(rec.Result().Cookies()) != 0 {
				t.Fatalf("a %s navigation with the right code set cookies %v", site, rec.Result().Cookies())
			}
		}
	})

	t.Run("the API token, the token form and the pasted link still work", func(t *testing.T) {
		e := e.in(t)
		r := newRequest(http.MethodGet, "/api/v1/servers", nil)
		r.RemoteAddr = "127.0.0.1:50001"
		r.Header.Set("Authorization", "Bearer "+testToken)
		wantStatus(t, e.serve(r), http.StatusOK)
		e.loginWithToken()
		// The link the person pastes (Sec-Fetch-Site: none) still works, once.
		wantStatus(t, e.serve(navigate(loginCode, "none")), http.StatusSeeOther)
		wantStatus(t, e.serve(navigate(loginCode, "none")), http.StatusUnauthorized)
	})
}

// Wrong login links and wrong tokens have budgets of their own: a client
// that used up its login links can still use the right token, and the
// other way round.
func TestLoginLinksAndTokensHaveSeparateBudgets(t *testing.T) {
	e := newEnv(t)
	link := func(code string) int {
		r := newRequest(http.MethodGet, "/login?code="+code, nil)
		r.Header.Set("Sec-Fetch-Site", "none")
		return e.serve(r).Code
	}
	bearer := func(token string) int {
		r := newRequest(http.MethodGet, "/api/v1/servers", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		return e.serve(r).Code
	}
	for i := range 10 {
		if got := link(fmt.Sprintf("wrong%d", i)); got != http.StatusUnauthorized {
			t.Fatalf("wrong login link #%d = %d; want 401", i+1, got)
		}
	}
	if got := link(loginCode); got != http.StatusTooManyRequests {
		t.Errorf("right login link after 10 wrong ones = %d; want 429", got)
	}
	if got := bearer(testToken); got != http.StatusOK {
		t.Errorf("right token after 10 wrong login links = %d; want 200", got)
	}
	for i := range 10 {
		bearer(fmt.Sprintf("wrong%d", i))
	}
	if got := bearer("wrong-again"); got != http.StatusTooManyRequests {
		t.Errorf("a wrong token after 10 wrong ones = %d; want 429", got)
	}
	if got := bearer(testToken); got != http.StatusOK {
		t.Errorf("right token after 10 wrong ones = %d; want 200 (a right token is never refused for failures)", got)
	}
}

// Every loopback address is one client for the limits, and an IPv6
// client is its /64: rotating through 127.x.y.z or a /64 gains nothing.
func TestLoopbackIsOneClient(t *testing.T) {
	for _, tc := range []struct {
		name        string
		wrong       func(i int) string // the address of the i-th wrong token
		right, fair string             // refused with the wrong ones; another client
	}{
		{"ipv4 loopback", func(i int) string { return fmt.Sprintf("127.0.%d.%d:1000", i, i+1) }, "127.9.9.9:1", "198.51.100.1:1"},
		{"ipv6 and mapped loopback", func(i int) string {
			if i%2 == 0 {
				return "[::1]:1000"
			}
			return fmt.Sprintf("[::ffff:127.0.0.%d]:1000", i)
		}, "127.0.0.1:1", "[2001:db8::1]:1"},
		{"ipv6 /64", func(i int) string { return fmt.Sprintf("[2001:db8:1:2::%x]:1000", i+1) }, "[2001:db8:1:2:ffff::1]:1", "[2001:db8:1:3::1]:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			bearer := func(addr, token string) int {
				r := newRequest(http.MethodGet, "/api/v1/servers", nil)
				r.RemoteAddr = addr
				r.Header.Set("Authorization", "Bearer "+token)
				return e.serve(r).Code
			}
			for i := range 10 {
				if got := bearer(tc.wrong(i), "wrong"); got != http.StatusUnauthorized {
					t.Fatalf("wrong token #%d from %s = %d; want 401", i+1, tc.wrong(i), got)
				}
			}
			if got := bearer(tc.right, "wrong-again"); got != http.StatusTooManyRequests {
				t.Errorf("a wrong token from %s after 10 wrong from the same client = %d; want 429", tc.right, got)
			}
			if got := bearer(tc.fair, "wrong-again"); got != http.StatusUnauthorized {
				t.Errorf("a wrong token from another client %s = %d; want 401", tc.fair, got)
			}
		})
	}
}

// The login form is read only up to a few KiB, before authentication: a
// larger body is refused (declared or chunked), and is not counted as a
// wrong token.
func TestLoginBodyIsCapped(t *testing.T) {
	e := newEnv(t)
	big := "token=" + strings.Repeat("a", 1<<20)
	for _, chunked := range []bool{false, true} {
		name := "a declared length"
		if chunked {
			name = "chunked"
		}
		t.Run(name, func(t *testing.T) {
			e := e.in(t)
			var body io.Reader = strings.NewReader(big)
			if chunked {
				body = io.MultiReader(body) // no length known: sent chunked
			}
			r := newRequest(http.MethodPost, "/login", body)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set("Sec-Fetch-Site", "same-origin")
			if chunked {
				r.ContentLength = -1
			}
			read := &countingReader{r: r.Body}
			r.Body = io.NopCloser(read)
			wantStatus(t, e.serve(r), http.StatusRequestEntityTooLarge)
			if read.n > 64<<10 {
				t.Errorf("chunked=%v: the server read %d bytes of an oversized login form; want it cut off at a few KiB", chunked, read.n)
			}
		})
	}
	t.Run("oversized forms are not counted as wrong tokens", func(t *testing.T) {
		e := e.in(t)
		for range 12 { // more than the budget, had they counted
			r := newRequest(http.MethodPost, "/login", strings.NewReader(big))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set("Sec-Fetch-Site", "same-origin")
			e.serve(r)
		}
		e.loginWithToken()
	})
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// Slow clients cannot hold the server's connections: with 1,100
// connections each stuck in a login body (more than a 1,024 descriptor
// limit would allow), once they have stalled (conns.Grace) a new request
// is answered at once and sheds all but a bounded number of them.
func TestSlowBodiesCannotHoldTheServer(t *testing.T) {
	e := newEnv(t)
	srv, _ := e.liveServer()
	addr := strings.TrimPrefix(srv.URL, "http://")

	const slow = 1100
	conns := make([]net.Conn, 0, slow)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range slow {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ntok", addr)
	}
	// Once they stall, each new connection sheds them. On a loaded
	// machine the server may accept the last of them late: a few rounds.
	for range 3 {
		time.Sleep(connlimits.Grace)
		fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := fresh.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatalf("GET /healthz with %d slow connections open: %v", slow, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /healthz = %d", resp.StatusCode)
		}
	}

	// The server closed all but the newest few of the slow ones.
	var closed sync.WaitGroup
	var mu sync.Mutex
	open := 0
	for _, c := range conns {
		closed.Add(1)
		go func() {
			defer closed.Done()
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, err := io.Copy(io.Discard, c)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				mu.Lock()
				open++
				mu.Unlock()
			}
		}()
	}
	closed.Wait()
	if open > 64 {
		t.Errorf("%d of %d slow connections still open; want at most 64 (the waiting connections one client may hold)", open, slow)
	}
}

// A request body must arrive within BodyTimeout; the connection is cut
// when it does not. Headers likewise within HeaderTimeout.
func TestSlowBodyIsCutOff(t *testing.T) {
	e := newEnv(t, func(c *webConfig) { c.BodyTimeout = 300 * time.Millisecond; c.HeaderTimeout = 300 * time.Millisecond })
	srv, _ := e.liveServer()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct{ name, send string }{
		{"body", fmt.Sprintf("POST /login HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\ntok", addr)},
		{"header", fmt.Sprintf("GET /healthz HTTP/1.1\r\nHost: %s\r\nX-Slow:", addr)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprint(c, tc.send)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err = io.Copy(io.Discard, c)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("a request whose %s never ends still holds its connection after 10 s", tc.name)
			}
		})
	}
}

// The body deadline is lifted once the body was read: a tool call that
// waits for a person longer than it, and the event streams, live on.
func TestLongRequestsOutliveTheBodyDeadline(t *testing.T) {
	m := newMCPSetup(t, func(c *webConfig) {
		c.BodyTimeout = 200 * time.Millisecond
		c.HeaderTimeout = 200 * time.Millisecond
		c.MCP.AskTimeout = 10 * time.Second
	})
	e := m.e
	srv, hc := e.liveServer()
	stream := e.login().openEvents(srv, hc)
	c := mcptest.Connect(t, m.base, testMCPToken)

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := c.Call("alpha__write", map[string]any{"text": "hello"})
		done <- outcome{res, err}
	}()
	stream.until(t, 5*time.Second, "the approval card", func(ev sseEvent) bool {
		return ev.name == "approvals" && strings.Contains(ev.text(), "alpha")
	})
	// The point of the test: the call and the stream outlive five body
	// deadlines, which are the connection's own (net.Conn deadlines, set
	// from BodyTimeout), on the wall clock.
	time.Sleep(5 * 200 * time.Millisecond)
	approvals := e.approvals()
	if len(approvals) != 1 {
		t.Fatalf("approvals = %+v; want the waiting call", approvals)
	}
	wantStatus(t, e.api(http.MethodPost, "/api/v1/approvals/"+approvals[0].ID, map[string]any{"decision": "approve"}), http.StatusOK)
	if o := <-done; o.err != nil || !strings.HasPrefix(mcptest.Text(o.res), "write ") {
		t.Fatalf("call approved after 1 s = %q, %v; want it through", mcptest.Text(o.res), o.err)
	}
	stream.until(t, 5*time.Second, "the card gone", func(ev sseEvent) bool {
		return ev.name == "approvals" && !strings.Contains(ev.text(), "alpha")
	})
}

// Logging out ends the session's event streams at once, in every tab;
// another session's stream lives on.
func TestLogoutEndsStreams(t *testing.T) {
	e := newEnv(t)
	srv, hc := e.liveServer()
	mine, other := e.login(), e.loginWithToken()
	tabs := []*sseStream{mine.openEvents(srv, hc), mine.openEvents(srv, hc)}
	theirs := other.openEvents(srv, hc)
	waitFor(t, 5*time.Second, "three streams", func() bool { return e.hub.Connections() == 3 })

	if !t.Run("logging out ends the session's streams in every tab", func(t *testing.T) {
		mine := mine.in(t)
		wantStatus(t, mine.post("/logout", nil), http.StatusSeeOther)
		for i, tab := range tabs {
			tab.waitEnded(t, 5*time.Second, fmt.Sprintf("tab %d, after logging out", i+1))
		}
	}) {
		return
	}
	t.Run("another session's stream lives on", func(t *testing.T) {
		other := other.in(t)
		if n := e.hub.Connections(); n != 1 {
			t.Errorf("connections after logout = %d; want the other session's 1", n)
		}
		wantStatus(t, other.htmx(http.MethodPost, "/verify-all", nil), http.StatusAccepted)
		theirs.until(t, 5*time.Second, "an event on the other session's stream", func(sseEvent) bool { return true })
	})

	t.Run("the logged-out session cannot open a new one", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/events", nil)
		req.AddCookie(mine.cookie)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /events after logout = %d; want 401", resp.StatusCode)
		}
	})
}
