// Package etcd is the team backend of the store: the store contract (see
// package store) on an etcd v3 cluster, so that several Switchboard
// replicas share one catalog, one set of policies and pins, the audit,
// the sessions and the credentials.
//
// # Layout
//
// Every key is under the prefix (Options.Prefix, "/switchboard/" by
// default):
//
//	servers/<id>           the server, its discovery record, and the list of
//	                       its body's chunks (serverDoc)
//	chunks/<id>/<name>     a chunk of a server's body: its tools with their
//	                       policies, the definitions approved, and its
//	                       resources, templates and prompts (see body.go)
//	history/<id>/<seq>     the server's verifications, newest kept
//	grants/<id>/<issuer>   its OAuth grants
//	calls/<seq>            the audit, calls/seq its sequence
//	profiles/<id>, clients/<id>, sessions/<hash>, mcp_token
//	revision               the catalog's revision marker (see below)
//
// # Transactions
//
// A change reads what it needs at one etcd revision, applies the store's
// rules, and commits its writes in one etcd transaction on condition that
// nothing it read changed since (compare-and-swap on the keys' mod
// revisions), and runs again if something did. Every change of a
// server's tools, policies or entries rewrites its servers/ key, so that
// key guards all of the server's data: two replicas changing one server
// are serialised by etcd, never merged. A body too large for one
// transaction (etcd takes 128 operations and 1.5 MiB by default) is
// written as chunks first, then swapped in by the small transaction that
// commits; a chunk that no committed server key names is deleted by the
// server's next commit (see body.go).
//
// # Revision and changes
//
// Every change of the catalog (servers, tools, policies, entries,
// profiles, grants) also puts the revision key, whose value is the
// changes the transaction made: its mod revision is the store's revision,
// and a watch on it tells every replica of every change, in commit order,
// whichever replica made it. A write returns once its own change came
// back through the watch, so that a subscriber (and Revision) has seen it
// by then. Sessions and the audit do not move the revision, as the
// contract says. A watch that falls behind a compaction reads the
// revision afresh and tells subscribers every server may have changed.
package etcd

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/switchboard-dev/switchboard/store"
)

// Options configures a connection to the cluster.
type Options struct {
	// Endpoints are the cluster's client URLs (http://host:2379, or
	// https:// with TLS).
	Endpoints []string
	// TLS, if set, secures the connection (client certificates, the
	// cluster's CA).
	TLS *tls.Config
	// Username and Password authenticate to an etcd with auth enabled.
	Username, Password string
	// Prefix is where Switchboard's keys live ("/switchboard/" if empty):
	// several deployments may share a cluster under different prefixes.
	Prefix string
	// DialTimeout bounds connecting (5 s if zero).
	DialTimeout time.Duration
	// RequestTimeout bounds each read, and each run of a change (5 s if
	// zero): a replica cut off from etcd fails instead of waiting.
	RequestTimeout time.Duration
	// KeepAliveTime and KeepAliveTimeout are the gRPC keepalive of each
	// connection to a member (10 s and 2 s if zero; gRPC raises a time
	// below 10 s to 10 s, and etcd refuses pings more often than its
	// --grpc-keepalive-min-time, 5 s by default): a member that silently
	// stops answering (its bytes held, no reset) is left for another
	// within their sum. Until then each request on it fails at its
	// RequestTimeout, not later.
	KeepAliveTime, KeepAliveTimeout time.Duration
	// Logger is slog.Default() if nil.
	Logger *slog.Logger
}

// schemaVersion is the layout's version, kept under meta. Version 2
// keeps secrets sealed (store/sealed): an earlier release would take the
// sealed values for the secrets themselves, so it must refuse the layout.
const schemaVersion = 2

// maxContention bounds how long a change that keeps meeting others of the
// same records runs again before it gives up (errConflict).
const maxContention = 30 * time.Second

// ErrUnavailable wraps a failure to reach the cluster (it is a
// store.ErrUnavailable).
var ErrUnavailable = fmt.Errorf("%w: etcd cannot be reached", store.ErrUnavailable)

// DB is the store on etcd. It is safe for concurrent use.
type DB struct {
	cli     *clientv3.Client
	cfg     clientv3.Config // cli's, for a coordinator's client of its own
	prefix  string
	log     *slog.Logger
	timeout time.Duration // see Options.RequestTimeout
	// id tells this store's revisions from another's: the cluster's id
	// and the prefix.
	id string

	subs store.Subscribers

	mu sync.Mutex
	// rev is the newest catalog revision the watch delivered; notified
	// the newest whose subscribers have run, and delivered is closed (and
	// replaced) whenever that moves.
	rev, notified int64
	delivered     chan struct{}

	cache  chunkCache
	offers offerCache
	// locks serialise this replica's own changes of one record (a
	// server, the audit's sequence), by key: they would only meet in etcd
	// and run again. Replicas still meet there.
	locks sync.Map

	stop    context.CancelFunc
	stopped chan struct{}
	closed  sync.Once

	metrics storeMetrics
}

// Open connects to the cluster, checks (or writes) the layout's version,
// reads the revision and starts the watch that delivers changes.
func Open(ctx context.Context, opts Options) (*DB, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("store: no etcd endpoints")
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = "/switchboard/"
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	dial := opts.DialTimeout
	if dial <= 0 {
		dial = 5 * time.Second
	}
	cfg := clientv3.Config{Endpoints: opts.Endpoints, TLS: opts.TLS, Username: opts.Username, Password: opts.Password,
		DialTimeout: dial, Logger: zap.NewNop(),
		DialKeepAliveTime: cmp.Or(opts.KeepAliveTime, 10*time.Second), DialKeepAliveTimeout: cmp.Or(opts.KeepAliveTimeout, 2*time.Second),
		PermitWithoutStream: true}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	db := &DB{cli: cli, cfg: cfg, prefix: prefix, log: opts.Logger, timeout: cmp.Or(opts.RequestTimeout, 5*time.Second), delivered: make(chan struct{}), cache: newChunkCache(chunkCacheBytes),
		metrics: newStoreMetrics()}
	if db.log == nil {
		db.log = slog.Default()
	}
	if err := db.start(ctx, dial); err != nil {
		cli.Close()
		return nil, err
	}
	return db, nil
}

func (db *DB) start(ctx context.Context, dial time.Duration) error {
	octx, cancel := context.WithTimeout(ctx, dial)
	defer cancel()
	resp, err := db.cli.Get(octx, db.key("meta"))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	sum := sha256.Sum256([]byte(db.prefix))
	db.id = fmt.Sprintf("%x-%s", resp.Header.ClusterId, hex.EncodeToString(sum[:4]))
	var meta struct {
		Schema int `json:"schema"`
	}
	switch {
	case len(resp.Kvs) == 0:
		meta.Schema = schemaVersion
		b, _ := json.Marshal(meta)
		if _, err := db.cli.Txn(octx).If(clientv3.Compare(clientv3.CreateRevision(db.key("meta")), "=", 0)).
			Then(clientv3.OpPut(db.key("meta"), string(b))).Commit(); err != nil {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	default:
		if err := json.Unmarshal(resp.Kvs[0].Value, &meta); err != nil {
			return fmt.Errorf("%w: %s holds no Switchboard layout: %v", store.ErrDamaged, db.key("meta"), err)
		}
		if meta.Schema > schemaVersion {
			return fmt.Errorf("%w: the layout under %s is of version %d; this Switchboard knows %d: upgrade it", store.ErrDamaged, db.prefix, meta.Schema, schemaVersion)
		}
		if meta.Schema < schemaVersion {
			// 1 → 2 moves nothing: the secrets are sealed by the caller
			// (sealed.Store.Reseal); the version keeps earlier releases out.
			was := resp.Kvs[0].ModRevision
			meta.Schema = schemaVersion
			b, _ := json.Marshal(meta)
			if _, err := db.cli.Txn(octx).If(clientv3.Compare(clientv3.ModRevision(db.key("meta")), "=", was)).
				Then(clientv3.OpPut(db.key("meta"), string(b))).Commit(); err != nil {
				return fmt.Errorf("%w: %v", ErrUnavailable, err)
			}
		}
	}
	rev, err := db.cli.Get(octx, db.key("revision"))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if len(rev.Kvs) > 0 {
		db.rev = rev.Kvs[0].ModRevision
		db.notified = db.rev
	}
	wctx, stop := context.WithCancel(context.Background())
	db.stop, db.stopped = stop, make(chan struct{})
	go db.watch(wctx, rev.Header.Revision+1)
	return nil
}

// locked takes this replica's lock of a record's changes; the caller
// calls what it returns to release it.
func (db *DB) locked(name string) (unlock func()) {
	m, _ := db.locks.LoadOrStore(name, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// key is the full key of a name under the prefix.
func (db *DB) key(name string) string { return db.prefix + name }

// Close stops the watch and the client.
func (db *DB) Close() error {
	var err error
	db.closed.Do(func() {
		db.stop()
		<-db.stopped
		err = db.cli.Close()
	})
	return err
}

// Client is the etcd client, for the parts of Switchboard that
// coordinate replicas (elections, locks) on the same cluster.
func (db *DB) Client() *clientv3.Client { return db.cli }

// Prefix is where the store's keys are.
func (db *DB) Prefix() string { return db.prefix }

// Subscribe calls fn with every change of the catalog, whichever replica
// made it (see Changes).
func (db *DB) Subscribe(fn func(store.Change)) (cancel func()) { return db.subs.Subscribe(fn) }

// Revision is the catalog's newest revision this replica knows of.
func (db *DB) Revision() string {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.revisionString(db.rev)
}

func (db *DB) revisionString(rev int64) string { return fmt.Sprintf("%s-%d", db.id, rev) }

// watch delivers the changes of every catalog transaction, from the
// revision from on, until ctx ends.
func (db *DB) watch(ctx context.Context, from int64) {
	defer close(db.stopped)
	for ctx.Err() == nil {
		wch := db.cli.Watch(clientv3.WithRequireLeader(ctx), db.key("revision"), clientv3.WithRev(from))
		for resp := range wch {
			if resp.CompactRevision != 0 {
				// Fell behind a compaction: what happened in between
				// is gone. Read afresh and tell everyone all may have
				// changed.
				from = db.resync(ctx)
				break
			}
			if err := resp.Err(); err != nil {
				db.log.Warn("the store's etcd watch failed; watching again", "err", err)
				break
			}
			for _, ev := range resp.Events {
				var changes []store.Change
				if err := json.Unmarshal(ev.Kv.Value, &changes); err != nil {
					db.log.Error("undecodable change in the store's revision key", "revision", ev.Kv.ModRevision, "err", err)
				}
				db.deliver(ev.Kv.ModRevision, changes)
				from = ev.Kv.ModRevision + 1
			}
		}
		if ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// resync reads the revision after a compaction, delivers a change of
// every server and profile, and returns where to watch from.
func (db *DB) resync(ctx context.Context) int64 {
	for ctx.Err() == nil {
		resp, err := db.cli.Get(ctx, db.key("revision"))
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		var changes []store.Change
		servers, err := db.cli.Get(ctx, db.key("servers/"), clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithRev(resp.Header.Revision))
		if err == nil {
			for _, kv := range servers.Kvs {
				changes = append(changes, store.Change{ServerID: strings.TrimPrefix(string(kv.Key), db.key("servers/")), Tools: true, History: true})
			}
		}
		changes = append(changes, store.Change{Profile: "*"})
		rev := int64(0)
		if len(resp.Kvs) > 0 {
			rev = resp.Kvs[0].ModRevision
		}
		db.log.Warn("the store's etcd watch fell behind a compaction; read afresh", "revision", rev)
		db.deliver(rev, changes)
		return resp.Header.Revision + 1
	}
	return 0
}

// deliver records rev as the newest revision and tells subscribers of
// its changes, each with the revision.
func (db *DB) deliver(rev int64, changes []store.Change) {
	db.mu.Lock()
	if rev > db.rev {
		db.rev = rev
	}
	rs := db.revisionString(rev)
	db.mu.Unlock()
	for i := range changes {
		changes[i].Revision = rs
	}
	db.subs.Notify(changes)
	db.mu.Lock()
	db.notified = max(db.notified, rev)
	close(db.delivered)
	db.delivered = make(chan struct{})
	db.mu.Unlock()
}

// watchLag is how long a change committed to etcd may take to come back
// through this replica's watch before the watch counts as behind.
const watchLag = 2 * time.Second

// WatchCurrent reports whether this replica's watch of the catalog is
// current: the newest change committed to etcd (by any replica) has come
// back through it, or does within watchLag. A replica whose watch is
// stuck (a member that stopped sending, a stream the cluster no longer
// feeds) would serve tabs and agents a catalog that no longer is, so it
// is not ready.
func (db *DB) WatchCurrent(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, db.timeout)
	defer cancel()
	resp, err := db.cli.Get(ctx, db.key("revision"))
	if err != nil {
		return unavailable(err)
	}
	if len(resp.Kvs) == 0 {
		return nil // nothing changed yet
	}
	want := resp.Kvs[0].ModRevision
	deadline := time.NewTimer(watchLag)
	defer deadline.Stop()
	for {
		db.mu.Lock()
		got, ch := db.notified, db.delivered
		db.mu.Unlock()
		if got >= want {
			return nil
		}
		select {
		case <-ch:
		case <-deadline.C:
			return fmt.Errorf("%w: this replica's watch of the store is behind (it delivered revision %d; etcd is at %d)", ErrUnavailable, got, want)
		case <-ctx.Done():
			return unavailable(ctx.Err())
		}
	}
}

// waitDelivered waits until the watch delivered rev (or later), at most
// a few seconds: a write returns once its change is known here.
func (db *DB) waitDelivered(rev int64) {
	deadline := time.After(5 * time.Second)
	for {
		db.mu.Lock()
		done, ch := db.notified >= rev, db.delivered
		db.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			db.log.Warn("a change committed to etcd did not come back through the watch within 5 s", "revision", rev)
			return
		case <-db.stopped:
			return
		}
	}
}

// CompactHistory compacts the cluster's history up to now: etcd keeps
// every earlier value of a key (a secret kept in clear by an earlier
// release, then sealed; one sealed under a key since rotated away) until
// its history is compacted. Watches of this store resync after it (see
// the watch's compaction handling). It compacts the whole cluster's
// history, not only this store's keys; the space is reclaimed by etcd's
// own defragmentation.
func (db *DB) CompactHistory(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, db.timeout)
	defer cancel()
	resp, err := db.cli.Get(ctx, db.key("mcp_token"))
	if err != nil {
		return unavailable(err)
	}
	_, err = db.cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical())
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil // compacted up to here already: nothing older is kept
	}
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// Flag reports whether the key name (under no prefix: the caller's) is
// set; PutFlag sets it and DeleteFlag clears it. For notes a replica
// keeps across starts, such as a compaction still to do.
func (db *DB) Flag(ctx context.Context, name string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, db.timeout)
	defer cancel()
	resp, err := db.cli.Get(ctx, name, clientv3.WithCountOnly())
	if err != nil {
		return false, unavailable(err)
	}
	return resp.Count > 0, nil
}

// PutFlag sets the key name (see Flag).
func (db *DB) PutFlag(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, db.timeout)
	defer cancel()
	if _, err := db.cli.Put(ctx, name, "1"); err != nil {
		return unavailable(err)
	}
	return nil
}

// DeleteFlag clears the key name (see Flag).
func (db *DB) DeleteFlag(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, db.timeout)
	defer cancel()
	if _, err := db.cli.Delete(ctx, name); err != nil {
		return unavailable(err)
	}
	return nil
}
