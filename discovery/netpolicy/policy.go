// Package netpolicy is the one outgoing-request policy of every request
// Switchboard makes on a remote server's behalf (verification, watch, tool
// call, OAuth metadata and tokens): where a request may connect and be
// redirected, and where the configured headers and credentials may go
// (docs/architecture.md "Remote servers").
package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
)

// Class is how far a network address reaches, from the narrowest to
// the widest. A request may leave the origin a person confirmed only for
// an address of the same class or a wider one.
type Class int

const (
	ClassForbidden Class = iota // link-local, cloud metadata: never dialled
	ClassLoopback               // this machine
	ClassPrivate                // the local network (RFC 1918, ULA, CGNAT)
	ClassPublic                 // everything else
)

func (c Class) String() string {
	switch c {
	case ClassForbidden:
		return "link-local or metadata"
	case ClassLoopback:
		return "loopback"
	case ClassPrivate:
		return "private"
	}
	return "public"
}

var (
	// nat64 is the well-known NAT64 prefix (RFC 6052), through which an
	// IPv6 address reaches the IPv4 address in its last four bytes.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// sharedSpace is the carrier-grade NAT range (RFC 6598), private to
	// a provider's network.
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10")
	// thisNetwork is 0.0.0.0/8, which Linux connects to this machine.
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
)

// unwrap returns the address ip actually reaches: IPv4-mapped and NAT64
// addresses reach their IPv4 address.
func unwrap(ip netip.Addr) netip.Addr {
	ip = ip.Unmap()
	if ip.Is6() && nat64.Contains(ip) {
		b := ip.As16()
		return netip.AddrFrom4([4]byte(b[12:]))
	}
	return ip
}

// forbidden reports whether ip is link-local (which includes the cloud
// metadata address 169.254.169.254) or another metadata endpoint.
func forbidden(ip netip.Addr) bool {
	ip = unwrap(ip)
	return ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		containsAddr(sandbox.MetadataAddrs, ip)
}

func containsAddr(list []netip.Addr, ip netip.Addr) bool {
	for _, a := range list {
		if a == ip {
			return true
		}
	}
	return false
}

// addrClass is the class of ip.
func AddrClass(ip netip.Addr) Class {
	ip = unwrap(ip)
	switch {
	case forbidden(ip):
		return ClassForbidden
	case ip.IsLoopback(), ip.IsUnspecified(), thisNetwork.Contains(ip):
		return ClassLoopback
	case ip.IsPrivate(), sharedSpace.Contains(ip):
		return ClassPrivate
	}
	return ClassPublic
}

// ErrForbiddenAddress is returned when a URL resolves to an address
// Switchboard never connects to.
var ErrForbiddenAddress = errors.New("the address is link-local or a cloud metadata endpoint, which Switchboard never connects to")

// Policy is the rule every request Switchboard makes on behalf of
// one remote server obeys: verification, watch, tool calls, and OAuth
// metadata and tokens. Its origin is the scheme, host and port of the
// URL the person entered (confirmed). Each connection is judged by the
// address actually dialled, after DNS, so a name that resolves, or
// later re-resolves, somewhere else is judged where it leads:
//
//   - link-local and cloud metadata addresses are never dialled;
//   - the origin's host may be of any other class (the person typed it),
//     but once connected it may not move to a narrower class (DNS
//     rebinding);
//   - any other host (reached by a redirect, or named by the server) must
//     be of the origin's class or a wider one: public → loopback or
//     private is refused;
//   - a request that is not a GET or HEAD is never redirected to another
//     origin (its body would follow);
//   - the configured headers, and the access token of its TokenSource
//     (as Authorization: Bearer, in place of a configured Authorization
//     header), are sent only to the origin, and never after a redirect
//     has left it; credentials another layer set
//     (Authorization, cookies, the MCP session id, and the Referer, which
//     holds the URL entered) are removed from a request to another origin.
//
// Refusals are *RefusedError values (a connection or a redirect) that name the
// address or URL and the reason. An Policy is safe for
// concurrent use; it remembers the class its origin was first reached
// at, so each verification, watch or session should have its own.
type Policy struct {
	origin   string         // "scheme://host:port", lower case
	hostPort string         // host:port as http.Transport dials it
	literal  netip.AddrPort // the origin's address, if the person typed one
	headers  http.Header
	// Token, if set, gives the access token of each request to the
	// origin that never left it, asked for as the request is sent (a
	// held stream or session outlives one token). An error it returns
	// ends the request.
	Token TokenSource

	// ClassOf, if set, replaces AddrClass (tests declare a loopback port
	// public with it).
	ClassOf func(netip.AddrPort) Class
	// Resolver, if set, resolves host names (tests).
	Resolver *net.Resolver

	mu     sync.Mutex
	pinned Class // the widest class the origin was connected at
	seen   bool  // the origin was connected to
}

// NewPolicy returns the policy for requests on behalf of the
// server at rawURL (http or https), which the person entered, with the
// headers configured for it.
func New(rawURL string, headers map[string]string) (*Policy, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q is not an http or https URL", rawURL)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%q has no host", rawURL)
	}
	p := &Policy{origin: OriginOf(u), hostPort: dialAddr(u), headers: http.Header{}}
	if ap, err := netip.ParseAddrPort(p.hostPort); err == nil {
		p.literal = ap
	}
	for k, v := range headers {
		p.headers.Set(k, v)
	}
	return p, nil
}

// Origin is the origin the policy was made for: "scheme://host:port".
func (p *Policy) Origin() string { return p.origin }

// Client returns an HTTP client under the policy, for requests that need
// none of a verification's limits (OAuth metadata and tokens, say). It
// has a 30 s timeout.
func (p *Policy) Client() *http.Client {
	return &http.Client{
		Transport:     p.Transport(BaseTransport(30 * time.Second)),
		CheckRedirect: p.CheckRedirect,
		Timeout:       30 * time.Second,
	}
}

// baseTransport is the http.Transport every remote request goes through;
// the policy sets its dialer.
func BaseTransport(responseHeader time.Duration) *http.Transport {
	return &http.Transport{
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: responseHeader,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       30 * time.Second,
	}
}

// transport makes tr dial under the policy, through no proxy (a proxy
// would dial for it, unjudged), and returns it wrapped so that the
// configured headers reach the origin only.
func (p *Policy) Transport(tr *http.Transport) http.RoundTripper {
	tr.Proxy = nil
	tr.DialContext = p.dialContext
	return policyTransport{p: p, base: tr}
}

// originOf is u's origin, "scheme://host:port" in lower case.
func OriginOf(u *url.URL) string {
	return strings.ToLower(u.Scheme + "://" + dialAddr(u))
}

// dialAddr is the host:port http.Transport dials for u.
func dialAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// class is the class of the address ap.
func (p *Policy) class(ap netip.AddrPort) Class {
	if p.ClassOf != nil {
		return p.ClassOf(ap)
	}
	return AddrClass(ap.Addr())
}

// originClass is the class other hosts are held to: the one the origin
// was first connected at, or, before that, that of its address if the
// person typed one; for a name not yet connected to, public, the widest.
func (p *Policy) originClass() Class {
	p.mu.Lock()
	pinned, seen := p.pinned, p.seen
	p.mu.Unlock()
	switch {
	case seen:
		return pinned
	case p.literal.IsValid():
		return p.class(p.literal)
	}
	return ClassPublic
}

// resolveOrigin sets the origin's class from what its host resolves to
// now (the widest of its addresses), as a first connection would: for
// requests made on the server's behalf to other hosts before, or without,
// connecting to it (an OAuth sign-in: the authorization server is held
// to the server's class).
func (p *Policy) ResolveOrigin(ctx context.Context) error {
	host, portText, err := net.SplitHostPort(p.hostPort)
	if err != nil {
		return err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return err
	}
	r := p.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range addrs {
		if c := p.class(netip.AddrPortFrom(a.Unmap(), uint16(port))); !p.seen || c > p.pinned {
			p.pinned, p.seen = c, true
		}
	}
	return nil
}

// TokenSource gives the access token of a request (discovery's token
// sources are ones).
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// RefusedError is a request the policy refused: a connection
// ("network"), or a redirect ("protocol"). Its message names the address
// or URL and the reason.
type RefusedError struct {
	// Kind is "network" (a connection refused) or "protocol" (a redirect
	// refused).
	Kind    string
	Message string
	cause   error
}

func (e *RefusedError) Error() string { return e.Kind + ": " + e.Message }
func (e *RefusedError) Unwrap() error { return e.cause }

// refused is the error for a connection the policy refuses.
func refused(msg string, cause error) *RefusedError {
	return &RefusedError{Kind: "network", Message: msg, cause: cause}
}

// refusedRedirect is the error for a redirect the policy refuses.
func refusedRedirect(msg string) *RefusedError {
	return &RefusedError{Kind: "protocol", Message: msg}
}

// judge decides whether addr (the host:port a request names) may be
// dialled at ap (what it resolved to). If not, it says why, and cause is
// ErrForbiddenAddress for an address never dialled.
func (p *Policy) judge(addr string, ap netip.AddrPort) (reason string, cause error) {
	c := p.class(ap)
	if c == ClassForbidden {
		return ErrForbiddenAddress.Error(), ErrForbiddenAddress
	}
	if strings.EqualFold(addr, p.hostPort) {
		p.mu.Lock()
		pinned, seen := p.pinned, p.seen
		p.mu.Unlock()
		if seen && c < pinned {
			return fmt.Sprintf("it is a %s address now, but the server was first reached at a %s one; a host name that moves to a narrower network is refused (DNS rebinding)", c, pinned), nil
		}
		return "", nil
	}
	if oc := p.originClass(); c < oc {
		return fmt.Sprintf("it is a %s address, and the server's origin %s is a %s one; a request may leave the origin you entered only for a network as wide or wider (never public to private or loopback)", c, p.origin, oc), nil
	}
	return "", nil
}

// dialTarget names addr for a refusal: with the address it resolved to,
// if it is a name.
func dialTarget(addr string, ap netip.AddrPort) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if ip, err := netip.ParseAddr(host); err == nil && ip == ap.Addr() {
			return addr
		}
	}
	return fmt.Sprintf("%s (%s)", addr, ap.Addr())
}

// dialContext dials addr for http.Transport, judging each address tried
// as the connection is made (net.Dialer.Control), after DNS.
func (p *Policy) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{
		Timeout:  10 * time.Second,
		Resolver: p.Resolver,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return refused(fmt.Sprintf("refused to connect to %s: not an IP address and port", address), err)
			}
			if reason, cause := p.judge(addr, ap); reason != "" {
				return refused(fmt.Sprintf("refused to connect to %s: %s", dialTarget(addr, ap), reason), cause)
			}
			return nil
		},
	}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil || !strings.EqualFold(addr, p.hostPort) {
		return conn, err
	}
	if ap, err := netip.ParseAddrPort(conn.RemoteAddr().String()); err == nil {
		p.mu.Lock()
		if !p.seen || p.class(ap) > p.pinned {
			// The widest it has been: a name may resolve to several
			// addresses (a public and a private one), and may connect
			// to any of them, but not to one narrower than the widest
			// it reached.
			p.pinned, p.seen = p.class(ap), true
		}
		p.mu.Unlock()
	}
	return conn, nil
}

// maxRedirects is how many redirects one request may follow.
const maxRedirects = 10

// CheckRedirect is the policy's http.Client.CheckRedirect: it refuses a
// redirect of a request that is not a GET or HEAD to another origin, a
// redirect to an address the policy never dials, and more than
// maxRedirects redirects. An address named by a host name is judged when
// it is dialled.
func (p *Policy) CheckRedirect(req *http.Request, via []*http.Request) error {
	first := via[0]
	if len(via) >= maxRedirects {
		return refusedRedirect(fmt.Sprintf("stopped after %d redirects (last to %s)", maxRedirects, shownURL(req.URL)))
	}
	status := 0
	if req.Response != nil {
		status = req.Response.StatusCode
	}
	// A redirect to an address (not a name) is judged at once, to name
	// the whole URL.
	if ap, err := netip.ParseAddrPort(dialAddr(req.URL)); err == nil {
		if reason, cause := p.judge(dialAddr(req.URL), ap); reason != "" {
			return refused(fmt.Sprintf("the server redirected (HTTP %d) to %s, which Switchboard refused: %s", status, shownURL(req.URL), reason), cause)
		}
	}
	if first.Method != http.MethodGet && first.Method != http.MethodHead && OriginOf(req.URL) != OriginOf(first.URL) {
		return refusedRedirect(fmt.Sprintf("the server answered a %s with a redirect (HTTP %d) to %s, another origin than the one entered (%s); Switchboard never sends a request body or credentials to another origin", first.Method, status, shownURL(req.URL), OriginOf(first.URL)))
	}
	return nil
}

// shownURL is u without its user information or query, which may hold
// secrets.
func shownURL(u *url.URL) string {
	v := *u
	v.User, v.RawQuery, v.ForceQuery, v.Fragment, v.RawFragment = nil, "", false, "", ""
	return v.String()
}

// credentialHeaders are removed from every request to another origin
// than the policy's: whatever set them meant them for the origin. The
// Referer http.Client sets on a redirect is the URL entered, whose query
// may hold a key.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Mcp-Session-Id", "Referer"}

// policyTransport adds the configured headers and the access token to
// requests to the policy's origin that never left it, and removes
// credentials from every other request.
type policyTransport struct {
	p    *Policy
	base idleCloser // an *http.Transport dialling through p, maybe wrapped (credentialTransport)
}

// idleCloser is an http.RoundTripper that keeps connections.
type idleCloser interface {
	http.RoundTripper
	CloseIdleConnections()
}

func (t policyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r2 := r.Clone(r.Context()) // a RoundTripper may not change its request
	if t.p.atOrigin(r) {
		for k, vs := range t.p.headers {
			r2.Header[k] = append([]string(nil), vs...)
		}
		if t.p.Token != nil {
			tok, err := t.p.Token.Token(r.Context())
			if err != nil {
				if r.Body != nil {
					r.Body.Close() // as RoundTrip must, even on errors
				}
				return nil, err
			}
			if tok != "" {
				r2.Header.Set("Authorization", "Bearer "+tok)
			}
		}
	} else {
		for _, k := range credentialHeaders {
			r2.Header.Del(k)
		}
	}
	return t.base.RoundTrip(r2)
}

// CloseIdleConnections closes the connections the transport keeps.
func (t policyTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// atOrigin reports whether r, and every request of the redirects that
// led to it, is to the policy's origin.
func (p *Policy) atOrigin(r *http.Request) bool { return onlyAt(r, p.origin) }

// onlyAt reports whether r, and every request of the redirects that led
// to it, is to origin.
func onlyAt(r *http.Request, origin string) bool {
	for {
		if OriginOf(r.URL) != origin {
			return false
		}
		if r.Response == nil || r.Response.Request == nil {
			return true
		}
		r = r.Response.Request
	}
}

// credentialTransport adds header to the requests base sends to origin
// that never left it: credentials for another host than the policy's
// origin (an authorization server's token endpoint), which the policy
// would strip, and which must not follow a redirect either.
type credentialTransport struct {
	base   idleCloser
	origin string
	header http.Header
}

func (t credentialTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !onlyAt(r, t.origin) {
		return t.base.RoundTrip(r)
	}
	r2 := r.Clone(r.Context())
	for k, vs := range t.header {
		r2.Header[k] = vs
	}
	return t.base.RoundTrip(r2)
}

// CloseIdleConnections closes the connections the transport keeps.
func (t credentialTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// withCredentials returns hc (a policy's client) sending header with its
// requests to origin that never left it, after the policy's own header
// rules.
func WithCredentials(hc *http.Client, origin string, header http.Header) *http.Client {
	pt := hc.Transport.(policyTransport)
	pt.base = credentialTransport{base: pt.base, origin: origin, header: header}
	c := *hc
	c.Transport = pt
	return &c
}
