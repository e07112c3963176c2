package bolt

import (
	"context"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// Grants is every grant of the server, by issuer; ErrNotFound if there
// is no such server.
func (db *DB) Grants(ctx context.Context, id string) ([]store.Grant, error) {
	out := []store.Grant{}
	err := db.view(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketServers).Get([]byte(id)) == nil {
			return store.ErrNotFound
		}
		b := tx.Bucket(bucketGrants).Bucket([]byte(id))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			var g store.Grant
			if err := getJSON(b, k, &g); err != nil {
				return err
			}
			out = append(out, g)
			return nil
		})
	})
	return out, err
}

// SwapMCPToken sets the MCP token to v if it is old ("" if none was
// made), and returns the token kept afterwards (see store/sealed, which
// makes the token sealed so that it is never written in clear).
func (db *DB) SwapMCPToken(ctx context.Context, old, v string) (string, error) {
	var kept string
	// A read first: a swap that changes nothing (a look, see
	// store/sealed) writes nothing.
	if err := db.view(func(tx *bbolt.Tx) error { kept = string(tx.Bucket(bucketMeta).Get(keyMCPToken)); return nil }); err != nil || kept != old {
		return kept, err
	}
	err := db.write(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		kept = string(meta.Get(keyMCPToken))
		if kept != old {
			return nil
		}
		kept = v
		return meta.Put(keyMCPToken, []byte(v))
	})
	return kept, err
}

// RewriteServer lets fn change the server with the id in one
// transaction, as kept (its secrets sealed): a change saved only if fn
// says it changed something, with its times and hashes as they were (see
// sealed.Store.Reseal, which must not undo a change made meanwhile).
func (db *DB) RewriteServer(ctx context.Context, id string, fn func(*store.Server) (bool, error)) error {
	return db.update(ctx, store.Change{ServerID: id}, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketServers)
		var s store.Server
		if err := getJSON(b, []byte(id), &s); err != nil {
			return err
		}
		changed, err := fn(&s)
		if err != nil || !changed {
			return err
		}
		return putJSON(b, []byte(id), s)
	})
}

// RewriteGrants is RewriteServer for each of the server's grants.
func (db *DB) RewriteGrants(ctx context.Context, id string, fn func(*store.Grant) (bool, error)) error {
	return db.update(ctx, store.Change{ServerID: id}, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketGrants).Bucket([]byte(id))
		if b == nil {
			return nil
		}
		var keys [][]byte
		if err := b.ForEach(func(k, _ []byte) error { keys = append(keys, append([]byte(nil), k...)); return nil }); err != nil {
			return err
		}
		for _, k := range keys {
			var g store.Grant
			if err := getJSON(b, k, &g); err != nil {
				return err
			}
			changed, err := fn(&g)
			if err != nil {
				return err
			}
			if changed {
				if err := putJSON(b, k, g); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
