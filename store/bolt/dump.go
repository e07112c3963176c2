package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// Dump reads everything the file holds (see store.Dumper) in one read
// transaction. Failures RecordFailure could not write yet are not part
// of it: they are not in the file.
func (db *DB) Dump(ctx context.Context) (*store.Dump, error) {
	var d *store.Dump
	err := db.view(func(tx *bbolt.Tx) error {
		var err error
		d, err = dumpTx(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: dump %s: %w", db.path, err)
	}
	return d, nil
}

// dumpTx reads everything the file holds, in the order store.Dump
// gives: buckets are ordered by key, which is that order.
func dumpTx(tx *bbolt.Tx) (*store.Dump, error) {
	d := &store.Dump{Servers: []store.ServerDump{}, Calls: []store.Call{}, Clients: []store.ClientToken{}, Profiles: []store.Profile{}, Sessions: []store.BrowserSession{}}
	err := tx.Bucket(bucketServers).ForEach(func(k, _ []byte) error {
		s, err := dumpServer(tx, k)
		if err != nil {
			return fmt.Errorf("server %q: %w", k, err)
		}
		d.Servers = append(d.Servers, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	audit := tx.Bucket(bucketAudit)
	d.CallSeq = audit.Sequence()
	if err := eachJSON(audit, &d.Calls); err != nil {
		return nil, err
	}
	d.MCPToken = string(tx.Bucket(bucketMeta).Get(keyMCPToken))
	if b := tx.Bucket(bucketClients); b != nil {
		if err := eachJSON(b, &d.Clients); err != nil {
			return nil, err
		}
	}
	if err := eachJSON(tx.Bucket(bucketProfiles), &d.Profiles); err != nil {
		return nil, err
	}
	if err := eachJSON(tx.Bucket(bucketSessions), &d.Sessions); err != nil {
		return nil, err
	}
	if b := tx.Bucket(bucketUsers); b != nil {
		if err := eachJSON(b, &d.Users); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// dumpServer reads one server with everything kept about it.
func dumpServer(tx *bbolt.Tx, key []byte) (store.ServerDump, error) {
	sum, err := readSummary(tx, key)
	if err != nil {
		return store.ServerDump{}, err
	}
	s := store.ServerDump{Server: sum.Server, Discovery: sum.Discovery, Approved: []store.Tool{}, Listed: []store.ListedEntry{}, History: []store.HistoryEntry{}, Grants: []store.Grant{}}
	if s.Tools, err = readTools(tx, key); err != nil {
		return s, err
	}
	if b := tx.Bucket(bucketApproved).Bucket(key); b != nil {
		if err := eachJSON(b, &s.Approved); err != nil {
			return s, err
		}
	}
	err = eachListed(tx, key, func(e store.ListedEntry) error {
		s.Listed = append(s.Listed, e)
		return nil
	})
	if err != nil {
		return s, err
	}
	if b := tx.Bucket(bucketHistory).Bucket(key); b != nil {
		s.HistorySeq = b.Sequence()
		if err := eachJSON(b, &s.History); err != nil {
			return s, err
		}
	}
	if b := tx.Bucket(bucketGrants).Bucket(key); b != nil {
		if err := eachJSON(b, &s.Grants); err != nil {
			return s, err
		}
	}
	return s, nil
}

// eachJSON appends every value of b, in key order, decoded, to list.
func eachJSON[T any](b *bbolt.Bucket, list *[]T) error {
	return b.ForEach(func(k, v []byte) error {
		var x T
		if err := json.Unmarshal(v, &x); err != nil {
			return fmt.Errorf("decode %q: %w", k, err)
		}
		*list = append(*list, x)
		return nil
	})
}

// Load writes d into the file, which must hold nothing (see
// store.Dumper), in one transaction that moves the revision once and
// announces every server and profile as created.
func (db *DB) Load(ctx context.Context, d *store.Dump) error {
	err := db.updateMany(ctx, func(tx *bbolt.Tx) ([]store.Change, error) {
		have, err := dumpTx(tx)
		if err != nil {
			return nil, err
		}
		if what := have.Holds(); what != "" {
			return nil, fmt.Errorf("%w: %s holds %s", store.ErrNotEmpty, db.path, what)
		}
		var changes []store.Change
		for _, s := range d.Servers {
			if err := loadServer(tx, s); err != nil {
				return nil, fmt.Errorf("server %q: %w", s.Server.ID, err)
			}
			changes = append(changes, store.Change{ServerID: s.Server.ID, Created: true, Tools: true, History: true})
		}
		audit := tx.Bucket(bucketAudit)
		for _, c := range d.Calls {
			if err := putJSON(audit, seqKey(c.Seq), c); err != nil {
				return nil, err
			}
		}
		if err := audit.SetSequence(d.CallSeq); err != nil {
			return nil, err
		}
		if d.MCPToken != "" {
			if err := tx.Bucket(bucketMeta).Put(keyMCPToken, []byte(d.MCPToken)); err != nil {
				return nil, err
			}
		}
		clients, err := tx.CreateBucketIfNotExists(bucketClients)
		if err != nil {
			return nil, err
		}
		for _, ct := range d.Clients {
			if err := putJSON(clients, []byte(ct.ID), ct); err != nil {
				return nil, err
			}
		}
		for _, p := range d.Profiles {
			if err := putJSON(tx.Bucket(bucketProfiles), []byte(p.ID), p); err != nil {
				return nil, err
			}
			changes = append(changes, store.Change{Profile: p.ID})
		}
		for _, s := range d.Sessions {
			if err := putJSON(tx.Bucket(bucketSessions), []byte(s.Hash), s); err != nil {
				return nil, err
			}
		}
		if len(d.Users) > 0 {
			users, err := tx.CreateBucketIfNotExists(bucketUsers)
			if err != nil {
				return nil, err
			}
			for _, u := range d.Users {
				if err := putJSON(users, []byte(u.ID), u); err != nil {
					return nil, err
				}
			}
		}
		return changes, nil
	})
	var we *writeError
	if err != nil && !errors.Is(err, store.ErrNotEmpty) && !errors.As(err, &we) {
		err = fmt.Errorf("store: load into %s: %w", db.path, err)
	}
	return err
}

// loadServer writes one server with everything kept about it, as the
// store's own changes would have: its tools' agent names recorded, its
// history's sequence where it was.
func loadServer(tx *bbolt.Tx, s store.ServerDump) error {
	key := []byte(s.Server.ID)
	if err := putJSON(tx.Bucket(bucketServers), key, s.Server); err != nil {
		return err
	}
	if err := putJSON(tx.Bucket(bucketDiscovery), key, s.Discovery); err != nil {
		return err
	}
	nested := func(name []byte) (*bbolt.Bucket, error) { return tx.Bucket(name).CreateBucketIfNotExists(key) }
	if len(s.Tools) > 0 {
		tb, err := nested(bucketTools)
		if err != nil {
			return err
		}
		pb, err := nested(bucketPolicies)
		if err != nil {
			return err
		}
		names, err := nested(bucketAgentNames)
		if err != nil {
			return err
		}
		for _, e := range s.Tools {
			if err := putTool(tx, key, tb, e.Tool); err != nil {
				return err
			}
			if e.Policy != (store.PolicySetting{}) {
				if err := putJSON(pb, []byte(e.Name), e.Policy); err != nil {
					return err
				}
			}
			if e.AgentName != "" {
				if err := names.Put([]byte(e.AgentName), []byte(e.Name)); err != nil {
					return err
				}
			}
		}
	}
	if err := putEach(tx, bucketApproved, key, s.Approved, func(t store.Tool) []byte { return []byte(t.Name) }); err != nil {
		return err
	}
	if err := putEach(tx, bucketListed, key, s.Listed, func(e store.ListedEntry) []byte { return []byte(store.ListedKey(e.Kind, e.Key)) }); err != nil {
		return err
	}
	if err := putEach(tx, bucketHistory, key, s.History, func(e store.HistoryEntry) []byte { return seqKey(e.Seq) }); err != nil {
		return err
	}
	if s.HistorySeq > 0 {
		b, err := tx.Bucket(bucketHistory).CreateBucketIfNotExists(key)
		if err != nil {
			return err
		}
		if err := b.SetSequence(s.HistorySeq); err != nil {
			return err
		}
	}
	return putEach(tx, bucketGrants, key, s.Grants, func(g store.Grant) []byte { return []byte(g.Issuer) })
}

// putEach writes items as JSON, each under its key, into the server's
// nested bucket of the per-server bucket name, made if there are any.
func putEach[T any](tx *bbolt.Tx, name, server []byte, items []T, key func(T) []byte) error {
	if len(items) == 0 {
		return nil
	}
	b, err := tx.Bucket(name).CreateBucketIfNotExists(server)
	if err != nil {
		return err
	}
	for _, x := range items {
		if err := putJSON(b, key(x), x); err != nil {
			return err
		}
	}
	return nil
}

// DB can move its content to another backend and back.
var _ store.Dumper = (*DB)(nil)
