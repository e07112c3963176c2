package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// putApproved records t as the definition its policy approves.
func putApproved(tx *bbolt.Tx, t store.Tool) error {
	b, err := tx.Bucket(bucketApproved).CreateBucketIfNotExists([]byte(t.ServerID))
	if err != nil {
		return err
	}
	b.FillPercent = toolFill
	return putJSON(b, []byte(t.Name), t)
}

// ToolVersions returns a tool with its policy, and the definition its
// policy was approved at (nil if it was approved before Switchboard kept
// definitions). For a changed tool, the two are the diff a person reviews.
func (db *DB) ToolVersions(ctx context.Context, ref store.ToolRef) (store.ToolEntry, *store.Tool, error) {
	var e store.ToolEntry
	var approved *store.Tool
	err := db.view(func(tx *bbolt.Tx) error {
		var err error
		e, approved, err = readToolVersions(tx, ref)
		return err
	})
	return e, approved, err
}

func readToolVersions(tx *bbolt.Tx, ref store.ToolRef) (store.ToolEntry, *store.Tool, error) {
	e, err := readTool(tx, ref)
	if err != nil {
		return e, nil, err
	}
	ab := tx.Bucket(bucketApproved).Bucket([]byte(ref.ServerID))
	if ab == nil {
		return e, nil, nil
	}
	var t store.Tool
	switch err := getJSON(ab, []byte(ref.Tool), &t); {
	case errors.Is(err, store.ErrNotFound):
		return e, nil, nil
	case err != nil:
		return e, nil, err
	case t.Pin != e.Policy.Pin:
		return e, nil, nil
	}
	return e, &t, nil
}

// readTool reads one tool with its policy.
func readTool(tx *bbolt.Tx, ref store.ToolRef) (store.ToolEntry, error) {
	var e store.ToolEntry
	key, tool := []byte(ref.ServerID), ref.Tool
	if tx.Bucket(bucketServers).Get(key) == nil {
		return e, store.ErrNotFound
	}
	tb := tx.Bucket(bucketTools).Bucket(key)
	if tb == nil {
		return e, store.ErrToolNotFound
	}
	if err := getJSON(tb, []byte(tool), &e.Tool); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return e, store.ErrToolNotFound
		}
		return e, err
	}
	if pb := tx.Bucket(bucketPolicies).Bucket(key); pb != nil {
		if err := getJSON(pb, []byte(tool), &e.Policy); err != nil && !errors.Is(err, store.ErrNotFound) {
			return e, err
		}
	}
	e.Effective = store.EffectivePolicy(e.Tool, e.Policy)
	return e, nil
}

// ApproveTool approves the current definition of a changed tool, whose
// pin the person was shown (see store.Approve). It returns
// ErrPinMismatch, ErrNotChanged, ErrNotFound or ErrToolNotFound.
func (db *DB) ApproveTool(ctx context.Context, ref store.ToolRef, pin, by string) (store.ToolEntry, error) {
	out, err := db.ApproveChanges(ctx, ref.ServerID, map[string]string{ref.Tool: pin}, by)
	if err != nil {
		return store.ToolEntry{}, err
	}
	return out[0], nil
}

// ApproveChanges approves several changed tools of one server at once,
// each at the pin the person was shown (tool name → pin), all or none:
// any tool that changed again, or has nothing to approve, fails the whole
// call with an error naming it.
func (db *DB) ApproveChanges(ctx context.Context, id string, pins map[string]string, by string) ([]store.ToolEntry, error) {
	out, _, err := db.ApproveAll(ctx, id, pins, nil, by)
	return out, err
}

// ApproveAll approves changed tools (name → pin) and changed listed
// entries of one server in one transaction, all or none (see
// ApproveChanges, ApproveListed), and recounts the server's changes.
func (db *DB) ApproveAll(ctx context.Context, id string, pins map[string]string, listed []store.ListedPin, by string) ([]store.ToolEntry, []store.ListedEntry, error) {
	var out []store.ToolEntry
	var outListed []store.ListedEntry
	err := db.update(ctx, store.Change{ServerID: id, Tools: true}, func(tx *bbolt.Tx) error {
		now := time.Now()
		out = make([]store.ToolEntry, 0, len(pins))
		for _, name := range slices.Sorted(maps.Keys(pins)) {
			e, err := readTool(tx, store.ToolRef{ServerID: id, Tool: name})
			if err != nil {
				return err
			}
			if e, err = store.Approve(e, pins[name], by, now); err != nil {
				return err
			}
			key := []byte(id)
			if err := putJSON(tx.Bucket(bucketPolicies).Bucket(key), []byte(name), e.Policy); err != nil {
				return err
			}
			if err := putTool(tx, key, tx.Bucket(bucketTools).Bucket(key), e.Tool); err != nil {
				return err
			}
			if err := putApproved(tx, e.Tool); err != nil {
				return err
			}
			out = append(out, e)
		}
		outListed = make([]store.ListedEntry, 0, len(listed))
		for _, lp := range listed {
			e, err := rewriteListed(tx, store.ListedRef{ServerID: id, Kind: lp.Kind, Key: lp.Key}, func(e store.ListedEntry) (store.ListedEntry, error) {
				return store.ApproveListedEntry(e, lp.Pin, by, now)
			})
			if err != nil {
				return err
			}
			outListed = append(outListed, e)
		}
		return recountChanged(tx, id)
	})
	return out, outListed, err
}

// countChanged counts the server's changed tools and listed entries:
// each awaits a person's review.
func countChanged(tx *bbolt.Tx, id string) (int, error) {
	n := 0
	for _, bucket := range [][]byte{bucketTools, bucketListed} {
		b := tx.Bucket(bucket).Bucket([]byte(id))
		if b == nil {
			continue
		}
		err := b.ForEach(func(k, v []byte) error {
			var t struct {
				State store.ToolState `json:"state"`
			}
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("decode %s %q: %w", bucket, k, err)
			}
			if t.State == store.ToolChanged {
				n++
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

// recountChanged updates the discovery record's count of changed tools
// and listed entries (see countChanged).
func recountChanged(tx *bbolt.Tx, id string) error {
	sum, err := readSummary(tx, []byte(id))
	if err != nil {
		return err
	}
	if sum.Discovery.Changed, err = countChanged(tx, id); err != nil {
		return err
	}
	return putJSON(tx.Bucket(bucketDiscovery), []byte(id), sum.Discovery)
}

// migrateApproved (schema 1 → 2) records, for every tool whose policy
// approves its current definition, that definition as the approved one.
// Changed tools keep no approved definition: it was never stored.
func migrateApproved(tx *bbolt.Tx) error {
	tools := tx.Bucket(bucketTools)
	return tools.ForEachBucket(func(server []byte) error {
		pb := tx.Bucket(bucketPolicies).Bucket(server)
		if pb == nil {
			return nil
		}
		var keep []store.Tool
		err := tools.Bucket(server).ForEach(func(k, v []byte) error {
			var t store.Tool
			var p store.PolicySetting
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("decode tool %q: %w", k, err)
			}
			if err := getJSON(pb, k, &p); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return nil
				}
				return err
			}
			if p.Pin == t.Pin {
				keep = append(keep, t)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, t := range keep {
			if err := putApproved(tx, t); err != nil {
				return err
			}
		}
		return nil
	})
}
