package bolt

import (
	"context"
	"encoding/json"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// bucketRegistries holds a bucket per registry's copy (see
// store.RegistryCopies), under store.RegistryKey: its entries under
// store.RegistryEntryKey, and its last pull under pullKey.
var bucketRegistries = []byte("registries")

// pullKey is where a copy's last pull is: no entry key (a registry
// server's name) starts with a NUL.
var pullKey = []byte("\x00pull")

// PutRegistryEntries keeps entries in the registry's copy and records
// the pull.
func (db *DB) PutRegistryEntries(ctx context.Context, registry string, entries []store.RegistryEntry, pull store.RegistryPull) error {
	return db.write(func(tx *bbolt.Tx) error {
		all, err := tx.CreateBucketIfNotExists(bucketRegistries)
		if err != nil {
			return err
		}
		b, err := all.CreateBucketIfNotExists([]byte(store.RegistryKey(registry)))
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := putJSON(b, []byte(store.RegistryEntryKey(e.Name, e.Version)), e); err != nil {
				return err
			}
		}
		pull.Entries = 0
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if string(k) != string(pullKey) {
				pull.Entries++
			}
		}
		return putJSON(b, pullKey, pull)
	})
}

// RegistryCopy reads a registry's whole copy and its last pull.
func (db *DB) RegistryCopy(ctx context.Context, registry string) ([]store.RegistryEntry, store.RegistryPull, error) {
	var out []store.RegistryEntry
	var pull store.RegistryPull
	err := db.view(func(tx *bbolt.Tx) error {
		all := tx.Bucket(bucketRegistries)
		if all == nil {
			return nil
		}
		b := all.Bucket([]byte(store.RegistryKey(registry)))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if string(k) == string(pullKey) {
				return json.Unmarshal(v, &pull)
			}
			var e store.RegistryEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("%w: decode the registry copy's %q: %v", store.ErrDamaged, k, err)
			}
			out = append(out, e)
			return nil
		})
	})
	return out, pull, err
}
