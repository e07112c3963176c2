package etcd

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchboard-dev/switchboard/store"
)

// A server's data is its servers/ key (serverDoc: the server, its
// discovery record, and its body's chunk names) and its body: every tool
// with its policy, every definition a policy approved, and every
// resource, template and prompt, as records sorted by kind and key, cut
// into chunks under chunks/<id>/. Where a chunk ends depends only on the
// keys of its records (a record whose key hashes to a multiple of
// chunkEvery ends one) or on its size reaching chunkBytes, so that a
// change of one tool's policy rewrites the one chunk that holds it and a
// server of 1,000 tools is a few dozen keys. A chunk, once written, never
// changes: its name is new each time (its content's hash and a random
// suffix), so each replica caches chunks by name for good.

const (
	chunkEvery = 32
	chunkBytes = 192 << 10
	// inlineBytes is how much of new chunks a commit carries itself;
	// beyond it they are written before the commit (see txn.early).
	inlineBytes = 512 << 10
	// chunkCacheBytes bounds each replica's cache of decoded chunks.
	chunkCacheBytes = 64 << 20
)

// serverDoc is what servers/<id> holds.
type serverDoc struct {
	Server    store.Server    `json:"server"`
	Discovery store.Discovery `json:"discovery"`
	Chunks    []chunkRef      `json:"chunks,omitempty"`
	// HistorySeq is the number of the server's newest history entry.
	HistorySeq uint64 `json:"history_seq,omitempty"`
}

// chunkRef names one chunk of a body, with the hash of its content.
type chunkRef struct {
	Name string `json:"name"`
	Sum  string `json:"sum"`
}

// record is one entry of a body.
type record struct {
	Kind   string               `json:"k"` // recTool, recApproved or recListed
	Key    string               `json:"n"`
	Tool   *store.Tool          `json:"tool,omitempty"`
	Policy *store.PolicySetting `json:"policy,omitempty"`
	Listed *store.ListedEntry   `json:"listed,omitempty"`
}

const (
	recTool     = "t"
	recApproved = "a"
	recListed   = "l"
)

// state is one server as a change reads and writes it.
type state struct {
	id     string
	doc    serverDoc
	docRev int64 // the servers/ key's mod revision
	// body, read by loadBody.
	tools    map[string]store.ToolEntry
	approved map[string]store.Tool
	listed   map[string]store.ListedEntry // by store.ListedKey
	// stored is the server's chunk keys, with their create revisions
	// (for a change only).
	stored []*mvccpb.KeyValue
}

func (db *DB) serverKey(id string) string { return db.key("servers/" + id) }
func (db *DB) chunkPrefix(id string) string {
	return db.key("chunks/" + id + "/")
}

// loadServer reads a server's key (ErrNotFound if there is none).
func (t *txn) loadServer(id string) (*state, error) {
	kv, err := t.get(t.db.serverKey(id))
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, store.ErrNotFound
	}
	st := &state{id: id, docRev: kv.ModRevision}
	if err := json.Unmarshal(kv.Value, &st.doc); err != nil {
		return nil, fmt.Errorf("%w: decode server %q: %v", store.ErrDamaged, id, err)
	}
	return st, nil
}

// load reads a server with its body.
func (t *txn) load(id string) (*state, error) {
	st, err := t.loadServer(id)
	if err != nil {
		return nil, err
	}
	return st, t.loadBody(st)
}

// loadBody reads the server's body from its chunks: from the cache, or
// all at once from etcd when one is missing there. A change also reads
// the names of every chunk stored, to delete those no longer used.
func (t *txn) loadBody(st *state) error {
	st.tools, st.approved, st.listed = map[string]store.ToolEntry{}, map[string]store.Tool{}, map[string]store.ListedEntry{}
	chunks := make([][]record, len(st.doc.Chunks))
	missing := false
	for i, ref := range st.doc.Chunks {
		recs, ok := t.db.cache.get(ref.Name)
		if !ok {
			missing = true
			break
		}
		chunks[i] = recs
	}
	if missing || t.guards != nil {
		kvs, err := t.list(t.db.chunkPrefix(st.id), !missing)
		if err != nil {
			return err
		}
		st.stored = kvs
		if missing {
			byName := map[string][]byte{}
			for _, kv := range kvs {
				byName[strings.TrimPrefix(string(kv.Key), t.db.chunkPrefix(st.id))] = kv.Value
			}
			for i, ref := range st.doc.Chunks {
				v, ok := byName[ref.Name]
				if !ok {
					return fmt.Errorf("%w: server %q names chunk %q, which is not there", store.ErrDamaged, st.id, ref.Name)
				}
				var recs []record
				if err := json.Unmarshal(v, &recs); err != nil {
					return fmt.Errorf("%w: decode chunk %q of server %q: %v", store.ErrDamaged, ref.Name, st.id, err)
				}
				t.db.cache.put(ref.Name, recs, len(v))
				chunks[i] = recs
			}
		}
	}
	for _, recs := range chunks {
		for _, r := range recs {
			switch {
			case r.Kind == recTool && r.Tool != nil:
				e := store.ToolEntry{Tool: *r.Tool}
				if r.Policy != nil {
					e.Policy = *r.Policy
				}
				e.Effective = store.EffectivePolicy(e.Tool, e.Policy)
				st.tools[r.Key] = e
			case r.Kind == recApproved && r.Tool != nil:
				st.approved[r.Key] = *r.Tool
			case r.Kind == recListed && r.Listed != nil:
				e := *r.Listed
				e.Effective = store.EffectivePolicy(store.Tool{State: e.State}, e.Policy)
				st.listed[r.Key] = e
			}
		}
	}
	return nil
}

// sortedTools is the server's tools by name.
func (st *state) sortedTools() []store.ToolEntry {
	out := make([]store.ToolEntry, 0, len(st.tools))
	for _, name := range slices.Sorted(maps.Keys(st.tools)) {
		out = append(out, st.tools[name])
	}
	return out
}

// sortedListed is the server's listed entries by kind, then key.
func (st *state) sortedListed() []store.ListedEntry {
	out := make([]store.ListedEntry, 0, len(st.listed))
	for _, k := range slices.Sorted(maps.Keys(st.listed)) {
		out = append(out, st.listed[k])
	}
	return out
}

// countChanged is how many tools and entries await a person's review.
func (st *state) countChanged() int {
	n := 0
	for _, e := range st.tools {
		if e.State == store.ToolChanged {
			n++
		}
	}
	for _, e := range st.listed {
		if e.State == store.ToolChanged {
			n++
		}
	}
	return n
}

// records is the body as sorted records.
func (st *state) records() []record {
	out := make([]record, 0, len(st.tools)+len(st.approved)+len(st.listed))
	for _, name := range slices.Sorted(maps.Keys(st.approved)) {
		tl := st.approved[name]
		out = append(out, record{Kind: recApproved, Key: name, Tool: &tl})
	}
	for _, k := range slices.Sorted(maps.Keys(st.listed)) {
		e := st.listed[k]
		out = append(out, record{Kind: recListed, Key: k, Listed: &e})
	}
	for _, name := range slices.Sorted(maps.Keys(st.tools)) {
		e := st.tools[name]
		tl, p := e.Tool, e.Policy
		r := record{Kind: recTool, Key: name, Tool: &tl}
		if p != (store.PolicySetting{}) {
			r.Policy = &p
		}
		out = append(out, r)
	}
	return out
}

// ends reports whether a chunk ends after r by its key alone.
func ends(r record) bool {
	h := fnv.New32a()
	h.Write([]byte(r.Kind))
	h.Write([]byte{0})
	h.Write([]byte(r.Key))
	return h.Sum32()%chunkEvery == chunkEvery-1
}

// save writes the server's key, and its body when withBody: the chunks
// whose content is new, and the deletion of every stored chunk the
// server no longer names that no other change can still be writing for
// it (one named before, or created before the server's key was last
// written: a change that wrote it read an older key, so it cannot
// commit). The discovery record's count of changes is the body's.
func (t *txn) save(st *state, withBody bool) error {
	if withBody {
		st.doc.Discovery.Changed = st.countChanged()
		old := map[string]string{} // sum → name
		for _, ref := range st.doc.Chunks {
			old[ref.Sum] = ref.Name
		}
		var refs []chunkRef
		inline := 0
		var pending []clientv3.Op
		var cur []record
		size := 0
		flush := func() error {
			if len(cur) == 0 {
				return nil
			}
			b, err := json.Marshal(cur)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			sum := hex.EncodeToString(s[:16])
			name, ok := old[sum]
			if !ok {
				var nonce [4]byte
				rand.Read(nonce[:])
				name = sum + "-" + hex.EncodeToString(nonce[:])
				pending = append(pending, clientv3.OpPut(t.db.chunkPrefix(st.id)+name, string(b)))
				inline += len(b)
				t.db.cache.put(name, cur, len(b))
			}
			refs = append(refs, chunkRef{Name: name, Sum: sum})
			cur, size = nil, 0
			return nil
		}
		for _, r := range st.records() {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			cur = append(cur, r)
			size += len(b)
			if ends(r) || size >= chunkBytes {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		if inline > inlineBytes {
			t.early = append(t.early, pending...)
		} else {
			t.ops = append(t.ops, pending...)
		}
		named := map[string]bool{}
		for _, ref := range refs {
			named[ref.Name] = true
		}
		wasNamed := map[string]bool{}
		for _, ref := range st.doc.Chunks {
			wasNamed[ref.Name] = true
		}
		for _, kv := range st.stored {
			name := strings.TrimPrefix(string(kv.Key), t.db.chunkPrefix(st.id))
			if !named[name] && (wasNamed[name] || kv.CreateRevision < st.docRev) {
				t.del(string(kv.Key))
			}
		}
		st.doc.Chunks = refs
	}
	return t.put(t.db.serverKey(st.id), st.doc)
}

// chunkCache holds decoded chunks by name, up to a number of bytes (of
// their JSON), dropping the least recently used.
type chunkCache struct {
	mu    sync.Mutex
	max   int
	size  int
	tick  uint64
	items map[string]*cached
}

type cached struct {
	recs []record
	size int
	used uint64
}

func newChunkCache(max int) chunkCache { return chunkCache{max: max, items: map[string]*cached{}} }

func (c *chunkCache) get(name string) ([]record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.items[name]
	if !ok {
		return nil, false
	}
	c.tick++
	it.used = c.tick
	return it.recs, true
}

func (c *chunkCache) put(name string, recs []record, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[name]; ok || size > c.max {
		return
	}
	c.tick++
	c.items[name] = &cached{recs: recs, size: size, used: c.tick}
	c.size += size
	for c.size > c.max {
		oldest := ""
		var at uint64
		for n, it := range c.items {
			if oldest == "" || it.used < at {
				oldest, at = n, it.used
			}
		}
		c.size -= c.items[oldest].size
		delete(c.items, oldest)
	}
}
