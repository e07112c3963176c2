//go:build unix

// File modes and /dev/null are Unix's.

package serverconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Connecting writes only a regular file; a file that gains a token is
// made readable by its owner only, and the backup of a file that may hold
// other secrets is too (issue 34, L4).
func TestConnectKeepsTokensPrivate(t *testing.T) {
	cursor, _ := ClientByKey("cursor")
	entry := cursor.Entry(Endpoint{URL: "http://127.0.0.1:7420/mcp", Token: "sbc_0123456789abcdef0123"})
	if _, err := PlanConnect(cursor, "/dev/null", entry, ConnectOptions{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("PlanConnect(/dev/null) = %v; want it refused", err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte("{\"mcpServers\": {}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644)
	p, err := PlanConnect(cursor, path, entry, ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Main().Tightens() {
		t.Error("Tightens = false for a 0644 file gaining a token; want true (connect says so)")
	}
	backups, err := p.Write(time.Now())
	if err != nil || len(backups) != 1 {
		t.Fatal(backups, err)
	}
	for _, f := range []string{path, backups[0]} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", f, fi.Mode().Perm(), err)
		}
	}
}
