package etcd

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchboard-dev/switchboard/store"
)

// Dump reads everything the store holds (see store.Dumper), every key at
// one etcd revision.
func (db *DB) Dump(ctx context.Context) (*store.Dump, error) {
	d := &store.Dump{Servers: []store.ServerDump{}, Calls: []store.Call{}, Clients: []store.ClientToken{}, Profiles: []store.Profile{}, Sessions: []store.BrowserSession{}}
	err := db.view(ctx, func(t *txn) error {
		states, err := t.servers()
		if err != nil {
			return err
		}
		for _, st := range states {
			s, err := t.dumpServer(st)
			if err != nil {
				return fmt.Errorf("server %q: %w", st.id, err)
			}
			d.Servers = append(d.Servers, s)
		}
		if _, err := t.getJSON(db.key("callseq"), &d.CallSeq); err != nil {
			return err
		}
		if err := listJSON(t, db.key("calls/"), &d.Calls); err != nil {
			return err
		}
		kv, err := t.get(db.key("mcp_token"))
		if err != nil {
			return err
		}
		if kv != nil {
			d.MCPToken = string(kv.Value)
		}
		if err := listJSON(t, db.key("clients/"), &d.Clients); err != nil {
			return err
		}
		if err := listJSON(t, db.key("profiles/"), &d.Profiles); err != nil {
			return err
		}
		if err := listJSON(t, db.key("users/"), &d.Users); err != nil {
			return err
		}
		return listJSON(t, db.key("sessions/"), &d.Sessions)
	})
	if err != nil {
		return nil, fmt.Errorf("store: dump %s: %w", db.prefix, err)
	}
	return d, nil
}

// dumpServer reads a server's body, history and grants.
func (t *txn) dumpServer(st *state) (store.ServerDump, error) {
	if err := t.loadBody(st); err != nil {
		return store.ServerDump{}, err
	}
	sum := st.summary()
	s := store.ServerDump{Server: sum.Server, Discovery: sum.Discovery, Tools: st.sortedTools(), Listed: st.sortedListed(),
		Approved: []store.Tool{}, History: []store.HistoryEntry{}, HistorySeq: st.doc.HistorySeq, Grants: []store.Grant{}}
	for _, name := range slices.Sorted(maps.Keys(st.approved)) {
		s.Approved = append(s.Approved, st.approved[name])
	}
	if err := listJSON(t, t.db.key("history/"+st.id+"/"), &s.History); err != nil {
		return s, err
	}
	if err := listJSON(t, t.db.key("grants/"+st.id+"/"), &s.Grants); err != nil {
		return s, err
	}
	// Grants are keyed by their issuer's hash; a dump has them by issuer.
	slices.SortFunc(s.Grants, func(a, b store.Grant) int { return cmp.Compare(a.Issuer, b.Issuer) })
	return s, nil
}

// listJSON appends every value under prefix, in key order, decoded, to
// list.
func listJSON[T any](t *txn, prefix string, list *[]T) error {
	kvs, err := t.list(prefix, false)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		var x T
		if err := json.Unmarshal(kv.Value, &x); err != nil {
			return fmt.Errorf("%w: decode %s: %v", store.ErrDamaged, kv.Key, err)
		}
		*list = append(*list, x)
	}
	return nil
}

// Limits of the transactions Load writes plain keys in, well within
// etcd's defaults (128 operations, 1.5 MiB a request).
const (
	loadOps   = 100
	loadBytes = 1 << 20
)

// Load writes d into the store, which must hold nothing (see
// store.Dumper). The audit, tokens, profiles and sessions go first, in
// transactions of at most loadOps keys and loadBytes; then each server:
// its history and grants, then its key with its body, written as a
// change of the store writes it (the body's chunks first, then the
// server's key in a transaction of its own, on condition that no server
// of its id appeared meanwhile), which every replica hears of as a
// created server.
func (db *DB) Load(ctx context.Context, d *store.Dump) error {
	have, err := db.Dump(ctx)
	if err != nil {
		return err
	}
	if what := have.Holds(); what != "" {
		return fmt.Errorf("%w: %s holds %s", store.ErrNotEmpty, db.prefix, what)
	}
	var b batch
	for _, c := range d.Calls {
		b.put(db.callKey(c.Seq), c)
	}
	if d.CallSeq > 0 {
		b.put(db.key("callseq"), d.CallSeq)
	}
	if d.MCPToken != "" {
		b.ops = append(b.ops, clientv3.OpPut(db.key("mcp_token"), d.MCPToken))
	}
	for _, ct := range d.Clients {
		b.put(db.key("clients/"+ct.ID), ct)
	}
	for _, p := range d.Profiles {
		b.put(db.key("profiles/"+p.ID), p)
	}
	for _, s := range d.Sessions {
		b.put(db.sessionKey(s.Hash), s)
	}
	for _, u := range d.Users {
		b.put(db.userKey(u.ID), u)
	}
	if err := db.write(ctx, &b); err != nil {
		return err
	}
	if len(d.Profiles) > 0 {
		// The profiles are written; every replica hears of them.
		err := db.update(ctx, func(t *txn) error {
			for _, p := range d.Profiles {
				t.changed(store.Change{Profile: p.ID})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, s := range d.Servers {
		if err := db.loadServer(ctx, s); err != nil {
			return fmt.Errorf("store: load server %q into %s: %w", s.Server.ID, db.prefix, err)
		}
	}
	return nil
}

// loadServer writes one server of a dump: its history and grants, then
// its key and body.
func (db *DB) loadServer(ctx context.Context, s store.ServerDump) error {
	id := s.Server.ID
	var b batch
	for _, e := range s.History {
		b.put(db.historyKey(id, e.Seq), e)
	}
	for _, g := range s.Grants {
		b.put(db.grantKey(id, g.Issuer), g)
	}
	if err := db.write(ctx, &b); err != nil {
		return err
	}
	return db.update(ctx, func(t *txn) error {
		kv, err := t.get(db.serverKey(id))
		if err != nil {
			return err
		}
		if kv != nil {
			return fmt.Errorf("%w: server %q appeared meanwhile", store.ErrNotEmpty, id)
		}
		st := &state{id: id, doc: serverDoc{Server: s.Server, Discovery: s.Discovery, HistorySeq: s.HistorySeq},
			tools: map[string]store.ToolEntry{}, approved: map[string]store.Tool{}, listed: map[string]store.ListedEntry{}}
		for _, e := range s.Tools {
			st.tools[e.Name] = e
		}
		for _, tl := range s.Approved {
			st.approved[tl.Name] = tl
		}
		for _, e := range s.Listed {
			st.listed[store.ListedKey(e.Kind, e.Key)] = e
		}
		t.changed(store.Change{ServerID: id, Created: true, Tools: true, History: true})
		if err := t.save(st, true); err != nil {
			return err
		}
		// However many chunks the body has, they are written before the
		// commit, which stays one small transaction.
		chunks := db.chunkPrefix(id)
		var rest []clientv3.Op
		for _, op := range t.ops {
			if op.IsPut() && strings.HasPrefix(string(op.KeyBytes()), chunks) {
				t.early = append(t.early, op)
			} else {
				rest = append(rest, op)
			}
		}
		t.ops = rest
		return nil
	})
}

// batch is plain puts that Load writes in as many transactions as
// etcd's limits need.
type batch struct {
	ops []clientv3.Op
	err error
}

// put adds v, as JSON, under key.
func (b *batch) put(key string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		b.err = cmp.Or(b.err, fmt.Errorf("encode %s: %w", key, err))
		return
	}
	b.ops = append(b.ops, clientv3.OpPut(key, string(data)))
}

// write commits b's puts, at most loadOps and about loadBytes a
// transaction.
func (db *DB) write(ctx context.Context, b *batch) error {
	if b.err != nil {
		return b.err
	}
	for ops := b.ops; len(ops) > 0; {
		n, size := 0, 0
		for n < len(ops) && n < loadOps && (n == 0 || size+len(ops[n].ValueBytes()) <= loadBytes) {
			size += len(ops[n].KeyBytes()) + len(ops[n].ValueBytes())
			n++
		}
		if _, err := db.cli.Txn(ctx).Then(ops[:n]...).Commit(); err != nil {
			return unavailable(err)
		}
		ops = ops[n:]
	}
	return nil
}

// DB can move its content to another backend and back.
var _ store.Dumper = (*DB)(nil)
