package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// CreateServer stores a new server, its launch not confirmed.
func (db *DB) CreateServer(ctx context.Context, s store.Server) error {
	now := time.Now().UTC()
	s.CreatedAt, s.UpdatedAt = now, now
	s.LaunchConfirmed, s.ConfirmedLaunch = "", nil
	s.SavedConfigHash = s.ConfigHash()
	return db.update(ctx, func(t *txn) error {
		if kv, err := t.get(db.serverKey(s.ID)); err != nil || kv != nil {
			if err == nil {
				err = store.ErrExists
			}
			return err
		}
		t.changed(store.Change{ServerID: s.ID, Created: true})
		return t.put(db.serverKey(s.ID), serverDoc{Server: s, Discovery: store.Discovery{ServerID: s.ID, Status: store.StatusNever}})
	})
}

// UpdateServer replaces a server's settings, keeping its creation time,
// its confirmed launch and (unless s has one) its preset.
func (db *DB) UpdateServer(ctx context.Context, s store.Server) error {
	return db.update(ctx, func(t *txn) error {
		st, err := t.loadServer(s.ID)
		if err != nil {
			return err
		}
		old := st.doc.Server
		s.CreatedAt, s.UpdatedAt = old.CreatedAt, time.Now().UTC()
		s.LaunchConfirmed, s.ConfirmedLaunch = old.LaunchConfirmed, old.ConfirmedLaunch
		if s.Preset == "" {
			s.Preset = old.Preset // a preset is changed, never unset
		}
		s.SavedConfigHash = s.ConfigHash()
		st.doc.Server = s
		t.changed(store.Change{ServerID: s.ID})
		return t.save(st, false)
	})
}

// ConfirmLaunch records a person's confirmation of the server's launch.
func (db *DB) ConfirmLaunch(ctx context.Context, id, launchHash, by string) error {
	return db.update(ctx, func(t *txn) error {
		st, err := t.loadServer(id)
		if err != nil {
			return err
		}
		s := &st.doc.Server
		if s.LaunchHash() != launchHash {
			return store.ErrLaunchChanged
		}
		if s.LaunchConfirmed == launchHash && s.ConfirmedLaunch != nil {
			return nil
		}
		s.AcceptHeldArtifact()
		l := store.LaunchOf(*s)
		l.ConfirmedBy, l.ConfirmedAt = by, time.Now().UTC()
		s.LaunchConfirmed, s.ConfirmedLaunch = s.LaunchHash(), &l
		t.changed(store.Change{ServerID: id})
		return t.save(st, false)
	})
}

// DeleteServer removes a server and everything kept about it.
func (db *DB) DeleteServer(ctx context.Context, id string) error {
	return db.update(ctx, func(t *txn) error {
		if _, err := t.loadServer(id); err != nil {
			return err
		}
		t.del(db.serverKey(id))
		for _, p := range []string{"chunks/", "history/", "grants/"} {
			t.delPrefix(db.key(p + id + "/"))
		}
		t.changed(store.Change{ServerID: id, Deleted: true})
		return nil
	})
}

// Server is the server with the id.
func (db *DB) Server(ctx context.Context, id string) (store.Server, error) {
	sum, err := db.Summary(ctx, id)
	return sum.Server, err
}

// Summary is the server with its discovery record.
func (db *DB) Summary(ctx context.Context, id string) (store.Summary, error) {
	var sum store.Summary
	err := db.view(ctx, func(t *txn) error {
		st, err := t.loadServer(id)
		if err == nil {
			sum = st.summary()
		}
		return err
	})
	return sum, err
}

func (st *state) summary() store.Summary {
	d := st.doc.Discovery
	if d.ServerID == "" {
		d.ServerID = st.id
	}
	return store.Summary{Server: st.doc.Server, Discovery: d}
}

// Summaries is every server, by id.
func (db *DB) Summaries(ctx context.Context) ([]store.Summary, error) {
	out := []store.Summary{}
	err := db.view(ctx, func(t *txn) error {
		states, err := t.servers()
		for _, st := range states {
			out = append(out, st.summary())
		}
		return err
	})
	return out, err
}

// servers reads every server's key, by id.
func (t *txn) servers() ([]*state, error) {
	kvs, err := t.list(t.db.key("servers/"), false)
	if err != nil {
		return nil, err
	}
	out := make([]*state, 0, len(kvs))
	for _, kv := range kvs {
		st := &state{id: strings.TrimPrefix(string(kv.Key), t.db.key("servers/")), docRev: kv.ModRevision}
		if err := json.Unmarshal(kv.Value, &st.doc); err != nil {
			return nil, fmt.Errorf("%w: decode server %q: %v", store.ErrDamaged, st.id, err)
		}
		out = append(out, st)
	}
	return out, nil
}

// Tools is the server's tools with their policies, by name.
func (db *DB) Tools(ctx context.Context, id string) ([]store.ToolEntry, error) {
	var out []store.ToolEntry
	err := db.view(ctx, func(t *txn) error {
		st, err := t.load(id)
		if err == nil {
			out = st.sortedTools()
		}
		return err
	})
	return out, err
}

// AllTools is every server's tools, grouped by server in id order.
func (db *DB) AllTools(ctx context.Context) ([]store.ToolEntry, error) {
	out := []store.ToolEntry{}
	_, err := db.Catalog(ctx, func(_ *store.Summary, e store.ToolEntry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// Catalog calls fn with every tool, by server, then name, read at one
// revision, which it returns.
func (db *DB) Catalog(ctx context.Context, fn func(*store.Summary, store.ToolEntry) error) (string, error) {
	return db.eachServer(ctx, func(sum *store.Summary, st *state) error {
		for _, e := range st.sortedTools() {
			if err := fn(sum, e); err != nil {
				return err
			}
		}
		return nil
	})
}

// Offer is Catalog with each tool as the MCP offer reads it. The agent
// definitions are computed as it reads, each once: they are kept by pin
// and agent name until a walk no longer meets them.
func (db *DB) Offer(ctx context.Context, fn func(*store.Summary, store.OfferedTool) error) (string, error) {
	used := map[string]store.OfferedTool{}
	rev, err := db.Catalog(ctx, func(sum *store.Summary, e store.ToolEntry) error {
		key := e.Pin + " " + e.AgentName
		def, ok := db.offers.get(key)
		if !ok {
			def = store.NewOfferedTool(e)
		}
		used[key] = def
		o := store.OfferedOf(e) // its state and policy now
		o.Definition, o.InputSchema, o.SchemaAt = def.Definition, def.InputSchema, def.SchemaAt
		return fn(sum, o)
	})
	if err == nil {
		db.offers.keep(used)
	}
	return rev, err
}

// offerCache holds the agent definitions of the last full Offer walk.
type offerCache struct {
	mu sync.Mutex
	m  map[string]store.OfferedTool
}

func (c *offerCache) get(key string) (store.OfferedTool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.m[key]
	return o, ok
}

func (c *offerCache) keep(m map[string]store.OfferedTool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = m
}

// ListedCatalog calls fn with every server's listed entries.
func (db *DB) ListedCatalog(ctx context.Context, fn func(*store.Summary, store.ListedEntry) error) (string, error) {
	return db.eachServer(ctx, func(sum *store.Summary, st *state) error {
		for _, e := range st.sortedListed() {
			if err := fn(sum, e); err != nil {
				return err
			}
		}
		return nil
	})
}

// eachServer reads the revision and every server with its body at one
// etcd revision, and calls fn with each; it returns the catalog revision.
func (db *DB) eachServer(ctx context.Context, fn func(*store.Summary, *state) error) (string, error) {
	var rev string
	err := db.view(ctx, func(t *txn) error {
		kv, err := t.get(db.key("revision"))
		if err != nil {
			return err
		}
		rev = db.revisionString(0)
		if kv != nil {
			rev = db.revisionString(kv.ModRevision)
		}
		states, err := t.servers()
		if err != nil {
			return err
		}
		for _, st := range states {
			if err := t.loadBody(st); err != nil {
				return err
			}
			sum := st.summary()
			if err := fn(&sum, st); err != nil {
				return err
			}
		}
		return nil
	})
	return rev, err
}

// ToolVersions is a tool with its policy and the definition its policy
// approved (nil if none is kept, or it is of another pin).
func (db *DB) ToolVersions(ctx context.Context, ref store.ToolRef) (store.ToolEntry, *store.Tool, error) {
	var e store.ToolEntry
	var approved *store.Tool
	err := db.view(ctx, func(t *txn) error {
		st, err := t.load(ref.ServerID)
		if err != nil {
			return err
		}
		e, approved, err = st.versions(ref.Tool)
		return err
	})
	return e, approved, err
}

func (st *state) versions(name string) (store.ToolEntry, *store.Tool, error) {
	e, ok := st.tools[name]
	if !ok {
		return e, nil, store.ErrToolNotFound
	}
	if a, ok := st.approved[name]; ok && a.Pin == e.Policy.Pin {
		return e, &a, nil
	}
	return e, nil, nil
}

// ToolByAgentName is ToolVersions for the tool an agent name names: the
// server's id is the name's first part (ids never hold the separator).
func (db *DB) ToolByAgentName(ctx context.Context, agentName string) (store.ToolEntry, *store.Tool, error) {
	serverID, _, ok := strings.Cut(agentName, store.AgentSeparator)
	if !ok {
		return store.ToolEntry{}, nil, store.ErrAgentNameUnknown
	}
	var e store.ToolEntry
	var approved *store.Tool
	err := db.view(ctx, func(t *txn) error {
		st, err := t.load(serverID)
		if err == store.ErrNotFound {
			return store.ErrAgentNameUnknown
		}
		if err != nil {
			return err
		}
		for name, te := range st.tools {
			if te.AgentName == agentName {
				e, approved, err = st.versions(name)
				return err
			}
		}
		return store.ErrAgentNameUnknown
	})
	return e, approved, err
}

// Listed is the server's listed entries, by kind then key.
func (db *DB) Listed(ctx context.Context, id string) ([]store.ListedEntry, error) {
	var out []store.ListedEntry
	err := db.view(ctx, func(t *txn) error {
		st, err := t.load(id)
		if err == nil {
			out = st.sortedListed()
		}
		return err
	})
	return out, err
}

// RecordArtifact records what a verification of the server really ran.
func (db *DB) RecordArtifact(ctx context.Context, id, artifact string) error {
	var held bool
	err := db.changeServer(ctx, id, false, store.Change{ServerID: id}, func(t *txn, st *state) error {
		_, held = store.ApplyArtifact(&st.doc.Server, artifact)
		return nil
	})
	if err == nil && held {
		return store.ErrArtifactHeld
	}
	return err
}
