package bolt

import (
	"context"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// bucketProfiles holds the profiles by id (the default one is built in,
// never stored).
var bucketProfiles = []byte("profiles")

// Profile is the profile with the id.
func (db *DB) Profile(ctx context.Context, id string) (store.Profile, error) {
	if id == store.DefaultProfile {
		return store.Default(), nil
	}
	var p store.Profile
	err := db.view(func(tx *bbolt.Tx) error { return getProfile(tx, id, &p) })
	return p, err
}

// Profiles is every profile, the default first.
func (db *DB) Profiles(ctx context.Context) ([]store.Profile, error) {
	out := []store.Profile{store.Default()}
	err := db.view(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketProfiles).ForEach(func(k, v []byte) error {
			var p store.Profile
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("store: decode profile %q: %w", k, err)
			}
			out = append(out, p)
			return nil
		})
	})
	return out, err
}

// CreateProfile stores a new profile.
func (db *DB) CreateProfile(ctx context.Context, p store.Profile) error {
	if p.ID == store.DefaultProfile {
		return store.ErrProfileBuiltIn
	}
	p.CreatedAt = p.CreatedAt.UTC()
	p.UpdatedAt = p.CreatedAt
	return db.update(ctx, store.Change{Profile: p.ID}, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketProfiles)
		if b.Get([]byte(p.ID)) != nil {
			return store.ErrProfileExists
		}
		return putJSON(b, []byte(p.ID), p)
	})
}

// UpdateProfile replaces a profile, keeping its creation time.
func (db *DB) UpdateProfile(ctx context.Context, p store.Profile) error {
	if p.ID == store.DefaultProfile {
		return store.ErrProfileBuiltIn
	}
	p.UpdatedAt = p.UpdatedAt.UTC()
	return db.update(ctx, store.Change{Profile: p.ID}, func(tx *bbolt.Tx) error {
		var old store.Profile
		if err := getProfile(tx, p.ID, &old); err != nil {
			return err
		}
		p.CreatedAt = old.CreatedAt
		return putJSON(tx.Bucket(bucketProfiles), []byte(p.ID), p)
	})
}

// DeleteProfile removes a profile no client token belongs to.
func (db *DB) DeleteProfile(ctx context.Context, id string) error {
	if id == store.DefaultProfile {
		return store.ErrProfileBuiltIn
	}
	return db.update(ctx, store.Change{Profile: id}, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketProfiles)
		if b.Get([]byte(id)) == nil {
			return store.ErrProfileNotFound
		}
		if clients := tx.Bucket(bucketClients); clients != nil {
			err := clients.ForEach(func(k, v []byte) error {
				var ct store.ClientToken
				if json.Unmarshal(v, &ct) == nil && ct.Profile == id {
					return store.ErrProfileInUse
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return b.Delete([]byte(id))
	})
}

func getProfile(tx *bbolt.Tx, id string, p *store.Profile) error {
	v := tx.Bucket(bucketProfiles).Get([]byte(id))
	if v == nil {
		return store.ErrProfileNotFound
	}
	if err := json.Unmarshal(v, p); err != nil {
		return fmt.Errorf("store: decode profile %q: %w", id, err)
	}
	return nil
}
