package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// HistoryKeep is how many verifications a server's history keeps; older
// entries are dropped as new ones arrive (History says how many were).
const HistoryKeep = 200

// deltaNames bounds the tool names a Delta lists per kind; the counts are
// always complete.
const deltaNames = 20

// Delta is what a successful verification changed in the set of tools a
// server offers: tools added (new, or back after missing), removed (now
// missing) and changed (offered both times, with a different pin). The
// counts are complete; the name lists hold the first few, by name.
type Delta struct {
	Added        int      `json:"added"`
	Removed      int      `json:"removed"`
	Changed      int      `json:"changed"`
	AddedNames   []string `json:"added_names,omitempty"`
	RemovedNames []string `json:"removed_names,omitempty"`
	ChangedNames []string `json:"changed_names,omitempty"`
}

// counts is the delta without its names, as the discovery record keeps
// it: the record is read for every list and live update, and the history
// has the names.
func (d Delta) counts() *Delta {
	return &Delta{Added: d.Added, Removed: d.Removed, Changed: d.Changed}
}

// Empty reports whether nothing changed.
func (d Delta) Empty() bool { return d.Added == 0 && d.Removed == 0 && d.Changed == 0 }

// String is the short form, e.g. "+2 −1 ~1", or "no changes".
func (d Delta) String() string {
	if d.Empty() {
		return "no changes"
	}
	var parts []string
	if d.Added > 0 {
		parts = append(parts, "+"+strconv.Itoa(d.Added))
	}
	if d.Removed > 0 {
		parts = append(parts, "−"+strconv.Itoa(d.Removed))
	}
	if d.Changed > 0 {
		parts = append(parts, "~"+strconv.Itoa(d.Changed))
	}
	return strings.Join(parts, " ")
}

func (d *Delta) add(list *[]string, n *int, name string) {
	*n++
	if len(*list) < deltaNames {
		*list = append(*list, name)
	}
}

// Verification outcomes in the history besides the job statuses
// (StatusSuccess, StatusFailed, StatusTimeout, StatusCancelled).
const (
	// OutcomeDiscarded: the server's configuration changed while it was
	// verified, so the result was not used.
	OutcomeDiscarded = "discarded"
)

// HistoryEntry is one verification of a server, as its history keeps it.
type HistoryEntry struct {
	Seq        uint64    `json:"seq"`
	JobID      string    `json:"job_id"`
	Trigger    string    `json:"trigger,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	DurationMS int64     `json:"duration_ms"`
	// Outcome is StatusSuccess, StatusFailed, StatusTimeout,
	// StatusCancelled or OutcomeDiscarded.
	Outcome string       `json:"outcome"`
	Error   *VerifyError `json:"error,omitempty"`
	// Delta, ToolCount and the versions are set on success.
	Delta           *Delta `json:"delta,omitempty"`
	ToolCount       int    `json:"tool_count"`
	ServerVersion   string `json:"server_version,omitempty"`
	PreviousVersion string `json:"previous_version,omitempty"`
}

// History returns a server's verifications, newest first, at most limit
// of them (all kept if limit <= 0), and how many it has kept in all. It
// returns ErrNotFound if the server does not exist.
func (db *DB) History(id string, limit int) ([]HistoryEntry, int, error) {
	out := []HistoryEntry{}
	var total int
	err := db.bolt.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketServers).Get([]byte(id)) == nil {
			return ErrNotFound
		}
		hb := tx.Bucket(bucketHistory).Bucket([]byte(id))
		if hb == nil {
			return nil
		}
		total = hb.Stats().KeyN
		c := hb.Cursor()
		for k, v := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Prev() {
			var e HistoryEntry
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
func (db *DB) JobHistory(id, jobID string) (HistoryEntry, error) {
	var found HistoryEntry
	err := db.bolt.View(func(tx *bolt.Tx) error {
		hb := tx.Bucket(bucketHistory).Bucket([]byte(id))
		if hb == nil {
			return ErrNotFound
		}
		c := hb.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			var e HistoryEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode history %q/%x: %w", id, k, err)
			}
			if e.JobID == jobID {
				found = e
				return nil
			}
		}
		return ErrNotFound
	})
	return found, err
}

// appendHistory adds an entry to the server's history, dropping the
// oldest beyond HistoryKeep.
func appendHistory(tx *bolt.Tx, id string, e HistoryEntry) error {
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
	if seq <= HistoryKeep {
		return nil
	}
	c := hb.Cursor()
	for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= seq-HistoryKeep; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// deleteServerBucket removes a per-server nested bucket, if there is one.
func deleteServerBucket(tx *bolt.Tx, bucket, key []byte) error {
	err := tx.Bucket(bucket).DeleteBucket(key)
	if errors.Is(err, berrors.ErrBucketNotFound) {
		return nil
	}
	return err
}
