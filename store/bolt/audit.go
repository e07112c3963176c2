package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

var (
	// bucketAudit holds call records by sequence (big-endian uint64).
	bucketAudit = []byte("audit")
	keyMCPToken = []byte("mcp_token")
)

// The audit log of tool calls routed through the MCP endpoint, and the
// endpoint's token. Neither is part of the catalog: writing them does not
// advance Revision, so a busy agent never invalidates catalog caches.

// AppendCalls records calls in one transaction, giving each its
// sequence, and drops the oldest beyond MaxCalls.
func (db *DB) AppendCalls(ctx context.Context, calls []store.Call) error {
	if len(calls) == 0 {
		return nil
	}
	return db.write(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketAudit)
		for i := range calls {
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			calls[i].Seq = seq
			if err := putJSON(b, seqKey(seq), calls[i]); err != nil {
				return err
			}
		}
		// Sequences are contiguous from the oldest kept to the newest.
		c := b.Cursor()
		for k, _ := c.First(); k != nil && b.Sequence()-binary.BigEndian.Uint64(k)+1 > store.MaxCalls; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// Calls returns up to limit call records, newest first, and how many are
// kept in all.
func (db *DB) Calls(ctx context.Context, limit int) ([]store.Call, int, error) {
	out := []store.Call{}
	total := 0
	err := db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketAudit)
		c := b.Cursor()
		if k, _ := c.First(); k != nil {
			total = int(b.Sequence() - binary.BigEndian.Uint64(k) + 1)
		}
		for k, v := c.Last(); k != nil && len(out) < limit; k, v = c.Prev() {
			var call store.Call
			if err := json.Unmarshal(v, &call); err != nil {
				return fmt.Errorf("decode call %x: %w", k, err)
			}
			out = append(out, call)
		}
		return nil
	})
	return out, total, err
}

// MCPToken returns the MCP endpoint's bearer token, creating a random one
// the first time, so agents keep working across restarts.
func (db *DB) MCPToken(ctx context.Context) (string, error) {
	var token string
	err := db.write(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(keyMCPToken); v != nil {
			token = string(v)
			return nil
		}
		token = store.NewMCPToken()
		return meta.Put(keyMCPToken, []byte(token))
	})
	return token, err
}

// RotateMCPToken replaces the MCP endpoint's token with a new random one
// and returns it.
func (db *DB) RotateMCPToken(ctx context.Context) (string, error) {
	token := store.NewMCPToken()
	err := db.write(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyMCPToken, []byte(token))
	})
	return token, err
}
