package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Agent names: the names agents call tools by through Switchboard's MCP
// endpoint. Clients accept only [a-zA-Z0-9_-] and at most 64 characters,
// and tools of different servers must not clash, so a tool is offered as
// server__tool; a name that had to be changed for that (characters
// replaced by '_', cut to 64) also gets a short hash of the tool's own
// name, so two tools of one server that come out alike (a.b and a_b; two
// long names with the same first 60 characters) stay apart, the same in
// any order and on any machine. A name, once given, is stored with the
// tool and kept for as long as the tool is known, so it never moves to
// another tool when tools come and go, and the per-server map from agent
// name to tool name (bucketAgentNames) turns a call back into its tool.

// MaxAgentName is the longest agent name.
const MaxAgentName = 64

// AgentSeparator joins a server id and a tool name in an agent name.
// Server ids never contain it (see the id rules), so the first one in an
// agent name ends the server id.
const AgentSeparator = "__"

// ErrAgentNameUnknown is the answer to a lookup of an agent name no tool
// has.
var ErrAgentNameUnknown = errors.New("store: no tool has this agent name")

// agentNameBase is server__tool with every character outside
// [a-zA-Z0-9_-] replaced by '_', cut to MaxAgentName; changed says it is
// not exactly server__tool.
func agentNameBase(serverID, tool string) (base string, changed bool) {
	var b strings.Builder
	b.Grow(len(serverID) + len(AgentSeparator) + len(tool))
	b.WriteString(serverID)
	b.WriteString(AgentSeparator)
	for i := 0; i < len(tool); i++ {
		if b.Len() == MaxAgentName {
			return b.String(), true
		}
		c := tool[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
			changed = true
		}
	}
	return b.String(), changed
}

// withSuffix cuts base so that base+suffix fits MaxAgentName.
func withSuffix(base, suffix string) string {
	if len(base)+len(suffix) > MaxAgentName {
		base = base[:MaxAgentName-len(suffix)]
	}
	return base + suffix
}

// agentName is the agent name a tool gets from its names alone: server__tool
// if that is safe as it is, else the safe form with a short hash of the
// tool's name, so that a.b and a_b, or two long names alike in their
// first 60 characters, never meet, whatever order they come in.
func agentName(serverID, tool string) string {
	base, changed := agentNameBase(serverID, tool)
	if !changed {
		return base
	}
	sum := sha256.Sum256([]byte(tool))
	return withSuffix(base, "_"+hex.EncodeToString(sum[:])[:8])
}

// assignAgentName gives t its agent name: the one it had (old), or
// agentName, or (if another tool of the server has that, which takes a
// name built to look like another's hash) that with a counter. It
// records the name in the server's map.
func assignAgentName(tx *bolt.Tx, t *Tool, old string) error {
	nb, err := tx.Bucket(bucketAgentNames).CreateBucketIfNotExists([]byte(t.ServerID))
	if err != nil {
		return err
	}
	if old != "" {
		t.AgentName = old
		if nb.Get([]byte(old)) == nil { // a map lost to an older version
			return nb.Put([]byte(old), []byte(t.Name))
		}
		return nil
	}
	free := func(name string) bool {
		v := nb.Get([]byte(name))
		return v == nil || string(v) == t.Name
	}
	first := agentName(t.ServerID, t.Name)
	name := first
	for n := 2; !free(name); n++ {
		name = withSuffix(first, "_"+strconv.Itoa(n))
	}
	t.AgentName = name
	return nb.Put([]byte(name), []byte(t.Name))
}

// migrateAgentNames gives every stored tool its agent name, server by
// server, in tool name order (schema 3).
func migrateAgentNames(tx *bolt.Tx) error {
	return tx.Bucket(bucketTools).ForEachBucket(func(server []byte) error {
		tb := tx.Bucket(bucketTools).Bucket(server)
		var tools []Tool
		err := tb.ForEach(func(k, v []byte) error {
			var t Tool
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
			if err := assignAgentName(tx, &t, t.AgentName); err != nil {
				return err
			}
			if err := putJSON(tb, []byte(t.Name), t); err != nil {
				return err
			}
		}
		return nil
	})
}

// ToolByAgentName finds a tool by its agent name and returns it as
// ToolVersions does: with its policy and the definition that policy was
// approved at. It returns ErrAgentNameUnknown if no tool has the name.
func (db *DB) ToolByAgentName(agentName string) (ToolEntry, *Tool, error) {
	serverID, _, ok := strings.Cut(agentName, AgentSeparator)
	if !ok {
		return ToolEntry{}, nil, ErrAgentNameUnknown
	}
	var e ToolEntry
	var approved *Tool
	err := db.bolt.View(func(tx *bolt.Tx) error {
		nb := tx.Bucket(bucketAgentNames).Bucket([]byte(serverID))
		if nb == nil {
			return ErrAgentNameUnknown
		}
		tool := nb.Get([]byte(agentName))
		if tool == nil {
			return ErrAgentNameUnknown
		}
		var err error
		e, approved, err = readToolVersions(tx, serverID, string(tool))
		if errors.Is(err, ErrToolNotFound) || errors.Is(err, ErrNotFound) {
			return fmt.Errorf("%w (its tool %q is gone)", ErrAgentNameUnknown, tool)
		}
		return err
	})
	return e, approved, err
}
