package discovery

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery/netpolicy"

	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/net/dns/dnsmessage"
)

// apiKey is the secret header value the tests configure.
const apiKey = "sk-live-0123456789"

// secretHeaders are the headers a person configured for a test server.
func secretHeaders() map[string]string {
	return map[string]string{"X-Api-Key": apiKey, "Authorization": "Bearer tok-0123456789"}
}

// seen is one request a recordingServer received.
type seen struct {
	Method, Path string
	Header       http.Header
	Body         string
}

// recordingServer is an "internal admin" service on loopback that
// records every request it receives and answers 200.
type recordingServer struct {
	*httptest.Server
	mu  sync.Mutex
	got []seen
}

func newRecordingServer(t *testing.T) *recordingServer {
	t.Helper()
	s := &recordingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, seen{r.Method, r.URL.Path, r.Header.Clone(), string(body)})
		s.mu.Unlock()
		w.Write([]byte("admin ok"))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *recordingServer) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.got...)
}

// received fails the test if the server received any request.
func (s *recordingServer) receivedNothing(t *testing.T) {
	t.Helper()
	for _, r := range s.requests() {
		t.Errorf("internal admin received %s %s (X-Api-Key %q, Authorization %q, %d body bytes); want nothing",
			r.Method, r.Path, r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"), len(r.Body))
	}
}

// port is the port of a test server's URL.
func port(t *testing.T, rawURL string) uint16 {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return uint16(n)
}

// publicAt classes the loopback address at the test server's URL as
// public (the server on the internet), every other address as
// it is.
func publicAt(t *testing.T, rawURL string) func(netip.AddrPort) netpolicy.Class {
	p := port(t, rawURL)
	return func(ap netip.AddrPort) netpolicy.Class {
		if ap.Port() == p && ap.Addr().IsLoopback() {
			return netpolicy.ClassPublic
		}
		return netpolicy.AddrClass(ap.Addr())
	}
}

// redirector answers every request with status to target.
func redirector(t *testing.T, status int, target string) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, target, status)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// verifyWith runs one verification with v and returns its *Error (nil on
// success).
func verifyWith(t *testing.T, v *Verifier, target Target) (*Result, *Error) {
	t.Helper()
	res, err := v.Verify(context.Background(), target, 0, nil)
	if err == nil {
		return res, nil
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Verify error is %T (%v), want *Error", err, err)
	}
	return nil, e
}

func wantMessage(t *testing.T, e *Error, parts ...string) {
	t.Helper()
	t.Logf("error: %v", e)
	for _, p := range parts {
		if !strings.Contains(e.Message, p) {
			t.Errorf("Message = %q; want it to say %q", e.Message, p)
		}
	}
	if strings.Contains(e.Message, apiKey) {
		t.Errorf("Message = %q holds the API key", e.Message)
	}
}

// The case: a public server answers with a redirect to an
// internal service on loopback. Nothing reaches that service, and the
// verification fails saying where the redirect went and why.
func TestRedirectToNarrowerNetworkRefused(t *testing.T) {
	for _, tr := range []string{TransportHTTP, TransportSSE} {
		for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
			t.Run(tr+" "+strconv.Itoa(status), func(t *testing.T) {
				admin := newRecordingServer(t)
				origin := redirector(t, status, admin.URL+"/internal/admin")
				v := NewVerifier(Limits{InitTimeout: 5 * time.Second}, nil)
				v.classOf = publicAt(t, origin.URL)
				_, e := verifyWith(t, v, Target{Transport: tr, URL: origin.URL + "/mcp", Headers: secretHeaders()})
				admin.receivedNothing(t)
				phase := map[string]string{TransportHTTP: PhaseInitializing, TransportSSE: PhaseStarting}[tr]
				wantClass(t, e, ClassNetwork, phase)
				wantMessage(t, e, admin.URL+"/internal/admin", "loopback", "public")
			})
		}
	}
}

// A request with a body is not redirected to another origin, even in the
// same network class.
func TestRedirectOfPostToAnotherOriginRefused(t *testing.T) {
	admin := newRecordingServer(t)
	origin := redirector(t, http.StatusTemporaryRedirect, admin.URL+"/internal/admin")
	_, e := verifyWith(t, NewVerifier(Limits{InitTimeout: 5 * time.Second}, nil), Target{Transport: TransportHTTP, URL: origin.URL + "/mcp", Headers: secretHeaders()})
	admin.receivedNothing(t)
	wantClass(t, e, ClassProtocol, PhaseInitializing)
	wantMessage(t, e, admin.URL+"/internal/admin", "another origin", "POST")
}

// A GET may follow a redirect to another origin of the same class (the
// legacy SSE stream here), but the configured headers and credentials do
// not go with it, nor a Referer with the URL entered (and its query).
func TestRedirectToAnotherOriginDropsHeaders(t *testing.T) {
	admin := newRecordingServer(t)
	origin := redirector(t, http.StatusTemporaryRedirect, admin.URL+"/elsewhere")
	_, e := verifyWith(t, NewVerifier(Limits{InitTimeout: 500 * time.Millisecond}, nil), Target{Transport: TransportSSE, URL: origin.URL + "/sse?token=query-secret-0123", Headers: secretHeaders()})
	if e == nil {
		t.Fatal("Verify succeeded against a server that sends no endpoint")
	}
	got := admin.requests()
	if len(got) == 0 {
		t.Fatal("the redirected GET never arrived; want it to, without the headers")
	}
	for _, r := range got {
		if r.Method != http.MethodGet {
			t.Errorf("redirect target received %s; want only GET", r.Method)
		}
		for _, k := range []string{"X-Api-Key", "Authorization", "Cookie", "Mcp-Session-Id", "Referer"} {
			if v := r.Header.Get(k); v != "" {
				t.Errorf("redirect target received %s: %q; want none", k, v)
			}
		}
	}
}

// keyed serves h only to requests that carry the configured API key,
// and counts them.
func keyed(h http.Handler, n *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != apiKey {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		n.Add(1)
		h.ServeHTTP(w, r)
	})
}

// A redirect within the origin keeps working, with the headers. (This
// passed before the policy too; it guards against a policy that drops
// headers on every redirect.)
func TestSameOriginRedirectKeepsHeaders(t *testing.T) {
	var n atomic.Int32
	mux := http.NewServeMux()
	mux.Handle("/mcp", keyed(server.NewStreamableHTTPServer(newToolServer(3)), &n))
	mux.Handle("/old", http.RedirectHandler("/mcp", http.StatusPermanentRedirect))
	ts := httptest.NewServer(mux)
	defer ts.Close()
	res, e := verifyWith(t, NewVerifier(Limits{InitTimeout: 5 * time.Second}, nil), Target{Transport: TransportHTTP, URL: ts.URL + "/old", Headers: secretHeaders()})
	if e != nil {
		t.Fatalf("Verify = %v; want success through a same-origin redirect", e)
	}
	if len(res.Tools) != 3 {
		t.Errorf("Verify listed %d tools; want 3", len(res.Tools))
	}
	if n.Load() == 0 {
		t.Error("the server received no request with the API key")
	}
}

// fakeDNS answers A and AAAA queries with the addresses answer returns,
// on a loopback UDP port; the resolver returned asks it alone. It stops
// when the test ends.
func fakeDNS(t *testing.T, answer func(name string) []netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // ends when pc is closed
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := dnsAnswer(buf[:n], answer); resp != nil {
				pc.WriteTo(resp, from)
			}
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

func dnsAnswer(query []byte, answer func(string) []netip.Addr) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true})
	b.StartQuestions()
	b.Question(q)
	b.StartAnswers()
	rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET}
	for _, ip := range answer(strings.TrimSuffix(q.Name.String(), ".")) {
		switch {
		case ip.Is4() && q.Type == dnsmessage.TypeA:
			b.AResource(rh, dnsmessage.AResource{A: ip.As4()})
		case ip.Is6() && q.Type == dnsmessage.TypeAAAA:
			b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: ip.As16()})
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

// A host name is judged by the address it resolves to: one that leads to
// the metadata endpoint is refused before anything is sent.
func TestHostNameResolvingToLinkLocalRefused(t *testing.T) {
	v := NewVerifier(Limits{InitTimeout: 2 * time.Second}, nil)
	v.resolver = fakeDNS(t, func(string) []netip.Addr {
		return []netip.Addr{netip.MustParseAddr("169.254.169.254")}
	})
	for _, tr := range []string{TransportHTTP, TransportSSE} {
		_, e := verifyWith(t, v, Target{Transport: tr, URL: "http://metadata.switchboard.test/latest/meta-data/", Headers: secretHeaders()})
		wantClass(t, e, ClassNetwork, "")
		wantMessage(t, e, "metadata.switchboard.test:80 (169.254.169.254)", "link-local", "metadata")
	}
}

// A host name that re-resolves to a narrower network than the one its
// server was first reached at is refused (DNS rebinding), and the
// address it moved to receives nothing.
func TestPolicyRefusesRebinding(t *testing.T) {
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("public")) }))
	defer first.Close()
	p := port(t, first.URL)
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(int(p))))
	if err != nil {
		t.Skipf("127.0.0.2:%d: %v", p, err)
	}
	inside := &recordingServer{}
	inside.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inside.mu.Lock()
		inside.got = append(inside.got, seen{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()})
		inside.mu.Unlock()
	}))
	inside.Listener = ln
	inside.Start()
	defer inside.Close()

	var answer atomic.Pointer[netip.Addr]
	a := netip.MustParseAddr("127.0.0.1")
	answer.Store(&a)
	policy, err := netpolicy.New("http://rebind.switchboard.test:"+strconv.Itoa(int(p))+"/mcp", secretHeaders())
	if err != nil {
		t.Fatal(err)
	}
	policy.Resolver = fakeDNS(t, func(string) []netip.Addr { return []netip.Addr{*answer.Load()} })
	policy.ClassOf = func(ap netip.AddrPort) netpolicy.Class {
		if ap.Addr() == netip.MustParseAddr("127.0.0.1") {
			return netpolicy.ClassPublic
		}
		return netpolicy.AddrClass(ap.Addr())
	}
	c := policy.Client()
	defer c.CloseIdleConnections()
	get := func() (string, error) {
		resp, err := c.Get("http://rebind.switchboard.test:" + strconv.Itoa(int(p)) + "/mcp")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if body, err := get(); err != nil || body != "public" {
		t.Fatalf("first GET = %q, %v; want the public server", body, err)
	}
	c.CloseIdleConnections()
	b := netip.MustParseAddr("127.0.0.2")
	answer.Store(&b)
	_, err = get()
	e := refusal(err, "")
	if e == nil || e.Class != ClassNetwork {
		t.Fatalf("GET after rebinding = %v; want a network refusal", err)
	}
	wantMessage(t, e, "127.0.0.2", "DNS rebinding", "loopback", "public")
	inside.receivedNothing(t)
}

// A watch is under the policy: a redirect to loopback from a public
// server ends it, and reaches nothing.
func TestWatchRedirectRefused(t *testing.T) {
	admin := newRecordingServer(t)
	origin := redirector(t, http.StatusTemporaryRedirect, admin.URL+"/internal/admin")
	v := NewVerifier(Limits{}, nil)
	v.classOf = publicAt(t, origin.URL)
	w := startWatch(t, v, Target{Transport: TransportHTTP, URL: origin.URL + "/mcp", Headers: secretHeaders()}, time.Hour)
	e := w.ended(t, 10*time.Second)
	admin.receivedNothing(t)
	if e.Class != ClassNetwork {
		t.Errorf("Watch error class %q; want network: %v", e.Class, e)
	}
	wantMessage(t, e, admin.URL+"/internal/admin", "loopback")
}

// An upstream session for tool calls is under the policy: a tool call
// the server redirects to loopback fails, and reaches nothing.
func TestSessionCallRedirectRefused(t *testing.T) {
	admin := newRecordingServer(t)
	var n atomic.Int32
	mcpServer := keyed(server.NewStreamableHTTPServer(newToolServer(1, server.WithToolCapabilities(true))), &n)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			http.Redirect(w, r, admin.URL+"/internal/admin", http.StatusTemporaryRedirect)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		mcpServer.ServeHTTP(w, r)
	}))
	defer origin.Close()
	v := NewVerifier(Limits{}, nil)
	v.classOf = publicAt(t, origin.URL)
	s, err := v.Open(context.Background(), Target{Transport: TransportHTTP, URL: origin.URL + "/mcp", Headers: secretHeaders()}, 5*time.Second)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer s.Close()
	tool := s.Tools()["tool_000"]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = s.Call(ctx, tool.Name, tool.Pin, map[string]any{"q": "x"}, 0)
	admin.receivedNothing(t)
	var e *Error
	if !errors.As(err, &e) || e.Class != ClassNetwork {
		t.Fatalf("Call = %v; want a network *Error", err)
	}
	wantMessage(t, e, admin.URL+"/internal/admin", "loopback")
	if n.Load() == 0 {
		t.Error("the server never received the API key; want it on requests to the origin")
	}
}

// Once a redirect has left the origin, the configured headers do not come
// back with a redirect to the origin: the other server chose where on it
// they would go.
func TestRedirectBackToOriginWithoutHeaders(t *testing.T) {
	back := newRecordingServer(t) // where the origin records the return
	var origin *httptest.Server
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, origin.URL+"/chosen-by-elsewhere", http.StatusFound)
	}))
	defer elsewhere.Close()
	origin = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sse" {
			http.Redirect(w, r, elsewhere.URL+"/hop", http.StatusFound)
			return
		}
		back.Config.Handler.ServeHTTP(w, r)
	}))
	defer origin.Close()
	_, e := verifyWith(t, NewVerifier(Limits{InitTimeout: 500 * time.Millisecond}, nil), Target{Transport: TransportSSE, URL: origin.URL + "/sse", Headers: secretHeaders()})
	if e == nil {
		t.Fatal("Verify succeeded against a server that sends no endpoint")
	}
	got := back.requests()
	if len(got) == 0 {
		t.Fatal("the redirect back to the origin never arrived")
	}
	for _, r := range got {
		for _, k := range []string{"X-Api-Key", "Authorization"} {
			if v := r.Header.Get(k); v != "" {
				t.Errorf("origin received %s: %q at %s after a redirect through another origin; want none", k, v, r.Path)
			}
		}
	}
}

// A redirect to a host name is judged by the address the name resolves
// to when it is dialled.
func TestRedirectToNameOfNarrowerNetworkRefused(t *testing.T) {
	admin := newRecordingServer(t)
	name := "internal.switchboard.test:" + strconv.Itoa(int(port(t, admin.URL)))
	origin := redirector(t, http.StatusFound, "http://"+name+"/internal/admin")
	v := NewVerifier(Limits{InitTimeout: 5 * time.Second}, nil)
	v.classOf = publicAt(t, origin.URL)
	v.resolver = fakeDNS(t, func(string) []netip.Addr { return []netip.Addr{netip.MustParseAddr("127.0.0.1")} })
	_, e := verifyWith(t, v, Target{Transport: TransportSSE, URL: origin.URL + "/sse", Headers: secretHeaders()})
	admin.receivedNothing(t)
	wantClass(t, e, ClassNetwork, PhaseStarting)
	wantMessage(t, e, name+" (127.0.0.1)", "loopback", "public")
}
