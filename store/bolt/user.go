package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// bucketUsers holds a team's people by id (see store.User).
var bucketUsers = []byte("users")

// CreateUser keeps a new person.
func (db *DB) CreateUser(ctx context.Context, u store.User) error { return db.createUser(u, false) }

// CreateFirstUser keeps u if there is nobody yet.
func (db *DB) CreateFirstUser(ctx context.Context, u store.User) error { return db.createUser(u, true) }

func (db *DB) createUser(u store.User, first bool) error {
	return db.write(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketUsers)
		if err != nil {
			return err
		}
		if b.Get([]byte(u.ID)) != nil {
			return store.ErrUserExists
		}
		if first {
			if k, _ := b.Cursor().First(); k != nil {
				return store.ErrNotFirst
			}
		}
		taken := false
		err = b.ForEach(func(_, v []byte) error {
			var o store.User
			if err := json.Unmarshal(v, &o); err != nil {
				return fmt.Errorf("decode person: %w", err)
			}
			taken = taken || o.Email == u.Email
			return nil
		})
		if err != nil {
			return err
		}
		if taken {
			return store.ErrUserExists
		}
		return putJSON(b, []byte(u.ID), u)
	})
}

// Users lists the people, oldest first.
func (db *DB) Users(ctx context.Context) ([]store.User, error) {
	out := []store.User{}
	err := db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketUsers)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var u store.User
			if err := json.Unmarshal(v, &u); err != nil {
				return fmt.Errorf("decode person %q: %w", k, err)
			}
			out = append(out, u)
			return nil
		})
	})
	slices.SortStableFunc(out, func(a, b store.User) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, err
}

// UpdateUser changes a person by fn.
func (db *DB) UpdateUser(ctx context.Context, id string, fn func(*store.User) error) (store.User, error) {
	var u store.User
	err := db.write(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketUsers)
		var v []byte
		if b != nil {
			v = b.Get([]byte(id))
		}
		if v == nil {
			return store.ErrNotFound
		}
		var was store.User
		if err := json.Unmarshal(v, &was); err != nil {
			return fmt.Errorf("decode person %q: %w", id, err)
		}
		u = was
		if err := fn(&u); err != nil {
			return err
		}
		u.ID, u.Email, u.CreatedAt = was.ID, was.Email, was.CreatedAt
		return putJSON(b, []byte(id), u)
	})
	return u, err
}

// DeleteUser forgets a person.
func (db *DB) DeleteUser(ctx context.Context, id string) error {
	return db.write(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketUsers)
		if b == nil || b.Get([]byte(id)) == nil {
			return store.ErrNotFound
		}
		return b.Delete([]byte(id))
	})
}
