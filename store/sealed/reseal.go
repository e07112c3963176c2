package sealed

import (
	"context"
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

func (c *Census) count(v string) {
	switch id, _, _, ok := store.SealedParts(v); {
	case ok:
		if c.Sealed == nil {
			c.Sealed = map[string]int{}
		}
		c.Sealed[id]++
	case v != "":
		c.Clear++
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
// another key the box opens (a rotation). Each server, grant and the MCP
// token is rewritten in its own change, so a Reseal cut short leaves
// each value whole, under one key or the other, and running it again
// finishes it. It returns how many values it sealed.
func (s *Store) Reseal(ctx context.Context, all bool) (int, error) {
	stale := func(v string) bool {
		return v != "" && (!store.IsSealed(v) || all && !s.box.Current(v))
	}
	n := 0
	list, err := s.Backend.Summaries(ctx)
	if err != nil {
		return n, err
	}
	for _, sum := range list {
		srv := sum.Server
		count := 0
		for _, v := range srv.Env {
			count += b2i(stale(v))
		}
		for _, v := range srv.Headers {
			count += b2i(stale(v))
		}
		count += b2i(stale(srv.OAuthSettings().ClientSecret))
		if count > 0 {
			open, err := s.openServer(srv)
			if err != nil {
				return n, err
			}
			if err := s.UpdateServer(ctx, open); err != nil {
				return n, err
			}
			n += count
		}
		grants, err := s.Backend.Grants(ctx, srv.ID)
		if err != nil {
			return n, err
		}
		for _, g := range grants {
			count := 0
			for _, f := range grantFields(&g) {
				count += b2i(stale(*f))
			}
			if count == 0 {
				continue
			}
			open, err := s.openGrant(srv.ID, g)
			if err != nil {
				return n, err
			}
			if err := s.SaveGrant(ctx, srv.ID, open); err != nil {
				return n, err
			}
			n += count
		}
	}
	tok, err := peekMCPToken(ctx, s.Backend)
	if err != nil || !stale(tok) {
		return n, err
	}
	open, err := s.open(store.MCPTokenAD, tok)
	if err != nil {
		return n, err
	}
	sealed, err := s.box.Seal(store.MCPTokenAD, open)
	if err != nil {
		return n, err
	}
	if _, err := s.Backend.SwapMCPToken(ctx, tok, sealed); err != nil {
		return n, err
	}
	return n + 1, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
