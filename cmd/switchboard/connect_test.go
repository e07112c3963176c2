package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
)

// Real-shaped configs of each client, with comments where the format
// allows them, and entries of their own that must stay as written.
var clientConfigs = map[string]struct{ rel, text string }{
	"claude-code": {".claude.json", `{
  "numStartups": 42,
  "mcpServers": {
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}
  },
  "projects": {
    "/home/me/app": {"mcpServers": {}, "allowedTools": []},
    "/home/me/docs": {
      "mcpServers": {
        "ctx": {"command": "npx", "args": ["-y", "@upstash/context7-mcp"]}
      }
    }
  }
}
`},
	"claude-desktop": {".config/Claude/claude_desktop_config.json", `{
  // my servers
  "mcpServers": {
    "notes": {
      "command": "notes-mcp", // the local one
      "args": ["--vault", "~/Notes"]
    }
  }
}
`},
	"cursor": {".cursor/mcp.json", `{
  "mcpServers": {
    "linear": {"url": "https://mcp.linear.app/sse"}
  }
}
`},
	"vscode": {".config/Code/User/mcp.json", `{
	// VS Code's own file: inputs, comments and trailing commas
	"inputs": [
		{"type": "promptString", "id": "api-key", "description": "API key", "password": true},
	],
	"servers": {
		"fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]},
	},
}
`},
	"codex": {".codex/config.toml", `# Codex settings
model = "o4"

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]

[mcp_servers.context7.env]
# kept as is
DEBUG = "1"
`},
}

// clientIDs lists the connected clients' tokens by name.
func (d liveDashboard) clientNames(t *testing.T) []string {
	t.Helper()
	var list struct {
		Clients []struct{ Name string } `json:"clients"`
	}
	json.Unmarshal(d.api(t, http.MethodGet, "/api/v1/clients", nil, http.StatusOK), &list)
	var out []string
	for _, c := range list.Clients {
		out = append(out, c.Name)
	}
	return out
}

// `switchboard connect` writes Switchboard into each client's own config
// with a token of its own (made by the running dashboard, reached with the
// API token serve keeps beside the database), keeping the rest of the file
// and a backup, and shows the diff first; `--dry-run` only shows it;
// connecting again replaces the entry and revokes the old token;
// `switchboard disconnect` gives the file back as it was and revokes.
func TestConnectAndDisconnect(t *testing.T) {
	home := t.TempDir()
	db := filepath.Join(t.TempDir(), "sb.db")
	base, _, stop := startServe(t, map[string]string{"SWITCHBOARD_DB": db}) // a generated API token
	t.Cleanup(func() { stop() })
	b, err := os.ReadFile(apiTokenPath(db))
	if err != nil {
		t.Fatalf("serve kept no API token beside the database: %v", err)
	}
	d := liveDashboard{base: base, token: strings.TrimSpace(string(b)), db: db}
	addr := strings.TrimPrefix(base, "http://")
	cli := func(args ...string) (string, string, error) {
		var out, errb bytes.Buffer
		err := run(context.Background(), args, env(map[string]string{"HOME": home, "SWITCHBOARD_DB": db, "SWITCHBOARD_ADDR": addr}), nil, &out, &errb)
		return out.String(), errb.String(), err
	}
	tokenIn := regexp.MustCompile(`sbc_[0-9a-f]{64}`)
	// Servers the dashboard has, which some of the configs launch too:
	// connecting moves those entries behind it (issue 37 #1).
	d.api(t, http.MethodPost, "/api/v1/servers", map[string]any{"id": "github", "transport": "http", "url": "https://api.githubcopilot.com/mcp/"}, http.StatusCreated)
	d.api(t, http.MethodPost, "/api/v1/servers", map[string]any{"id": "context7", "transport": "stdio", "command": "npx", "args": []string{"-y", "@upstash/context7-mcp"}}, http.StatusCreated)
	d.api(t, http.MethodPost, "/api/v1/servers", map[string]any{"id": "linear", "transport": "http", "url": "https://mcp.linear.app/sse"}, http.StatusCreated)
	moves := map[string][]string{ // what each client's connect moves
		"claude-code": {"github", "ctx (project /home/me/docs)"},
		"cursor":      {"linear", "context7 (project " + cursorProject(t, home) + ")"},
		"codex":       {"context7"},
	}

	for _, key := range []string{"claude-code", "claude-desktop", "cursor", "vscode", "codex"} {
		t.Run(key, func(t *testing.T) {
			cfg := clientConfigs[key]
			path := filepath.Join(home, cfg.rel)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(cfg.text), 0o640); err != nil {
				t.Fatal(err)
			}
			before := len(d.clientNames(t))

			out, _, err := cli("connect", key, "--dry-run")
			if err != nil || !strings.Contains(out, "+") || !strings.Contains(out, "Dry run") {
				t.Fatalf("dry run = %v\n%s", err, out)
			}
			if got, _ := os.ReadFile(path); string(got) != cfg.text || len(d.clientNames(t)) != before {
				t.Fatalf("the dry run wrote the file or made a token")
			}

			out, errOut, err := cli("connect", key)
			if err != nil || !strings.Contains(out, "Connected ") {
				t.Fatalf("connect = %v\n%s\n%s", err, out, errOut)
			}
			written, _ := os.ReadFile(path)
			if want := moves[key]; len(want) > 0 {
				if !strings.Contains(out, "Moved behind Switchboard (its agent reaches them only through the gate now): "+strings.Join(want, ", ")+".") {
					t.Errorf("connect does not say it moved %q:\n%s", want, out)
				}
				if strings.Contains(string(written), "githubcopilot") || strings.Contains(string(written), "context7-mcp") || strings.Contains(string(written), "linear.app") {
					t.Errorf("an entry of a server the dashboard has is still in the file:\n%s", written)
				}
			} else if strings.Contains(out, "Moved behind") {
				t.Errorf("connect moved entries of servers the dashboard does not have:\n%s", out)
			}
			token := tokenIn.FindString(string(written))
			if token == "" || strings.Contains(out, token) || !strings.Contains(out, "sbc_••••") {
				t.Fatalf("the file holds no client token, or the diff shows it unmasked:\n%s\n%s", written, out)
			}
			for _, kept := range []string{"mcpServers", "servers", "# Codex settings", "// my servers", "numStartups", "allowedTools", "/home/me/docs", "api-key", "notes-mcp", "fetch"} {
				if strings.Contains(cfg.text, kept) && !strings.Contains(string(written), kept) {
					t.Errorf("%q was lost from the file:\n%s", kept, written)
				}
			}
			backups, _ := filepath.Glob(path + ".switchboard-backup-*")
			if key == "cursor" { // the project file it moved an entry out of
				more, _ := filepath.Glob(filepath.Join(cursorProject(t, home), ".cursor", "mcp.json.switchboard-backup-*"))
				for _, b := range more {
					os.Remove(b)
				}
				if len(more) != 1 {
					t.Errorf("project backups = %v; want one", more)
				}
			}
			if len(backups) != 1 {
				t.Fatalf("backups = %v; want one", backups)
			}
			if bk, _ := os.ReadFile(backups[0]); string(bk) != cfg.text {
				t.Errorf("the backup is not the file as it was")
			}
			// It holds a token now: readable by its owner only, and says so
			// (issue 34, L4); its backup too.
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 || !strings.Contains(out, "others may no longer read it") {
				t.Errorf("mode after = %v; want 0600 (it was 0640, and holds a token now), and connect saying so:\n%s", fi.Mode().Perm(), out)
			}
			if fi, _ := os.Stat(backups[0]); fi.Mode().Perm() != 0o600 {
				t.Errorf("backup mode = %v; want 0600", fi.Mode().Perm())
			}
			if got := mcpStatusOf(t, base, token); got != http.StatusOK {
				t.Errorf("/mcp with the written token: %d", got)
			}
			for _, b := range backups {
				os.Remove(b)
			}

			// Again: the entry is replaced, the old token revoked.
			if _, _, err := cli("connect", key); err != nil {
				t.Fatal(err)
			}
			again, _ := os.ReadFile(path)
			newToken := tokenIn.FindString(string(again))
			if newToken == token || strings.Count(string(again), "sbc_") != 1 {
				t.Errorf("connecting again: token %q (was %q), %d tokens in the file", newToken, token, strings.Count(string(again), "sbc_"))
			}
			if got := mcpStatusOf(t, base, token); got != http.StatusUnauthorized {
				t.Errorf("the replaced token: %d; want it revoked", got)
			}
			if names := d.clientNames(t); len(names) != before+1 {
				t.Errorf("clients after connecting twice: %q", names)
			}

			out, _, err = cli("disconnect", key)
			if err != nil || !strings.Contains(out, "Disconnected") {
				t.Fatalf("disconnect = %v\n%s", err, out)
			}
			if got, _ := os.ReadFile(path); string(got) != cfg.text {
				t.Errorf("after disconnect the file is not as it was:\n%s\nwant:\n%s", got, cfg.text)
			}
			if len(moves[key]) > 0 && !strings.Contains(out, "Put back as they were: "+strings.Join(moves[key], ", ")+".") {
				t.Errorf("disconnect does not say what it put back:\n%s", out)
			}
			if key == "cursor" {
				if got, _ := os.ReadFile(filepath.Join(cursorProject(t, home), ".cursor", "mcp.json")); string(got) != cursorProjectText {
					t.Errorf("the project file after disconnect:\n%s", got)
				}
			}
			if _, err := os.Stat(path + ".switchboard-moved"); !os.IsNotExist(err) {
				t.Errorf("the record of moved entries outlived disconnect: %v", err)
			}
			if got := mcpStatusOf(t, base, newToken); got != http.StatusUnauthorized {
				t.Errorf("the disconnected token: %d; want it revoked", got)
			}
			if out, _, err := cli("disconnect", key); err != nil || !strings.Contains(out, "nothing to do") {
				t.Errorf("disconnect again = %v, %q", err, out)
			}
		})
	}

	t.Run("errors", func(t *testing.T) {
		var ee *exitError
		if _, _, err := cli("connect", "emacs"); !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "claude-desktop") {
			t.Errorf("connect emacs = %v; want a usage error listing the clients", err)
		}
		path := filepath.Join(home, ".cursor", "mcp.json")
		os.WriteFile(path, []byte(`{"mcpServers": {`), 0o600)
		if _, _, err := cli("connect", "cursor"); err == nil || !strings.Contains(err.Error(), "line") {
			t.Errorf("connect into a broken file = %v; want the syntax error's position", err)
		}
		if got, _ := os.ReadFile(path); string(got) != `{"mcpServers": {` {
			t.Errorf("a broken file was written")
		}
		os.Remove(path)
		if _, _, err := cli("connect", "cursor", "-profile", "nope"); err == nil || !strings.Contains(err.Error(), "no such profile") {
			t.Errorf("connect -profile nope = %v; want the dashboard's refusal", err)
		}
		d.api(t, http.MethodPost, "/api/v1/profiles", map[string]any{"id": "picked", "name": "Picked", "mode": "all"}, http.StatusCreated)
		if _, _, err := cli("connect", "cursor", "-profile", "picked"); err != nil {
			t.Fatalf("connect -profile picked = %v", err)
		}
		var list struct {
			Clients []struct{ Name, Profile string } `json:"clients"`
		}
		json.Unmarshal(d.api(t, http.MethodGet, "/api/v1/clients", nil, http.StatusOK), &list)
		if n := len(list.Clients); n == 0 || list.Clients[n-1].Profile != "picked" {
			t.Errorf("clients after connect -profile picked = %+v; want the newest of profile picked", list.Clients)
		}
		var out, errb bytes.Buffer
		err := run(context.Background(), []string{"connect", "claude-code"}, env(map[string]string{"HOME": home, "SWITCHBOARD_DB": db, "SWITCHBOARD_ADDR": "127.0.0.1:1"}), nil, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), "switchboard serve") {
			t.Errorf("connect with no dashboard = %v; want it to say the dashboard must run", err)
		}
	})
}

// cursorProjectText is a Cursor project's own file.
const cursorProjectText = `{
  "mcpServers": {
    "context7": {"command": "npx", "args": ["-y", "@upstash/context7-mcp"]}
  }
}
`

// cursorProject is a folder Cursor opened (its workspaceStorage under
// home says so) with a project file of its own; made once per home.
func cursorProject(t *testing.T, home string) string {
	t.Helper()
	dir := filepath.Join(home, "work", "app")
	file := filepath.Join(dir, ".cursor", "mcp.json")
	if _, err := os.Stat(file); err == nil {
		return dir
	}
	ws := filepath.Join(home, ".config", "Cursor", "User", "workspaceStorage", "9f86d081", "workspace.json")
	for path, text := range map[string]string{file: cursorProjectText, ws: `{"folder": "file://` + filepath.ToSlash(dir) + `"}`} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mcpStatusOf is what /mcp at base answers an initialize with token.
func mcpStatusOf(t *testing.T, base, token string) int {
	t.Helper()
	status, err := mcptest.InitializeStatus(base, token)
	if err != nil {
		t.Fatal(err)
	}
	return status
}
