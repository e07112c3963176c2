package sealed

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/switchboard-dev/switchboard/store"
)

// Census is what a store holds of secrets: how many are kept in clear
// (by a release before secrets were sealed), and how many are sealed,
// by the id of the key that sealed them.
type Census struct {
	Clear  int
	Sealed map[string]int
}

// Total is the number of sealed values.
func (c Census) Total() int {
	n := 0
	for _, v := range c.Sealed {
		n += v
	}
	return n
}

// KeyIDs are the ids of the keys values are sealed under, sorted.
func (c Census) KeyIDs() []string { return slices.Sorted(maps.Keys(c.Sealed)) }

// Unreadable is the key id Census gives a sealed value it cannot read
// (damaged, or of a later version): no key opens it.
const Unreadable = "unreadable"

func (c *Census) count(v string) {
	id, _, _, ok := store.SealedParts(v)
	switch {
	case !ok && store.IsSealed(v):
		id, ok = Unreadable, true
	case !ok && v != "":
		c.Clear++
	}
	if ok {
		if c.Sealed == nil {
			c.Sealed = map[string]int{}
		}
		c.Sealed[id]++
	}
}

// Scan counts the secrets b holds, without a key: what Switchboard reads
// before it looks for one (a store that holds sealed values needs the
// key they were sealed with; one that holds none may get a new key).
// The MCP token is counted only if one was made.
func Scan(ctx context.Context, b Backend) (Census, error) {
	var c Census
	err := eachSecret(ctx, b, func(_ string, v string) { c.count(v) })
	return c, err
}

// eachSecret calls fn with every secret value b holds (kept sealed or in
// clear) and where it is kept.
func eachSecret(ctx context.Context, b Backend, fn func(ad, v string)) error {
	list, err := b.Summaries(ctx)
	if err != nil {
		return err
	}
	for _, sum := range list {
		srv := sum.Server
		for k, v := range srv.Env {
			fn(store.EnvAD(srv.ID, k), v)
		}
		for k, v := range srv.Headers {
			fn(store.HeaderAD(srv.ID, k), v)
		}
		fn(store.OAuthClientSecretAD(srv.ID), srv.OAuthSettings().ClientSecret)
		grants, err := b.Grants(ctx, srv.ID)
		if err != nil {
			return err
		}
		for _, g := range grants {
			for name, f := range grantFields(&g) {
				fn(store.GrantAD(srv.ID, g.Issuer, name), *f)
			}
		}
	}
	tok, err := peekMCPToken(ctx, b)
	if err != nil {
		return err
	}
	fn(store.MCPTokenAD, tok)
	return nil
}

// peekMCPToken is the MCP token as b keeps it, "" if none was made.
func peekMCPToken(ctx context.Context, b Backend) (string, error) {
	// A swap from a value no token can have changes nothing and tells
	// what is kept.
	return b.SwapMCPToken(ctx, "\x00none", "")
}

// Reseal seals under the current key every secret kept in clear (what an
// earlier release wrote) and, if all is set, every one sealed under
// another key the box opens (a rotation). Each server, each server's
// grants and the MCP token are rewritten in a transaction of their own
// that reads what it rewrites, so a change made meanwhile (an edit, a
// refreshed token, on this replica or another) is never undone, and a
// Reseal cut short leaves each value whole, under one key or the other:
// running it again finishes it. It returns how many values it sealed.
func (s *Store) Reseal(ctx context.Context, all bool) (int, error) {
	stale := func(v string) bool {
		return v != "" && (!store.IsSealed(v) || all && !s.box.Current(v))
	}
	// reseal seals *v again if it is stale, kept where ad says.
	reseal := func(ad string, v *string, n *int) error {
		if !stale(*v) {
			return nil
		}
		open, err := s.open(ad, *v)
		if err != nil {
			return err
		}
		if *v, err = s.box.Seal(ad, open); err != nil {
			return err
		}
		*n++
		return nil
	}
	total := 0
	list, err := s.Backend.Summaries(ctx)
	if err != nil {
		return total, err
	}
	for _, sum := range list {
		id := sum.Server.ID
		// fn may run more than once (a transaction that lost a race runs
		// again): the count is the last run's.
		var sealedNow int
		err := s.Backend.RewriteServer(ctx, id, func(srv *store.Server) (bool, error) {
			n := 0
			for _, m := range []struct {
				values map[string]string
				ad     func(string, string) string
			}{{srv.Env, store.EnvAD}, {srv.Headers, store.HeaderAD}} {
				for k, v := range m.values {
					if err := reseal(m.ad(id, k), &v, &n); err != nil {
						return false, err
					}
					m.values[k] = v
				}
			}
			if srv.OAuth != nil {
				o := *srv.OAuth
				if err := reseal(store.OAuthClientSecretAD(id), &o.ClientSecret, &n); err != nil {
					return false, err
				}
				srv.OAuth = &o
			}
			sealedNow = n
			return n > 0, nil
		})
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return total, err
		}
		total += sealedNow
		sealedNow = 0
		grantsRun := map[string]int{} // by issuer, the last run's count
		err = s.Backend.RewriteGrants(ctx, id, func(g *store.Grant) (bool, error) {
			n := 0
			for name, f := range grantFields(g) {
				if err := reseal(store.GrantAD(id, g.Issuer, name), f, &n); err != nil {
					return false, err
				}
			}
			grantsRun[g.Issuer] = n
			return n > 0, nil
		})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return total, err
		}
		for _, n := range grantsRun {
			total += n
		}
	}
	for {
		tok, err := peekMCPToken(ctx, s.Backend)
		if err != nil || !stale(tok) {
			return total, err
		}
		sealed := tok
		n := 0
		if err := reseal(store.MCPTokenAD, &sealed, &n); err != nil {
			return total, err
		}
		kept, err := s.Backend.SwapMCPToken(ctx, tok, sealed)
		if err != nil {
			return total, err
		}
		if kept == sealed {
			return total + 1, nil
		}
		// Rotated meanwhile: look again.
	}
}
