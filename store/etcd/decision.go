package etcd

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// ClaimDecision records d unless the call has an answer already: the
// absent key is part of the transaction's guard, so of two replicas
// claiming at once one commits and the other, run again, reads its
// answer.
func (db *DB) ClaimDecision(ctx context.Context, d store.Decision, forgetBefore time.Time) (store.Decision, bool, error) {
	var got store.Decision
	won := false
	err := db.update(ctx, func(t *txn) error {
		got, won = d, false
		var first store.Decision
		ok, err := t.getJSON(db.key("decisions/"+d.ID), &first)
		if err != nil {
			return err
		}
		if ok {
			got = first
			return nil
		}
		kvs, err := t.list(db.key("decisions/"), false)
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			var o store.Decision
			if json.Unmarshal(kv.Value, &o) != nil || o.At.Before(forgetBefore) {
				t.del(string(kv.Key))
			}
		}
		won = true
		return t.put(db.key("decisions/"+d.ID), d)
	})
	return got, won, err
}
