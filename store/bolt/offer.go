package bolt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// bucketOffers holds, per server, each tool as the MCP offer reads it
// (schema 6): written with the tool (see putTool), so that building the
// offer reads a small record and lends a definition computed once,
// instead of decoding every tool's definition as received and making it
// canonical again at every start.
//
// A record is a header — what the offer reads of the tool, and where its
// input schema is in its agent definition — then the agent definition
// itself (see store.AgentDefinition), not encoded again. The header is
// binary, for a read that decodes nothing through reflection: the version
// byte offerRecordV2, then the agent name, title, description, pin,
// state, the problems (a count, then each) and the needs (the same), each
// string a uvarint length and its bytes, then the input schema's start
// and end in the definition (uvarints). A tool without a definition to
// offer has an empty one. A record of version 1 (offerRecordV1) has no
// needs: it was written before a tool could have any, and is read as
// having none.
var bucketOffers = []byte("offers")

const (
	offerRecordV1 = 1
	offerRecordV2 = 2 // with Needs
)

// putTool stores a tool of the server whose key is server in tb, that
// server's tools bucket, and its offer record.
func putTool(tx *bbolt.Tx, server []byte, tb *bbolt.Bucket, t store.Tool) error {
	tb.FillPercent = toolFill
	if err := putJSON(tb, []byte(t.Name), t); err != nil {
		return err
	}
	ob, err := tx.Bucket(bucketOffers).CreateBucketIfNotExists(server)
	if err != nil {
		return err
	}
	ob.FillPercent = toolFill
	return ob.Put([]byte(t.Name), offerRecord(t))
}

// toolFill is how full the pages of a server's tools, offers and approved
// definitions are made when they split. A verification rewrites a
// server's tools in one transaction, in name order, so bbolt's default
// (half full, for random inserts) would leave half of each page of these
// kilobyte records empty: a file twice the size, read twice over by each
// start's seal and by each whole-catalog scan.
const toolFill = 0.9

// offerRecord encodes t's offer record.
func offerRecord(t store.Tool) []byte {
	def, schema, err := store.AgentDefinition(t)
	if err != nil {
		def, schema = nil, [2]int{}
	}
	b := make([]byte, 0, 64+len(t.AgentName)+len(t.Title)+len(t.Description)+len(t.Pin)+len(def))
	b = append(b, offerRecordV2)
	for _, f := range []string{t.AgentName, t.Title, t.Description, t.Pin, string(t.State)} {
		b = appendString(b, f)
	}
	for _, list := range [][]string{t.Problems, t.Needs} {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, s := range list {
			b = appendString(b, s)
		}
	}
	b = binary.AppendUvarint(b, uint64(schema[0]))
	b = binary.AppendUvarint(b, uint64(schema[1]))
	return append(b, def...)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// offerReader reads an offer record's header; err is set by the first
// read past its end, and every read after it gives nothing.
type offerReader struct {
	b   []byte
	err error
}

var errOfferRecord = errors.New("the record ends inside its header")

func (r *offerReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err, r.b = cmp.Or(r.err, errOfferRecord), nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *offerReader) string() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err, r.b = cmp.Or(r.err, errOfferRecord), nil
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// readOfferRecord decodes the offer record v of the tool name of the
// server id. The definition and input schema it returns are v's own
// bytes: valid only as long as the transaction v was read in.
func readOfferRecord(id string, name, v []byte) (store.OfferedTool, error) {
	if len(v) == 0 || v[0] != offerRecordV1 && v[0] != offerRecordV2 {
		return store.OfferedTool{}, errors.New("not an offer record of version 1 or 2")
	}
	r := offerReader{b: v[1:]}
	o := store.OfferedTool{ServerID: id, Name: string(name), AgentName: r.string(), Title: r.string(), Description: r.string(),
		Pin: r.string(), State: store.ToolState(r.string())}
	lists := []*[]string{&o.Problems}
	if v[0] == offerRecordV2 {
		lists = append(lists, &o.Needs)
	}
	for _, list := range lists {
		n := r.uvarint()
		if n > uint64(len(r.b)) { // each string takes a byte at least
			return store.OfferedTool{}, errOfferRecord
		}
		for range n {
			*list = append(*list, r.string())
		}
	}
	from, to := r.uvarint(), r.uvarint()
	if r.err != nil {
		return store.OfferedTool{}, r.err
	}
	def := r.b
	if len(def) == 0 {
		return o, nil
	}
	if from > to || to > uint64(len(def)) {
		return store.OfferedTool{}, fmt.Errorf("input schema at [%d, %d) of a %d-byte definition", from, to, len(def))
	}
	o.Definition, o.InputSchema, o.SchemaAt = def, def[from:to:to], [2]int{int(from), int(to)}
	return o, nil
}

// checkOfferRecord is the integrity check's decoding of an offer record:
// its definition and input schema must be JSON too.
func checkOfferRecord(v []byte) error {
	o, err := readOfferRecord("", nil, v)
	switch {
	case err != nil:
		return err
	case o.Definition != nil && !json.Valid(o.Definition):
		return errors.New("its agent definition is not JSON")
	case o.Definition != nil && !json.Valid(o.InputSchema):
		return errors.New("its input schema is not JSON")
	}
	return nil
}

// Offer is Catalog as the MCP offer needs it (see store.Catalog): each
// tool from its offer record, with its policy. The definitions fn gets
// are the file's own bytes, valid until fn returns.
func (db *DB) Offer(ctx context.Context, fn func(*store.Summary, store.OfferedTool) error) (string, error) {
	return db.eachServer(func(tx *bbolt.Tx, k []byte, sum *store.Summary) error {
		ob := tx.Bucket(bucketOffers).Bucket(k)
		if ob == nil {
			return nil
		}
		policies := newKeyWalk(tx.Bucket(bucketPolicies).Bucket(k))
		return ob.ForEach(func(name, v []byte) error {
			o, err := readOfferRecord(sum.Server.ID, name, v)
			if err != nil {
				return fmt.Errorf("decode the offer of tool %q: %w", name, err)
			}
			if p := policies.get(name); p != nil {
				if o.Policy, err = readPolicyHead(p); err != nil {
					return fmt.Errorf("decode the policy of tool %q: %w", name, err)
				}
			}
			o.Effective = store.EffectivePolicy(store.Tool{State: o.State}, o.Policy)
			return fn(sum, o)
		})
	})
}

// keyWalk reads a bucket's values for keys asked in ascending order, as
// a walk of another bucket by the same keys asks them: a cursor moving
// forward alongside it, not a search from the root for each key.
type keyWalk struct {
	c    *bbolt.Cursor
	k, v []byte
}

// newKeyWalk walks b, which may be nil (then every get is nil).
func newKeyWalk(b *bbolt.Bucket) *keyWalk {
	w := &keyWalk{}
	if b != nil {
		w.c = b.Cursor()
		w.k, w.v = w.c.First()
	}
	return w
}

// get is the value of key (nil if b has none); key must not be below
// the key of the previous get.
func (w *keyWalk) get(key []byte) []byte {
	for w.k != nil && bytes.Compare(w.k, key) < 0 {
		w.k, w.v = w.c.Next()
	}
	if w.k != nil && bytes.Equal(w.k, key) {
		return w.v
	}
	return nil
}

// readPolicyHead reads the policy and the pin of a policy record (a
// store.PolicySetting as putJSON writes it) without decoding the rest:
// Marshal writes them first, as plain strings (a policy is a word, a pin
// hex). A record written otherwise is decoded in full.
func readPolicyHead(v []byte) (store.PolicySetting, error) {
	rest, ok := bytes.CutPrefix(v, []byte(`{"policy":"`))
	policy, rest, ok1 := bytes.Cut(rest, []byte(`","pin":"`))
	pin, _, ok2 := bytes.Cut(rest, []byte(`"`))
	if ok && ok1 && ok2 && bytes.IndexByte(policy, '\\') < 0 && bytes.IndexByte(pin, '\\') < 0 {
		return store.PolicySetting{Policy: store.Policy(policy), Pin: string(pin)}, nil
	}
	var p store.PolicySetting
	err := json.Unmarshal(v, &p)
	return store.PolicySetting{Policy: p.Policy, Pin: p.Pin}, err
}

// migrateOffers writes the offer record of every stored tool (schema 6).
func migrateOffers(tx *bbolt.Tx) error {
	return tx.Bucket(bucketTools).ForEachBucket(func(server []byte) error {
		ob, err := tx.Bucket(bucketOffers).CreateBucketIfNotExists(server)
		if err != nil {
			return err
		}
		return tx.Bucket(bucketTools).Bucket(server).ForEach(func(k, v []byte) error {
			var t store.Tool
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("decode tool %q: %w", k, err)
			}
			return ob.Put(k, offerRecord(t))
		})
	})
}
