package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrPinMismatch is the answer to an approval of a tool version that is
// not the tool's current one (it changed again since it was shown).
var ErrPinMismatch = errors.New("store: the tool changed again since this version was shown")

// ErrNotChanged is the answer to an approval of a tool that has no
// unapproved change.
var ErrNotChanged = errors.New("store: the tool has no unapproved change")

// policyRank orders policies from the loosest to the strictest.
var policyRank = map[string]int{PolicyAllow: 0, PolicyAsk: 1, PolicyDeny: 2}

// stricter returns the stricter of two policies.
func stricter(a, b string) string {
	if policyRank[b] > policyRank[a] {
		return b
	}
	return a
}

// initialPolicy is the policy a newly discovered tool starts with: the
// server's default, made stricter (never looser) by the tool's
// annotations. Annotations are the server's own hints, so they can only
// raise caution: a tool that may destroy (destructiveHint, which the MCP
// spec takes as true unless the tool is readOnlyHint or says false) or
// reach an open world (openWorldHint, true unless false) starts at least
// at ask. reason says which applied.
func initialPolicy(def string, annotations json.RawMessage) (policy, reason string) {
	var ann struct {
		ReadOnly    *bool `json:"readOnlyHint"`
		Destructive *bool `json:"destructiveHint"`
		OpenWorld   *bool `json:"openWorldHint"`
	}
	_ = json.Unmarshal(annotations, &ann) // unreadable hints are no hints: the spec's defaults apply
	readOnly := ann.ReadOnly != nil && *ann.ReadOnly
	destructive := !readOnly && (ann.Destructive == nil || *ann.Destructive)
	openWorld := ann.OpenWorld == nil || *ann.OpenWorld
	policy, reason = def, "the server's default policy"
	if policyRank[def] >= policyRank[PolicyAsk] || (!destructive && !openWorld) {
		return policy, reason
	}
	switch {
	case destructive && openWorld:
		reason = "raised from " + def + ": the tool may be destructive and reach outside systems (destructiveHint and openWorldHint are true or not given)"
	case destructive:
		reason = "raised from " + def + ": the tool may be destructive (destructiveHint is true or not given)"
	default:
		reason = "raised from " + def + ": the tool may reach outside systems (openWorldHint is true or not given)"
	}
	return stricter(def, PolicyAsk), reason
}

// putApproved records t as the definition its policy approves.
func putApproved(tx *bolt.Tx, t Tool) error {
	b, err := tx.Bucket(bucketApproved).CreateBucketIfNotExists([]byte(t.ServerID))
	if err != nil {
		return err
	}
	return putJSON(b, []byte(t.Name), t)
}

// ToolVersions returns a tool with its policy, and the definition its
// policy was approved at (nil if it was approved before Switchboard kept
// definitions). For a changed tool, the two are the diff a person reviews.
func (db *DB) ToolVersions(id, tool string) (ToolEntry, *Tool, error) {
	var e ToolEntry
	var approved *Tool
	err := db.bolt.View(func(tx *bolt.Tx) error {
		var err error
		e, approved, err = readToolVersions(tx, id, tool)
		return err
	})
	return e, approved, err
}

func readToolVersions(tx *bolt.Tx, id, tool string) (ToolEntry, *Tool, error) {
	e, err := readTool(tx, id, tool)
	if err != nil {
		return e, nil, err
	}
	ab := tx.Bucket(bucketApproved).Bucket([]byte(id))
	if ab == nil {
		return e, nil, nil
	}
	var t Tool
	switch err := getJSON(ab, []byte(tool), &t); {
	case errors.Is(err, ErrNotFound):
		return e, nil, nil
	case err != nil:
		return e, nil, err
	case t.Pin != e.Policy.Pin:
		return e, nil, nil
	}
	return e, &t, nil
}

// readTool reads one tool with its policy.
func readTool(tx *bolt.Tx, id, tool string) (ToolEntry, error) {
	var e ToolEntry
	key := []byte(id)
	if tx.Bucket(bucketServers).Get(key) == nil {
		return e, ErrNotFound
	}
	tb := tx.Bucket(bucketTools).Bucket(key)
	if tb == nil {
		return e, ErrToolNotFound
	}
	if err := getJSON(tb, []byte(tool), &e.Tool); err != nil {
		if errors.Is(err, ErrNotFound) {
			return e, ErrToolNotFound
		}
		return e, err
	}
	if pb := tx.Bucket(bucketPolicies).Bucket(key); pb != nil {
		if err := getJSON(pb, []byte(tool), &e.Policy); err != nil && !errors.Is(err, ErrNotFound) {
			return e, err
		}
	}
	e.Effective = effectivePolicy(e.Tool, e.Policy)
	return e, nil
}

// ApproveTool approves the current definition of a changed tool, whose
// pin the person was shown: the policy stays as it was and now applies to
// this version, and the tool becomes active. It returns ErrPinMismatch if
// the tool changed again since, ErrNotChanged if it has no unapproved
// change, and ErrNotFound or ErrToolNotFound.
func (db *DB) ApproveTool(id, tool, pin, by string) (ToolEntry, error) {
	var out []ToolEntry
	err := db.update(Change{ServerID: id, Tools: true}, func(tx *bolt.Tx) error {
		var err error
		if out, err = approve(tx, id, map[string]string{tool: pin}, by); err != nil {
			return err
		}
		return recountChanged(tx, id)
	})
	if err != nil {
		return ToolEntry{}, err
	}
	return out[0], nil
}

// ApproveChanges approves several changed tools of one server at once,
// each at the pin the person was shown (tool name → pin), all or none:
// any tool that changed again, or has nothing to approve, fails the whole
// call with an error naming it.
func (db *DB) ApproveChanges(id string, pins map[string]string, by string) ([]ToolEntry, error) {
	var out []ToolEntry
	err := db.update(Change{ServerID: id, Tools: true}, func(tx *bolt.Tx) error {
		var err error
		if out, err = approve(tx, id, pins, by); err != nil {
			return err
		}
		return recountChanged(tx, id)
	})
	return out, err
}

func approve(tx *bolt.Tx, id string, pins map[string]string, by string) ([]ToolEntry, error) {
	out := make([]ToolEntry, 0, len(pins))
	now := time.Now().UTC()
	for _, name := range sortedKeys(pins) {
		e, err := readTool(tx, id, name)
		if err != nil {
			return nil, err
		}
		switch {
		case e.Pin != pins[name]:
			return nil, fmt.Errorf("%w: %q", ErrPinMismatch, name)
		case e.State != ToolChanged:
			return nil, fmt.Errorf("%w: %q is %s", ErrNotChanged, name, e.State)
		}
		e.Policy.Pin, e.Policy.SetBy, e.Policy.SetAt = e.Pin, by, now
		e.State = ToolActive
		key := []byte(id)
		if err := putJSON(tx.Bucket(bucketPolicies).Bucket(key), []byte(name), e.Policy); err != nil {
			return nil, err
		}
		if err := putJSON(tx.Bucket(bucketTools).Bucket(key), []byte(name), e.Tool); err != nil {
			return nil, err
		}
		if err := putApproved(tx, e.Tool); err != nil {
			return nil, err
		}
		e.Effective = effectivePolicy(e.Tool, e.Policy)
		out = append(out, e)
	}
	return out, nil
}

// countChanged counts the server's changed tools.
func countChanged(tx *bolt.Tx, id string) (int, error) {
	tb := tx.Bucket(bucketTools).Bucket([]byte(id))
	if tb == nil {
		return 0, nil
	}
	n := 0
	err := tb.ForEach(func(k, v []byte) error {
		var t struct {
			State string `json:"state"`
		}
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("decode tool %q: %w", k, err)
		}
		if t.State == ToolChanged {
			n++
		}
		return nil
	})
	return n, err
}

// recountChanged updates the discovery record's count of changed tools.
func recountChanged(tx *bolt.Tx, id string) error {
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
func migrateApproved(tx *bolt.Tx) error {
	tools := tx.Bucket(bucketTools)
	return tools.ForEachBucket(func(server []byte) error {
		pb := tx.Bucket(bucketPolicies).Bucket(server)
		if pb == nil {
			return nil
		}
		var keep []Tool
		err := tools.Bucket(server).ForEach(func(k, v []byte) error {
			var t Tool
			var p Policy
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("decode tool %q: %w", k, err)
			}
			if err := getJSON(pb, k, &p); err != nil {
				if errors.Is(err, ErrNotFound) {
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
