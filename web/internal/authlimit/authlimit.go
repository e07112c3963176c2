// Package authlimit limits failed authentication per client: after
// Failures failures within Window, every attempt of the same kind from
// that client (right or wrong) is refused with 429 until the window
// ends. The tokens are 256 random bits, so this matters most for a token
// a person chose (SWITCHBOARD_TOKEN); it also keeps a guessing loop from
// filling the log.
//
// Each kind of credential has a Limiter of its own (the API token's, the
// login links', the MCP endpoint's): spending one never blocks another,
// so wrong login links cannot lock out the right API token.
package authlimit

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

const (
	// Failures is how many failures within Window use a client's budget up.
	Failures = 10
	// Window is how long a client's failures count.
	Window = time.Minute
	// maxClients bounds the table; when full, windows that ended are
	// dropped, and if none has, the table starts over (an attacker
	// rotating addresses gains at most another round of attempts).
	maxClients = 4096
)

// Message is what a refused attempt is told.
const Message = "too many failed attempts to log in or authenticate; wait a minute and try again"

// Limiter counts the failures of each client (see Client). It is safe
// for concurrent use.
type Limiter struct {
	mu      sync.Mutex
	now     func() time.Time
	clients map[string]*failures
}

type failures struct {
	count int
	since time.Time // start of the window
}

// New returns a Limiter that counted no failures yet.
func New() *Limiter {
	return &Limiter{now: time.Now, clients: map[string]*failures{}}
}

// Blocked reports whether the client used up its failures; retry is when
// it may try again.
func (l *Limiter) Blocked(client string) (retry time.Duration, blocked bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.clients[client]
	if !ok {
		return 0, false
	}
	left := f.since.Add(Window).Sub(l.now())
	if left <= 0 {
		delete(l.clients, client)
		return 0, false
	}
	return left, f.count >= Failures
}

// Failed counts one failure of the client.
func (l *Limiter) Failed(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f, ok := l.clients[client]
	if ok && now.Sub(f.since) >= Window {
		ok = false
	}
	if !ok {
		if len(l.clients) >= maxClients {
			l.prune(now)
		}
		f = &failures{since: now}
		l.clients[client] = f
	}
	f.count++
}

func (l *Limiter) prune(now time.Time) {
	for k, f := range l.clients {
		if now.Sub(f.since) >= Window {
			delete(l.clients, k)
		}
	}
	if len(l.clients) >= maxClients {
		clear(l.clients)
	}
}

// Refused reports whether the client at remoteAddr (see Client) used up
// l's budget; if so it sets Retry-After in h. The caller answers 429
// with Message.
func (l *Limiter) Refused(h http.Header, remoteAddr string) bool {
	retry, blocked := l.Blocked(Client(remoteAddr))
	if blocked {
		h.Set("Retry-After", strconv.Itoa(int(retry.Round(time.Second)/time.Second)+1))
	}
	return blocked
}

// Client names the client at a remote address ("host:port") for the
// limits kept per client (Switchboard is never behind a proxy it
// trusts, so forwarding headers are ignored). Every loopback address
// (127.0.0.0/8, ::1) is one client, "loopback": any local program can
// pick any of them, so counting 127.0.0.2 apart from 127.0.0.1 would
// multiply its budget by sixteen million. For the same reason an IPv6
// client is its /64, the block one host is usually given; an IPv4
// client is its address.
func Client(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.Is6():
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
