// Package sealed keeps a store's secrets sealed at rest (see
// store.Sealer): it wraps a backend so that every secret value goes in
// sealed and comes out open. The backends keep sealed values as opaque
// strings; the whole program sees open ones, as before. A Dump or a
// Backup of the backend, what migrate carries and what etcd holds are
// ciphertext.
//
// What is sealed: a server's env and header values and OAuth client
// secret, a grant's access and refresh tokens and client secret, and the
// MCP endpoint's token. Each is bound to its place (store.EnvAD …), so a
// value moved to another record does not open.
package sealed

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/switchboard-dev/switchboard/store"
)

// Backend is a store whose secrets this package seals.
type Backend interface {
	store.Store
	// Grants is every grant of the server, by issuer.
	Grants(ctx context.Context, id string) ([]store.Grant, error)
	// SwapMCPToken sets the MCP token to v if it is old ("" if there is
	// none), and returns the token the store holds afterwards.
	SwapMCPToken(ctx context.Context, old, v string) (string, error)
	// RewriteServer lets fn change the server, as kept, in one
	// transaction: saved only if fn says it changed something, its times
	// and hashes as they were. RewriteGrants does the same for each of
	// the server's grants.
	RewriteServer(ctx context.Context, id string, fn func(*store.Server) (bool, error)) error
	RewriteGrants(ctx context.Context, id string, fn func(*store.Grant) (bool, error)) error
}

// Store is a Backend with its secrets sealed by a store.Sealer.
type Store struct {
	Backend
	box store.Sealer
}

// New wraps b.
func New(b Backend, box store.Sealer) *Store { return &Store{Backend: b, box: box} }

// Store is s as the program uses it: a store.Backuper too when its
// backend is one (a backup is the backend's copy, its secrets sealed).
func (s *Store) Store() store.Store {
	if bk, ok := s.Backend.(store.Backuper); ok {
		return &backuper{Store: s, b: bk}
	}
	return s
}

// backuper is a Store whose backend can be backed up.
type backuper struct {
	*Store
	b store.Backuper
}

func (s *backuper) Backup(ctx context.Context, w io.Writer) (int64, error) { return s.b.Backup(ctx, w) }

// Unwrap is the backend.
func (s *Store) Unwrap() Backend { return s.Backend }

// ErrSecret is the error of a secret that does not open (another key,
// another place, damage), matched with errors.Is.
var ErrSecret = errors.New("a secret in the store does not open")

func (s *Store) openErr(err error) error { return fmt.Errorf("%w: %v", ErrSecret, err) }

// sealMap seals each value of m, kept where ad says.
func (s *Store) sealMap(m map[string]string, ad func(string) string) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		sv, err := s.box.Seal(ad(k), v)
		if err != nil {
			return nil, err
		}
		out[k] = sv
	}
	return out, nil
}

// openMap opens each value of m; a value kept in clear (by an earlier
// release, until Reseal) is taken as it is.
func (s *Store) openMap(m map[string]string, ad func(string) string) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		ov, err := s.open(ad(k), v)
		if err != nil {
			return nil, err
		}
		out[k] = ov
	}
	return out, nil
}

func (s *Store) open(ad, v string) (string, error) {
	if !store.IsSealed(v) {
		return v, nil
	}
	ov, err := s.box.Open(ad, v)
	if err != nil {
		return "", s.openErr(err)
	}
	return ov, nil
}

func (s *Store) seal(ad, v string) (string, error) {
	if v == "" {
		return "", nil
	}
	return s.box.Seal(ad, v)
}

// sealServer is srv with its secrets sealed.
func (s *Store) sealServer(srv store.Server) (store.Server, error) {
	id := srv.ID
	var err error
	if srv.Env, err = s.sealMap(srv.Env, func(k string) string { return store.EnvAD(id, k) }); err != nil {
		return srv, err
	}
	if srv.Headers, err = s.sealMap(srv.Headers, func(k string) string { return store.HeaderAD(id, k) }); err != nil {
		return srv, err
	}
	if srv.OAuth != nil && srv.OAuth.ClientSecret != "" {
		o := *srv.OAuth
		if o.ClientSecret, err = s.seal(store.OAuthClientSecretAD(id), o.ClientSecret); err != nil {
			return srv, err
		}
		srv.OAuth = &o
	}
	return srv, nil
}

// openServer is srv with its secrets open.
func (s *Store) openServer(srv store.Server) (store.Server, error) {
	id := srv.ID
	var err error
	if srv.Env, err = s.openMap(srv.Env, func(k string) string { return store.EnvAD(id, k) }); err != nil {
		return srv, err
	}
	if srv.Headers, err = s.openMap(srv.Headers, func(k string) string { return store.HeaderAD(id, k) }); err != nil {
		return srv, err
	}
	if srv.OAuth != nil && srv.OAuth.ClientSecret != "" {
		o := *srv.OAuth
		if o.ClientSecret, err = s.open(store.OAuthClientSecretAD(id), o.ClientSecret); err != nil {
			return srv, err
		}
		srv.OAuth = &o
	}
	return srv, nil
}

// grantFields are a grant's secret fields, by name.
func grantFields(g *store.Grant) map[string]*string {
	return map[string]*string{"access_token": &g.AccessToken, "refresh_token": &g.RefreshToken, "client_secret": &g.ClientSecret}
}

func (s *Store) sealGrant(id string, g store.Grant) (store.Grant, error) {
	for name, f := range grantFields(&g) {
		v, err := s.seal(store.GrantAD(id, g.Issuer, name), *f)
		if err != nil {
			return g, err
		}
		*f = v
	}
	return g, nil
}

func (s *Store) openGrant(id string, g store.Grant) (store.Grant, error) {
	for name, f := range grantFields(&g) {
		v, err := s.open(store.GrantAD(id, g.Issuer, name), *f)
		if err != nil {
			return g, err
		}
		*f = v
	}
	return g, nil
}

// CreateServer stores a new server, its secrets sealed.
func (s *Store) CreateServer(ctx context.Context, srv store.Server) error {
	sealed, err := s.sealServer(srv)
	if err != nil {
		return err
	}
	return s.Backend.CreateServer(ctx, sealed)
}

// UpdateServer replaces a server, its secrets sealed.
func (s *Store) UpdateServer(ctx context.Context, srv store.Server) error {
	sealed, err := s.sealServer(srv)
	if err != nil {
		return err
	}
	return s.Backend.UpdateServer(ctx, sealed)
}

// Server is the server with the id, its secrets open.
func (s *Store) Server(ctx context.Context, id string) (store.Server, error) {
	srv, err := s.Backend.Server(ctx, id)
	if err != nil {
		return srv, err
	}
	return s.openServer(srv)
}

// Summary is the server's summary, its secrets open.
func (s *Store) Summary(ctx context.Context, id string) (store.Summary, error) {
	sum, err := s.Backend.Summary(ctx, id)
	if err != nil {
		return sum, err
	}
	sum.Server, err = s.openServer(sum.Server)
	return sum, err
}

// Summaries is every server's summary, their secrets open.
func (s *Store) Summaries(ctx context.Context) ([]store.Summary, error) {
	list, err := s.Backend.Summaries(ctx)
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i].Server, err = s.openServer(list[i].Server); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// opened calls fn with an open copy of each summary the backend passes
// (one per summary, however many entries share it: fn may keep it).
func opened[T any](s *Store, fn func(*store.Summary, T) error) func(*store.Summary, T) error {
	var in, out *store.Summary
	return func(sum *store.Summary, v T) error {
		if sum != in {
			c := *sum
			var err error
			if c.Server, err = s.openServer(c.Server); err != nil {
				return err
			}
			in, out = sum, &c
		}
		return fn(out, v)
	}
}

// Catalog is the backend's, each summary's secrets open.
func (s *Store) Catalog(ctx context.Context, fn func(*store.Summary, store.ToolEntry) error) (string, error) {
	return s.Backend.Catalog(ctx, opened(s, fn))
}

// Offer is the backend's, each summary's secrets open.
func (s *Store) Offer(ctx context.Context, fn func(*store.Summary, store.OfferedTool) error) (string, error) {
	return s.Backend.Offer(ctx, opened(s, fn))
}

// ListedCatalog is the backend's, each summary's secrets open.
func (s *Store) ListedCatalog(ctx context.Context, fn func(*store.Summary, store.ListedEntry) error) (string, error) {
	return s.Backend.ListedCatalog(ctx, opened(s, fn))
}

// SaveGrant keeps a grant, its tokens and client secret sealed.
func (s *Store) SaveGrant(ctx context.Context, id string, g store.Grant) error {
	sealed, err := s.sealGrant(id, g)
	if err != nil {
		return err
	}
	return s.Backend.SaveGrant(ctx, id, sealed)
}

// Grant is the server's grant from issuer, open.
func (s *Store) Grant(ctx context.Context, id, issuer string) (store.Grant, bool, error) {
	g, ok, err := s.Backend.Grant(ctx, id, issuer)
	if err != nil || !ok {
		return g, ok, err
	}
	g, err = s.openGrant(id, g)
	return g, ok, err
}

// LatestGrant is the server's latest grant, open.
func (s *Store) LatestGrant(ctx context.Context, id string) (store.Grant, bool, error) {
	g, ok, err := s.Backend.LatestGrant(ctx, id)
	if err != nil || !ok {
		return g, ok, err
	}
	g, err = s.openGrant(id, g)
	return g, ok, err
}

// Grants is every grant of the server, open.
func (s *Store) Grants(ctx context.Context, id string) ([]store.Grant, error) {
	list, err := s.Backend.Grants(ctx, id)
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i], err = s.openGrant(id, list[i]); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// MCPToken is the MCP endpoint's token, made (sealed) the first time.
func (s *Store) MCPToken(ctx context.Context) (string, error) {
	fresh := store.NewMCPToken()
	sealed, err := s.box.Seal(store.MCPTokenAD, fresh)
	if err != nil {
		return "", err
	}
	kept, err := s.Backend.SwapMCPToken(ctx, "", sealed)
	if err != nil {
		return "", err
	}
	return s.open(store.MCPTokenAD, kept)
}

// RotateMCPToken replaces the MCP token with a new random one, sealed.
func (s *Store) RotateMCPToken(ctx context.Context) (string, error) {
	fresh := store.NewMCPToken()
	sealed, err := s.box.Seal(store.MCPTokenAD, fresh)
	if err != nil {
		return "", err
	}
	old, err := s.Backend.SwapMCPToken(ctx, "", sealed)
	for err == nil && old != sealed {
		old, err = s.Backend.SwapMCPToken(ctx, old, sealed)
	}
	if err != nil {
		return "", err
	}
	return fresh, nil
}
