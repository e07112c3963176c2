package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/secretkey"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/sealed"
)

// Planted secrets: each a value that must never be found in what a
// backend keeps (see testSealedSecrets).
const (
	plantEnv      = "planted-env-value-7f3a"
	plantHeader   = "planted-header-value-91c2"
	plantClient   = "planted-client-secret-4be0"
	plantAccess   = "planted-access-token-d5e8"
	plantRefresh  = "planted-refresh-token-a17b"
	plantGrantCli = "planted-grant-client-secret-3c6f"
)

var planted = []string{plantEnv, plantHeader, plantClient, plantAccess, plantRefresh, plantGrantCli}

// secretServers are a stdio server with an env secret and a remote one
// with a header and an OAuth client secret.
func secretServers() (stdio, remote store.Server) {
	stdio = StdioServer("local")
	stdio.Env = map[string]string{"API_KEY": plantEnv}
	remote = store.Server{ID: "remote", Name: "Remote", Transport: store.TransportHTTP, URL: "https://mcp.example.com/mcp",
		Headers: map[string]string{"X-Api-Key": plantHeader}, OAuth: &store.OAuthClient{ClientID: "cid", ClientSecret: plantClient},
		DefaultPolicy: store.PolicyAsk, Enabled: true}
	return stdio, remote
}

func secretGrant() store.Grant {
	return store.Grant{Issuer: "https://as.example.com", TokenEndpoint: "https://as.example.com/token", Resource: "https://mcp.example.com/mcp",
		ClientID: "cid", ClientSecret: plantGrantCli, AccessToken: plantAccess, RefreshToken: plantRefresh, SavedAt: At(5)}
}

// raw is everything the backend gives out as it keeps it: servers,
// grants and the MCP token, as JSON.
func raw(t *testing.T, b sealed.Backend) string {
	t.Helper()
	ctx := context.Background()
	var sb strings.Builder
	sums, err := b.Summaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sums {
		j, _ := json.Marshal(s)
		sb.Write(j)
		grants, err := b.Grants(ctx, s.Server.ID)
		if err != nil {
			t.Fatal(err)
		}
		j, _ = json.Marshal(grants)
		sb.Write(j)
	}
	tok, err := b.SwapMCPToken(ctx, "\x00none", "")
	if err != nil {
		t.Fatal(err)
	}
	sb.WriteString(tok)
	if d, ok := b.(store.Dumper); ok {
		dump, err := d.Dump(ctx)
		if err != nil {
			t.Fatal(err)
		}
		j, _ := json.Marshal(dump)
		sb.Write(j)
	}
	return sb.String()
}

// Secrets go into the backend sealed and come out open: the backend, its
// dump included, never holds one in clear; a sealed value opens only
// where it was kept and only with its key; configuration hashes and
// launch confirmations do not change with sealing; Reseal seals what an
// earlier release kept in clear, and moves every value to a new key
// (a rotation), and a Reseal cut short is finished by running it again.
func testSealedSecrets(t *testing.T, be Backend) {
	ctx := t.Context()
	b, ok := be.Open(t).(sealed.Backend)
	if !ok {
		t.Fatal("the backend is not a sealed.Backend")
	}
	oldKey, newKey := secretkey.New(), secretkey.New()
	ring, _ := secretkey.NewRing(oldKey)
	st := sealed.New(b, ring)
	stdio, remote := secretServers()
	for _, s := range []store.Server{stdio, remote} {
		if err := st.CreateServer(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SaveGrant(ctx, "remote", secretGrant()); err != nil {
		t.Fatal(err)
	}
	token, err := st.MCPToken(ctx)
	if err != nil || token == "" || store.IsSealed(token) {
		t.Fatalf("MCPToken = %q, %v; want a token in clear", token, err)
	}
	if again, _ := st.MCPToken(ctx); again != token {
		t.Errorf("MCPToken again = %q; want %q", again, token)
	}
	if err := st.ConfirmLaunch(ctx, "local", stdio.LaunchHash(), ""); err != nil {
		t.Fatal(err)
	}

	// Open through the sealed store, everywhere it gives servers out.
	got, err := st.Server(ctx, "local")
	if err != nil || got.Env["API_KEY"] != plantEnv || !got.LaunchConfirmedNow() || got.ConfigHash() != stdio.ConfigHash() {
		t.Fatalf("Server = %+v, %v; want the env in clear, the launch confirmed, the config hash as created", got, err)
	}
	sums, err := st.Summaries(ctx)
	if err != nil || len(sums) != 2 || sums[1].Server.Headers["X-Api-Key"] != plantHeader || sums[1].Server.OAuth.ClientSecret != plantClient {
		t.Fatalf("Summaries = %+v, %v", sums, err)
	}
	if _, err := st.Catalog(ctx, func(s *store.Summary, _ store.ToolEntry) error {
		if s.Server.ID == "local" && s.Server.Env["API_KEY"] != plantEnv {
			t.Errorf("Catalog's summary of local has env %v", s.Server.Env)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if g, ok, err := st.LatestGrant(ctx, "remote"); err != nil || !ok || g.AccessToken != plantAccess || g.RefreshToken != plantRefresh || g.ClientSecret != plantGrantCli {
		t.Errorf("LatestGrant = %+v, %v, %v; want its tokens in clear", g, ok, err)
	}
	if d := MustSummary(t, st, "local").Discovery; d.Status != store.StatusNever {
		t.Errorf("local's discovery = %+v", d)
	}

	// Sealed in the backend.
	kept := raw(t, b)
	for _, p := range append(planted, token) {
		if strings.Contains(kept, p) {
			t.Errorf("the backend keeps %q in clear", p)
		}
	}
	rawLocal, _ := b.Server(ctx, "local")
	if !store.IsSealed(rawLocal.Env["API_KEY"]) || rawLocal.ConfigHash() != stdio.ConfigHash() || !rawLocal.LaunchConfirmedNow() {
		t.Errorf("the backend's local = env %q, config hash %s (want %s), launch confirmed %v", rawLocal.Env["API_KEY"], rawLocal.ConfigHash(), stdio.ConfigHash(), rawLocal.LaunchConfirmedNow())
	}

	// A sealed value moved to another server does not open there.
	rawRemote, _ := b.Server(ctx, "remote")
	rawRemote.Env = map[string]string{"API_KEY": rawLocal.Env["API_KEY"]}
	if err := b.UpdateServer(ctx, rawRemote); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Server(ctx, "remote"); !errors.Is(err, sealed.ErrSecret) {
		t.Errorf("Server with a value moved from another = %v; want ErrSecret", err)
	}
	rawRemote.Env = nil
	if err := b.UpdateServer(ctx, rawRemote); err != nil {
		t.Fatal(err)
	}

	// Another key opens nothing.
	other, _ := secretkey.NewRing(newKey)
	if _, err := sealed.New(b, other).Server(ctx, "local"); !errors.Is(err, sealed.ErrSecret) || !strings.Contains(err.Error(), "another secret key") {
		t.Errorf("Server under another key = %v; want ErrSecret, naming the key", err)
	}

	// What an earlier release kept in clear is sealed by Reseal.
	legacy := StdioServer("legacy")
	legacy.Env = map[string]string{"TOKEN": "legacy-clear-value-0d9e"}
	if err := b.CreateServer(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	if c, err := sealed.Scan(ctx, b); err != nil || c.Clear != 1 || c.Total() != 7 || c.KeyIDs()[0] != ring.ID() {
		t.Errorf("Scan = %+v, %v; want 1 in clear, 7 sealed under the key (env, header, client secret, 3 of the grant, the MCP token)", c, err)
	}
	if n, err := st.Reseal(ctx, false); err != nil || n != 1 {
		t.Errorf("Reseal = %d, %v; want the one value in clear sealed", n, err)
	}
	if c, _ := sealed.Scan(ctx, b); c.Clear != 0 || c.Total() != 8 {
		t.Errorf("Scan after Reseal = %+v; want 8 sealed", c)
	}
	if got, err := st.Server(ctx, "legacy"); err != nil || got.Env["TOKEN"] != "legacy-clear-value-0d9e" {
		t.Errorf("legacy after Reseal = %+v, %v", got.Env, err)
	}

	// A rotation cut short after the first server leaves each value
	// whole under one key or the other; both keys open everything; run
	// again, it finishes, and the new key alone opens everything.
	both, _ := secretkey.NewRing(newKey, oldKey)
	failing := &failAfter{Backend: b, n: 1}
	if _, err := sealed.New(failing, both).Reseal(ctx, true); err == nil {
		t.Fatal("a Reseal whose second write fails succeeded")
	}
	if c, _ := sealed.Scan(ctx, b); len(c.Sealed) != 2 || c.Total() != 8 {
		t.Errorf("Scan after a rotation cut short = %+v; want 8 values under two keys", c)
	}
	rotated := sealed.New(b, both)
	if got, err := rotated.Server(ctx, "remote"); err != nil || got.Headers["X-Api-Key"] != plantHeader {
		t.Errorf("remote mid-rotation = %+v, %v", got.Headers, err)
	}
	if _, err := rotated.Reseal(ctx, true); err != nil {
		t.Fatal(err)
	}
	if c, _ := sealed.Scan(ctx, b); len(c.Sealed) != 1 || c.KeyIDs()[0] != secretkey.ID(newKey) || c.Total() != 8 {
		t.Errorf("Scan after the rotation = %+v; want 8 under the new key", c)
	}
	only, _ := secretkey.NewRing(newKey)
	st = sealed.New(b, only)
	if got, err := st.Server(ctx, "local"); err != nil || got.Env["API_KEY"] != plantEnv || !got.LaunchConfirmedNow() {
		t.Errorf("local under the new key = %+v, %v", got, err)
	}
	if tok, err := st.MCPToken(ctx); err != nil || tok != token {
		t.Errorf("MCPToken under the new key = %q, %v; want %q", tok, err, token)
	}
	if g, _, err := st.Grant(ctx, "remote", secretGrant().Issuer); err != nil || g.RefreshToken != plantRefresh {
		t.Errorf("grant under the new key = %+v, %v", g, err)
	}
	if rotatedTok, err := st.RotateMCPToken(ctx); err != nil || rotatedTok == token {
		t.Errorf("RotateMCPToken = %q, %v; want a new token", rotatedTok, err)
	} else if tok, _ := st.MCPToken(ctx); tok != rotatedTok {
		t.Errorf("MCPToken after rotating = %q; want %q", tok, rotatedTok)
	}
}

// failAfter is a backend whose writes of servers and grants fail after
// n of them succeeded: a crash in the middle of a Reseal.
type failAfter struct {
	sealed.Backend
	n int
}

var errCrash = errors.New("the machine went down")

func (f *failAfter) RewriteServer(ctx context.Context, id string, fn func(*store.Server) (bool, error)) error {
	if f.n == 0 {
		return errCrash
	}
	f.n--
	return f.Backend.RewriteServer(ctx, id, fn)
}

func (f *failAfter) RewriteGrants(ctx context.Context, id string, fn func(*store.Grant) (bool, error)) error {
	if f.n == 0 {
		return errCrash
	}
	f.n--
	return f.Backend.RewriteGrants(ctx, id, fn)
}

// editFirst is a backend on which, just before a Reseal rewrites the
// server or grants named, someone else changes them: edit runs once, at
// the first rewrite of each.
type editFirst struct {
	sealed.Backend
	server, grants func()
}

func (e *editFirst) RewriteServer(ctx context.Context, id string, fn func(*store.Server) (bool, error)) error {
	if e.server != nil {
		e.server()
		e.server = nil
	}
	return e.Backend.RewriteServer(ctx, id, fn)
}

func (e *editFirst) RewriteGrants(ctx context.Context, id string, fn func(*store.Grant) (bool, error)) error {
	if e.grants != nil {
		e.grants()
		e.grants = nil
	}
	return e.Backend.RewriteGrants(ctx, id, fn)
}

// A Reseal undoes no change made while it runs (issue 34 review): an
// edit of a server and a refreshed grant that land between its read of
// the catalog and its rewrite of them are kept, sealed.
func testResealKeepsConcurrentChanges(t *testing.T, be Backend) {
	ctx := t.Context()
	b, ok := be.Open(t).(sealed.Backend)
	if !ok {
		t.Fatal("the backend is not a sealed.Backend")
	}
	ring, _ := secretkey.NewRing(secretkey.New())
	st := sealed.New(b, ring)
	legacy := StdioServer("legacy")
	legacy.Env = map[string]string{"TOKEN": "clear-before-the-edit"}
	legacy.Transport, legacy.URL, legacy.Command = store.TransportHTTP, "https://mcp.example.com/mcp", ""
	if err := b.CreateServer(ctx, legacy); err != nil { // in clear, as an earlier release kept it
		t.Fatal(err)
	}
	g := secretGrant()
	g.RefreshToken = "clear-refresh-1"
	if err := b.SaveGrant(ctx, "legacy", g); err != nil {
		t.Fatal(err)
	}
	racing := &editFirst{Backend: b,
		server: func() {
			edited, err := st.Server(ctx, "legacy")
			if err != nil {
				t.Fatal(err)
			}
			edited.Env, edited.Enabled = map[string]string{"TOKEN": "edited-meanwhile"}, false
			if err := st.UpdateServer(ctx, edited); err != nil {
				t.Fatal(err)
			}
		},
		grants: func() {
			refreshed := secretGrant()
			refreshed.RefreshToken = "refreshed-meanwhile"
			if err := st.SaveGrant(ctx, "legacy", refreshed); err != nil {
				t.Fatal(err)
			}
		}}
	if _, err := sealed.New(racing, ring).Reseal(ctx, false); err != nil {
		t.Fatal(err)
	}
	got, err := st.Server(ctx, "legacy")
	if err != nil || got.Env["TOKEN"] != "edited-meanwhile" || got.Enabled {
		t.Errorf("after a Reseal that raced an edit: %+v, %v; want the edit kept", got, err)
	}
	if g, _, err := st.LatestGrant(ctx, "legacy"); err != nil || g.RefreshToken != "refreshed-meanwhile" {
		t.Errorf("after a Reseal that raced a refresh: refresh token %q, %v; want the refreshed one", g.RefreshToken, err)
	}
	if c, _ := sealed.Scan(ctx, b); c.Clear != 0 {
		t.Errorf("Scan after the Reseal = %+v; want nothing in clear", c)
	}
}
