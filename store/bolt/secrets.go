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
