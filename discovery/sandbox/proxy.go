package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Limits of the egress proxy.
const (
	// maxProxyHead is the most bytes of a request head (request line and
	// headers), and of a response head from upstream.
	maxProxyHead = 64 << 10
	// proxyHeadTimeout is how long a client has to send its request head.
	proxyHeadTimeout = 30 * time.Second
	// proxyDialTimeout bounds the resolution and the dial of one request.
	proxyDialTimeout = 10 * time.Second
	// proxyIdle is how long a tunnel or a forwarded request may go with
	// no bytes either way before it is closed.
	proxyIdle = 5 * time.Minute
	// maxProxyConns is the most client connections open at once.
	maxProxyConns = 256
	// maxAsked is the most distinct host:port pairs Asked remembers.
	maxAsked = 256
	// maxShownHost is the most bytes of a host shown in a refusal.
	maxShownHost = 300
)

// Refusal reasons, as Asked and the 403 body give them. Only a host
// refused as ReasonNotListed is one learn mode offers to allow in one
// click: the others (loopback, private addresses, Switchboard's own port)
// are a choice for the edit form.
const (
	ReasonNotListed  = "not on the allow-list"
	reasonForbidden  = "link-local or metadata address"
	reasonLoopback   = "loopback not listed"
	reasonPrivate    = "private address not listed by address"
	reasonDashboard  = "Switchboard's own port not listed"
	reasonUnresolved = "cannot resolve"
)

// ProxyConfig is what an egress proxy allows and how it reaches out.
type ProxyConfig struct {
	// Allow lists the hosts a client may reach.
	Allow []Host
	// DashboardPort is Switchboard's own port on loopback: refused unless
	// an entry names a loopback address or "localhost" with exactly that
	// port. 0 for none.
	DashboardPort int
	// Dial connects to an address the proxy checked ("ip:port"); nil is a
	// net.Dialer with a 10 s timeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Resolve returns the addresses of a host name; nil is
	// net.DefaultResolver.LookupNetIP(ctx, "ip", host).
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Asked is one host:port a client of the proxy asked for (learn mode).
type Asked struct {
	Host    string
	Port    int
	Allowed bool
	// Reason is why it was refused, "" if it was allowed. Allowed and
	// Reason are those of the latest ask.
	Reason string
	// Count is how many times it was asked for.
	Count int
}

// Proxy is the egress proxy of a sandbox: the servers that may reach
// listed hosts do so through it, with HTTP CONNECT (for HTTPS and any
// other TCP protocol) or an absolute-form HTTP request (plain HTTP). It
// judges each request by the allow-list and by the address the host
// resolves to, and dials that address, never the name again, so a name
// that resolves elsewhere between the check and the dial (DNS rebinding)
// cannot lead anywhere unchecked:
//
//   - link-local addresses (169.254.169.254 among them), the other cloud
//     metadata endpoints, unspecified and multicast addresses are never
//     dialled;
//   - loopback is dialled only for an entry naming a loopback address or
//     "localhost", and Switchboard's own port only for such an entry with
//     exactly that port;
//   - private addresses (RFC 1918, ULA, CGNAT) are dialled only for an
//     entry naming the address itself.
//
// Every host:port asked for is remembered (Asked), allowed or not, for a
// person to see what a server tried to reach. A Proxy is safe for
// concurrent use.
type Proxy struct {
	allow     []Host
	dashboard int
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	resolve   func(ctx context.Context, host string) ([]netip.Addr, error)
	// maxConns and idle are maxProxyConns and proxyIdle (tests lower
	// them).
	maxConns int
	idle     time.Duration

	// ctx ends the resolutions and dials under way when Close is called.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	nextID    uint64
	listeners map[uint64]net.Listener
	conns     map[uint64]net.Conn // clients and upstreams
	clients   int

	askedMu  sync.Mutex
	asked    []Asked
	askedIdx map[string]int
	dropped  int
}

// NewProxy returns a proxy for cfg; Serve starts it.
func NewProxy(cfg ProxyConfig) *Proxy {
	p := &Proxy{
		allow:     append([]Host(nil), cfg.Allow...),
		dashboard: cfg.DashboardPort,
		dial:      cfg.Dial,
		resolve:   cfg.Resolve,
		maxConns:  maxProxyConns,
		idle:      proxyIdle,
		listeners: map[uint64]net.Listener{},
		conns:     map[uint64]net.Conn{},
		askedIdx:  map[string]int{},
	}
	if p.dial == nil {
		d := &net.Dialer{Timeout: proxyDialTimeout}
		p.dial = d.DialContext
	}
	if p.resolve == nil {
		p.resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

// Serve accepts connections on ln and serves each in its own goroutine
// until ln is closed or Close is called, when it returns nil; it returns
// the error of an Accept that failed otherwise. It closes ln when it
// returns. Serve may be called with several listeners.
func (p *Proxy) Serve(ln net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return nil
	}
	lid := p.nextID
	p.nextID++
	p.listeners[lid] = ln
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.listeners, lid)
		p.mu.Unlock()
		ln.Close()
	}()

	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if p.isClosed() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() {
				// Out of file descriptors, say: wait, as net/http does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(delay):
				case <-p.ctx.Done():
				}
				continue
			}
			return fmt.Errorf("egress proxy: %w", err)
		}
		delay = 0
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return nil
		}
		if p.clients >= p.maxConns {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.clients++
		id := p.nextID
		p.nextID++
		p.conns[id] = c
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serveConn(id, c)
	}
}

// Close stops every Serve, closes every connection, and returns once
// every goroutine Serve started has ended.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	p.cancel()
	var toClose []io.Closer
	for _, ln := range p.listeners {
		toClose = append(toClose, ln)
	}
	for _, c := range p.conns {
		toClose = append(toClose, c)
	}
	nListeners := len(p.listeners)
	p.mu.Unlock()

	var errs []error
	for i, c := range toClose {
		if err := c.Close(); err != nil && i < nListeners && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	p.wg.Wait()
	return errors.Join(errs...)
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// track registers an upstream connection for Close; false if the proxy
// is closed (the caller closes c).
func (p *Proxy) track(c net.Conn) (uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, false
	}
	id := p.nextID
	p.nextID++
	p.conns[id] = c
	return id, true
}

func (p *Proxy) untrack(id uint64) {
	p.mu.Lock()
	delete(p.conns, id)
	p.mu.Unlock()
}

// Asked returns every distinct host:port asked for, in the order first
// asked, up to 256 of them.
func (p *Proxy) Asked() []Asked {
	p.askedMu.Lock()
	defer p.askedMu.Unlock()
	return append([]Asked(nil), p.asked...)
}

// AskedDropped returns how many asks Asked does not hold: those for a
// host:port first asked for once it already held 256.
func (p *Proxy) AskedDropped() int {
	p.askedMu.Lock()
	defer p.askedMu.Unlock()
	return p.dropped
}

func (p *Proxy) record(host string, port int, reason string) {
	p.askedMu.Lock()
	defer p.askedMu.Unlock()
	key := net.JoinHostPort(host, strconv.Itoa(port))
	i, ok := p.askedIdx[key]
	if !ok {
		if len(p.asked) >= maxAsked {
			p.dropped++
			return
		}
		i = len(p.asked)
		p.asked = append(p.asked, Asked{Host: host, Port: port})
		p.askedIdx[key] = i
	}
	a := &p.asked[i]
	a.Allowed, a.Reason = reason == "", reason
	a.Count++
}

// headReader reads at most n bytes from r, then fails with
// errHeadTooLarge; the proxy lifts n once a head is read.
type headReader struct {
	r io.Reader
	n int64
}

var errHeadTooLarge = errors.New("head too large")

func (h *headReader) Read(b []byte) (int, error) {
	if h.n <= 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(b)) > h.n {
		b = b[:h.n]
	}
	n, err := h.r.Read(b)
	h.n -= int64(n)
	return n, err
}

// serveConn serves one client connection: one request.
func (p *Proxy) serveConn(id uint64, c net.Conn) {
	defer func() {
		c.Close()
		p.mu.Lock()
		delete(p.conns, id)
		p.clients--
		p.mu.Unlock()
		p.wg.Done()
	}()
	c.SetReadDeadline(time.Now().Add(proxyHeadTimeout))
	hr := &headReader{r: c, n: maxProxyHead}
	br := bufio.NewReader(hr)
	req, err := http.ReadRequest(br)
	if err != nil {
		switch {
		case hr.n <= 0:
			p.fail(c, http.StatusRequestHeaderFieldsTooLarge, "", "switchboard: the request head is over 64 KiB")
		case errors.Is(err, io.EOF):
			// The client left without asking.
		default:
			p.fail(c, http.StatusBadRequest, "", "switchboard: bad request")
		}
		return
	}
	c.SetReadDeadline(time.Time{})
	act := newActivity()
	client := &watched{Conn: c, act: act, idle: p.idle}
	hr.r, hr.n = client, math.MaxInt64

	host, port, ok := requestTarget(req)
	if !ok {
		p.fail(c, http.StatusBadRequest, "", "switchboard: bad request: this is a proxy; send CONNECT host:port or an absolute http:// URL")
		return
	}
	up, upID, ok := p.open(c, host, port)
	if !ok {
		return
	}
	defer func() {
		up.Close()
		p.untrack(upID)
	}()
	upstream := &watched{Conn: up, act: act, idle: p.idle}
	if req.Method == http.MethodConnect {
		p.tunnel(c, client, br, upstream)
	} else {
		p.forward(client, req, upstream, net.JoinHostPort(shownHost(host), strconv.Itoa(port)))
	}
}

// requestTarget returns the host (lower case, without a final dot, an
// address in its canonical form) and port req asks for: a CONNECT's
// authority, or an absolute http URL's host.
func requestTarget(req *http.Request) (string, int, bool) {
	var hostport string
	switch {
	case req.Method == http.MethodConnect:
		if req.URL == nil || req.URL.Host == "" || req.RequestURI != req.URL.Host {
			return "", 0, false
		}
		hostport = req.URL.Host
	case req.URL != nil && req.URL.IsAbs() && strings.EqualFold(req.URL.Scheme, "http") && req.URL.Host != "":
		hostport = req.URL.Host
		if req.URL.Port() == "" {
			hostport = net.JoinHostPort(req.URL.Hostname(), "80")
		}
	default:
		return "", 0, false
	}
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil || host == "" {
		return "", 0, false
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return "", 0, false
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Zone() == "" {
		host = a.Unmap().String()
	}
	return host, port, true
}

// open decides whether host:port may be reached, records the ask, and
// dials the checked address. On refusal or failure it answers the client
// and returns false.
func (p *Proxy) open(c net.Conn, host string, port int) (net.Conn, uint64, bool) {
	ctx, cancel := context.WithTimeout(p.ctx, proxyDialTimeout)
	defer cancel()
	addrs, reason := p.decide(ctx, host, port)
	p.record(shownHost(host), port, reason)
	target := net.JoinHostPort(shownHost(host), strconv.Itoa(port))
	switch reason {
	case "":
	case reasonUnresolved:
		p.fail(c, http.StatusBadGateway, "", "switchboard: "+target+": cannot resolve")
		return nil, 0, false
	default:
		p.fail(c, http.StatusForbidden, shownHost(host), "switchboard: "+target+" refused: "+reason)
		return nil, 0, false
	}
	// The first address that passed; the others that passed if it
	// cannot be reached (localhost is ::1 and 127.0.0.1, and a server
	// may listen on one only).
	for _, a := range addrs {
		up, err := p.dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err != nil {
			continue
		}
		id, ok := p.track(up)
		if !ok {
			up.Close()
			return nil, 0, false
		}
		return up, id, true
	}
	p.fail(c, http.StatusBadGateway, "", "switchboard: "+target+": cannot connect")
	return nil, 0, false
}

// decide returns the addresses host:port may be dialled at, in order,
// or why it is refused.
func (p *Proxy) decide(ctx context.Context, host string, port int) ([]netip.Addr, string) {
	var matched, loopbackOK, privateOK, dashboardOK bool
	for _, h := range p.allow {
		if !h.Matches(host, port) {
			continue
		}
		matched = true
		lit, err := netip.ParseAddr(h.Name)
		isLit := err == nil && !h.Wildcard
		loopName := h.Name == "localhost" || isLit && lit.Unmap().IsLoopback()
		loopbackOK = loopbackOK || loopName
		privateOK = privateOK || isLit
		dashboardOK = dashboardOK || loopName && h.Port == p.dashboard
	}
	if !matched {
		return nil, ReasonNotListed
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = p.resolve(ctx, host)
		if err != nil || len(addrs) == 0 {
			return nil, reasonUnresolved
		}
	}
	var pass []netip.Addr
	first := ""
	for _, a := range addrs {
		a = a.Unmap()
		reason := ""
		switch classifyAddr(a) {
		case addrForbidden:
			reason = reasonForbidden
		case addrLoopback:
			switch {
			case !loopbackOK:
				reason = reasonLoopback
			case p.dashboard != 0 && port == p.dashboard && !dashboardOK:
				reason = reasonDashboard
			}
		case addrPrivate:
			if !privateOK {
				reason = reasonPrivate
			}
		}
		if reason == "" {
			pass = append(pass, a)
		} else if first == "" {
			first = reason
		}
	}
	if len(pass) == 0 {
		return nil, first
	}
	return pass, ""
}

// addrKind is how far an address reaches.
type addrKind int

const (
	addrPublic    addrKind = iota
	addrPrivate            // the local network: RFC 1918, ULA, CGNAT
	addrLoopback           // this machine
	addrForbidden          // link-local, metadata, unspecified, multicast: never dialled
)

var (
	// nat64Prefix is the well-known NAT64 prefix (RFC 6052): such an
	// address reaches the IPv4 address in its last four bytes.
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	cgnatPrefix = netip.MustParsePrefix("100.64.0.0/10")
	// thisNetPrefix is 0.0.0.0/8, which Linux connects to this machine.
	thisNetPrefix = netip.MustParsePrefix("0.0.0.0/8")
	broadcast     = netip.AddrFrom4([4]byte{255, 255, 255, 255})
	// MetadataAddrs are the cloud metadata endpoints outside link-local
	// space: never dialled, by the egress proxy nor by the outgoing policy
	// of remote servers (discovery/netpolicy.go).
	MetadataAddrs = []netip.Addr{
		netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
		netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
		netip.MustParseAddr("168.63.129.16"),   // Azure's wire server
	}
)

// classifyAddr returns the kind of a; an IPv4-mapped or NAT64 address is
// judged by the IPv4 address it reaches.
func classifyAddr(a netip.Addr) addrKind {
	a = a.Unmap()
	if a.Is6() && nat64Prefix.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:]))
	}
	a = a.WithZone("")
	switch {
	case !a.IsValid(), a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast(),
		a.IsMulticast(), a.IsUnspecified(), thisNetPrefix.Contains(a), a == broadcast:
		return addrForbidden
	}
	for _, m := range MetadataAddrs {
		if a == m {
			return addrForbidden
		}
	}
	switch {
	case a.IsLoopback():
		return addrLoopback
	case a.IsPrivate(), cgnatPrefix.Contains(a):
		return addrPrivate
	}
	return addrPublic
}

// shownHost is host as a refusal shows it: printable ASCII only (other
// bytes as \xNN, and the backslash too), at most 300 bytes.
func shownHost(host string) string {
	var b strings.Builder
	for i := 0; i < len(host); i++ {
		c := host[i]
		piece := string(c)
		if c <= ' ' || c >= 0x7f || c == '\\' {
			piece = fmt.Sprintf(`\x%02x`, c)
		}
		if b.Len()+len(piece) > maxShownHost {
			break
		}
		b.WriteString(piece)
	}
	return b.String()
}

// fail answers the client with a short plain-text error and lets it read
// the answer before the connection closes. refused, if set, is the host
// for X-Switchboard-Refused.
func (p *Proxy) fail(c net.Conn, code int, refused, body string) {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
	fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body)+1)
	b.WriteString("Connection: close\r\n")
	if refused != "" {
		b.WriteString("X-Switchboard-Refused: " + refused + "\r\n")
	}
	b.WriteString("\r\n" + body + "\n")
	c.SetWriteDeadline(time.Now().Add(proxyDialTimeout))
	if _, err := io.WriteString(c, b.String()); err != nil {
		return
	}
	// Closing with unread bytes would reset the connection, and the
	// client might not see the answer: stop writing, and read what it
	// still sends for a moment.
	closeWrite(c)
	c.SetReadDeadline(time.Now().Add(time.Second))
	io.CopyN(io.Discard, c, 256<<10)
}

// closeWrite ends c's writing half, or all of c if it has none.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// tunnel answers a CONNECT and copies bytes both ways until both sides
// have ended, either fails, or neither has sent a byte for the idle
// time.
func (p *Proxy) tunnel(raw net.Conn, client *watched, br *bufio.Reader, upstream *watched) {
	raw.SetWriteDeadline(time.Now().Add(proxyDialTimeout))
	if _, err := io.WriteString(raw, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	raw.SetWriteDeadline(time.Time{})
	// What the client sent after its request head (a TLS hello that did
	// not wait for the answer) goes first.
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := upstream.Write(b); err != nil {
			return
		}
	}
	done := make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(done)
		pipe(upstream, client)
	}()
	pipe(client, upstream)
	<-done
}

// pipe copies src to dst. At src's end it ends dst's writing half (the
// other way may go on); on an error or the idle time it closes both.
func pipe(dst, src *watched) {
	buf := make([]byte, 32<<10)
	if _, err := io.CopyBuffer(dst, src, buf); err != nil {
		src.Conn.Close()
		dst.Conn.Close()
		return
	}
	closeWrite(dst.Conn)
}

// hopHeaders are the headers of one connection, which a proxy does not
// forward (besides those Connection names, and every Proxy-* header).
var hopHeaders = []string{"Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHopHeaders removes h's hop-by-hop and Proxy-* headers.
func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	for k := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "Proxy-") {
			delete(h, k)
		}
	}
}

// forward sends a plain HTTP request to upstream (target, as shown in
// errors), with its Host, and streams the answer back; one request a
// connection.
func (p *Proxy) forward(client *watched, req *http.Request, upstream *watched, target string) {
	expect := strings.EqualFold(strings.TrimSpace(req.Header.Get("Expect")), "100-continue")
	req.Header.Del("Expect")
	removeHopHeaders(req.Header)
	if _, ok := req.Header["User-Agent"]; !ok {
		// Request.Write would add Go's own.
		req.Header["User-Agent"] = []string{""}
	}
	req.Close = true
	req.RequestURI = ""
	if expect {
		if _, err := io.WriteString(client, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return
		}
	}
	if err := req.Write(upstream); err != nil {
		p.fail(client.Conn, http.StatusBadGateway, "", "switchboard: "+target+": the request could not be sent")
		return
	}
	hr := &headReader{r: upstream, n: maxProxyHead}
	ubr := bufio.NewReader(hr)
	var resp *http.Response
	for {
		var err error
		resp, err = http.ReadResponse(ubr, req)
		if err != nil {
			p.fail(client.Conn, http.StatusBadGateway, "", "switchboard: "+target+": no valid answer")
			return
		}
		// Interim answers (103 Early Hints) are dropped.
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	hr.n = math.MaxInt64
	defer resp.Body.Close()
	removeHopHeaders(resp.Header)
	resp.Close = true
	resp.Write(client)
}

// activity is when a connection pair last moved a byte.
type activity struct{ last atomic.Int64 }

func newActivity() *activity {
	a := &activity{}
	a.touch()
	return a
}

func (a *activity) touch() { a.last.Store(time.Now().UnixNano()) }

// deadline is when the pair has been idle for idle.
func (a *activity) deadline(idle time.Duration) time.Time {
	return time.Unix(0, a.last.Load()).Add(idle)
}

// watched is a connection whose reads and writes fail once neither it
// nor its pair (sharing act) has moved a byte for idle.
type watched struct {
	net.Conn
	act  *activity
	idle time.Duration
}

func (w *watched) Read(b []byte) (int, error) {
	for {
		w.Conn.SetReadDeadline(w.act.deadline(w.idle))
		n, err := w.Conn.Read(b)
		if n > 0 {
			w.act.touch()
		}
		if n == 0 && isTimeout(err) && time.Now().Before(w.act.deadline(w.idle)) {
			continue // the other way moved
		}
		return n, err
	}
}

func (w *watched) Write(b []byte) (int, error) {
	written := 0
	for {
		w.Conn.SetWriteDeadline(w.act.deadline(w.idle))
		n, err := w.Conn.Write(b[written:])
		written += n
		if n > 0 {
			w.act.touch()
		}
		if written < len(b) && isTimeout(err) && time.Now().Before(w.act.deadline(w.idle)) {
			continue
		}
		return written, err
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// OneClick reports whether learn mode may offer to allow entry (a
// refused host, as RefusedHost.Entry writes it) in one click: it was
// refused only for not being listed, and it names no loopback, private,
// link-local or metadata address, nor localhost. Those stay a choice the
// person writes on the edit form.
func OneClick(entry, reason string) bool {
	if reason != ReasonNotListed {
		return false
	}
	h, err := ParseHost(entry)
	if err != nil || h.Name == "localhost" || strings.HasSuffix(h.Name, ".localhost") {
		return false
	}
	if a, err := netip.ParseAddr(h.Name); err == nil {
		return classifyAddr(a) == addrPublic
	}
	return true
}
