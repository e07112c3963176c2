package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/switchboard-dev/switchboard/store"
)

// userKey is where the person of id is.
func (db *DB) userKey(id string) string { return db.key("users/" + id) }

// CreateUser keeps a new person; the email is checked in the same
// transaction, which every person's key guards (a person added
// meanwhile, on any replica, makes it run again), so two replicas cannot
// add one email twice.
func (db *DB) CreateUser(ctx context.Context, u store.User) error {
	return db.createUser(ctx, u, false)
}

// CreateFirstUser keeps u if there is nobody yet, in one transaction
// (see CreateUser).
func (db *DB) CreateFirstUser(ctx context.Context, u store.User) error {
	return db.createUser(ctx, u, true)
}

func (db *DB) createUser(ctx context.Context, u store.User, first bool) error {
	return db.update(ctx, func(t *txn) error {
		users, err := t.users()
		if err != nil {
			return err
		}
		t.guardPrefix(db.key("users/"))
		switch {
		case slices.ContainsFunc(users, func(o store.User) bool { return o.ID == u.ID || o.Email == u.Email }):
			return store.ErrUserExists
		case first && len(users) > 0:
			return store.ErrNotFirst
		}
		return t.put(db.userKey(u.ID), u)
	})
}

func (t *txn) users() ([]store.User, error) {
	out := []store.User{}
	kvs, err := t.list(t.db.key("users/"), false)
	if err != nil {
		return nil, err
	}
	for _, kv := range kvs {
		var u store.User
		if err := json.Unmarshal(kv.Value, &u); err != nil {
			return nil, fmt.Errorf("%w: decode %s: %v", store.ErrDamaged, kv.Key, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// Users lists the people, oldest first.
func (db *DB) Users(ctx context.Context) ([]store.User, error) {
	var out []store.User
	err := db.view(ctx, func(t *txn) error {
		var err error
		out, err = t.users()
		return err
	})
	slices.SortStableFunc(out, func(a, b store.User) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, err
}

// UpdateUser changes a person by fn; a commit that loses a race runs fn
// again on what won.
func (db *DB) UpdateUser(ctx context.Context, id string, fn func(*store.User) error) (store.User, error) {
	var u store.User
	err := db.update(ctx, func(t *txn) error {
		var was store.User
		ok, err := t.getJSON(db.userKey(id), &was)
		switch {
		case err != nil:
			return err
		case !ok:
			return store.ErrNotFound
		}
		u = was
		if err := fn(&u); err != nil {
			return err
		}
		u.ID, u.Email, u.CreatedAt = was.ID, was.Email, was.CreatedAt
		return t.put(db.userKey(id), u)
	})
	return u, err
}

// DeleteUser forgets a person.
func (db *DB) DeleteUser(ctx context.Context, id string) error {
	return db.update(ctx, func(t *txn) error {
		kv, err := t.get(db.userKey(id))
		if err != nil {
			return err
		}
		if kv == nil {
			return store.ErrNotFound
		}
		t.del(string(kv.Key))
		return nil
	})
}
