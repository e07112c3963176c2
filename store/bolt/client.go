package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// bucketClients holds the connected clients' tokens (hashes) by id.
var bucketClients = []byte("clients")

// AddClientToken keeps a connected client's token.
func (db *DB) AddClientToken(ctx context.Context, ct store.ClientToken) error {
	return db.write(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketClients)
		if err != nil {
			return err
		}
		if b.Get([]byte(ct.ID)) != nil {
			return fmt.Errorf("a client token with id %q exists", ct.ID)
		}
		if ct.Profile != "" && ct.Profile != store.DefaultProfile && tx.Bucket(bucketProfiles).Get([]byte(ct.Profile)) == nil {
			return store.ErrProfileNotFound
		}
		return putJSON(b, []byte(ct.ID), ct)
	})
}

// ClientTokens is the connected clients' tokens, oldest first.
func (db *DB) ClientTokens(ctx context.Context) ([]store.ClientToken, error) {
	out := []store.ClientToken{}
	err := db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketClients)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var ct store.ClientToken
			if err := json.Unmarshal(v, &ct); err != nil {
				return fmt.Errorf("decode client token %q: %w", k, err)
			}
			out = append(out, ct)
			return nil
		})
	})
	slices.SortStableFunc(out, func(a, b store.ClientToken) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, err
}

// RevokeClientToken forgets a connected client's token.
func (db *DB) RevokeClientToken(ctx context.Context, id string) error {
	return db.write(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketClients)
		if b == nil || b.Get([]byte(id)) == nil {
			return store.ErrNotFound
		}
		return b.Delete([]byte(id))
	})
}
