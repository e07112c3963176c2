package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchboard-dev/switchboard/store"
)

// registryKey is the prefix of a registry's copy: its entries under
// entries/<name@version>, its last pull under pull.
func (db *DB) registryKey(registry string) string {
	return db.key("registries/" + store.RegistryKey(registry) + "/")
}

// PutRegistryEntries keeps entries in the registry's copy, in
// transactions of at most loadOps keys (a copy is a cache: a pull cut
// short is finished by the next), then records the pull.
func (db *DB) PutRegistryEntries(ctx context.Context, registry string, entries []store.RegistryEntry, pull store.RegistryPull) error {
	prefix := db.registryKey(registry)
	b := &batch{}
	for _, e := range entries {
		b.put(prefix+"entries/"+store.RegistryEntryKey(e.Name, e.Version), e)
	}
	// A deadline for each transaction's worth: a copy of thousands of
	// entries takes tens of them.
	ctx, cancel := context.WithTimeout(ctx, db.timeout*time.Duration(1+len(b.ops)/loadOps))
	defer cancel()
	if err := db.write(ctx, b); err != nil {
		return err
	}
	resp, err := db.cli.Get(ctx, prefix+"entries/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return unavailable(err)
	}
	pull.Entries = int(resp.Count)
	data, err := json.Marshal(pull)
	if err != nil {
		return err
	}
	if _, err := db.cli.Put(ctx, prefix+"pull", string(data)); err != nil {
		return unavailable(err)
	}
	return nil
}

// RegistryCopy reads a registry's whole copy and its last pull, at one
// revision.
func (db *DB) RegistryCopy(ctx context.Context, registry string) ([]store.RegistryEntry, store.RegistryPull, error) {
	var out []store.RegistryEntry
	var pull store.RegistryPull
	prefix := db.registryKey(registry)
	err := db.view(ctx, func(t *txn) error {
		kvs, err := t.list(prefix, false)
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			key := string(kv.Key)
			if key == prefix+"pull" {
				if err := json.Unmarshal(kv.Value, &pull); err != nil {
					return fmt.Errorf("%w: decode %s: %v", store.ErrDamaged, key, err)
				}
				continue
			}
			if !strings.HasPrefix(key, prefix+"entries/") {
				continue
			}
			var e store.RegistryEntry
			if err := json.Unmarshal(kv.Value, &e); err != nil {
				return fmt.Errorf("%w: decode %s: %v", store.ErrDamaged, key, err)
			}
			out = append(out, e)
		}
		return nil
	})
	return out, pull, err
}
