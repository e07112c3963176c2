package bolt

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// recordAgentName gives t its agent name (see store.AgentNameFor) and
// records it in the server's map of agent names.
func recordAgentName(tx *bbolt.Tx, t *store.Tool) error {
	nb, err := tx.Bucket(bucketAgentNames).CreateBucketIfNotExists([]byte(t.ServerID))
	if err != nil {
		return err
	}
	t.AgentName = store.AgentNameFor(t.ServerID, t.Name, t.AgentName, func(name string) string {
		return string(nb.Get([]byte(name)))
	})
	if nb.Get([]byte(t.AgentName)) != nil {
		return nil
	}
	// a new name, or one whose map an older version lost
	return nb.Put([]byte(t.AgentName), []byte(t.Name))
}

// migrateAgentNames gives every stored tool its agent name, server by
// server, in tool name order (schema 3).
func migrateAgentNames(tx *bbolt.Tx) error {
	return tx.Bucket(bucketTools).ForEachBucket(func(server []byte) error {
		tb := tx.Bucket(bucketTools).Bucket(server)
		var tools []store.Tool
		err := tb.ForEach(func(k, v []byte) error {
			var t store.Tool
			if err := getJSON(tb, k, &t); err != nil {
				return err
			}
			tools = append(tools, t)
			return nil
		})
		if err != nil {
			return err
		}
		for _, t := range tools {
			if t.ServerID == "" {
				t.ServerID = string(server)
			}
			if err := recordAgentName(tx, &t); err != nil {
				return err
			}
			if err := putTool(tx, server, tb, t); err != nil {
				return err
			}
		}
		return nil
	})
}

// ToolByAgentName finds a tool by its agent name and returns it as
// ToolVersions does: with its policy and the definition that policy was
// approved at. It returns ErrAgentNameUnknown if no tool has the name.
func (db *DB) ToolByAgentName(ctx context.Context, agentName string) (store.ToolEntry, *store.Tool, error) {
	serverID, _, ok := strings.Cut(agentName, store.AgentSeparator)
	if !ok {
		return store.ToolEntry{}, nil, store.ErrAgentNameUnknown
	}
	var e store.ToolEntry
	var approved *store.Tool
	err := db.view(func(tx *bbolt.Tx) error {
		nb := tx.Bucket(bucketAgentNames).Bucket([]byte(serverID))
		if nb == nil {
			return store.ErrAgentNameUnknown
		}
		tool := nb.Get([]byte(agentName))
		if tool == nil {
			return store.ErrAgentNameUnknown
		}
		var err error
		e, approved, err = readToolVersions(tx, store.ToolRef{ServerID: serverID, Tool: string(tool)})
		if errors.Is(err, store.ErrToolNotFound) || errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w (its tool %q is gone)", store.ErrAgentNameUnknown, tool)
		}
		return err
	})
	return e, approved, err
}

// ShortenAgentNames implements store.Verifications. The offer records
// (short, never decoded as JSON) say whether any name is too long, so a
// start with nothing to do reads little.
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
	err := db.updateMany(ctx, func(tx *bbolt.Tx) ([]store.Change, error) {
		renamed = 0
		var changes []store.Change
		for _, id := range slices.Sorted(maps.Keys(long)) {
			n, err := shortenAgentNames(tx, id)
			if err != nil {
				return nil, err
			}
			if n > 0 {
				renamed += n
				changes = append(changes, store.Change{ServerID: id, Tools: true})
			}
		}
		return changes, nil
	})
	return renamed, err
}

// shortenAgentNames renames the tools of server id whose agent names are
// too long, in tool name order, and reports how many.
func shortenAgentNames(tx *bbolt.Tx, id string) (int, error) {
	server := []byte(id)
	tb := tx.Bucket(bucketTools).Bucket(server)
	nb := tx.Bucket(bucketAgentNames).Bucket(server)
	if tb == nil || nb == nil {
		return 0, nil
	}
	var long []store.Tool
	err := tb.ForEach(func(k, _ []byte) error {
		var t store.Tool
		if err := getJSON(tb, k, &t); err != nil {
			return err
		}
		if len(t.AgentName) > store.MaxAgentName {
			long = append(long, t)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, t := range long { // the old names go first: a new one may be one of them cut
		if err := nb.Delete([]byte(t.AgentName)); err != nil {
			return 0, err
		}
	}
	for _, t := range long {
		t.AgentName = ""
		if t.ServerID == "" {
			t.ServerID = id
		}
		if err := recordAgentName(tx, &t); err != nil {
			return 0, err
		}
		if err := putTool(tx, server, tb, t); err != nil {
			return 0, err
		}
	}
	return len(long), nil
}
