package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-dev/switchboard/cluster"
	"github.com/switchboard-dev/switchboard/store"
)

// txn is one run of a change (or a read): every read is at one etcd
// revision, the keys read are remembered with their mod revisions (0 for
// a key that was not there), and the writes wait for the commit.
type txn struct {
	db  *DB
	ctx context.Context
	rev int64 // the revision every read is at; 0 until the first
	// guards are the keys whose mod revision the commit compares;
	// prefixes, the ranges in which no key may have changed since rev.
	guards   map[string]int64
	prefixes []string
	ops      []clientv3.Op
	// early are the chunk puts too large for the commit, written before
	// it (see body.go).
	early   []clientv3.Op
	changes []store.Change
}

// get reads one key and guards it.
func (t *txn) get(key string) (*mvccpb.KeyValue, error) {
	opts := []clientv3.OpOption{}
	if t.rev != 0 {
		opts = append(opts, clientv3.WithRev(t.rev))
	}
	resp, err := t.db.cli.Get(t.ctx, key, opts...)
	if err != nil {
		return nil, unavailable(err)
	}
	if t.rev == 0 {
		t.rev = resp.Header.Revision
	}
	var kv *mvccpb.KeyValue
	if len(resp.Kvs) > 0 {
		kv = resp.Kvs[0]
	}
	if t.guards != nil {
		t.guards[key] = 0
		if kv != nil {
			t.guards[key] = kv.ModRevision
		}
	}
	return kv, nil
}

// getJSON reads one key into v and guards it; ok is false if the key is
// not there.
func (t *txn) getJSON(key string, v any) (ok bool, err error) {
	kv, err := t.get(key)
	if err != nil || kv == nil {
		return false, err
	}
	if err := json.Unmarshal(kv.Value, v); err != nil {
		return false, fmt.Errorf("%w: decode %s: %v", store.ErrDamaged, key, err)
	}
	return true, nil
}

// list reads every key under prefix (ordered by key), unguarded: the
// caller guards what the range depends on (a server's key). keysOnly
// leaves the values out.
func (t *txn) list(prefix string, keysOnly bool, extra ...clientv3.OpOption) ([]*mvccpb.KeyValue, error) {
	opts := append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}, extra...)
	if keysOnly {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	if t.rev != 0 {
		opts = append(opts, clientv3.WithRev(t.rev))
	}
	resp, err := t.db.cli.Get(t.ctx, prefix, opts...)
	if err != nil {
		return nil, unavailable(err)
	}
	if t.rev == 0 {
		t.rev = resp.Header.Revision
	}
	return resp.Kvs, nil
}

// guardPrefix makes the commit run again if any key under prefix was
// put since the reads' revision: a list that decides what is written
// (one email per person) is then as of the commit. (A key deleted
// meanwhile is not seen: nothing decided here depends on one.)
func (t *txn) guardPrefix(prefix string) { t.prefixes = append(t.prefixes, prefix) }

// put writes v as JSON under key at the commit.
func (t *txn) put(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	t.ops = append(t.ops, clientv3.OpPut(key, string(b)))
	return nil
}

// del deletes a key at the commit; delPrefix every key under a prefix.
func (t *txn) del(key string) { t.ops = append(t.ops, clientv3.OpDelete(key)) }
func (t *txn) delPrefix(prefix string) {
	t.ops = append(t.ops, clientv3.OpDelete(prefix, clientv3.WithPrefix()))
}

// changed records a change of the catalog: the commit moves the revision
// and tells every replica.
func (t *txn) changed(c store.Change) { t.changes = append(t.changes, c) }

// errConflict is a commit that found a key it read changed since.
var errConflict = errors.New("store: too many concurrent changes of the same records; try again")

// view runs fn over one consistent read.
func (db *DB) view(ctx context.Context, fn func(t *txn) error) (err error) {
	start := time.Now()
	defer func() { db.metrics.observe("read", start, err) }()
	ctx, cancel := context.WithTimeout(ctx, db.timeout)
	defer cancel()
	return fn(&txn{db: db, ctx: ctx})
}

// update runs fn, then commits its writes if none of the keys it read
// changed meanwhile; else runs it again (for at most maxContention). A
// change of the catalog returns once the watch delivered it.
func (db *DB) update(ctx context.Context, fn func(t *txn) error) (err error) {
	start := time.Now()
	defer func() { db.metrics.observe("write", start, err) }()
	for attempt := 0; ; attempt++ {
		committed, err := db.run(ctx, fn)
		if err != nil || committed {
			return err
		}
		if time.Since(start) > maxContention {
			return errConflict
		}
		// Let the others finish: a random wait, longer as the meetings
		// go on (up to 50 ms), so that writers of one server spread out.
		wait := time.Duration(rand.Int64N(int64(min(time.Millisecond<<min(attempt, 6), 50*time.Millisecond)) + 1))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// run is one run of a change, bounded by the request timeout: committed
// is false when a key it read changed before its commit.
func (db *DB) run(ctx context.Context, fn func(t *txn) error) (committed bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, db.timeout)
	defer cancel()
	t := &txn{db: db, ctx: ctx, guards: map[string]int64{}}
	if err := fn(t); err != nil {
		return false, err
	}
	if len(t.ops) == 0 && len(t.changes) == 0 {
		return true, nil // nothing to write
	}
	for _, op := range t.early {
		if _, err := db.cli.Do(ctx, op); err != nil {
			return false, unavailable(err)
		}
	}
	cmps := make([]clientv3.Cmp, 0, len(t.guards)+len(t.prefixes))
	for k, rev := range t.guards {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", rev))
	}
	for _, p := range t.prefixes {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(p), "<", t.rev+1).WithPrefix())
	}
	ops := t.ops
	if len(t.changes) > 0 {
		b, err := json.Marshal(t.changes)
		if err != nil {
			return false, err
		}
		ops = append(ops, clientv3.OpPut(db.key("revision"), string(b)))
	}
	rev, committed, err := db.commit(ctx, cmps, ops)
	if err != nil || !committed {
		db.dropEarly(t)
		return false, err
	}
	if len(t.changes) > 0 {
		db.waitDelivered(rev)
	}
	return true, nil
}

// commit writes ops if the cmps hold; under a claim's fence (see
// cluster.WithFence) only if the claim is still this replica's, else
// store.ErrFenced. committed is false when a cmp did not hold; rev is
// the store's revision after the commit.
func (db *DB) commit(ctx context.Context, cmps []clientv3.Cmp, ops []clientv3.Op) (rev int64, committed bool, err error) {
	f, fenced := cluster.FenceOf(ctx).(fence)
	if !fenced {
		resp, err := db.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return 0, false, commitFailed(err)
		}
		return resp.Header.Revision, resp.Succeeded, nil
	}
	// The fence is the outer condition, so that its failure is told
	// apart from a conflict of the inner one.
	resp, err := db.cli.Txn(ctx).If(f.cmp()).Then(clientv3.OpTxn(cmps, ops, nil)).Commit()
	if err != nil {
		return 0, false, commitFailed(err)
	}
	if !resp.Succeeded {
		db.log.Warn("a write under a claim this replica no longer holds was refused", "claim", f.claim)
		return 0, false, store.ErrFenced
	}
	return resp.Header.Revision, resp.Responses[0].GetResponseTxn().Succeeded, nil
}

// dropEarly deletes the chunks written for a commit that did not happen:
// no committed server names them (their names are new).
func (db *DB) dropEarly(t *txn) {
	for _, op := range t.early {
		if _, err := db.cli.Delete(context.WithoutCancel(t.ctx), string(op.KeyBytes())); err != nil {
			db.log.Warn("delete a chunk of a change that did not commit (the server's next change does)", "key", string(op.KeyBytes()), "err", err)
		}
	}
}

// unavailable wraps an error of the cluster.
// commitFailed is the error of a commit etcd did not confirm: its outcome
// is unknown if the request may have reached etcd (it ran out of time on
// the way, or waiting for the answer), else nothing was changed.
func commitFailed(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
		return fmt.Errorf("%w: %w (%v)", ErrUnavailable, store.ErrOutcomeUnknown, err)
	}
	return unavailable(err)
}

func unavailable(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}
