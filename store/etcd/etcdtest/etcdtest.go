// Package etcdtest runs a real etcd server in process (go.etcd.io/etcd's
// embed) for tests of the etcd backend and of replicas on it.
package etcdtest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Server is an etcd member serving clients on Endpoint.
type Server struct {
	Endpoint string
	etcd     *embed.Etcd
	dir      string
	extra    string // another directory to remove (certificates)
}

type embedConfig = embed.Config

// Start starts a one-member etcd cluster with its data in a new
// temporary directory, ready for clients.
func Start() (*Server, error) { return start(nil, "http") }

// StartKeepAlive is Start with the member's --grpc-keepalive-min-time
// at min, so that clients may ping that often (tests of a member that
// goes silent).
func StartKeepAlive(min time.Duration) (*Server, error) {
	return start(func(c *embedConfig) { c.GRPCKeepAliveMinTime = min }, "http")
}

// start starts a member, configured further by set (if not nil), whose
// clients speak scheme.
func start(set func(*embedConfig), scheme string) (*Server, error) {
	dir, err := os.MkdirTemp("", "switchboard-etcd-")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	client, _ := url.Parse(fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[0]))
	peer, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", ports[1]))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	if set != nil {
		set(cfg)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		os.RemoveAll(dir)
		return nil, errors.New("etcd did not get ready within 30 s")
	}
	return &Server{Endpoint: client.String(), etcd: e, dir: dir}, nil
}

// Close stops the member and removes its data.
func (s *Server) Close() {
	s.etcd.Close()
	os.RemoveAll(s.dir)
	if s.extra != "" {
		os.RemoveAll(s.extra)
	}
}

// freePorts finds n ports free on the loopback now.
func freePorts(n int) ([]int, error) {
	var out []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// Proxy passes TCP connections to an etcd member until it is cut: then it
// drops every connection and refuses new ones, as a network partition
// between one replica and the cluster would.
type Proxy struct {
	// Endpoint is the proxy's client URL.
	Endpoint string
	ln       net.Listener
	target   string

	mu    sync.Mutex
	conns []net.Conn
	cut   bool
	wg    sync.WaitGroup
	// held, while not nil, holds every byte until it is closed (see
	// Hold).
	held chan struct{}
	// delay is how late the member's answers pass (see Delay).
	delay time.Duration
}

// NewProxy starts a proxy to the member s.
func (s *Server) NewProxy() (*Proxy, error) { return ProxyTo(s.Endpoint) }

// ProxyTo starts a proxy to the etcd member at the client URL endpoint.
func ProxyTo(endpoint string) (*Proxy, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Endpoint: "http://" + ln.Addr().String(), ln: ln, target: u.Host}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	p.mu.Lock()
	ln := p.ln
	p.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		p.mu.Lock()
		if err != nil || p.cut {
			p.mu.Unlock()
			c.Close()
			if up != nil {
				up.Close()
			}
			continue
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); p.copy(up, c); up.Close() }()
		go func() { defer p.wg.Done(); p.copyLate(c, up); c.Close() }()
	}
}

// copyLate is copy of the member's answers, each passed Delay after it
// came (in order: a reader queues them, a writer passes them on).
func (p *Proxy) copyLate(dst io.Writer, src io.Reader) {
	type chunk struct {
		at   time.Time
		data []byte
	}
	queue := make(chan chunk, 1024)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				queue <- chunk{time.Now(), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		p.mu.Lock()
		delay := p.delay
		p.mu.Unlock()
		time.Sleep(time.Until(c.at.Add(delay)))
		if !p.pass(dst, c.data) {
			for range queue { // until the reader ends (the connection closes)
			}
			return
		}
	}
}

// pass writes b to dst once the proxy does not hold; false if it could
// not.
func (p *Proxy) pass(dst io.Writer, b []byte) bool {
	p.mu.Lock()
	held := p.held
	p.mu.Unlock()
	if held != nil {
		<-held // until Release, or Cut
	}
	_, err := dst.Write(b)
	return err == nil
}

// Delay makes the member's answers through this proxy come d late, as
// on a slow or far network (the requests pass at once).
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// copy passes bytes from src to dst, holding them while the proxy holds.
func (p *Proxy) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.pass(dst, buf[:n]) {
			return
		}
		if err != nil {
			return
		}
	}
}

// Hold makes the member silent through this proxy: the connections stay
// open (no reset, no close) but no byte passes either way, as when a
// member hangs or a network drops packets. Release or Cut ends it.
func (p *Proxy) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = make(chan struct{})
	}
}

// Release lets the held bytes pass again.
func (p *Proxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
}

// Heal listens again on the proxy's address after a Cut: connections
// pass again.
func (p *Proxy) Heal() error {
	ln, err := net.Listen("tcp", strings.TrimPrefix(p.Endpoint, "http://"))
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln, p.cut = ln, false
	p.mu.Unlock()
	p.wg.Add(1)
	go p.accept()
	return nil
}

// Cut drops every connection and refuses new ones (it stops listening).
func (p *Proxy) Cut() {
	p.Release()
	p.mu.Lock()
	p.cut = true
	conns, ln := p.conns, p.ln
	p.conns = nil
	p.mu.Unlock()
	ln.Close()
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
}
