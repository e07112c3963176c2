package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchboard-dev/switchboard/store"
)

// MarkRunning records that a verification job started for the server.
func (db *DB) MarkRunning(ctx context.Context, id, jobID string, at time.Time) error {
	return db.changeServer(ctx, id, false, store.Change{ServerID: id}, func(t *txn, st *state) error {
		d := &st.doc.Discovery
		d.Status, d.JobID, d.LastAttemptAt = store.StatusRunning, jobID, at.UTC()
		return nil
	})
}

// AddLateWarnings adds warnings to job's record (ErrOtherJob if the
// record is of another job).
func (db *DB) AddLateWarnings(ctx context.Context, id, jobID string, warnings []string) error {
	return db.changeServer(ctx, id, false, store.Change{ServerID: id}, func(t *txn, st *state) error {
		if st.doc.Discovery.JobID != jobID {
			return store.ErrOtherJob
		}
		st.doc.Discovery.Warnings = append(st.doc.Discovery.Warnings, warnings...)
		return nil
	})
}

// RecordSuccess stores a successful verification: its tools merged with
// what was known (store.MergeTools), its resources and prompts
// (store.MergeListed), the record and a history entry; only the record's
// status and the history if the server's configuration changed since
// (ErrConfigChanged).
func (db *DB) RecordSuccess(ctx context.Context, id string, v store.Verification) error {
	var discarded bool
	err := db.changeServer(ctx, id, true, store.Change{ServerID: id, Tools: true, History: true}, func(t *txn, st *state) error {
		s, d := st.doc.Server, &st.doc.Discovery
		if discarded = v.Outdated(s); discarded {
			return t.appendHistory(st, store.Discard(d, v.JobID, v.Trigger, v.StartedAt, v.FinishedAt))
		}
		m := store.MergeTools(s, st.tools, v.Tools, v.FinishedAt)
		owners := map[string]string{}
		for name, e := range st.tools {
			if e.AgentName != "" {
				owners[e.AgentName] = name
			}
		}
		for _, tl := range m.Tools {
			tl.ServerID = id
			tl.AgentName = store.AgentNameFor(id, tl.Name, tl.AgentName, func(n string) string { return owners[n] })
			owners[tl.AgentName] = tl.Name
			e := st.tools[tl.Name]
			e.Tool = tl
			if p, ok := m.NewPolicies[tl.Name]; ok {
				e.Policy = p
				st.approved[tl.Name] = tl
			}
			st.tools[tl.Name] = e
		}
		for _, e := range store.MergeListed(s, st.listed, v.Listed, v.Unlisted, v.FinishedAt) {
			st.listed[store.ListedKey(e.Kind, e.Key)] = e
		}
		return t.appendHistory(st, store.ApplySuccess(d, id, v, m))
	})
	if err == nil && discarded {
		return store.ErrConfigChanged
	}
	return err
}

// RecordFailure stores a verification that did not succeed, keeping the
// tools of the last success (store.ApplyFailure).
func (db *DB) RecordFailure(ctx context.Context, id string, f store.Failure) error {
	var discarded bool
	err := db.changeServer(ctx, id, false, store.Change{ServerID: id, History: true}, func(t *txn, st *state) error {
		entry := store.ApplyFailure(st.doc.Server, &st.doc.Discovery, f)
		discarded = entry.Outcome == store.OutcomeDiscarded
		return t.appendHistory(st, entry)
	})
	if err == nil && discarded {
		return store.ErrConfigChanged
	}
	return err
}

// changeServer reads a server (with its body if withBody), lets fn change
// it, and writes it back with the change c, in one transaction.
func (db *DB) changeServer(ctx context.Context, id string, withBody bool, c store.Change, fn func(t *txn, st *state) error) error {
	defer db.locked("servers/" + id)()
	return db.update(ctx, func(t *txn) error {
		st, err := t.loadServer(id)
		if err != nil {
			return err
		}
		if withBody {
			if err := t.loadBody(st); err != nil {
				return err
			}
		}
		if err := fn(t, st); err != nil {
			return err
		}
		t.changed(c)
		return t.save(st, withBody)
	})
}

// historyKey is the key of a server's history entry seq.
func (db *DB) historyKey(id string, seq uint64) string {
	return db.key(fmt.Sprintf("history/%s/%016x", id, seq))
}

// appendHistory numbers e, writes it, and drops the entry that falls out
// of the kept ones (numbers are contiguous).
func (t *txn) appendHistory(st *state, e store.HistoryEntry) error {
	st.doc.HistorySeq++
	seq := st.doc.HistorySeq
	e.Seq = seq
	e.StartedAt, e.FinishedAt = e.StartedAt.UTC(), e.FinishedAt.UTC()
	e.DurationMS = e.FinishedAt.Sub(e.StartedAt).Milliseconds()
	if err := t.put(t.db.historyKey(st.id, seq), e); err != nil {
		return err
	}
	if seq > store.HistoryKeep {
		t.del(t.db.historyKey(st.id, seq-store.HistoryKeep))
	}
	return nil
}

// History is the server's newest verifications first, at most limit (all
// if not positive), and how many are kept.
func (db *DB) History(ctx context.Context, id string, limit int) ([]store.HistoryEntry, int, error) {
	out := []store.HistoryEntry{}
	var total int
	err := db.view(ctx, func(t *txn) error {
		st, err := t.loadServer(id)
		if err != nil {
			return err
		}
		total = int(min(st.doc.HistorySeq, store.HistoryKeep))
		opts := []clientv3.OpOption{clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend)}
		if limit > 0 {
			opts = append(opts, clientv3.WithLimit(int64(limit)))
		}
		kvs, err := t.list(db.key("history/"+id+"/"), false, opts...)
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			var e store.HistoryEntry
			if err := json.Unmarshal(kv.Value, &e); err != nil {
				return fmt.Errorf("%w: decode %s: %v", store.ErrDamaged, kv.Key, err)
			}
			out = append(out, e)
		}
		return nil
	})
	return out, total, err
}

// JobHistory is one verification's history entry.
func (db *DB) JobHistory(ctx context.Context, id, jobID string) (store.HistoryEntry, error) {
	entries, _, err := db.History(ctx, id, 0)
	if err != nil {
		return store.HistoryEntry{}, err
	}
	for _, e := range entries {
		if e.JobID == jobID {
			return e, nil
		}
	}
	return store.HistoryEntry{}, store.ErrNotFound
}

// SetPolicy records a person's policy for one tool.
func (db *DB) SetPolicy(ctx context.Context, ref store.ToolRef, p store.Policy, by string) (store.ToolEntry, error) {
	out, err := db.SetPolicies(ctx, ref.ServerID, []store.PolicyChange{{Tool: ref.Tool, Policy: p}}, by)
	if err != nil {
		return store.ToolEntry{}, err
	}
	return out[0], nil
}

// SetPolicies records policies for several tools of one server, all or
// none.
func (db *DB) SetPolicies(ctx context.Context, id string, changes []store.PolicyChange, by string) ([]store.ToolEntry, error) {
	var out []store.ToolEntry
	err := db.changeServer(ctx, id, true, store.Change{ServerID: id, Tools: true}, func(t *txn, st *state) error {
		out = make([]store.ToolEntry, 0, len(changes))
		now := time.Now()
		for _, c := range changes {
			e, ok := st.tools[c.Tool]
			if !ok {
				return fmt.Errorf("%w: %q", store.ErrToolNotFound, c.Tool)
			}
			var first bool
			if e, first = store.ApplyPolicy(e, c.Policy, c.Reason, by, now); first {
				st.approved[c.Tool] = e.Tool
			}
			st.tools[c.Tool] = e
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// ApproveTool approves the current definition of a changed tool.
func (db *DB) ApproveTool(ctx context.Context, ref store.ToolRef, pin, by string) (store.ToolEntry, error) {
	out, err := db.ApproveChanges(ctx, ref.ServerID, map[string]string{ref.Tool: pin}, by)
	if err != nil {
		return store.ToolEntry{}, err
	}
	return out[0], nil
}

// ApproveChanges approves several changed tools of one server, all or
// none.
func (db *DB) ApproveChanges(ctx context.Context, id string, pins map[string]string, by string) ([]store.ToolEntry, error) {
	out, _, err := db.ApproveAll(ctx, id, pins, nil, by)
	return out, err
}

// ApproveAll approves changed tools and listed entries of one server, all
// or none.
func (db *DB) ApproveAll(ctx context.Context, id string, pins map[string]string, listed []store.ListedPin, by string) ([]store.ToolEntry, []store.ListedEntry, error) {
	var out []store.ToolEntry
	var outListed []store.ListedEntry
	err := db.changeServer(ctx, id, true, store.Change{ServerID: id, Tools: true}, func(t *txn, st *state) error {
		now := time.Now()
		out = make([]store.ToolEntry, 0, len(pins))
		for _, name := range slices.Sorted(maps.Keys(pins)) {
			e, ok := st.tools[name]
			if !ok {
				return fmt.Errorf("%w: %q", store.ErrToolNotFound, name)
			}
			e, err := store.Approve(e, pins[name], by, now)
			if err != nil {
				return err
			}
			st.tools[name], st.approved[name] = e, e.Tool
			out = append(out, e)
		}
		outListed = make([]store.ListedEntry, 0, len(listed))
		for _, lp := range listed {
			e, err := st.changeListed(store.ListedRef{ServerID: id, Kind: lp.Kind, Key: lp.Key}, func(e store.ListedEntry) (store.ListedEntry, error) {
				return store.ApproveListedEntry(e, lp.Pin, by, now)
			})
			if err != nil {
				return err
			}
			outListed = append(outListed, e)
		}
		return nil
	})
	return out, outListed, err
}

// SetListedPolicy records a person's policy for one listed entry.
func (db *DB) SetListedPolicy(ctx context.Context, ref store.ListedRef, p store.Policy, by string) (store.ListedEntry, error) {
	return db.rewriteListed(ctx, ref, func(e store.ListedEntry, now time.Time) (store.ListedEntry, error) {
		return store.ApplyListedPolicy(e, p, by, now), nil
	})
}

// ApproveListed approves the current definition of a changed entry.
func (db *DB) ApproveListed(ctx context.Context, ref store.ListedRef, pin, by string) (store.ListedEntry, error) {
	return db.rewriteListed(ctx, ref, func(e store.ListedEntry, now time.Time) (store.ListedEntry, error) {
		return store.ApproveListedEntry(e, pin, by, now)
	})
}

func (db *DB) rewriteListed(ctx context.Context, ref store.ListedRef, fn func(store.ListedEntry, time.Time) (store.ListedEntry, error)) (store.ListedEntry, error) {
	var out store.ListedEntry
	err := db.changeServer(ctx, ref.ServerID, true, store.Change{ServerID: ref.ServerID, Tools: true}, func(t *txn, st *state) error {
		var err error
		now := time.Now()
		out, err = st.changeListed(ref, func(e store.ListedEntry) (store.ListedEntry, error) { return fn(e, now) })
		return err
	})
	return out, err
}

// changeListed rewrites one listed entry as fn decides.
func (st *state) changeListed(ref store.ListedRef, fn func(store.ListedEntry) (store.ListedEntry, error)) (store.ListedEntry, error) {
	k := store.ListedKey(ref.Kind, ref.Key)
	e, ok := st.listed[k]
	if !ok {
		return e, fmt.Errorf("%w: %s %q", store.ErrToolNotFound, ref.Kind, ref.Key)
	}
	e, err := fn(e)
	if err != nil {
		return e, err
	}
	st.listed[k] = e
	return e, nil
}

var _ = errors.Is

// errNothingToRename ends a change of ShortenAgentNames that renamed
// nothing (another replica did it first): nothing is written.
var errNothingToRename = errors.New("no agent name to shorten")

// ShortenAgentNames implements store.Verifications.
func (db *DB) ShortenAgentNames(ctx context.Context) (int, error) {
	long := map[string]bool{} // server ids
	if _, err := db.Offer(ctx, func(_ *store.Summary, t store.OfferedTool) error {
		if len(t.AgentName) > store.MaxAgentName {
			long[t.ServerID] = true
		}
		return nil
	}); err != nil || len(long) == 0 {
		return 0, err
	}
	renamed := 0
	for _, id := range slices.Sorted(maps.Keys(long)) {
		n := 0
		err := db.changeServer(ctx, id, true, store.Change{ServerID: id, Tools: true}, func(_ *txn, st *state) error {
			n = 0
			owners := map[string]string{}
			var names []string
			for name, e := range st.tools {
				if len(e.AgentName) > store.MaxAgentName {
					names = append(names, name)
				} else if e.AgentName != "" {
					owners[e.AgentName] = name
				}
			}
			if len(names) == 0 {
				return errNothingToRename
			}
			slices.Sort(names)
			for _, name := range names {
				e := st.tools[name]
				e.AgentName = store.AgentNameFor(id, name, "", func(a string) string { return owners[a] })
				owners[e.AgentName] = name
				st.tools[name] = e
			}
			n = len(names)
			return nil
		})
		switch {
		case errors.Is(err, errNothingToRename), errors.Is(err, store.ErrNotFound):
		case err != nil:
			return renamed, err
		default:
			renamed += n
		}
	}
	return renamed, nil
}
