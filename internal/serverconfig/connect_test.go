package serverconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Each client's config is where the client itself keeps it, per system.
func TestClientConfigPaths(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	none := env(nil)
	for _, c := range []struct {
		key, goos string
		getenv    func(string) string
		want      string
	}{
		{"claude-code", "linux", none, "/h/.claude.json"},
		{"claude-desktop", "linux", none, "/h/.config/Claude/claude_desktop_config.json"},
		{"claude-desktop", "linux", env(map[string]string{"XDG_CONFIG_HOME": "/x"}), "/x/Claude/claude_desktop_config.json"},
		{"claude-desktop", "darwin", none, "/h/Library/Application Support/Claude/claude_desktop_config.json"},
		{"claude-desktop", "windows", env(map[string]string{"APPDATA": "/a"}), "/a/Claude/claude_desktop_config.json"},
		{"cursor", "darwin", none, "/h/.cursor/mcp.json"},
		{"vscode", "linux", none, "/h/.config/Code/User/mcp.json"},
		{"vscode", "darwin", none, "/h/Library/Application Support/Code/User/mcp.json"},
		{"codex", "linux", none, "/h/.codex/config.toml"},
		{"codex", "linux", env(map[string]string{"CODEX_HOME": "/c"}), "/c/config.toml"},
	} {
		cl, ok := ClientByKey(c.key)
		if !ok {
			t.Fatalf("no client %s", c.key)
		}
		if got := cl.ConfigPath(c.goos, "/h", c.getenv); got != filepath.FromSlash(c.want) {
			t.Errorf("%s on %s: %s; want %s", c.key, c.goos, got, c.want)
		}
	}
}

// A stdio-only client's entry runs switchboard mcp with the token in its
// environment; the others reach /mcp with it as a bearer token; TokenOf
// finds it in either.
func TestEntry(t *testing.T) {
	ep := Endpoint{URL: "http://127.0.0.1:7420/mcp", Token: "sbc_t", Exe: "/bin/switchboard", Addr: "127.0.0.1:7420"}
	desktop, _ := ClientByKey("claude-desktop")
	code, _ := ClientByKey("claude-code")
	s := desktop.Entry(ep)
	if s.Command != ep.Exe || len(s.Args) != 3 || s.Args[0] != "mcp" || s.Args[2] != ep.Addr || TokenOf(s) != "sbc_t" || s.URL != "" {
		t.Errorf("claude-desktop entry = %+v", s)
	}
	h := code.Entry(ep)
	if h.URL != ep.URL || h.Headers["Authorization"] != "Bearer sbc_t" || TokenOf(h) != "sbc_t" || h.Command != "" {
		t.Errorf("claude-code entry = %+v", h)
	}
}

// A config kept elsewhere and linked to (dotfiles) is written where it
// lives: the link stays a link, and the backup sits beside the target.
func TestConnectThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "mcp.json")
	link := filepath.Join(dir, "home", ".cursor", "mcp.json")
	os.MkdirAll(filepath.Dir(target), 0o700)
	os.MkdirAll(filepath.Dir(link), 0o700)
	if err := os.WriteFile(target, []byte("{\"mcpServers\": {}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	cursor, _ := ClientByKey("cursor")
	p, err := PlanConnect(cursor, link, cursor.Entry(Endpoint{URL: "http://127.0.0.1:7420/mcp", Token: "sbc_x"}), ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	backups, err := p.Write(time.Now())
	if err != nil || len(backups) != 1 {
		t.Fatal(backups, err)
	}
	backup := backups[0]
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is no longer a link: %v, %v", fi, err)
	}
	if got, _ := os.ReadFile(target); !strings.Contains(string(got), "switchboard") {
		t.Errorf("the target was not written: %s", got)
	}
	if filepath.Dir(backup) != filepath.Dir(target) {
		t.Errorf("backup %s; want it beside the target", backup)
	}
}
