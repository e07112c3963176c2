package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// bucketSessions holds the browser sessions by the hash of their secret
// (see store.BrowserSession).
var bucketSessions = []byte("sessions")

// CreateSession keeps a new session and forgets the expired ones.
func (db *DB) CreateSession(ctx context.Context, s store.BrowserSession) error {
	return db.write(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		var expired [][]byte
		err := b.ForEach(func(k, v []byte) error {
			var old store.BrowserSession
			if err := json.Unmarshal(v, &old); err != nil || old.Expired(s.CreatedAt) {
				expired = append(expired, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range expired {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return putJSON(b, []byte(s.Hash), s)
	})
}

// Session is the session kept under hash.
func (db *DB) Session(ctx context.Context, hash string) (store.BrowserSession, error) {
	var s store.BrowserSession
	err := db.view(func(tx *bbolt.Tx) error { return getSession(tx, hash, &s) })
	return s, err
}

// TouchSession records that the session was used at at.
func (db *DB) TouchSession(ctx context.Context, hash string, at time.Time) error {
	return db.write(func(tx *bbolt.Tx) error {
		var s store.BrowserSession
		if err := getSession(tx, hash, &s); err != nil {
			return err
		}
		s.LastSeen = at.UTC()
		return putJSON(tx.Bucket(bucketSessions), []byte(hash), s)
	})
}

// DeleteSession forgets one session.
func (db *DB) DeleteSession(ctx context.Context, hash string) error {
	return db.write(func(tx *bbolt.Tx) error { return tx.Bucket(bucketSessions).Delete([]byte(hash)) })
}

// DeleteSessions forgets every session.
func (db *DB) DeleteSessions(ctx context.Context) (int, error) {
	var n int
	err := db.write(func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketSessions).Stats().KeyN
		if err := tx.DeleteBucket(bucketSessions); err != nil {
			return err
		}
		_, err := tx.CreateBucket(bucketSessions)
		return err
	})
	return n, err
}

func getSession(tx *bbolt.Tx, hash string, s *store.BrowserSession) error {
	v := tx.Bucket(bucketSessions).Get([]byte(hash))
	if v == nil {
		return store.ErrSessionNotFound
	}
	if err := json.Unmarshal(v, s); err != nil {
		return fmt.Errorf("store: decode session: %w", err)
	}
	return nil
}

// bucketMCPSessions holds agents' MCP sessions by the hash of their id
// (see store.MCPSession).
var bucketMCPSessions = []byte("mcp-sessions")

// PutMCPSession keeps s and forgets the sessions unused since before.
func (db *DB) PutMCPSession(ctx context.Context, s store.MCPSession, unusedSince time.Time) error {
	return db.write(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketMCPSessions)
		if err != nil {
			return err
		}
		var idle [][]byte
		err = b.ForEach(func(k, v []byte) error {
			var old store.MCPSession
			if err := json.Unmarshal(v, &old); err != nil || old.LastUsed.Before(unusedSince) {
				idle = append(idle, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range idle {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return putJSON(b, []byte(s.Hash), s)
	})
}

// MCPSession is the MCP session kept under hash.
func (db *DB) MCPSession(ctx context.Context, hash string) (store.MCPSession, error) {
	var s store.MCPSession
	err := db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketMCPSessions)
		if b == nil {
			return store.ErrSessionNotFound
		}
		v := b.Get([]byte(hash))
		if v == nil {
			return store.ErrSessionNotFound
		}
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("store: decode MCP session: %w", err)
		}
		return nil
	})
	return s, err
}

// DeleteMCPSession forgets one MCP session.
func (db *DB) DeleteMCPSession(ctx context.Context, hash string) error {
	return db.write(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bucketMCPSessions); b != nil {
			return b.Delete([]byte(hash))
		}
		return nil
	})
}
