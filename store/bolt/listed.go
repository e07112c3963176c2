package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// bucketListed holds, per server, its resources, resource templates and
// prompts with their policies, keyed by store.ListedKey, as JSON
// store.ListedEntry values.
var bucketListed = []byte("listed")

// readListed reads everything kept about a server's listed entries, by
// key.
func readListed(tx *bbolt.Tx, id string) (map[string]store.ListedEntry, error) {
	out := map[string]store.ListedEntry{}
	err := eachListed(tx, []byte(id), func(e store.ListedEntry) error {
		out[store.ListedKey(e.Kind, e.Key)] = e
		return nil
	})
	return out, err
}

// writeListed merges v's listed entries into those kept of server s (see
// store.MergeListed) and writes them. It returns how many are changed
// (awaiting review).
func writeListed(tx *bbolt.Tx, s store.Server, v store.Verification) (changed int, err error) {
	known, err := readListed(tx, s.ID)
	if err != nil {
		return 0, err
	}
	merged := store.MergeListed(s, known, v.Listed, v.Unlisted, v.FinishedAt)
	if len(merged) == 0 {
		return 0, nil
	}
	b, err := tx.Bucket(bucketListed).CreateBucketIfNotExists([]byte(s.ID))
	if err != nil {
		return 0, err
	}
	for _, e := range merged {
		if e.State == store.ToolChanged {
			changed++
		}
		if err := putJSON(b, []byte(store.ListedKey(e.Kind, e.Key)), e); err != nil {
			return 0, err
		}
	}
	return changed, nil
}

// Listed returns the server's listed entries by kind then key.
func (db *DB) Listed(ctx context.Context, id string) ([]store.ListedEntry, error) {
	out := []store.ListedEntry{}
	err := db.view(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketServers).Get([]byte(id)) == nil {
			return store.ErrNotFound
		}
		return eachListed(tx, []byte(id), func(e store.ListedEntry) error {
			out = append(out, e)
			return nil
		})
	})
	return out, err
}

// ListedCatalog calls fn with every server's listed entries, each with
// its server and discovery record, in one read transaction, and returns
// the revision they were read at (see Catalog).
func (db *DB) ListedCatalog(ctx context.Context, fn func(*store.Summary, store.ListedEntry) error) (string, error) {
	var rev string
	err := db.view(func(tx *bbolt.Tx) error {
		defer releaseScanned(db.bolt, tx)
		rev = db.revisionString(readRevision(tx))
		return tx.Bucket(bucketListed).ForEachBucket(func(k []byte) error {
			if tx.Bucket(bucketServers).Get(k) == nil {
				return nil // a server deleted since (its entries go with it)
			}
			sum, err := readSummary(tx, k)
			if err != nil {
				return err
			}
			db.unsaved.overlay(&sum)
			return eachListed(tx, k, func(e store.ListedEntry) error { return fn(&sum, e) })
		})
	})
	return rev, err
}

// eachListed decodes one server's listed entries, by kind then key, one
// at a time.
func eachListed(tx *bbolt.Tx, id []byte, fn func(store.ListedEntry) error) error {
	b := tx.Bucket(bucketListed).Bucket(id)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error { // keys sort by kind, then key
		var e store.ListedEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("decode listed %q: %w", k, err)
		}
		e.Effective = store.EffectivePolicy(store.Tool{State: e.State}, e.Policy)
		return fn(e)
	})
}

// SetListedPolicy records a person's policy for one listed entry.
func (db *DB) SetListedPolicy(ctx context.Context, ref store.ListedRef, p store.Policy, by string) (store.ListedEntry, error) {
	return db.changeListed(ctx, ref, func(e store.ListedEntry, now time.Time) (store.ListedEntry, error) {
		return store.ApplyListedPolicy(e, p, by, now), nil
	})
}

// ApproveListed approves the current definition of a changed entry.
func (db *DB) ApproveListed(ctx context.Context, ref store.ListedRef, pin, by string) (store.ListedEntry, error) {
	return db.changeListed(ctx, ref, func(e store.ListedEntry, now time.Time) (store.ListedEntry, error) {
		return store.ApproveListedEntry(e, pin, by, now)
	})
}

// changeListed rewrites one listed entry as fn decides, and the count of
// the server's changes awaiting review, in one transaction.
func (db *DB) changeListed(ctx context.Context, ref store.ListedRef, fn func(store.ListedEntry, time.Time) (store.ListedEntry, error)) (store.ListedEntry, error) {
	var out store.ListedEntry
	err := db.update(ctx, store.Change{ServerID: ref.ServerID, Tools: true}, func(tx *bbolt.Tx) error {
		now := time.Now()
		var err error
		out, err = rewriteListed(tx, ref, func(e store.ListedEntry) (store.ListedEntry, error) { return fn(e, now) })
		if err != nil {
			return err
		}
		return recountChanged(tx, ref.ServerID)
	})
	return out, err
}

// rewriteListed reads one listed entry, lets fn change it and writes it
// back; it returns the entry as written, ErrNotFound for no such server
// or ErrToolNotFound for no such entry, or fn's error.
func rewriteListed(tx *bbolt.Tx, ref store.ListedRef, fn func(store.ListedEntry) (store.ListedEntry, error)) (store.ListedEntry, error) {
	if tx.Bucket(bucketServers).Get([]byte(ref.ServerID)) == nil {
		return store.ListedEntry{}, store.ErrNotFound
	}
	b := tx.Bucket(bucketListed).Bucket([]byte(ref.ServerID))
	if b == nil {
		return store.ListedEntry{}, fmt.Errorf("%w: %s %q", store.ErrToolNotFound, ref.Kind, ref.Key)
	}
	key := []byte(store.ListedKey(ref.Kind, ref.Key))
	var e store.ListedEntry
	if err := getJSON(b, key, &e); err != nil {
		return e, fmt.Errorf("%w: %s %q", store.ErrToolNotFound, ref.Kind, ref.Key)
	}
	e.Effective = store.EffectivePolicy(store.Tool{State: e.State}, e.Policy)
	e, err := fn(e)
	if err != nil {
		return e, err
	}
	return e, putJSON(b, key, e)
}
