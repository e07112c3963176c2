package web

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// Failed authentication is limited per client (see clientKey): after
// authFailures failures within authWindow, every attempt of the same kind
// from that client (right or wrong) is refused with 429 until the window
// ends. The token is 256 random bits, so this matters most for a token a
// person chose (SWITCHBOARD_TOKEN); it also keeps a guessing loop from
// filling the log.
//
// Each kind of credential has a budget of its own (Server.tokenLimit,
// Server.codeLimit, the MCP endpoint's): spending one never blocks
// another, so wrong login links cannot lock out the right API token.
const (
	authFailures = 10
	authWindow   = time.Minute
	// authClients bounds the table; when full, windows that ended are
	// dropped, and if none has, the table starts over (an attacker
	// rotating addresses gains at most another round of attempts).
	authClients = 4096
)

type failureLimiter struct {
	mu      sync.Mutex
	now     func() time.Time
	clients map[string]*failures
}

type failures struct {
	count int
	since time.Time // start of the window
}

func newFailureLimiter() *failureLimiter {
	return &failureLimiter{now: time.Now, clients: map[string]*failures{}}
}

// blocked reports whether the client used up its failures; retry is when
// it may try again.
func (l *failureLimiter) blocked(client string) (retry time.Duration, blocked bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.clients[client]
	if !ok {
		return 0, false
	}
	left := f.since.Add(authWindow).Sub(l.now())
	if left <= 0 {
		delete(l.clients, client)
		return 0, false
	}
	return left, f.count >= authFailures
}

// failed counts one failure of the client.
func (l *failureLimiter) failed(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f, ok := l.clients[client]
	if ok && now.Sub(f.since) >= authWindow {
		ok = false
	}
	if !ok {
		if len(l.clients) >= authClients {
			l.prune(now)
		}
		f = &failures{since: now}
		l.clients[client] = f
	}
	f.count++
}

func (l *failureLimiter) prune(now time.Time) {
	for k, f := range l.clients {
		if now.Sub(f.since) >= authWindow {
			delete(l.clients, k)
		}
	}
	if len(l.clients) >= authClients {
		clear(l.clients)
	}
}

// clientOf is the client a request came from (Switchboard is never
// behind a proxy it trusts, so forwarding headers are ignored).
func clientOf(c echo.Context) string { return clientKey(c.Request().RemoteAddr) }

// clientKey names the client at a remote address ("host:port") for the
// limits kept per client. Every loopback address (127.0.0.0/8, ::1) is
// one client, "loopback": any local program can pick any of them, so
// counting 127.0.0.2 apart from 127.0.0.1 would multiply its budget by
// sixteen million. For the same reason an IPv6 client is its /64, the
// block one host is usually given; an IPv4 client is its address.
func clientKey(remoteAddr string) string {
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

// limitBy refuses authentication attempts from a client that used up
// l's budget, with 429 and Retry-After.
func limitBy(l *failureLimiter, c echo.Context) error {
	retry, blocked := l.blocked(clientOf(c))
	if !blocked {
		return nil
	}
	c.Response().Header().Set("Retry-After", strconv.Itoa(int(retry.Round(time.Second)/time.Second)+1))
	return &apiError{Status: http.StatusTooManyRequests, Message: "too many failed attempts to log in or authenticate; wait a minute and try again"}
}
