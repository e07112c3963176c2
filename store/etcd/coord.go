package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/switchboard-dev/switchboard/cluster"
)

var _ cluster.Cluster = (*Coordinator)(nil)

// Coordinator is how the replicas on one store's prefix coordinate (see
// package cluster): an etcd election under leader/, claims as etcd mutexes
// under claims/, both bound to this replica's session (a lease kept
// alive while the replica lives and reaches etcd, gone TTL seconds after
// it does not), and events as keys under events/<topic>/ with a short
// lease of their own, heard through a watch.
type Coordinator struct {
	db  *DB
	id  string
	ttl int
	// cli is the election's client, its own: etcd's election resigns
	// under the client's context, which only closing the client ends, so
	// Close closes it to end a campaign stuck on a member out of reach.
	cli *clientv3.Client

	mu      sync.Mutex
	session *concurrency.Session
	leading bool
	onLead  map[int]func(bool)
	leadMu  sync.Mutex   // callbacks run one at a time, in order
	nextCB  atomic.Int64 // numbers callbacks and subscribers

	subsMu sync.Mutex
	subs   map[string]map[int]func([]byte)
	ended  map[int]func(string) // OnClaimEnded's

	eventLease atomic.Int64 // the lease of the events published now
	leaseAt    atomic.Int64 // when it was granted (unix ns)
	seq        atomic.Uint64

	// lapses counts the sessions this replica gave up (see keepValid).
	lapses prometheus.Counter

	stop context.CancelFunc
	done sync.WaitGroup
}

// DefaultLeaseTTL is how long (seconds) a replica that died or lost etcd
// keeps its leadership and claims.
const DefaultLeaseTTL = 10

// eventTTL is how long (seconds) an event's key lives: long enough for
// every watcher, short enough that events never pile up.
const eventTTL = 60

// NewCoordinator starts this replica's session and its campaign for the
// leadership. ttl is the lease's TTL in seconds (DefaultLeaseTTL if not
// positive).
func NewCoordinator(db *DB, ttl int) (*Coordinator, error) {
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	var b [6]byte
	rand.Read(b[:])
	c := &Coordinator{db: db, id: hex.EncodeToString(b[:]), ttl: ttl, onLead: map[int]func(bool){}, subs: map[string]map[int]func([]byte){}, ended: map[int]func(string){},
		lapses: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_etcd_session_lapses_total",
			Help: "Times this replica gave its etcd session up (its leadership and claims with it) because etcd did not renew its lease in time."})}
	ctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	// The watch of events starts from now, before anything is published.
	gctx, cancel := context.WithTimeout(ctx, db.timeout)
	resp, err := db.cli.Get(gctx, db.key("events/"), clientv3.WithPrefix(), clientv3.WithCountOnly())
	cancel()
	if err != nil {
		stop()
		return nil, unavailable(err)
	}
	if c.cli, err = clientv3.New(db.cfg); err != nil {
		stop()
		return nil, unavailable(err)
	}
	c.done.Add(3)
	go c.campaign(ctx)
	go c.watchEvents(ctx, resp.Header.Revision+1)
	go c.watchClaims(ctx, resp.Header.Revision+1)
	return c, nil
}

// ID names this replica.
func (c *Coordinator) ID() string { return c.id }

// Close resigns, ends the session (its claims with it) and stops.
func (c *Coordinator) Close() error {
	c.stop()
	// A campaign that ended while a member was out of reach may be
	// resigning under the client's context: it gets a moment to finish
	// (releasing the leadership at once), then its client is closed.
	ended := make(chan struct{})
	go func() { c.done.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(c.db.timeout):
	}
	c.cli.Close()
	<-ended
	return nil
}

// campaign keeps a session and campaigns for the leadership with it,
// again whenever the session ends (the lease expired: etcd was out of
// reach for TTL seconds), until ctx ends.
func (c *Coordinator) campaign(ctx context.Context) {
	defer c.done.Done()
	for ctx.Err() == nil {
		// The lease is granted under a deadline (a silent member must not
		// hold the loop): the session keeps it alive for as long as ctx.
		gctx, cancel := context.WithTimeout(ctx, c.db.timeout)
		lease, err := c.cli.Grant(gctx, int64(c.ttl))
		cancel()
		var s *concurrency.Session
		if err == nil {
			s, err = concurrency.NewSession(c.cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(c.ttl), concurrency.WithContext(ctx))
		}
		if err != nil {
			c.db.log.Warn("no etcd session for this replica; trying again", "err", err)
			sleep(ctx, time.Second)
			continue
		}
		c.mu.Lock()
		c.session = s
		c.mu.Unlock()
		c.done.Add(1)
		go c.keepValid(s)
		e := concurrency.NewElection(s, c.db.key("leader/"))
		if err := e.Campaign(s.Ctx(), c.id); err == nil {
			c.setLeading(true)
			<-s.Done() // lease lost, or ctx ended
			c.setLeading(false)
		}
		c.mu.Lock()
		c.session = nil
		c.mu.Unlock()
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if _, err := c.cli.Revoke(rctx, s.Lease()); err != nil && ctx.Err() == nil {
			c.db.log.Warn("this replica's etcd session ended", "err", err)
		}
		cancel()
		s.Orphan()
	}
}

// keepValid ends session s (Orphan: s.Done closes, so this replica stops
// leading and its claims are lost) as soon as it can no longer be sure
// that etcd keeps its lease, and before etcd can let the lease expire:
// so that a replica cut off from etcd never leads, nor works under a
// claim, at the same time as the replica that takes over once the lease
// expired (issue 38: two leaders for 0.3 s, and a claim's work going on
// 3.6 s after it passed to another replica).
//
// It renews the lease itself, every TTL/4, each renewal under a deadline.
// A renewal sent at t and answered means etcd keeps the lease until at
// least t+TTL (etcd renews it when the request arrives, after t): the
// session is valid until then, less a margin for this process being
// slow to act on it. (The session's own keepalive, which this one runs
// beside, only gives up TTL after the last answer it had, which can be
// after etcd let the lease go.)
func (c *Coordinator) keepValid(s *concurrency.Session) {
	defer c.done.Done()
	ttl := time.Duration(c.ttl) * time.Second
	margin := ttl / 4
	// validUntil is kept as a time.Time (its monotonic reading with it),
	// so that a step of the wall clock changes nothing.
	var validUntil atomic.Pointer[time.Time]
	first := time.Now().Add(ttl) // the grant was just answered
	validUntil.Store(&first)
	gone := make(chan struct{}) // etcd says the lease is gone
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		tick := time.NewTicker(ttl / 4)
		defer tick.Stop()
		for {
			select {
			case <-s.Ctx().Done():
				return
			case <-tick.C:
			}
			sent := time.Now()
			ctx, cancel := context.WithTimeout(s.Ctx(), ttl/2)
			resp, err := c.cli.KeepAliveOnce(ctx, s.Lease())
			cancel()
			switch {
			case err == nil && resp.TTL > 0:
				until := sent.Add(time.Duration(resp.TTL) * time.Second)
				validUntil.Store(&until)
			case errors.Is(err, rpctypes.ErrLeaseNotFound):
				close(gone)
				return
			}
		}
	}()
	lapse := time.NewTimer(time.Until(validUntil.Load().Add(-margin)))
	defer lapse.Stop()
	for {
		select {
		case <-s.Done():
			return
		case <-gone:
			c.db.log.Warn("this replica's etcd lease expired: it stops leading and gives up its claims", "replica", c.id)
			c.lapses.Inc()
			s.Orphan()
			return
		case <-lapse.C:
			until := *validUntil.Load()
			if left := time.Until(until.Add(-margin)); left > 0 {
				lapse.Reset(left)
				continue
			}
			c.db.log.Warn("etcd has not renewed this replica's lease in time: it stops leading and gives up its claims before the lease can expire",
				"replica", c.id, "last_renewed", until.Add(-ttl).Format(time.RFC3339Nano))
			c.lapses.Inc()
			s.Orphan()
			return
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// setLeading records a change of leadership and tells the callbacks.
func (c *Coordinator) setLeading(leading bool) {
	c.leadMu.Lock()
	defer c.leadMu.Unlock()
	c.mu.Lock()
	c.leading = leading
	cbs := make([]func(bool), 0, len(c.onLead))
	for _, fn := range c.onLead {
		cbs = append(cbs, fn)
	}
	c.mu.Unlock()
	if leading {
		c.db.log.Info("this replica leads: it runs the refresher and the held watches", "replica", c.id)
	} else {
		c.db.log.Info("this replica no longer leads", "replica", c.id)
	}
	for _, fn := range cbs {
		fn(leading)
	}
}

// Leading reports whether this replica leads now.
func (c *Coordinator) Leading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leading
}

// OnLeader calls fn with the leadership now and at each change.
func (c *Coordinator) OnLeader(fn func(bool)) (cancel func()) {
	c.leadMu.Lock()
	c.mu.Lock()
	id := int(c.nextCB.Add(1))
	c.onLead[id] = fn
	leading := c.leading
	c.mu.Unlock()
	fn(leading)
	c.leadMu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.onLead, id)
		c.mu.Unlock()
	}
}

// Ready says whether this replica can take part: it holds a live etcd
// session (so it can claim and lead), someone leads, and its watch of
// the store is current (see DB.WatchCurrent).
func (c *Coordinator) Ready(ctx context.Context) error {
	c.mu.Lock()
	s := c.session
	c.mu.Unlock()
	if s == nil {
		return errNoSession
	}
	select {
	case <-s.Done():
		return errNoSession
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, c.db.timeout)
	defer cancel()
	if _, err := concurrency.NewElection(s, c.db.key("leader/")).Leader(ctx); err != nil {
		return fmt.Errorf("%w: no leader known: %v", ErrUnavailable, err)
	}
	return c.db.WatchCurrent(ctx)
}

// errNoSession is a claim asked for while this replica has no session
// (etcd out of reach).
var errNoSession = fmt.Errorf("%w: this replica has no etcd session", ErrUnavailable)

// Claim takes name for this replica's session; ErrClaimed if another
// session holds it. The claim is lost when the session ends (see
// keepValid), and the writes fenced with it (cluster.WithFence) are
// refused by etcd once its key is gone (see fence).
func (c *Coordinator) Claim(ctx context.Context, name string) (cluster.Hold, error) {
	c.mu.Lock()
	s := c.session
	c.mu.Unlock()
	if s == nil {
		return cluster.Hold{}, errNoSession
	}
	m := concurrency.NewMutex(s, c.db.key("claims/"+name))
	switch err := m.TryLock(ctx); {
	case errors.Is(err, concurrency.ErrLocked):
		return cluster.Hold{}, cluster.ErrClaimed
	case err != nil:
		return cluster.Hold{}, unavailable(err)
	}
	var once sync.Once
	return cluster.NewHold(func() {
		once.Do(func() {
			select {
			case <-s.Done(): // lost: its key goes with the lease
				return
			default:
			}
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := m.Unlock(rctx); err != nil {
				c.db.log.Warn("release a claim (it ends with this replica's session anyway)", "claim", name, "err", err)
			}
		})
	}, s.Done(), fence{owner: m.IsOwner(), claim: name}), nil
}

// fence is the condition of a write made under a claim: the claim's key
// is still the one this replica created (it is deleted with the lease
// when the lease expires, and another replica's claim is another key).
type fence struct {
	owner clientv3.Cmp // the mutex's own: its key, at its creation
	claim string
}

func (f fence) cmp() clientv3.Cmp { return f.owner }

// Held reports whether a replica holds the claim name (its key is there).
func (c *Coordinator) Held(ctx context.Context, name string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.db.timeout)
	defer cancel()
	resp, err := c.db.cli.Get(ctx, c.db.key("claims/"+name+"/"), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return false, unavailable(err)
	}
	return resp.Count > 0, nil
}

// OnClaimEnded calls fn with the name of each claim whose key is deleted
// (released, or gone with its replica's lease).
func (c *Coordinator) OnClaimEnded(fn func(string)) (cancel func()) {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	id := int(c.nextCB.Add(1))
	c.ended[id] = fn
	return func() {
		c.subsMu.Lock()
		delete(c.ended, id)
		c.subsMu.Unlock()
	}
}

// watchClaims hears the claims deleted from rev on and tells
// OnClaimEnded's functions.
func (c *Coordinator) watchClaims(ctx context.Context, rev int64) {
	defer c.done.Done()
	c.watchPrefix(ctx, "claims/", rev, clientv3.WithFilterPut(), func(key string, _ []byte) {
		// claims/<name>/<lease>
		i := strings.LastIndexByte(key, '/')
		if i < 0 {
			return
		}
		c.subsMu.Lock()
		fns := make([]func(string), 0, len(c.ended))
		for _, fn := range c.ended {
			fns = append(fns, fn)
		}
		c.subsMu.Unlock()
		for _, fn := range fns {
			fn(key[:i])
		}
	})
}

// watchPrefix watches the keys under name/ from rev on, filtered by
// filter, calling fn with each event's key (under name/) and value in
// order, until ctx ends; again after a failed watch. What a compaction
// took is skipped: these keys are news, not state.
func (c *Coordinator) watchPrefix(ctx context.Context, name string, rev int64, filter clientv3.OpOption, fn func(key string, value []byte)) {
	prefix := c.db.key(name)
	for ctx.Err() == nil {
		wch := c.db.cli.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix(), clientv3.WithRev(rev), filter)
		for resp := range wch {
			if resp.CompactRevision != 0 {
				rev = resp.CompactRevision
				break
			}
			if resp.Err() != nil {
				break
			}
			for _, ev := range resp.Events {
				rev = ev.Kv.ModRevision + 1
				fn(strings.TrimPrefix(string(ev.Kv.Key), prefix), ev.Kv.Value)
			}
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

// Publish puts an event under events/<topic>/<replica>-<seq>, with a
// lease of eventTTL seconds.
func (c *Coordinator) Publish(topic string, data []byte) error {
	if strings.Contains(topic, "/") {
		return fmt.Errorf("an event topic has no /: %q", topic)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.db.timeout)
	defer cancel()
	lease, err := c.lease(ctx)
	if err != nil {
		return err
	}
	key := c.db.key("events/" + topic + "/" + c.id + "-" + strconv.FormatUint(c.seq.Add(1), 10))
	if _, err := c.db.cli.Put(ctx, key, string(data), clientv3.WithLease(lease)); err != nil {
		return unavailable(err)
	}
	return nil
}

// lease is the lease events are published with now: a new one every half
// eventTTL, so that each event lives between half and the whole of it.
func (c *Coordinator) lease(ctx context.Context) (clientv3.LeaseID, error) {
	if id := c.eventLease.Load(); id != 0 && time.Since(time.Unix(0, c.leaseAt.Load())) < eventTTL/2*time.Second {
		return clientv3.LeaseID(id), nil
	}
	resp, err := c.db.cli.Grant(ctx, eventTTL)
	if err != nil {
		return 0, unavailable(err)
	}
	c.eventLease.Store(int64(resp.ID))
	c.leaseAt.Store(time.Now().UnixNano())
	return resp.ID, nil
}

// Subscribe calls fn with each event of the topic another replica
// publishes.
func (c *Coordinator) Subscribe(topic string, fn func([]byte)) (cancel func()) {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	if c.subs[topic] == nil {
		c.subs[topic] = map[int]func([]byte){}
	}
	id := int(c.nextCB.Add(1))
	c.subs[topic][id] = fn
	return func() {
		c.subsMu.Lock()
		delete(c.subs[topic], id)
		c.subsMu.Unlock()
	}
}

// watchEvents hears every event put under events/ from rev on, and hands
// those of other replicas to the topic's subscribers.
func (c *Coordinator) watchEvents(ctx context.Context, rev int64) {
	defer c.done.Done()
	c.watchPrefix(ctx, "events/", rev, clientv3.WithFilterDelete(), func(key string, value []byte) {
		topic, origin, ok := strings.Cut(key, "/")
		if !ok || strings.HasPrefix(origin, c.id+"-") {
			return
		}
		c.subsMu.Lock()
		fns := make([]func([]byte), 0, len(c.subs[topic]))
		for _, fn := range c.subs[topic] {
			fns = append(fns, fn)
		}
		c.subsMu.Unlock()
		for _, fn := range fns {
			fn(value)
		}
	})
}
