package bolt

import (
	"context"
	"errors"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// SaveGrant keeps g for the server, under its issuer: a sign-in at
// another authorization server (the server moved to one) does not
// overwrite what the first issued, and is never mixed with it. It
// returns ErrNotFound if there is no such server.
func (db *DB) SaveGrant(ctx context.Context, id string, g store.Grant) error {
	return db.update(ctx, store.Change{ServerID: id}, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketServers).Get([]byte(id)) == nil {
			return store.ErrNotFound
		}
		b, err := tx.Bucket(bucketGrants).CreateBucketIfNotExists([]byte(id))
		if err != nil {
			return err
		}
		return putJSON(b, []byte(g.Issuer), g)
	})
}

// Grant returns the server's grant from issuer; ok is false if there is
// none.
func (db *DB) Grant(ctx context.Context, id, issuer string) (g store.Grant, ok bool, err error) {
	err = db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketGrants).Bucket([]byte(id))
		if b == nil {
			return nil
		}
		err := getJSON(b, []byte(issuer), &g)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		ok = err == nil
		return err
	})
	return g, ok, err
}

// LatestGrant returns the grant the server was last signed in to (or
// refreshed) with; ok is false if there is none.
func (db *DB) LatestGrant(ctx context.Context, id string) (g store.Grant, ok bool, err error) {
	err = db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketGrants).Bucket([]byte(id))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			var each store.Grant
			if err := getJSON(b, k, &each); err != nil {
				return err
			}
			if !ok || each.SavedAt.After(g.SavedAt) {
				g, ok = each, true
			}
			return nil
		})
	})
	return g, ok, err
}

// DeleteGrants forgets every grant of the server (a sign-out). Deleting
// the server deletes them too. It returns ErrNotFound if there is no
// such server.
func (db *DB) DeleteGrants(ctx context.Context, id string) error {
	return db.update(ctx, store.Change{ServerID: id}, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketServers).Get([]byte(id)) == nil {
			return store.ErrNotFound
		}
		return deleteServerBucket(tx, bucketGrants, []byte(id))
	})
}
