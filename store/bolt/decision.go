package bolt

import (
	"context"
	"encoding/json"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// bucketDecisions holds the answers to waiting calls that counted, by the
// call's id (see store.Decision).
var bucketDecisions = []byte("decisions")

// ClaimDecision records d unless the call has an answer already.
func (db *DB) ClaimDecision(ctx context.Context, d store.Decision, forgetBefore time.Time) (store.Decision, bool, error) {
	won := false
	err := db.write(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketDecisions)
		if err != nil {
			return err
		}
		if v := b.Get([]byte(d.ID)); v != nil {
			var first store.Decision
			if err := json.Unmarshal(v, &first); err == nil {
				d = first
				return nil
			}
		}
		var old [][]byte
		b.ForEach(func(k, v []byte) error {
			var o store.Decision
			if json.Unmarshal(v, &o) != nil || o.At.Before(forgetBefore) {
				old = append(old, append([]byte(nil), k...))
			}
			return nil
		})
		for _, k := range old {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		won = true
		return putJSON(b, []byte(d.ID), d)
	})
	return d, won, err
}
