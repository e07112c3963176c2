package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchboard-dev/switchboard/internal/secretkey"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/etcd"
	"github.com/switchboard-dev/switchboard/store/etcd/etcdtest"
	"github.com/switchboard-dev/switchboard/store/sealed"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

// startETCD starts a real etcd member for the test and returns its
// etcd:// URL.
func startETCD(t *testing.T) string {
	t.Helper()
	srv, err := etcdtest.Start()
	if err != nil {
		t.Fatalf("etcdtest.Start() = %v", err)
	}
	t.Cleanup(srv.Close)
	return "etcd://" + strings.TrimPrefix(srv.Endpoint, "http://")
}

var etcdPrefixes atomic.Int64

// newPrefix is a key prefix no other test uses.
func newPrefix() string { return fmt.Sprintf("/migrate-%d/", etcdPrefixes.Add(1)) }

// filledDB is a database file filled by storetest.Fill, its secrets
// sealed with filledRing as serve seals them, closed, and the MCP token it
// keeps.
func filledDB(t *testing.T) (path, mcpToken string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "sb.db")
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mcpToken = storetest.Fill(t, sealed.New(db, filledRing))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path, mcpToken
}

// filledKey seals filledDB's secrets.
var (
	filledKey     = secretkey.New()
	filledRing, _ = secretkey.NewRing(filledKey)
)

// dumpOf dumps the store at spec (a file, or etcd:// under prefix).
func dumpOf(t *testing.T, spec, prefix string) *store.Dump {
	t.Helper()
	st, err := openMigrated(t.Context(), "from", spec, storeConfig{ETCDPrefix: prefix, ETCDInsecure: true}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := st.Dump(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// migrate runs `switchboard migrate args…` and returns its output.
func migrate(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	// The test's etcd speaks plain HTTP on loopback (see TestServeETCDFlags
	// for the refusal without this).
	err = run(context.Background(), append([]string{"migrate"}, args...), env(map[string]string{"SWITCHBOARD_ETCD_INSECURE": "1"}), nil, &out, &errOut)
	return out.String(), errOut.String(), err
}

// A database file moves into etcd and from there into a new file whole:
// secrets, agent names, policies, history, calls and the rest; what
// migrate prints is counts, never a secret.
func TestMigrateToETCDAndBack(t *testing.T) {
	src, token := filledDB(t)
	cluster, prefix := startETCD(t), newPrefix()
	back := filepath.Join(t.TempDir(), "back.db")
	for _, args := range [][]string{
		{"-from", src, "-to", cluster, "-etcd-prefix", prefix},
		{"-etcd-prefix", prefix, "-from", cluster, "-to", back},
	} {
		stdout, stderr, err := migrate(t, args...)
		if err != nil {
			t.Fatalf("migrate %q = %v (stderr %q); want nil", args, err, stderr)
		}
		want := "2 servers, 3 tools, 2 resources and prompts, 3 history entries, 1 OAuth grants, 3 calls, 2 connected clients, 1 profiles, 1 browser sessions; 8 secrets."
		if !strings.Contains(stdout, "and checked the copy") || !strings.Contains(stdout, want) {
			t.Errorf("migrate %q printed %q; want it to say it checked the copy, and %q", args, stdout, want)
		}
		for _, secret := range []string{storetest.FilledEnvSecret, storetest.FilledHeaderSecret, storetest.FilledOAuthSecret, storetest.FilledAccessToken, storetest.FilledRefreshToken, token} {
			if strings.Contains(stdout+stderr, secret) {
				t.Errorf("migrate %q printed the secret %q", args, secret)
			}
		}
	}
	for _, diff := range dumpOf(t, src, "").Diff(dumpOf(t, back, "")) {
		t.Errorf("the file copied back differs from the source: %s", diff)
	}
	// The secrets travelled sealed: no etcd key, nor the file copied
	// back, holds one in clear.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + strings.TrimPrefix(cluster, "etcd://")}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kvs, err := cli.Get(ctx, "", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var kept strings.Builder
	for _, kv := range kvs.Kvs {
		kept.Write(kv.Key)
		kept.Write(kv.Value)
	}
	file, _ := os.ReadFile(back)
	for _, secret := range []string{storetest.FilledEnvSecret, storetest.FilledHeaderSecret, storetest.FilledOAuthSecret, storetest.FilledAccessToken, storetest.FilledRefreshToken, token} {
		if strings.Contains(kept.String(), secret) {
			t.Errorf("etcd holds the secret %q in clear (%d keys read)", secret, len(kvs.Kvs))
		}
		if bytes.Contains(file, []byte(secret)) {
			t.Errorf("the file copied back holds the secret %q in clear", secret)
		}
	}
	if len(kvs.Kvs) < 10 {
		t.Errorf("etcd holds %d keys; want the whole store", len(kvs.Kvs))
	}
	db, err := bolt.Open(back, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storetest.CheckFilled(t, sealed.New(db, filledRing), token)
}

// A database that keeps secrets in clear (an earlier release's) is not
// migrated: its secrets would travel in clear.
func TestMigrateRefusesSecretsInClear(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sb.db")
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.Fill(t, db)
	db.Close()
	_, _, err = migrate(t, "-from", path, "-to", filepath.Join(t.TempDir(), "to.db"))
	if err == nil || !strings.Contains(err.Error(), "keeps secrets in clear") || !strings.Contains(err.Error(), "switchboard serve") {
		t.Errorf("migrate of a file with secrets in clear = %v; want refused, saying to start serve on it once", err)
	}
}

// A destination that holds anything is refused, with exit code 1 and a
// message saying what it holds, and is left as it was.
func TestMigrateRefusesNonEmptyDestination(t *testing.T) {
	src, _ := filledDB(t)
	cluster, prefix := startETCD(t), newPrefix()
	dstFile := filepath.Join(t.TempDir(), "dst.db")
	db, err := bolt.Open(dstFile, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.MustCreate(t, db, storetest.StdioServer("mine"))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	edb, err := etcd.Open(t.Context(), etcd.Options{Endpoints: []string{"http://" + strings.TrimPrefix(cluster, "etcd://")}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := edb.MCPToken(t.Context()); err != nil {
		t.Fatal(err)
	}
	edb.Close()

	tests := []struct {
		name, to, prefix, holds string
	}{
		{"file with a server", dstFile, "", "1 server"},
		{"etcd with a token", cluster, prefix, "an MCP token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := dumpOf(t, tt.to, tt.prefix)
			_, _, err := migrate(t, "-from", src, "-to", tt.to, "-etcd-prefix", tt.prefix)
			var ee *exitError
			if !errors.Is(err, store.ErrNotEmpty) || errors.As(err, &ee) || !strings.Contains(err.Error(), "holds "+tt.holds) {
				t.Fatalf("migrate into a store that holds %s = %v; want ErrNotEmpty naming it, exit code 1", tt.holds, err)
			}
			for _, diff := range before.Diff(dumpOf(t, tt.to, tt.prefix)) {
				t.Errorf("the refused migrate changed the destination: %s", diff)
			}
		})
	}
}

func TestMigrateUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no flags", nil, "needs both -from and -to"},
		{"no destination", []string{"-from", "a.db"}, "needs both -from and -to"},
		{"an argument", []string{"-from", "a.db", "-to", "b.db", "c.db"}, "no arguments"},
		{"the same store", []string{"-from", "a.db", "-to", "a.db"}, "copy into another store"},
		{"etcd both sides", []string{"-from", "etcd://a:2379", "-to", "etcd://b:2379"}, "both etcd"},
		{"a bad etcd URL", []string{"-from", "a.db", "-to", "etcd://a:2379/x"}, "is not host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{}, tt.args...)
			for i, a := range args {
				if strings.HasSuffix(a, ".db") {
					args[i] = filepath.Join(dir, a)
				}
			}
			_, _, err := migrate(t, args...)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("migrate %q = %v; want a usage error (exit code 2) saying %q", tt.args, err, tt.want)
			}
		})
	}
}
