package discovery

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Pool defaults.
const (
	// DefaultIdle is how long an upstream session may go unused before
	// the pool closes it.
	DefaultIdle = 5 * time.Minute
	// DefaultMaxRunning is how many upstream sessions may be open at once.
	DefaultMaxRunning = 8
	// DefaultMaxResult is the largest tool result relayed, in bytes of
	// JSON.
	DefaultMaxResult = 1 << 20
)

// ErrPoolClosed is the answer of a closed pool.
var ErrPoolClosed = errors.New("switchboard is shutting down")

// PoolConfig configures a Pool.
type PoolConfig struct {
	Idle       time.Duration // DefaultIdle if zero
	MaxRunning int           // DefaultMaxRunning if zero
	MaxResult  int           // DefaultMaxResult if zero
	// OnChange, if set, hears that a session opened or ended. It is
	// called without the pool's lock held, never concurrently with
	// itself.
	OnChange func()
}

// Pool holds the upstream sessions that tool calls go through: one per
// server (one per server and what it may ask of the calling agents, see
// Target.Asks), opened by the first call (lazily), reused by the next, closed
// after PoolConfig.Idle without calls, when the server's configuration
// changes, or to make room: at most PoolConfig.MaxRunning are open at
// once, and a call that needs another waits for the least recently used
// idle one to close (or for its own deadline).
type Pool struct {
	v   *Verifier
	cfg PoolConfig

	ctx    context.Context // ends with Close
	cancel context.CancelFunc

	mu      sync.Mutex
	entries map[string]*poolEntry // by key (see poolEntry)
	freed   chan struct{}         // closed (and replaced) when room may have been made
	closed  bool
	wg      sync.WaitGroup // closers and watchers of sessions
	notify  sync.Mutex     // OnChange one at a time
}

type poolEntry struct {
	// key is the entry's in Pool.entries: the server's id, and what its
	// session asks of agents (see Asks.key).
	id, key, config string
	ready           chan struct{} // closed once opening finished (s or err set)
	s               *Session
	err             error
	inflight        int
	calls           int
	lastUsed        time.Time
	idle            *time.Timer
}

// NewPool returns a pool that opens sessions with v.
func NewPool(v *Verifier, cfg PoolConfig) *Pool {
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = DefaultMaxRunning
	}
	if cfg.MaxResult <= 0 {
		cfg.MaxResult = DefaultMaxResult
	}
	p := &Pool{v: v, cfg: cfg, entries: map[string]*poolEntry{}, freed: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

// Config returns the pool's configuration, defaults filled in.
func (p *Pool) Config() PoolConfig { return p.cfg }

// CallInfo says how a call was served.
type CallInfo struct {
	// Started says the call opened the server's session (a cold start).
	Started bool
}

// Call calls tool on server id, checked against the approved pin (see
// Session.Call), through the server's session (see Use).
func (p *Pool) Call(ctx context.Context, id, config string, t Target, initTimeout time.Duration, tool, pin string, args any) (*mcp.CallToolResult, CallInfo, error) {
	var res *mcp.CallToolResult
	info, err := p.Use(ctx, id, config, t, initTimeout, func(s *Session) (err error) {
		res, err = s.Call(ctx, tool, pin, args, p.cfg.MaxResult)
		return err
	})
	return res, info, err
}

// MaxResult is the largest result a request through the pool may have
// (PoolConfig.MaxResult, with its default).
func (p *Pool) MaxResult() int { return p.cfg.MaxResult }

// Use runs fn with server id's session: the open one if its
// configuration is config, else a new one opened on t within
// initTimeout. ctx bounds the whole use, waiting for room included; fn's
// requests should be bounded by it too.
func (p *Pool) Use(ctx context.Context, id, config string, t Target, initTimeout time.Duration, fn func(*Session) error) (CallInfo, error) {
	var info CallInfo
	if t.Transport == TransportSSE {
		// mcp-go's client over HTTP+SSE answers no request of the
		// server's: it declares nothing it could not answer.
		t.Asks = Asks{}
	}
	e, opener, err := p.acquire(ctx, id, id+t.Asks.key(), config)
	if err != nil {
		return info, err
	}
	defer p.release(e)
	if opener {
		// Opened under the pool's context, not this call's: other calls
		// may be waiting for the same session, and a caller that gives
		// up must not fail them. Open bounds itself (initTimeout, the
		// list timeout); Close cuts it short.
		info.Started = true
		go func() {
			defer p.wg.Done() // added by acquire
			s, err := p.v.Open(p.ctx, t, initTimeout)
			p.opened(e, s, err)
		}()
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			return info, newError(ClassCancelled, PhaseStarting, "the call was cancelled while the server started", ctx.Err())
		}
		return info, newError(ClassTimeout, PhaseStarting, "the server did not start before the call's deadline", ctx.Err())
	}
	if e.err != nil {
		return info, e.err
	}
	return info, fn(e.s)
}

// acquire finds or makes the entry of server id, counting the call in.
// opener says the caller must start opening its session (counted in
// p.wg).
func (p *Pool) acquire(ctx context.Context, id, key, config string) (*poolEntry, bool, error) {
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, false, ErrPoolClosed
		}
		e := p.entries[key]
		if e != nil && (e.config != config || e.ended()) {
			p.dropLocked(e)
			e = nil
		}
		if e != nil {
			e.inflight++
			e.stopIdle()
			p.mu.Unlock()
			return e, false, nil
		}
		if len(p.entries) < p.cfg.MaxRunning || p.evictLocked() {
			e = &poolEntry{id: id, key: key, config: config, ready: make(chan struct{}), inflight: 1, lastUsed: time.Now()}
			p.entries[key] = e
			p.wg.Add(1) // the opener, see Call
			p.mu.Unlock()
			return e, true, nil
		}
		freed := p.freed
		p.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, false, newError(ClassTimeout, PhaseStarting,
				fmt.Sprintf("%d servers are busy with calls (the limit of servers running at once); none became free before the call's deadline", p.cfg.MaxRunning), ctx.Err())
		}
		p.mu.Lock()
	}
}

// opened records the outcome of opening e's session. A session opened
// for an entry dropped in the meantime (Stop, Close) is closed at once.
func (p *Pool) opened(e *poolEntry, s *Session, err error) {
	p.mu.Lock()
	if err == nil && (p.closed || p.entries[e.key] != e) {
		p.mu.Unlock()
		s.Close()
		p.mu.Lock()
		s, err = nil, newError(ClassCancelled, PhaseStarting, "the server's session was stopped while it started", nil)
	}
	e.s, e.err = s, err
	close(e.ready)
	if err != nil {
		if p.entries[e.key] == e {
			delete(p.entries, e.key)
			p.freeLocked()
		}
		p.mu.Unlock()
		return
	}
	p.wg.Add(1)
	go func() { // forget it when the server goes away by itself
		defer p.wg.Done()
		<-s.Done()
		p.mu.Lock()
		if p.entries[e.key] == e {
			p.dropLocked(e)
		}
		p.mu.Unlock()
		p.changed()
	}()
	p.mu.Unlock()
	p.changed()
}

// release counts a call out, and starts the idle clock when it was the
// last.
func (p *Pool) release(e *poolEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.inflight--
	e.calls++
	e.lastUsed = time.Now()
	if e.inflight > 0 || p.entries[e.key] != e {
		return
	}
	p.freeLocked()
	if e.idle != nil { // one timer per entry, set again after each call
		e.idle.Reset(p.cfg.Idle)
		return
	}
	e.idle = time.AfterFunc(p.cfg.Idle, func() {
		p.mu.Lock()
		if p.entries[e.key] != e || e.inflight > 0 || time.Since(e.lastUsed) < p.cfg.Idle {
			p.mu.Unlock()
			return
		}
		p.dropLocked(e)
		p.mu.Unlock()
	})
}

func (e *poolEntry) stopIdle() {
	if e.idle != nil {
		e.idle.Stop()
	}
}

// ended reports whether e's session opened and has ended since.
func (e *poolEntry) ended() bool {
	select {
	case <-e.ready:
		return e.s != nil && e.s.Err() != nil
	default:
		return false
	}
}

// evictLocked closes the least recently used session without calls in
// flight, and reports whether there was one.
func (p *Pool) evictLocked() bool {
	var lru *poolEntry
	for _, e := range p.entries {
		if e.inflight == 0 && (lru == nil || e.lastUsed.Before(lru.lastUsed)) {
			lru = e
		}
	}
	if lru == nil {
		return false
	}
	p.dropLocked(lru)
	return true
}

// dropLocked forgets e and closes its session (once open) in the
// background; calls still using it fail as the session ends.
func (p *Pool) dropLocked(e *poolEntry) {
	if p.entries[e.key] != e {
		return
	}
	delete(p.entries, e.key)
	e.stopIdle()
	p.freeLocked()
	select {
	case <-e.ready:
		if e.s != nil {
			p.closeAsync(e.s)
		}
	default: // opened finds it dropped and closes it
	}
}

func (p *Pool) freeLocked() {
	close(p.freed)
	p.freed = make(chan struct{})
}

func (p *Pool) closeAsync(s *Session) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		s.Close()
	}()
}

func (p *Pool) changed() {
	if p.cfg.OnChange == nil {
		return
	}
	p.notify.Lock()
	defer p.notify.Unlock()
	p.cfg.OnChange()
}

// Stop closes server id's sessions, if any are open: its configuration
// changed, or it was deleted or disabled.
func (p *Pool) Stop(id string) {
	p.mu.Lock()
	for _, e := range p.entries {
		if e.id == id {
			p.dropLocked(e)
		}
	}
	p.mu.Unlock()
}

// Running describes one open upstream session.
type Running struct {
	ServerID      string
	Started       time.Time
	LastUsed      time.Time
	Calls         int
	InFlight      int
	Opening       bool
	ServerName    string
	ServerVersion string
	Protocol      string
	Isolation     string
}

// Running lists the sessions open or opening, by server id.
func (p *Pool) Running() []Running {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Running, 0, len(p.entries))
	for _, e := range p.entries {
		r := Running{ServerID: e.id, LastUsed: e.lastUsed, Calls: e.calls, InFlight: e.inflight, Opening: true}
		select {
		case <-e.ready:
			if e.s != nil {
				r.Opening = false
				r.Started = e.s.Started()
				r.ServerName, r.ServerVersion, r.Protocol = e.s.ServerInfo()
				r.Isolation = e.s.Isolation()
			}
		default:
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ServerID < out[j].ServerID })
	return out
}

// Close closes every session and waits until each is gone, with its
// processes. Calls under way fail; later ones get ErrPoolClosed.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	var opening []chan struct{}
	for _, e := range p.entries {
		opening = append(opening, e.ready)
		p.dropLocked(e)
	}
	p.mu.Unlock()
	p.cancel()
	for _, ready := range opening {
		<-ready // an opening session is closed by opened
	}
	p.wg.Wait()
}
