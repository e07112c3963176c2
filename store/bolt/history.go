package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	berrors "go.etcd.io/bbolt/errors"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// History returns a server's verifications, newest first, at most limit
// of them (all kept if limit <= 0), and how many it has kept in all. It
// returns ErrNotFound if the server does not exist.
func (db *DB) History(ctx context.Context, id string, limit int) ([]store.HistoryEntry, int, error) {
	out := []store.HistoryEntry{}
	var total int
	err := db.view(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketServers).Get([]byte(id)) == nil {
			return store.ErrNotFound
		}
		hb := tx.Bucket(bucketHistory).Bucket([]byte(id))
		if hb == nil {
			return nil
		}
		total = hb.Stats().KeyN
		c := hb.Cursor()
		for k, v := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Prev() {
			var e store.HistoryEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode history %q/%x: %w", id, k, err)
			}
			out = append(out, e)
		}
		return nil
	})
	return out, total, err
}

// JobHistory returns the history entry of one job of the server, if it is
// still kept.
func (db *DB) JobHistory(ctx context.Context, id, jobID string) (store.HistoryEntry, error) {
	var found store.HistoryEntry
	err := db.view(func(tx *bbolt.Tx) error {
		hb := tx.Bucket(bucketHistory).Bucket([]byte(id))
		if hb == nil {
			return store.ErrNotFound
		}
		c := hb.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			var e store.HistoryEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode history %q/%x: %w", id, k, err)
			}
			if e.JobID == jobID {
				found = e
				return nil
			}
		}
		return store.ErrNotFound
	})
	return found, err
}

// appendHistory adds an entry to the server's history, dropping the
// oldest beyond HistoryKeep.
func appendHistory(tx *bbolt.Tx, id string, e store.HistoryEntry) error {
	hb, err := tx.Bucket(bucketHistory).CreateBucketIfNotExists([]byte(id))
	if err != nil {
		return err
	}
	seq, err := hb.NextSequence()
	if err != nil {
		return err
	}
	e.Seq = seq
	e.StartedAt, e.FinishedAt = e.StartedAt.UTC(), e.FinishedAt.UTC()
	e.DurationMS = e.FinishedAt.Sub(e.StartedAt).Milliseconds()
	var key [8]byte
	binary.BigEndian.PutUint64(key[:], seq)
	if err := putJSON(hb, key[:], e); err != nil {
		return err
	}
	if seq <= store.HistoryKeep {
		return nil
	}
	c := hb.Cursor()
	for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= seq-store.HistoryKeep; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// deleteServerBucket removes a per-server nested bucket, if there is one.
func deleteServerBucket(tx *bbolt.Tx, bucket, key []byte) error {
	err := tx.Bucket(bucket).DeleteBucket(key)
	if errors.Is(err, berrors.ErrBucketNotFound) {
		return nil
	}
	return err
}
