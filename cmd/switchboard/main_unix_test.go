//go:build unix

// The modes of the data directory and the database (0700, 0600) are
// Unix's, and so is the default data directory under $HOME.

package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestServeStartsPrintsLoginURLAndStops(t *testing.T) {
	db := filepath.Join(t.TempDir(), "data", "sb.db")
	base, _, stop := startServe(t, map[string]string{"SWITCHBOARD_DB": db, "SWITCHBOARD_TOKEN": "tok-123"})

	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"ok"`) {
		t.Fatalf("GET /healthz = %d %s; want 200 ok", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", base+"/api/v1/servers", nil)
	req.Header.Set("Authorization", "Bearer tok-123")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /api/v1/servers with SWITCHBOARD_TOKEN = %d; want 200", resp.StatusCode)
	}
	fi, err := os.Stat(filepath.Dir(db))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("data dir mode = %v, %v; want 0700", fi.Mode().Perm(), err)
	}

	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("run after cancel = %v; want nil", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("shutdown took %v; want well under 3s", d)
	}
}

// TestServeRepairsDataDirectory: the default data directory, left open to
// other users, is closed to 0700 at start, and the log says so.
func TestServeRepairsDataDirectory(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".local", "share", "switchboard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0"}, env(map[string]string{"HOME": home}), nil, &stdout, &stderr)
	}()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !openURL.MatchString(stdout.String()); time.Sleep(10 * time.Millisecond) {
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve = %v; stderr %s", err, stderr.String())
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("data directory mode = %v (%v); want 0700", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "switchboard.db")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("database mode = %v (%v); want 0600", fi.Mode().Perm(), err)
	}
	if !strings.Contains(stderr.String(), "changed to 0700") {
		t.Errorf("stderr = %q; want a note that the directory was repaired", stderr.String())
	}
}
