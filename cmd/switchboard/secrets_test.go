package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/secretkey"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/sealed"
)

// runCmd runs `switchboard args…` with the environment vars.
func runCmd(t *testing.T, vars map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), args, env(vars), strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), err
}

// get is a GET of the dashboard's API, its body.
func (d liveDashboard) get(t *testing.T, path string) []byte {
	t.Helper()
	return d.api(t, http.MethodGet, path, nil, http.StatusOK)
}

// findIn reports which of the secrets b holds.
func findIn(b []byte, secrets []string) []string {
	var found []string
	for _, s := range secrets {
		if bytes.Contains(b, []byte(s)) {
			found = append(found, s)
		}
	}
	return found
}

// Secrets never in clear at rest (issue 34): a dashboard's planted env,
// header and OAuth client secrets and its MCP token are found in none of
// the database file, a backup (the API's and the command's), an export
// without secrets; they come back in clear where asked for (an export
// with secrets), and through the dashboard. The key is a 0600 file beside
// the database here (no keychain answers), which serve's log names.
func TestSecretsNeverInClearAtRest(t *testing.T) {
	d := liveDashboard{token: strings.Repeat("c", 64), db: filepath.Join(t.TempDir(), "sb.db")}
	vars := map[string]string{"SWITCHBOARD_DB": d.db, "SWITCHBOARD_TOKEN": d.token}
	s := startServeArgs(t, []string{"-addr", "127.0.0.1:0"}, vars)
	d.base = s.base
	planted := []string{"env-secret-planted-6a1f", "header-secret-planted-c02e", "client-secret-planted-9d4b"}
	d.api(t, http.MethodPost, "/api/v1/servers", map[string]any{"id": "local", "name": "Local", "transport": "stdio", "command": "mcp-fixture",
		"env": map[string]string{"API_KEY": planted[0]}}, http.StatusCreated)
	d.api(t, http.MethodPost, "/api/v1/servers", map[string]any{"id": "remote", "name": "Remote", "transport": "http", "url": "https://mcp.example.com/mcp",
		"headers": map[string]string{"X-Api-Key": planted[1]}, "oauth": map[string]any{"client_id": "cid", "client_secret": planted[2]}}, http.StatusCreated)
	mcpToken, err := os.ReadFile(d.db + ".mcp-token")
	if err != nil {
		t.Fatal(err)
	}
	secrets := append(planted, strings.TrimSpace(string(mcpToken)))

	if found := findIn(d.get(t, "/api/v1/backup"), secrets); len(found) > 0 {
		t.Errorf("the API's backup holds %q in clear", found)
	}
	if found := findIn(d.get(t, "/api/v1/export?format=claude"), secrets); len(found) > 0 {
		t.Errorf("an export without secrets holds %q", found)
	}
	if found := findIn(d.get(t, "/api/v1/export?format=claude&secrets=true"), planted[:2]); len(found) != 2 {
		t.Errorf("an export with secrets holds %q; want the env and header values, opened", found)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.stderr.String(), "secrets are sealed at rest") || !strings.Contains(s.stderr.String(), secretkey.DefaultFile(d.db)) {
		t.Errorf("serve's log does not say which key seals the secrets, and where it is:\n%s", s.stderr.String())
	}
	if fi, err := os.Stat(secretkey.DefaultFile(d.db)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the key file = %v, %v; want a 0600 file beside the database", fi, err)
	}
	file, _ := os.ReadFile(d.db)
	if found := findIn(file, secrets); len(found) > 0 {
		t.Errorf("the database file holds %q in clear", found)
	}
	// The seal that lets the next start skip the full check is keyed
	// with the secret key (issue 34 L5).
	if seal, _ := os.ReadFile(d.db + ".seal"); !strings.HasPrefix(string(seal), "switchboard store seal v2 ") {
		t.Errorf("the seal = %q; want a keyed (v2) seal", seal)
	}
	backup := filepath.Join(t.TempDir(), "copy.db")
	if _, stderr, err := runCmd(t, vars, "backup", "-db", d.db, backup); err != nil {
		t.Fatalf("backup = %v (%s)", err, stderr)
	}
	if copied, _ := os.ReadFile(backup); len(findIn(copied, secrets)) > 0 || len(copied) == 0 {
		t.Errorf("switchboard backup holds %q in clear", findIn(copied, secrets))
	}
	out, stderr, err := runCmd(t, vars, "export", "-db", d.db, "--format", "claude", "--include-secrets")
	if err != nil || !strings.Contains(out, planted[0]) {
		t.Errorf("export --include-secrets = %v (%s); want the env value opened, got\n%s", err, stderr, out)
	}
	out, _, _ = runCmd(t, vars, "secrets", "status", "-db", d.db)
	if !strings.Contains(out, "sealed: 4 secrets") || !strings.Contains(out, "clear:  0") {
		t.Errorf("secrets status =\n%s\nwant 4 sealed, none in clear", out)
	}
}

// A store that holds sealed secrets never starts without their key, nor
// with another, nor with a key file others may read: each a start-up
// error saying what to do, the store untouched.
func TestServeRefusesAMissingOrWrongKey(t *testing.T) {
	d := liveDashboard{token: strings.Repeat("d", 64), db: filepath.Join(t.TempDir(), "sb.db")}
	vars := map[string]string{"SWITCHBOARD_DB": d.db, "SWITCHBOARD_TOKEN": d.token}
	base, _, stop := startServe(t, vars)
	d.base = base
	d.api(t, http.MethodPost, "/api/v1/servers", map[string]any{"id": "local", "name": "Local", "transport": "stdio", "command": "mcp-fixture",
		"env": map[string]string{"API_KEY": "a-secret-value-1234"}}, http.StatusCreated)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	kept := func() string {
		t.Helper()
		raw, err := bolt.Open(d.db, bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		srv, _ := raw.Server(t.Context(), "local")
		return srv.Env["API_KEY"]
	}
	before := kept()
	keyFile := secretkey.DefaultFile(d.db)
	key, _ := os.ReadFile(keyFile)

	serveFails := func(vars map[string]string, want ...string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out := &syncBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0"}, env(vars), nil, out, &syncBuffer{})
		}()
		var err error
	wait:
		for {
			select {
			case err = <-done:
				break wait
			case <-time.After(10 * time.Millisecond):
				if openURL.MatchString(out.String()) { // it started: a failure, not a hang
					cancel()
					<-done
					t.Fatalf("serve started; want it refused, saying %q", want)
				}
			}
		}
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("serve = %v; want refused, saying %q", err, w)
			}
		}
	}
	os.Chmod(keyFile, 0o644)
	serveFails(vars, "chmod 600")
	os.Remove(keyFile)
	serveFails(vars, "sealed secrets", "their key is not here", "never makes a new key")
	if _, err := os.Stat(keyFile); err == nil {
		t.Error("a start without the key made a new one")
	}
	other := map[string]string{"SWITCHBOARD_SECRET_KEY": secretkey.Encode(secretkey.New())}
	for k, v := range vars {
		other[k] = v
	}
	serveFails(other, "sealed under the key", "SWITCHBOARD_SECRET_KEY", "give the key they were sealed with")
	if after := kept(); after != before || !store.IsSealed(after) {
		t.Errorf("after the refused starts the value is kept as %q; want it as it was, %q", after, before)
	}
	// The key, given in the environment, opens it.
	given := map[string]string{"SWITCHBOARD_SECRET_KEY": string(key)}
	for k, v := range vars {
		given[k] = v
	}
	_, _, stop = startServe(t, given)
	stop()
}

// A database an earlier release wrote, secrets in clear (testdata: made
// by the commit before secrets were sealed: 42 servers, 40 of them with a
// 3 KB secret, a grant, the MCP token), is sealed at the first start:
// every secret still works, the confirmed launch still holds, the MCP
// token is the same, and the file keeps no clear copy, not even in pages
// bbolt freed (the start compacts the file: without that, copies stay).
func TestPreviousReleaseDatabaseSealedAtFirstStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sb.db")
	old, err := os.ReadFile("testdata/previous-release.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	clear := []string{"legacy-env-secret-5c1d", "legacy-header-secret-88e2", "legacy-client-secret-0b7a", "legacy-grant-client-secret-e4f0",
		"legacy-access-token-71aa", "legacy-refresh-token-2d93"}
	if found := findIn(old, clear); len(found) != len(clear) {
		t.Fatalf("the earlier release's file holds %d of the planted secrets in clear; want all %d", len(found), len(clear))
	}
	raw, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	oldToken, _ := raw.SwapMCPToken(t.Context(), "\x00none", "")
	raw.Close()

	vars := map[string]string{"SWITCHBOARD_DB": path, "SWITCHBOARD_TOKEN": strings.Repeat("e", 64)}
	s := startServeArgs(t, []string{"-addr", "127.0.0.1:0"}, vars)
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.stderr.String(), "sealed the secrets an earlier release kept in clear") || !strings.Contains(s.stderr.String(), "secrets=47") {
		t.Errorf("serve's log does not say it sealed the 47 secrets:\n%s", s.stderr.String())
	}
	file, _ := os.ReadFile(path)
	if found := findIn(file, append(append(clear, oldToken), "legacy-bulk-secret-")); len(found) > 0 {
		t.Errorf("after the first start the file still holds %q in clear", found)
	}
	if _, err := os.Stat(path + ".compact-pending"); err == nil {
		t.Error("the note that the file is to be compacted is still there")
	}

	raw, err = bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	st := sealedWithKeyFile(t, raw, path)
	ctx := t.Context()
	local, err := st.Server(ctx, "local")
	if err != nil || local.Env["API_KEY"] != clear[0] || !local.LaunchConfirmedNow() {
		t.Errorf("local = %+v, %v; want its env opened and its launch still confirmed", local, err)
	}
	remote, err := st.Server(ctx, "remote")
	if err != nil || remote.Headers["X-Api-Key"] != clear[1] || remote.OAuthSettings().ClientSecret != clear[2] {
		t.Errorf("remote = %+v, %v", remote, err)
	}
	if g, ok, err := st.LatestGrant(ctx, "remote"); err != nil || !ok || g.RefreshToken != clear[5] || g.AccessToken != clear[4] || g.ClientSecret != clear[3] {
		t.Errorf("the grant = %+v, %v, %v", g, ok, err)
	}
	if tok, err := st.MCPToken(ctx); err != nil || tok != oldToken {
		t.Errorf("the MCP token = %q, %v; want the earlier release's %q", tok, err, oldToken)
	}
	if c, _ := sealed.Scan(ctx, raw); c.Clear != 0 || c.Total() != 47 {
		t.Errorf("Scan = %+v; want 47 sealed, none in clear", c)
	}
}

// switchboard secrets rotate seals every secret under a new key and
// keeps it where the old one was; a rotation cut short (its new key kept,
// nothing or part sealed under it) is finished by running it again, with
// the key it kept; a key from the environment takes its new one from
// SWITCHBOARD_NEW_SECRET_KEY.
func TestSecretsRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sb.db")
	vars := map[string]string{"SWITCHBOARD_DB": path}
	raw, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := secretkey.Load(secretkey.Options{DefaultFile: secretkey.DefaultFile(path), Create: true})
	if err != nil {
		t.Fatal(err)
	}
	ring, _ := secretkey.NewRing(k.Current)
	srv := store.Server{ID: "local", Name: "Local", Transport: store.TransportStdio, Command: "x", Env: map[string]string{"API_KEY": "rotate-me-5150"},
		DefaultPolicy: store.PolicyAsk, Enabled: true}
	if err := sealed.New(raw, ring).CreateServer(t.Context(), srv); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	status := func(vars map[string]string) string {
		t.Helper()
		out, stderr, err := runCmd(t, vars, "secrets", "status", "-db", path)
		if err != nil {
			t.Fatalf("secrets status = %v (%s)", err, stderr)
		}
		return out
	}
	if out := status(vars); !strings.Contains(out, "1 under "+secretkey.ID(k.Current)) {
		t.Fatalf("status before =\n%s", out)
	}

	out, stderr, err := runCmd(t, vars, "secrets", "rotate", "-db", path)
	if err != nil || !strings.Contains(out, "sealed 1 secrets under the new key") {
		t.Fatalf("rotate = %v, %q (%s)", err, out, stderr)
	}
	now, err := secretkey.Load(secretkey.Options{DefaultFile: secretkey.DefaultFile(path)})
	if err != nil || string(now.Current) == string(k.Current) || now.Next != nil {
		t.Fatalf("the key after rotate = %+v, %v; want a new one, nothing pending", now, err)
	}
	if out := status(vars); !strings.Contains(out, "1 under "+secretkey.ID(now.Current)) {
		t.Errorf("status after =\n%s", out)
	}

	// Cut short right after it kept its new key: the run again uses it.
	pending := secretkey.New()
	if err := os.WriteFile(secretkey.DefaultFile(path)+".next", []byte(secretkey.Encode(pending)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := status(vars); !strings.Contains(out, "did not finish") {
		t.Errorf("status mid-rotation =\n%s\nwant it to say the rotation did not finish", out)
	}
	if _, stderr, err := runCmd(t, vars, "secrets", "rotate", "-db", path); err != nil {
		t.Fatalf("rotate again = %v (%s)", err, stderr)
	}
	if out := status(vars); !strings.Contains(out, "1 under "+secretkey.ID(pending)) || strings.Contains(out, "did not finish") {
		t.Errorf("status after finishing =\n%s\nwant the pending key in use", out)
	}

	// A key from the environment.
	envKey, _ := os.ReadFile(secretkey.DefaultFile(path))
	os.Remove(secretkey.DefaultFile(path))
	inEnv := map[string]string{"SWITCHBOARD_DB": path, "SWITCHBOARD_SECRET_KEY": strings.TrimSpace(string(envKey))}
	if _, _, err := runCmd(t, inEnv, "secrets", "rotate", "-db", path); err == nil || !strings.Contains(err.Error(), "SWITCHBOARD_NEW_SECRET_KEY") {
		t.Errorf("rotate of a key from the environment without a new one = %v; want it to ask for SWITCHBOARD_NEW_SECRET_KEY", err)
	}
	newer := secretkey.New()
	inEnv["SWITCHBOARD_NEW_SECRET_KEY"] = secretkey.Encode(newer)
	out, stderr, err = runCmd(t, inEnv, "secrets", "rotate", "-db", path)
	if err != nil || !strings.Contains(out, "now set SWITCHBOARD_SECRET_KEY") {
		t.Fatalf("rotate from the environment = %v, %q (%s)", err, out, stderr)
	}
	raw, err = bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	only, _ := secretkey.NewRing(newer)
	if got, err := sealed.New(raw, only).Server(t.Context(), "local"); err != nil || got.Env["API_KEY"] != "rotate-me-5150" {
		t.Errorf("local under the newest key = %+v, %v", got.Env, err)
	}
}

// A first start cut short after it sealed the secrets but before it
// compacted the file leaves clear copies in freed pages and its note; the
// next start, which finds nothing in clear to seal, compacts all the same
// (issue 34 review).
func TestCompactionCutShortIsFinishedAtNextStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sb.db")
	old, err := os.ReadFile("testdata/previous-release.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := secretkey.Load(secretkey.Options{DefaultFile: secretkey.DefaultFile(path), Create: true})
	if err != nil {
		t.Fatal(err)
	}
	ring, _ := secretkey.NewRing(k.Current)
	raw, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := markCompactPending(path); err != nil {
		t.Fatal(err)
	}
	if _, err := sealed.New(raw, ring).Reseal(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	raw.Close() // and no compaction: the start was cut short here
	if file, _ := os.ReadFile(path); !bytes.Contains(file, []byte("legacy-bulk-secret-")) {
		t.Fatal("the file keeps no clear copy after a reseal without compaction; the test cannot tell")
	}
	s := startServeArgs(t, []string{"-addr", "127.0.0.1:0"}, map[string]string{"SWITCHBOARD_DB": path, "SWITCHBOARD_TOKEN": strings.Repeat("f", 64)})
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if file, _ := os.ReadFile(path); bytes.Contains(file, []byte("legacy-bulk-secret-")) {
		t.Error("the next start left the clear copies in the file")
	}
	if _, err := os.Stat(compactPending(path)); err == nil {
		t.Error("the note is still there")
	}
}
