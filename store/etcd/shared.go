package etcd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchboard-dev/switchboard/store"
)

// What every replica shares beside the catalog: the audit, the MCP
// endpoint's token, the connected clients' tokens, the OAuth grants, the
// profiles and the browser sessions.

// callKey is the key of call seq; the sequence itself is under callseq.
func (db *DB) callKey(seq uint64) string { return db.key(fmt.Sprintf("calls/%016x", seq)) }

// AppendCalls records calls in order, numbering them, and drops the
// oldest beyond store.MaxCalls (numbers are contiguous).
func (db *DB) AppendCalls(ctx context.Context, calls []store.Call) error {
	for len(calls) > callsPerTxn { // a transaction takes 128 operations
		if err := db.appendCalls(ctx, calls[:callsPerTxn]); err != nil {
			return err
		}
		calls = calls[callsPerTxn:]
	}
	return db.appendCalls(ctx, calls)
}

// callsPerTxn is how many calls one transaction appends.
const callsPerTxn = 100

func (db *DB) appendCalls(ctx context.Context, calls []store.Call) error {
	if len(calls) == 0 {
		return nil
	}
	defer db.locked("callseq")()
	return db.update(ctx, func(t *txn) error {
		var seq uint64
		if _, err := t.getJSON(db.key("callseq"), &seq); err != nil {
			return err
		}
		for i := range calls {
			seq++
			calls[i].Seq = seq
			if err := t.put(db.callKey(seq), calls[i]); err != nil {
				return err
			}
		}
		if seq > store.MaxCalls {
			t.ops = append(t.ops, clientv3.OpDelete(db.callKey(0), clientv3.WithRange(db.callKey(seq-store.MaxCalls+1))))
		}
		return t.put(db.key("callseq"), seq)
	})
}

// Calls is the newest calls first, at most limit, and how many are kept.
func (db *DB) Calls(ctx context.Context, limit int) ([]store.Call, int, error) {
	out := []store.Call{}
	var total int
	err := db.view(ctx, func(t *txn) error {
		var seq uint64
		if _, err := t.getJSON(db.key("callseq"), &seq); err != nil {
			return err
		}
		total = int(min(seq, store.MaxCalls))
		if limit <= 0 {
			return nil
		}
		kvs, err := t.list(db.key("calls/"), false, clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(int64(limit)))
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			var c store.Call
			if err := json.Unmarshal(kv.Value, &c); err != nil {
				return fmt.Errorf("%w: decode %s: %v", store.ErrDamaged, kv.Key, err)
			}
			out = append(out, c)
		}
		return nil
	})
	return out, total, err
}

// MCPToken is the MCP endpoint's token, made the first time (by whichever
// replica asks first).
func (db *DB) MCPToken(ctx context.Context) (string, error) {
	var token string
	err := db.update(ctx, func(t *txn) error {
		kv, err := t.get(db.key("mcp_token"))
		if err != nil {
			return err
		}
		if kv != nil {
			token = string(kv.Value)
			return nil
		}
		token = store.NewMCPToken()
		t.ops = append(t.ops, clientv3.OpPut(db.key("mcp_token"), token))
		return nil
	})
	return token, err
}

// RotateMCPToken replaces it with a new random one.
func (db *DB) RotateMCPToken(ctx context.Context) (string, error) {
	token := store.NewMCPToken()
	_, err := db.cli.Put(ctx, db.key("mcp_token"), token)
	if err != nil {
		return "", unavailable(err)
	}
	return token, nil
}

// SwapMCPToken sets the MCP token to v if it is old ("" if none was
// made), and returns the token kept afterwards.
func (db *DB) SwapMCPToken(ctx context.Context, old, v string) (string, error) {
	var kept string
	err := db.update(ctx, func(t *txn) error {
		kv, err := t.get(db.key("mcp_token"))
		if err != nil {
			return err
		}
		kept = ""
		if kv != nil {
			kept = string(kv.Value)
		}
		if kept != old {
			return nil
		}
		kept = v
		t.ops = append(t.ops, clientv3.OpPut(db.key("mcp_token"), v))
		return nil
	})
	return kept, err
}

// RewriteServer lets fn change the server with the id in one
// transaction, as kept (see bolt.DB.RewriteServer); a commit that loses
// a race runs fn again on what won.
func (db *DB) RewriteServer(ctx context.Context, id string, fn func(*store.Server) (bool, error)) error {
	return db.update(ctx, func(t *txn) error {
		st, err := t.loadServer(id)
		if err != nil {
			return err
		}
		changed, err := fn(&st.doc.Server)
		if err != nil || !changed {
			return err
		}
		t.changed(store.Change{ServerID: id})
		return t.save(st, false)
	})
}

// RewriteGrants is RewriteServer for each of the server's grants.
func (db *DB) RewriteGrants(ctx context.Context, id string, fn func(*store.Grant) (bool, error)) error {
	return db.update(ctx, func(t *txn) error {
		return t.eachGrant(id, func(key string, g store.Grant) error {
			changed, err := fn(&g)
			if err != nil || !changed {
				return err
			}
			return t.put(key, g)
		})
	})
}

// eachGrant calls fn with each grant of the server and its key.
func (t *txn) eachGrant(id string, fn func(key string, g store.Grant) error) error {
	kvs, err := t.list(t.db.key("grants/"+id+"/"), false)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		var g store.Grant
		if err := json.Unmarshal(kv.Value, &g); err != nil {
			return fmt.Errorf("%w: decode %s: %v", store.ErrDamaged, kv.Key, err)
		}
		if err := fn(string(kv.Key), g); err != nil {
			return err
		}
	}
	return nil
}

// Grants is every grant of the server.
func (db *DB) Grants(ctx context.Context, id string) ([]store.Grant, error) {
	out := []store.Grant{}
	err := db.view(ctx, func(t *txn) error {
		if _, err := t.loadServer(id); err != nil {
			return err
		}
		return t.eachGrant(id, func(_ string, g store.Grant) error {
			out = append(out, g)
			return nil
		})
	})
	return out, err
}

// grantKey is where a server's grant from issuer is.
func (db *DB) grantKey(id, issuer string) string {
	sum := sha256.Sum256([]byte(issuer))
	return db.key("grants/" + id + "/" + hex.EncodeToString(sum[:16]))
}

// SaveGrant keeps a server's grant from g.Issuer.
func (db *DB) SaveGrant(ctx context.Context, id string, g store.Grant) error {
	return db.update(ctx, func(t *txn) error {
		if _, err := t.loadServer(id); err != nil {
			return err
		}
		t.changed(store.Change{ServerID: id})
		return t.put(db.grantKey(id, g.Issuer), g)
	})
}

// Grant is the server's grant from issuer.
func (db *DB) Grant(ctx context.Context, id, issuer string) (g store.Grant, ok bool, err error) {
	err = db.view(ctx, func(t *txn) error {
		ok, err = t.getJSON(db.grantKey(id, issuer), &g)
		return err
	})
	return g, ok, err
}

// LatestGrant is the server's most recently saved grant.
func (db *DB) LatestGrant(ctx context.Context, id string) (g store.Grant, ok bool, err error) {
	err = db.view(ctx, func(t *txn) error {
		return t.eachGrant(id, func(_ string, each store.Grant) error {
			if !ok || each.SavedAt.After(g.SavedAt) {
				g, ok = each, true
			}
			return nil
		})
	})
	return g, ok, err
}

// DeleteGrants forgets every grant of the server.
func (db *DB) DeleteGrants(ctx context.Context, id string) error {
	return db.update(ctx, func(t *txn) error {
		if _, err := t.loadServer(id); err != nil {
			return err
		}
		t.delPrefix(db.key("grants/" + id + "/"))
		t.changed(store.Change{ServerID: id})
		return nil
	})
}

// AddClientToken keeps a connected client's token. It writes its
// profile's key again, so that a deletion of the profile that did not see
// the token fails its commit.
func (db *DB) AddClientToken(ctx context.Context, ct store.ClientToken) error {
	return db.update(ctx, func(t *txn) error {
		if kv, err := t.get(db.key("clients/" + ct.ID)); err != nil || kv != nil {
			if err == nil {
				err = fmt.Errorf("a client token with id %q exists", ct.ID)
			}
			return err
		}
		if ct.Profile != "" && ct.Profile != store.DefaultProfile {
			kv, err := t.get(db.key("profiles/" + ct.Profile))
			if err != nil {
				return err
			}
			if kv == nil {
				return store.ErrProfileNotFound
			}
			t.ops = append(t.ops, clientv3.OpPut(string(kv.Key), string(kv.Value)))
		}
		return t.put(db.key("clients/"+ct.ID), ct)
	})
}

// ClientTokens is the connected clients' tokens, oldest first.
func (db *DB) ClientTokens(ctx context.Context) ([]store.ClientToken, error) {
	out := []store.ClientToken{}
	err := db.view(ctx, func(t *txn) error {
		var err error
		out, err = t.clients()
		return err
	})
	slices.SortStableFunc(out, func(a, b store.ClientToken) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, err
}

func (t *txn) clients() ([]store.ClientToken, error) {
	out := []store.ClientToken{}
	kvs, err := t.list(t.db.key("clients/"), false)
	if err != nil {
		return nil, err
	}
	for _, kv := range kvs {
		var ct store.ClientToken
		if err := json.Unmarshal(kv.Value, &ct); err != nil {
			return nil, fmt.Errorf("%w: decode %s: %v", store.ErrDamaged, kv.Key, err)
		}
		out = append(out, ct)
	}
	return out, nil
}

// RevokeClientToken forgets one.
func (db *DB) RevokeClientToken(ctx context.Context, id string) error {
	return db.update(ctx, func(t *txn) error {
		kv, err := t.get(db.key("clients/" + id))
		if err != nil {
			return err
		}
		if kv == nil {
			return store.ErrNotFound
		}
		t.del(string(kv.Key))
		return nil
	})
}

// UpdateClientToken changes a connected client's token by fn (see
// store.Store); a commit that loses a race runs fn again on what won.
func (db *DB) UpdateClientToken(ctx context.Context, id string, fn func(*store.ClientToken) error) (store.ClientToken, error) {
	var ct store.ClientToken
	err := db.update(ctx, func(t *txn) error {
		var was store.ClientToken
		ok, err := t.getJSON(db.key("clients/"+id), &was)
		switch {
		case err != nil:
			return err
		case !ok:
			return store.ErrNotFound
		}
		ct = was
		ct.Allowed = append([]store.ClientAllowance(nil), was.Allowed...)
		if err := fn(&ct); err != nil {
			return err
		}
		ct.KeepIdentity(was)
		return t.put(db.key("clients/"+id), ct)
	})
	return ct, err
}

// Profile is the profile with the id.
func (db *DB) Profile(ctx context.Context, id string) (store.Profile, error) {
	if id == store.DefaultProfile {
		return store.Default(), nil
	}
	var p store.Profile
	err := db.view(ctx, func(t *txn) error {
		ok, err := t.getJSON(db.key("profiles/"+id), &p)
		if err == nil && !ok {
			err = store.ErrProfileNotFound
		}
		return err
	})
	return p, err
}

// Profiles is every profile, the default first, then by id.
func (db *DB) Profiles(ctx context.Context) ([]store.Profile, error) {
	out := []store.Profile{store.Default()}
	err := db.view(ctx, func(t *txn) error {
		kvs, err := t.list(db.key("profiles/"), false)
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			var p store.Profile
			if err := json.Unmarshal(kv.Value, &p); err != nil {
				return fmt.Errorf("%w: decode %s: %v", store.ErrDamaged, kv.Key, err)
			}
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// CreateProfile stores a new profile.
func (db *DB) CreateProfile(ctx context.Context, p store.Profile) error {
	if p.ID == store.DefaultProfile {
		return store.ErrProfileBuiltIn
	}
	p.CreatedAt = p.CreatedAt.UTC()
	p.UpdatedAt = p.CreatedAt
	return db.update(ctx, func(t *txn) error {
		if kv, err := t.get(db.key("profiles/" + p.ID)); err != nil || kv != nil {
			if err == nil {
				err = store.ErrProfileExists
			}
			return err
		}
		t.changed(store.Change{Profile: p.ID})
		return t.put(db.key("profiles/"+p.ID), p)
	})
}

// UpdateProfile replaces a profile, keeping its creation time.
func (db *DB) UpdateProfile(ctx context.Context, p store.Profile) error {
	if p.ID == store.DefaultProfile {
		return store.ErrProfileBuiltIn
	}
	p.UpdatedAt = p.UpdatedAt.UTC()
	return db.update(ctx, func(t *txn) error {
		var old store.Profile
		ok, err := t.getJSON(db.key("profiles/"+p.ID), &old)
		if err != nil {
			return err
		}
		if !ok {
			return store.ErrProfileNotFound
		}
		p.CreatedAt = old.CreatedAt
		t.changed(store.Change{Profile: p.ID})
		return t.put(db.key("profiles/"+p.ID), p)
	})
}

// DeleteProfile removes a profile no client token belongs to.
func (db *DB) DeleteProfile(ctx context.Context, id string) error {
	if id == store.DefaultProfile {
		return store.ErrProfileBuiltIn
	}
	return db.update(ctx, func(t *txn) error {
		kv, err := t.get(db.key("profiles/" + id))
		if err != nil {
			return err
		}
		if kv == nil {
			return store.ErrProfileNotFound
		}
		clients, err := t.clients()
		if err != nil {
			return err
		}
		if slices.ContainsFunc(clients, func(ct store.ClientToken) bool { return ct.Profile == id }) {
			return store.ErrProfileInUse
		}
		t.del(string(kv.Key))
		t.changed(store.Change{Profile: id})
		return nil
	})
}

// sessionKey is where the session of hash is.
func (db *DB) sessionKey(hash string) string { return db.key("sessions/" + hash) }

// CreateSession keeps a new session and forgets the expired ones.
func (db *DB) CreateSession(ctx context.Context, s store.BrowserSession) error {
	return db.update(ctx, func(t *txn) error {
		kvs, err := t.list(db.key("sessions/"), false)
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			var old store.BrowserSession
			if err := json.Unmarshal(kv.Value, &old); err != nil || old.Expired(s.CreatedAt) {
				t.del(string(kv.Key))
			}
		}
		return t.put(db.sessionKey(s.Hash), s)
	})
}

// Session is the session kept under hash.
func (db *DB) Session(ctx context.Context, hash string) (store.BrowserSession, error) {
	var s store.BrowserSession
	err := db.view(ctx, func(t *txn) error {
		ok, err := t.getJSON(db.sessionKey(hash), &s)
		if err == nil && !ok {
			err = store.ErrSessionNotFound
		}
		return err
	})
	return s, err
}

// TouchSession records that the session was used at at.
func (db *DB) TouchSession(ctx context.Context, hash string, at time.Time) error {
	return db.update(ctx, func(t *txn) error {
		var s store.BrowserSession
		ok, err := t.getJSON(db.sessionKey(hash), &s)
		if err != nil {
			return err
		}
		if !ok {
			return store.ErrSessionNotFound
		}
		s.LastSeen = at.UTC()
		return t.put(db.sessionKey(hash), s)
	})
}

// DeleteSession forgets one session.
func (db *DB) DeleteSession(ctx context.Context, hash string) error {
	if _, err := db.cli.Delete(ctx, db.sessionKey(hash)); err != nil {
		return unavailable(err)
	}
	return nil
}

// DeleteSessions forgets every session and says how many there were.
func (db *DB) DeleteSessions(ctx context.Context) (int, error) {
	resp, err := db.cli.Delete(ctx, db.key("sessions/"), clientv3.WithPrefix())
	if err != nil {
		return 0, unavailable(err)
	}
	return int(resp.Deleted), nil
}

// mcpSessionKey is where the MCP session of hash is.
func (db *DB) mcpSessionKey(hash string) string { return db.key("mcp-sessions/" + hash) }

// PutMCPSession keeps s and forgets the sessions unused since before.
func (db *DB) PutMCPSession(ctx context.Context, s store.MCPSession, unusedSince time.Time) error {
	return db.update(ctx, func(t *txn) error {
		kvs, err := t.list(db.key("mcp-sessions/"), false)
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			var old store.MCPSession
			if err := json.Unmarshal(kv.Value, &old); err != nil || old.LastUsed.Before(unusedSince) {
				t.del(string(kv.Key))
			}
		}
		return t.put(db.mcpSessionKey(s.Hash), s)
	})
}

// MCPSession is the MCP session kept under hash.
func (db *DB) MCPSession(ctx context.Context, hash string) (store.MCPSession, error) {
	var s store.MCPSession
	err := db.view(ctx, func(t *txn) error {
		ok, err := t.getJSON(db.mcpSessionKey(hash), &s)
		if err == nil && !ok {
			err = store.ErrSessionNotFound
		}
		return err
	})
	return s, err
}

// DeleteMCPSession forgets one MCP session.
func (db *DB) DeleteMCPSession(ctx context.Context, hash string) error {
	if _, err := db.cli.Delete(ctx, db.mcpSessionKey(hash)); err != nil {
		return unavailable(err)
	}
	return nil
}

var _ = strings.TrimPrefix
