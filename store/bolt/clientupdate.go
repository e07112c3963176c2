package bolt

import (
	"context"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// UpdateClientToken changes a connected client's token by fn (see
// store.Store).
func (db *DB) UpdateClientToken(ctx context.Context, id string, fn func(*store.ClientToken) error) (store.ClientToken, error) {
	var ct store.ClientToken
	err := db.write(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketClients)
		var v []byte
		if b != nil {
			v = b.Get([]byte(id))
		}
		if v == nil {
			return store.ErrNotFound
		}
		var was store.ClientToken
		if err := json.Unmarshal(v, &was); err != nil {
			return fmt.Errorf("decode client token %q: %w", id, err)
		}
		ct = was
		ct.Allowed = append([]store.ClientAllowance(nil), was.Allowed...)
		if err := fn(&ct); err != nil {
			return err
		}
		ct.KeepIdentity(was)
		return putJSON(b, []byte(id), ct)
	})
	return ct, err
}
