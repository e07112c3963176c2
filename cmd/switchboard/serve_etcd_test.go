package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/secretkey"
	"github.com/switchboard-dev/switchboard/store/bolt"

	"github.com/switchboard-dev/switchboard/store/etcd/etcdtest"
)

// Two `switchboard serve -store etcd://…` replicas share one catalog: a
// server created through one is read through the other; and the flags
// are checked before anything starts.
func TestServeReplicasOnETCD(t *testing.T) {
	url := startETCD(t)
	token, mcpToken := strings.Repeat("t", 64), strings.Repeat("m", 32)
	var bases []string
	for i := range 2 {
		s := startServeArgs(t, []string{"-addr", "127.0.0.1:0", "-store", url, "-etcd-prefix", "/serve-test/", "-lease-ttl", "2"},
			map[string]string{"SWITCHBOARD_DB": filepath.Join(t.TempDir(), "local", "sb.db"), "SWITCHBOARD_TOKEN": token, "SWITCHBOARD_MCP_TOKEN": mcpToken,
				"SWITCHBOARD_SECRET_KEY":    teamKey,
				"SWITCHBOARD_ETCD_INSECURE": "1"}) // the test's etcd speaks plain HTTP on loopback
		t.Cleanup(func() {
			if err := s.stop(); err != nil {
				t.Errorf("replica %d stopped with %v", i, err)
			}
		})
		if !strings.Contains(s.stdout.String(), "running with etcd at "+url+" (keys under /serve-test/)") {
			t.Errorf("replica %d says: %s", i, s.stdout)
		}
		bases = append(bases, s.base)
	}
	first, second := liveDashboard{base: bases[0], token: token}, liveDashboard{base: bases[1], token: token}
	first.api(t, http.MethodPost, "/api/v1/servers", map[string]any{"id": "shared", "name": "Shared", "transport": "http", "url": "https://mcp.example.com/mcp"}, http.StatusCreated)
	if body := second.api(t, http.MethodGet, "/api/v1/servers/shared", nil, http.StatusOK); !strings.Contains(string(body), `"name":"Shared"`) {
		t.Errorf("read on the second replica = %s", body)
	}

	// A backup while the replicas run (issue 38; it was 501): through the
	// API, and with the CLI, each a database file that opens as it is
	// and holds what etcd held.
	dir := t.TempDir()
	fromAPI := filepath.Join(dir, "api.db")
	if err := os.WriteFile(fromAPI, second.api(t, http.MethodGet, "/api/v1/backup", nil, http.StatusOK), 0o600); err != nil {
		t.Fatal(err)
	}
	fromCLI := filepath.Join(dir, "cli.db")
	var stdout, stderr syncBuffer
	if err := run(context.Background(), []string{"backup", "-store", url, "-etcd-prefix", "/serve-test/", "-etcd-insecure", fromCLI},
		env(nil), nil, &stdout, &stderr); err != nil {
		t.Fatalf("backup of etcd = %v; %s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "read back and compared): 1 servers") {
		t.Errorf("backup says: %s", stdout.String())
	}
	for _, path := range []string{fromAPI, fromCLI} {
		db, err := bolt.Open(path, bolt.Options{})
		if err != nil {
			t.Fatalf("open the backup %s: %v", filepath.Base(path), err)
		}
		srv, err := db.Server(context.Background(), "shared")
		db.Close()
		if err != nil || srv.URL != "https://mcp.example.com/mcp" {
			t.Errorf("the backup %s holds %+v, %v; want the shared server", filepath.Base(path), srv, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*partial*")); len(left) > 0 {
		t.Errorf("the backup left %v behind", left)
	}
}

func TestServeETCDFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		vars map[string]string
		want string
	}{
		{"not an etcd URL", []string{"-store", "postgres://db"}, map[string]string{"SWITCHBOARD_TOKEN": "x"}, "want etcd://host:2379"},
		{"no shared token", []string{"-store", "etcd://127.0.0.1:1", "-etcd-insecure"}, nil, "set SWITCHBOARD_TOKEN, the same on every replica"},
		{"lease too short", []string{"-store", "etcd://127.0.0.1:1", "-etcd-insecure", "-lease-ttl", "1"}, map[string]string{"SWITCHBOARD_TOKEN": "x"}, "-lease-ttl must be between 2 and 300"},
		// Issue 34, L6: the catalog's secrets never cross the network in
		// clear unless asked for.
		{"plaintext etcd", []string{"-store", "etcd://127.0.0.1:1"}, map[string]string{"SWITCHBOARD_TOKEN": "x"}, "without TLS"},
		{"key without cert", []string{"-store", "etcd://127.0.0.1:1", "-etcd-key", "k.pem"}, map[string]string{"SWITCHBOARD_TOKEN": "x"}, "-etcd-cert and -etcd-key go together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := run(ctx, append([]string{"serve", "-addr", "127.0.0.1:0"}, tc.args...), env(tc.vars), nil, &stdout, &stderr)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("serve %v = %v; want a usage error (exit 2) saying %q", tc.args, err, tc.want)
			}
		})
	}
}

// A replica reaches an etcd that speaks TLS only, wants a client
// certificate and has auth on, with the -etcd-* flags and the password
// from the environment.
func TestServeOnSecureETCD(t *testing.T) {
	srv, sec, err := etcdtest.StartSecure()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	token := strings.Repeat("s", 64)
	s := startServeArgs(t, []string{"-addr", "127.0.0.1:0", "-store", "etcd://" + strings.TrimPrefix(srv.Endpoint, "https://"),
		"-etcd-ca", sec.CA, "-etcd-cert", sec.Cert, "-etcd-key", sec.Key, "-etcd-user", sec.User},
		map[string]string{"SWITCHBOARD_DB": filepath.Join(t.TempDir(), "sb.db"), "SWITCHBOARD_TOKEN": token, "SWITCHBOARD_ETCD_PASSWORD": sec.Password,
			"SWITCHBOARD_SECRET_KEY": teamKey})
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("stopped with %v", err)
		}
	})
	d := liveDashboard{base: s.base, token: token}
	d.api(t, http.MethodPost, "/api/v1/servers", map[string]any{"id": "over-tls", "transport": "http", "url": "https://mcp.example.com/mcp"}, http.StatusCreated)
	if strings.Contains(s.stdout.String()+s.stderr.String(), sec.Password) {
		t.Error("the etcd password appears in the output")
	}
}

// teamKey is the secret key the test replicas share.
var teamKey = secretkey.Encode(secretkey.New())
