package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// testProxy is a Proxy serving on a loopback listener.
type testProxy struct {
	*Proxy
	addr   string
	served chan error
}

// startProxy starts a proxy for cfg; tune, if set, adjusts it before it
// serves.
func startProxy(t *testing.T, cfg ProxyConfig, tune func(*Proxy)) *testProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := NewProxy(cfg)
	if tune != nil {
		tune(p)
	}
	tp := &testProxy{Proxy: p, addr: ln.Addr().String(), served: make(chan error, 1)}
	go func() { tp.served <- p.Serve(ln) }()
	return tp
}

// stop closes the proxy and checks that Serve returned nil.
func (tp *testProxy) stop(t *testing.T) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- tp.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close() = %v; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Close() did not return in 10 s; want every connection ended")
	}
	select {
	case err := <-tp.served:
		if err != nil {
			t.Errorf("Serve() = %v; want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("Serve() did not return 5 s after Close; want it to return")
	}
}

func hosts(t *testing.T, entries ...string) []Host {
	t.Helper()
	var out []Host
	for _, e := range entries {
		h, err := ParseHost(e)
		if err != nil {
			t.Fatalf("ParseHost(%q) = %v", e, err)
		}
		out = append(out, h)
	}
	return out
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// noDial is a Dial that fails the test: nothing may be dialled.
func noDial(t *testing.T) func(context.Context, string, string) (net.Conn, error) {
	return func(_ context.Context, _, addr string) (net.Conn, error) {
		t.Errorf("Dial(%q) called; want no dial", addr)
		return nil, errors.New("test: no dial")
	}
}

// dialRecorder records the addresses dialled and fails every dial.
type dialRecorder struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dialRecorder) dial(_ context.Context, _, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addrs = append(d.addrs, addr)
	return nil, errors.New("test: no network")
}

func (d *dialRecorder) dialled() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.addrs)
}

// resolver answers from m and counts its calls; a name not in m fails.
type resolver struct {
	mu    sync.Mutex
	m     map[string][]string
	calls int
}

func (r *resolver) resolve(_ context.Context, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	list, ok := r.m[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range list {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

func (r *resolver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// roundTrip sends raw to the proxy and reads its answer (which must have
// a length: an error or a plain HTTP response).
func roundTrip(t *testing.T, addr, raw string) (*http.Response, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the proxy's answer to %q: %v", firstLine(raw), err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the proxy's answer to %q: %v", firstLine(raw), err)
	}
	return resp, string(body)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\r\n")
	return line
}

func connectReq(target string) string {
	return "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n"
}

// openTunnel CONNECTs through the proxy to target and returns the tunnel;
// early is sent with the request, before the proxy answers.
func openTunnel(t *testing.T, addr, target, early string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, connectReq(target)+early); err != nil {
		c.Close()
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		t.Fatalf("CONNECT %s status = %d; want 200", target, resp.StatusCode)
	}
	c.SetDeadline(time.Time{})
	return c, br
}

// echoServer accepts connections on loopback and echoes each until it
// ends; wait closes it and waits for its goroutines.
type echoServer struct {
	ln net.Listener
	wg sync.WaitGroup
}

func newEchoServer(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				io.Copy(c, c)
			}()
		}
	}()
	return s
}

func (s *echoServer) wait() {
	s.ln.Close()
	s.wg.Wait()
}

func TestProxyConnectTunnels(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.Header.Get("X-Ping"))
	}))
	defer up.Close()
	upAddr := up.Listener.Addr().String()
	tp := startProxy(t, ProxyConfig{Allow: hosts(t, upAddr)}, nil)
	defer tp.stop(t)

	tr := up.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: tp.addr})
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, up.URL+"/x", nil)
	req.Header.Set("X-Ping", "ping through the tunnel")
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s through the proxy: %v", up.URL, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got, want := string(body), "hello ping through the tunnel"; got != want {
		t.Errorf("body = %q; want %q", got, want)
	}
	want := []Asked{{Host: "127.0.0.1", Port: portOf(t, upAddr), Allowed: true, Count: 1}}
	if got := tp.Asked(); !slices.Equal(got, want) {
		t.Errorf("Asked() = %+v; want %+v", got, want)
	}
}

func TestProxyForwardsPlainHTTP(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	type seen struct {
		uri, host, body string
		header          http.Header
	}
	got := make(chan seen, 3)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.RequestURI, r.Host, string(b), r.Header.Clone()}
		if r.URL.Path == "/chunked" {
			io.WriteString(w, "first,")
			w.(http.Flusher).Flush()
			io.WriteString(w, "second")
			return
		}
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "made by upstream")
	}))
	defer up.Close()
	upAddr := up.Listener.Addr().String()
	tp := startProxy(t, ProxyConfig{Allow: hosts(t, upAddr)}, nil)
	defer tp.stop(t)

	resp, body := roundTrip(t, tp.addr, "GET http://"+upAddr+"/path?q=1 HTTP/1.1\r\n"+
		"Host: "+upAddr+"\r\n"+
		"Connection: keep-alive, X-Hop\r\n"+
		"X-Hop: one connection only\r\n"+
		"Keep-Alive: timeout=5\r\n"+
		"Proxy-Authorization: Basic dXNlcjpwYXNz\r\n"+
		"Proxy-Connection: keep-alive\r\n"+
		"Proxy-Secret: s\r\n"+
		"Te: trailers\r\n"+
		"Upgrade: websocket\r\n"+
		"X-Kept: yes\r\n\r\n")
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("status = %d; want 201", resp.StatusCode)
	}
	if body != "made by upstream" {
		t.Errorf("body = %q; want %q", body, "made by upstream")
	}
	if v := resp.Header.Get("X-Upstream"); v != "yes" {
		t.Errorf("X-Upstream = %q; want %q", v, "yes")
	}
	if !resp.Close {
		t.Errorf("response Connection: close = false; want true")
	}
	s := <-got
	if s.uri != "/path?q=1" {
		t.Errorf("upstream request URI = %q; want %q", s.uri, "/path?q=1")
	}
	if s.host != upAddr {
		t.Errorf("upstream Host = %q; want %q", s.host, upAddr)
	}
	for _, h := range []string{"X-Hop", "Keep-Alive", "Proxy-Authorization", "Proxy-Connection", "Proxy-Secret", "Te", "Upgrade", "User-Agent"} {
		if v, ok := s.header[h]; ok {
			t.Errorf("upstream header %s = %q; want none", h, v)
		}
	}
	if v := s.header.Get("X-Kept"); v != "yes" {
		t.Errorf("upstream X-Kept = %q; want %q", v, "yes")
	}

	// A body goes along.
	resp, body = roundTrip(t, tp.addr, "POST http://"+upAddr+"/post HTTP/1.1\r\nHost: "+upAddr+"\r\nContent-Length: 7\r\n\r\npayload")
	if resp.StatusCode != http.StatusCreated || body != "made by upstream" {
		t.Errorf("POST status, body = %d, %q; want 201, %q", resp.StatusCode, body, "made by upstream")
	}
	if s := <-got; s.body != "payload" {
		t.Errorf("upstream body = %q; want %q", s.body, "payload")
	}

	// A response of unknown length (chunked) streams through, to Go's
	// own client.
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: tp.addr})}
	defer tr.CloseIdleConnections()
	r, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(up.URL + "/chunked")
	if err != nil {
		t.Fatalf("GET %s/chunked through the proxy: %v", up.URL, err)
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil || string(b) != "first,second" {
		t.Errorf("chunked body = %q, %v; want %q, nil", b, err, "first,second")
	}
	<-got
}

func TestProxyRefusesUnlisted(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	res := &resolver{m: map[string][]string{"allowed.test": {"203.0.113.7"}}}
	tp := startProxy(t, ProxyConfig{Allow: hosts(t, "allowed.test"), Dial: noDial(t), Resolve: res.resolve}, nil)
	defer tp.stop(t)

	for i := 1; i <= 2; i++ {
		resp, body := roundTrip(t, tp.addr, connectReq("evil.test:443"))
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("CONNECT evil.test:443 status = %d; want 403", resp.StatusCode)
		}
		if want := "switchboard: evil.test:443 refused: not on the allow-list\n"; body != want {
			t.Errorf("body = %q; want %q", body, want)
		}
		if v := resp.Header.Get("X-Switchboard-Refused"); v != "evil.test" {
			t.Errorf("X-Switchboard-Refused = %q; want %q", v, "evil.test")
		}
		want := []Asked{{Host: "evil.test", Port: 443, Reason: "not on the allow-list", Count: i}}
		if got := tp.Asked(); !slices.Equal(got, want) {
			t.Errorf("Asked() after %d asks = %+v; want %+v", i, got, want)
		}
	}
	resp, body := roundTrip(t, tp.addr, "GET http://EVIL.test./x HTTP/1.1\r\nHost: evil.test\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "evil.test:80 refused") {
		t.Errorf("GET http://EVIL.test./x status, body = %d, %q; want 403, naming evil.test:80", resp.StatusCode, body)
	}
	if got := tp.Asked(); len(got) != 2 || got[1].Host != "evil.test" || got[1].Port != 80 {
		t.Errorf("Asked() = %+v; want evil.test:443, then evil.test:80", got)
	}
	if n := res.count(); n != 0 {
		t.Errorf("resolutions = %d; want 0 (a host not listed is not resolved)", n)
	}
}

func TestProxyShownHost(t *testing.T) {
	got := shownHost("a\x00b\xff\\c " + strings.Repeat("x", 400))
	if want := `a\x00b\xff\x5cc\x20xxx`; !strings.HasPrefix(got, want) {
		t.Errorf("shownHost(...) = %q; want it to start with %q", got, want)
	}
	if len(got) > 300 {
		t.Errorf("len(shownHost(...)) = %d; want ≤ 300", len(got))
	}
	for _, c := range []byte(got) {
		if c <= ' ' || c >= 0x7f {
			t.Fatalf("shownHost(...) = %q; want printable ASCII only", got)
		}
	}
}

func TestProxyDNSRebinding(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, tc := range []struct {
		name   string
		allow  string
		target string
		addrs  []string // what a.example.test resolves to
		reason string   // "" if allowed
		dial   []string // what is dialled
	}{
		{"loopback", "*.example.test", "a.example.test:443", []string{"127.0.0.1"}, reasonLoopback, nil},
		{"mapped loopback", "*.example.test", "a.example.test:443", []string{"::ffff:127.0.0.1"}, reasonLoopback, nil},
		{"v6 loopback", "*.example.test", "a.example.test:443", []string{"::1"}, reasonLoopback, nil},
		{"rfc1918", "*.example.test", "a.example.test:443", []string{"10.0.0.5"}, reasonPrivate, nil},
		{"cgnat", "*.example.test", "a.example.test:443", []string{"100.64.1.1"}, reasonPrivate, nil},
		{"ula", "*.example.test", "a.example.test:443", []string{"fd12::1"}, reasonPrivate, nil},
		{"metadata by name", "*.example.test", "a.example.test:443", []string{"169.254.169.254"}, reasonForbidden, nil},
		{"metadata nat64", "*.example.test", "a.example.test:443", []string{"64:ff9b::a9fe:a9fe"}, reasonForbidden, nil},
		{"aws v6 metadata", "*.example.test", "a.example.test:443", []string{"fd00:ec2::254"}, reasonForbidden, nil},
		{"alibaba metadata", "*.example.test", "a.example.test:443", []string{"100.100.100.200"}, reasonForbidden, nil},
		{"azure wire server", "*.example.test", "a.example.test:443", []string{"168.63.129.16"}, reasonForbidden, nil},
		{"unspecified", "*.example.test", "a.example.test:443", []string{"0.0.0.0"}, reasonForbidden, nil},
		{"multicast", "*.example.test", "a.example.test:443", []string{"224.0.0.1"}, reasonForbidden, nil},
		{"metadata listed by address", "169.254.169.254", "169.254.169.254:80", nil, reasonForbidden, nil},
		{"private listed by address", "10.0.0.5", "10.0.0.5:443", nil, "", []string{"10.0.0.5:443"}},
		{"loopback listed by address", "127.0.0.1", "127.0.0.1:443", nil, "", []string{"127.0.0.1:443"}},
		{"localhost", "localhost", "localhost:443", nil, "", []string{"127.0.0.1:443"}},
		{"public", "*.example.test", "a.example.test:443", []string{"203.0.113.7"}, "", []string{"203.0.113.7:443"}},
		{"mapped public", "*.example.test", "a.example.test:443", []string{"::ffff:203.0.113.7"}, "", []string{"203.0.113.7:443"}},
		{"first that passes", "*.example.test", "a.example.test:443", []string{"10.0.0.5", "203.0.113.7"}, "", []string{"203.0.113.7:443"}},
		{"reason of the first", "*.example.test", "a.example.test:443", []string{"169.254.1.1", "10.0.0.5"}, reasonForbidden, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &resolver{m: map[string][]string{"a.example.test": tc.addrs, "localhost": {"127.0.0.1"}}}
			d := &dialRecorder{}
			tp := startProxy(t, ProxyConfig{Allow: hosts(t, tc.allow), Dial: d.dial, Resolve: res.resolve}, nil)
			defer tp.stop(t)
			resp, body := roundTrip(t, tp.addr, connectReq(tc.target))
			wantStatus := http.StatusForbidden
			if tc.reason == "" {
				wantStatus = http.StatusBadGateway // the dial fails
			}
			if resp.StatusCode != wantStatus {
				t.Errorf("CONNECT %s status = %d; want %d (body %q)", tc.target, resp.StatusCode, wantStatus, body)
			}
			if tc.reason != "" && !strings.HasSuffix(body, "refused: "+tc.reason+"\n") {
				t.Errorf("body = %q; want it to end with %q", body, "refused: "+tc.reason)
			}
			if got := d.dialled(); !slices.Equal(got, tc.dial) {
				t.Errorf("dialled = %q; want %q", got, tc.dial)
			}
			host, _, _ := net.SplitHostPort(tc.target)
			wantResolves := 1
			if _, err := netip.ParseAddr(host); err == nil {
				wantResolves = 0
			}
			if n := res.count(); n != wantResolves {
				t.Errorf("resolutions = %d; want %d", n, wantResolves)
			}
			if a := tp.Asked(); len(a) != 1 || a[0].Allowed != (tc.reason == "") || a[0].Reason != tc.reason {
				t.Errorf("Asked() = %+v; want one entry, reason %q", a, tc.reason)
			}
		})
	}
}

func TestProxyDashboardPort(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	// Listed with exactly that port: reached.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "dashboard")
	}))
	defer up.Close()
	upAddr := up.Listener.Addr().String()
	port := portOf(t, upAddr)
	tp := startProxy(t, ProxyConfig{Allow: hosts(t, upAddr), DashboardPort: port}, nil)
	resp, body := roundTrip(t, tp.addr, "GET http://"+upAddr+"/ HTTP/1.1\r\nHost: "+upAddr+"\r\n\r\n")
	if resp.StatusCode != http.StatusOK || body != "dashboard" {
		t.Errorf("GET the listed dashboard port: status, body = %d, %q; want 200, %q", resp.StatusCode, body, "dashboard")
	}
	tp.stop(t)

	// localhost is listed with the web's ports, and the dashboard is on
	// 443: 443 is refused, 80 is not.
	res := &resolver{m: map[string][]string{"localhost": {"127.0.0.1"}}}
	d := &dialRecorder{}
	tp = startProxy(t, ProxyConfig{Allow: hosts(t, "localhost"), DashboardPort: 443, Dial: d.dial, Resolve: res.resolve}, nil)
	resp, body = roundTrip(t, tp.addr, connectReq("localhost:443"))
	if want := "switchboard: localhost:443 refused: " + reasonDashboard + "\n"; resp.StatusCode != http.StatusForbidden || body != want {
		t.Errorf("CONNECT localhost:443 status, body = %d, %q; want 403, %q", resp.StatusCode, body, want)
	}
	roundTrip(t, tp.addr, connectReq("localhost:80"))
	if got, want := d.dialled(), []string{"127.0.0.1:80"}; !slices.Equal(got, want) {
		t.Errorf("dialled = %q; want %q", got, want)
	}
	tp.stop(t)

	// Listed with that exact port: dialled.
	d = &dialRecorder{}
	tp = startProxy(t, ProxyConfig{Allow: hosts(t, "localhost:443"), DashboardPort: 443, Dial: d.dial, Resolve: res.resolve}, nil)
	roundTrip(t, tp.addr, connectReq("localhost:443"))
	if got, want := d.dialled(), []string{"127.0.0.1:443"}; !slices.Equal(got, want) {
		t.Errorf("dialled with localhost:443 listed = %q; want %q", got, want)
	}
	tp.stop(t)
}

func TestProxyPortZeroIsWebPortsOnly(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	d := &dialRecorder{}
	tp := startProxy(t, ProxyConfig{Allow: hosts(t, "127.0.0.1"), Dial: d.dial}, nil)
	defer tp.stop(t)
	resp, _ := roundTrip(t, tp.addr, connectReq("127.0.0.1:8443"))
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT 127.0.0.1:8443 status = %d; want 403", resp.StatusCode)
	}
	roundTrip(t, tp.addr, connectReq("127.0.0.1:443"))
	roundTrip(t, tp.addr, "GET http://127.0.0.1/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if got, want := d.dialled(), []string{"127.0.0.1:443", "127.0.0.1:80"}; !slices.Equal(got, want) {
		t.Errorf("dialled = %q; want %q", got, want)
	}
	want := []Asked{
		{Host: "127.0.0.1", Port: 8443, Reason: ReasonNotListed, Count: 1},
		{Host: "127.0.0.1", Port: 443, Allowed: true, Count: 1},
		{Host: "127.0.0.1", Port: 80, Allowed: true, Count: 1},
	}
	if got := tp.Asked(); !slices.Equal(got, want) {
		t.Errorf("Asked() = %+v; want %+v", got, want)
	}
}

func TestProxyAskedKeeps256(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tp := startProxy(t, ProxyConfig{Dial: noDial(t)}, nil)
	defer tp.stop(t)
	for i := range 257 {
		roundTrip(t, tp.addr, connectReq(fmt.Sprintf("h%d.test:443", i)))
	}
	got := tp.Asked()
	if len(got) != 256 {
		t.Fatalf("len(Asked()) = %d; want 256", len(got))
	}
	if got[0].Host != "h0.test" || got[255].Host != "h255.test" {
		t.Errorf("Asked() first, last = %q, %q; want %q, %q", got[0].Host, got[255].Host, "h0.test", "h255.test")
	}
	if n := tp.AskedDropped(); n != 1 {
		t.Errorf("AskedDropped() = %d; want 1", n)
	}
	// A host already held is still counted; a new one is dropped.
	roundTrip(t, tp.addr, connectReq("h0.test:443"))
	roundTrip(t, tp.addr, connectReq("h999.test:443"))
	if c := tp.Asked()[0].Count; c != 2 {
		t.Errorf("Asked()[0].Count = %d; want 2", c)
	}
	if n := tp.AskedDropped(); n != 2 {
		t.Errorf("AskedDropped() = %d; want 2", n)
	}
}

func TestProxyCloseEndsTunnels(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	echo := newEchoServer(t)
	defer echo.wait()
	upAddr := echo.ln.Addr().String()
	tp := startProxy(t, ProxyConfig{Allow: hosts(t, upAddr)}, nil)
	// Bytes sent before the proxy answered go through first.
	c, br := openTunnel(t, tp.addr, upAddr, "early,")
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "ping")
	buf := make([]byte, 10)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "early,ping" {
		t.Fatalf("echo through the tunnel = %q, %v; want %q", buf, err, "early,ping")
	}

	tp.stop(t)
	if n, err := br.Read(buf); err == nil {
		t.Errorf("tunnel read after Close = %d bytes, nil; want an error", n)
	}
	// A Serve after Close returns at once, and closes its listener.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Serve(ln); err != nil {
		t.Errorf("Serve() after Close = %v; want nil", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept() on a listener given after Close = %v; want net.ErrClosed", err)
	}
}

func TestProxyOversizedHead(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	res := &resolver{m: map[string][]string{"x.test": {"203.0.113.7"}}}
	head := func(size int) string {
		return "GET http://x.test/ HTTP/1.1\r\nHost: x.test\r\nX-Big: " + strings.Repeat("a", size) + "\r\n\r\n"
	}

	tp := startProxy(t, ProxyConfig{Allow: hosts(t, "x.test"), Resolve: res.resolve, Dial: noDial(t)}, nil)
	defer tp.stop(t)
	c, err := net.DialTimeout("tcp", tp.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		io.WriteString(c, head(70<<10)) // the proxy may stop reading
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to a 70 KiB head: %v", err)
	}
	resp.Body.Close()
	c.Close()
	<-wrote
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("status = %d; want 431", resp.StatusCode)
	}
	if a := tp.Asked(); len(a) != 0 {
		t.Errorf("Asked() = %+v; want none", a)
	}
	if n := res.count(); n != 0 {
		t.Errorf("resolutions = %d; want 0", n)
	}

	// A head within the limit is served (and dialled).
	d := &dialRecorder{}
	tp2 := startProxy(t, ProxyConfig{Allow: hosts(t, "x.test"), Resolve: res.resolve, Dial: d.dial}, nil)
	defer tp2.stop(t)
	roundTrip(t, tp2.addr, head(60<<10))
	if got, want := d.dialled(), []string{"203.0.113.7:80"}; !slices.Equal(got, want) {
		t.Errorf("dialled for a 60 KiB head = %q; want %q", got, want)
	}
}

func TestProxyBadRequests(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tp := startProxy(t, ProxyConfig{Allow: hosts(t, "x.test", "x.test:99"), Dial: noDial(t)}, nil)
	defer tp.stop(t)
	for _, raw := range []string{
		"GET / HTTP/1.1\r\nHost: x.test\r\n\r\n",
		"GET https://x.test/ HTTP/1.1\r\nHost: x.test\r\n\r\n",
		"CONNECT /x HTTP/1.1\r\nHost: x.test\r\n\r\n",
		"CONNECT x.test HTTP/1.1\r\nHost: x.test\r\n\r\n",
		"CONNECT x.test:99999 HTTP/1.1\r\nHost: x.test\r\n\r\n",
		"not http at all\r\n\r\n",
	} {
		resp, body := roundTrip(t, tp.addr, raw)
		if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(body, "switchboard: bad request") {
			t.Errorf("%q: status, body = %d, %q; want 400, switchboard: bad request…", firstLine(raw), resp.StatusCode, body)
		}
	}
	if a := tp.Asked(); len(a) != 0 {
		t.Errorf("Asked() = %+v; want none", a)
	}
}

func TestProxyUnresolvable(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	res := &resolver{}
	tp := startProxy(t, ProxyConfig{Allow: hosts(t, "gone.test"), Dial: noDial(t), Resolve: res.resolve}, nil)
	defer tp.stop(t)
	resp, body := roundTrip(t, tp.addr, connectReq("gone.test:443"))
	if want := "switchboard: gone.test:443: cannot resolve\n"; resp.StatusCode != http.StatusBadGateway || body != want {
		t.Errorf("status, body = %d, %q; want 502, %q", resp.StatusCode, body, want)
	}
	want := []Asked{{Host: "gone.test", Port: 443, Reason: reasonUnresolved, Count: 1}}
	if got := tp.Asked(); !slices.Equal(got, want) {
		t.Errorf("Asked() = %+v; want %+v", got, want)
	}
}

func TestProxyIdleTunnelCloses(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	// The upstream only reads, and reports how much it got.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	received := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			received <- -1
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		n, _ := io.Copy(io.Discard, c)
		received <- n
	}()
	const idle = 300 * time.Millisecond
	tp := startProxy(t, ProxyConfig{Allow: hosts(t, ln.Addr().String())}, func(p *Proxy) { p.idle = idle })
	defer tp.stop(t)
	c, br := openTunnel(t, tp.addr, ln.Addr().String(), "")
	defer c.Close()

	// Bytes one way only keep the tunnel open past the idle time.
	sent := 0
	for range 20 {
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatalf("write after %d bytes: %v", sent, err)
		}
		sent++
		time.Sleep(50 * time.Millisecond)
	}
	// Then none: the proxy closes the tunnel.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Errorf("tunnel read once idle = %v; want the tunnel closed", err)
	}
	if elapsed := time.Since(start); elapsed < idle/2 {
		t.Errorf("tunnel closed %v after the last byte; want about %v", elapsed, idle)
	}
	if n := <-received; n != int64(sent) {
		t.Errorf("upstream received %d bytes; want %d", n, sent)
	}
}

func TestProxyConnectionLimit(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	echo := newEchoServer(t)
	defer echo.wait()
	upAddr := echo.ln.Addr().String()
	tp := startProxy(t, ProxyConfig{Allow: hosts(t, upAddr)}, func(p *Proxy) { p.maxConns = 1 })
	defer tp.stop(t)
	first, _ := openTunnel(t, tp.addr, upAddr, "")

	c, err := net.DialTimeout("tcp", tp.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, connectReq(upAddr))
	if b, err := io.ReadAll(c); err != nil && isTimeout(err) || len(b) != 0 {
		t.Errorf("second connection read = %q, %v; want closed at once, unanswered", b, err)
	}
	c.Close()

	// Once the first ends, another is served.
	first.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", tp.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, connectReq(upAddr))
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		c.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CONNECT after the first tunnel ended = %v; want 200", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Learn mode offers one click only for a public host refused for not
// being listed.
func TestOneClick(t *testing.T) {
	for _, c := range []struct {
		entry, reason string
		want          bool
	}{
		{"registry.npmjs.org", ReasonNotListed, true},
		{"api.example.com:8443", ReasonNotListed, true},
		{"93.184.216.34:443", ReasonNotListed, true},
		{"127.0.0.1:7420", ReasonNotListed, false},
		{"[::1]:80", ReasonNotListed, false},
		{"[::ffff:127.0.0.1]:80", ReasonNotListed, false},
		{"10.0.0.5", ReasonNotListed, false},
		{"169.254.169.254", ReasonNotListed, false},
		{"168.63.129.16", ReasonNotListed, false},
		{"localhost:3000", ReasonNotListed, false},
		{"db.localhost", ReasonNotListed, false},
		{"registry.npmjs.org", "cannot resolve", false},
	} {
		if got := OneClick(c.entry, c.reason); got != c.want {
			t.Errorf("OneClick(%q, %q) = %v; want %v", c.entry, c.reason, got, c.want)
		}
	}
}
