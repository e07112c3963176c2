package serverconfig

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/switchboard-dev/switchboard/internal/clientconfig"
)

// Connecting a client writes Switchboard's own entry into that client's
// user-wide config file, keeping everything else in it as written
// (clientconfig.SetEntry), after a backup; disconnecting removes the
// entry. Clients that take a URL reach /mcp over HTTP with the client's
// own token; those that only start stdio servers run `switchboard mcp`
// with the token in its environment.

// EntryName is the name of Switchboard's entry in a client's config.
const EntryName = "switchboard"

// Client is an agent client Switchboard can connect itself to.
type Client struct {
	Key    string // as the CLI and forms name it: claude-code, claude-desktop, cursor, vscode, codex
	Name   string // as people know it
	Format string // its config's format (see clientconfig)
	// Stdio is set for a client whose entry runs `switchboard mcp`.
	Stdio bool
}

// Clients are the clients Switchboard connects to.
var Clients = []Client{
	{Key: "claude-code", Name: "Claude Code", Format: clientconfig.Claude},
	{Key: "claude-desktop", Name: "Claude Desktop", Format: clientconfig.Claude, Stdio: true},
	{Key: "cursor", Name: "Cursor", Format: clientconfig.Cursor},
	{Key: "vscode", Name: "VS Code", Format: clientconfig.VSCode},
	{Key: "codex", Name: "Codex", Format: clientconfig.Codex, Stdio: true},
}

// ClientByKey is the client of that key.
func ClientByKey(key string) (Client, bool) {
	for _, c := range Clients {
		if c.Key == key {
			return c, true
		}
	}
	return Client{}, false
}

// ConfigPath is where the client keeps its user-wide config on goos, for
// the user whose home is home (getenv reads APPDATA, XDG_CONFIG_HOME and
// CODEX_HOME, where the clients do).
func (c Client) ConfigPath(goos, home string, getenv func(string) string) string {
	appConfig := func(app string) string { return appConfigDir(goos, home, getenv, app) }
	switch c.Key {
	case "claude-code":
		return filepath.Join(home, ".claude.json")
	case "claude-desktop":
		return filepath.Join(appConfig("Claude"), "claude_desktop_config.json")
	case "cursor":
		return filepath.Join(home, ".cursor", "mcp.json")
	case "vscode":
		return filepath.Join(appConfig("Code"), "User", "mcp.json")
	case "codex":
		if d := getenv("CODEX_HOME"); d != "" {
			return filepath.Join(d, "config.toml")
		}
		return filepath.Join(home, ".codex", "config.toml")
	}
	return ""
}

// Endpoint is how a client reaches Switchboard: the /mcp URL, the token,
// and for stdio-only clients the switchboard executable and the
// dashboard's address for `switchboard mcp`.
type Endpoint struct {
	URL, Token string
	Exe, Addr  string
}

// Entry is Switchboard's entry for client c.
func (c Client) Entry(e Endpoint) clientconfig.Server {
	if c.Stdio {
		return clientconfig.Server{Name: EntryName, Transport: clientconfig.TransportStdio, Command: e.Exe,
			Args: []string{"mcp", "-addr", e.Addr}, Env: map[string]string{"SWITCHBOARD_MCP_TOKEN": e.Token}}
	}
	return clientconfig.Server{Name: EntryName, Transport: clientconfig.TransportHTTP, URL: e.URL,
		Headers: map[string]string{"Authorization": "Bearer " + e.Token}}
}

// PlanConnectHere is PlanConnect for client key on this system, for the
// user whose home is home (the environment read as the clients read it).
func PlanConnectHere(key, home string, ep Endpoint, m Managed) (Connection, error) {
	c, ok := ClientByKey(key)
	if !ok {
		return Connection{}, fmt.Errorf("%w: %q", ErrUnknownClient, key)
	}
	cwd, _ := os.Getwd()
	return PlanConnect(c, c.ConfigPath(runtime.GOOS, home, os.Getenv), c.Entry(ep),
		ConnectOptions{Managed: m, Projects: ProjectFiles(c, runtime.GOOS, home, os.Getenv, cwd)})
}

// ErrUnknownClient is PlanConnectHere's answer for a client it does not
// know.
var ErrUnknownClient = errors.New("not a client Switchboard connects to: one of claude-code, claude-desktop, cursor, vscode, codex")

// TokenOf is the token an entry of Switchboard's carries ("" if none).
func TokenOf(s clientconfig.Server) string {
	if t := s.Env["SWITCHBOARD_MCP_TOKEN"]; t != "" {
		return t
	}
	t, _ := strings.CutPrefix(s.Headers["Authorization"], "Bearer ")
	return t
}

// ConfigChange is a change of one client config file: its text before
// and after, and the unified diff between them.
type ConfigChange struct {
	Client        Client
	Path          string
	Exists        bool // the file was there
	Before, After []byte
	Diff          string
	// Moved are the entries connecting takes out of the file; Restored
	// those disconnecting puts back, Kept those it cannot.
	Moved, Restored, Kept []clientconfig.Moved
}

// Changed reports whether the file would change.
func (p ConfigChange) Changed() bool { return string(p.Before) != string(p.After) }

// maxClientConfig caps a client config read (Claude Code's ~/.claude.json
// grows with its history).
const maxClientConfig = 32 << 20

func readConfig(c Client, path string) (ConfigChange, error) {
	// A config kept elsewhere and linked (dotfiles) is written where it
	// lives: the link stays a link.
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	p := ConfigChange{Client: c, Path: path}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	defer f.Close()
	// Only a regular file: -config /dev/null would otherwise be replaced
	// by a file holding a token.
	if fi, err := f.Stat(); err != nil {
		return p, err
	} else if !fi.Mode().IsRegular() {
		return p, fmt.Errorf("%s is not a regular file (%s): Switchboard writes only a client's config file", path, fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxClientConfig+1))
	if err != nil {
		return p, err
	}
	if len(data) > maxClientConfig {
		return p, fmt.Errorf("%s is over %d MiB", path, maxClientConfig>>20)
	}
	p.Exists, p.Before = true, data
	return p, nil
}

// writeBackup writes data to a new file named name, or name-2, name-3…
// if it is taken: a backup never replaces another.
func writeBackup(name string, data []byte, mode fs.FileMode) (string, error) {
	for i := 1; i < 100; i++ {
		path := name
		if i > 1 {
			path = fmt.Sprintf("%s-%d", name, i)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return path, err
	}
	return "", fmt.Errorf("%s: too many backups", name)
}

// diff is the unified diff of a file's change, with Switchboard's tokens
// masked (see MaskTokens).
func diff(path string, before, after []byte) string {
	d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(before)), B: difflib.SplitLines(string(after)),
		FromFile: path, ToFile: path + " (new)", Context: 3,
	})
	return MaskTokens(d)
}

var switchboardToken = regexp.MustCompile(`\b(sbc|sbmcp)_[0-9a-f]{16,}`)

// MaskTokens hides Switchboard's tokens (a client's sbc_…, the
// endpoint's sbmcp_…) in text meant to be shown.
func MaskTokens(s string) string { return switchboardToken.ReplaceAllString(s, "${1}_••••") }

// quotedValue is a quoted value after a key (JSON "k": "v", TOML k = "v").
var quotedValue = regexp.MustCompile(`((?:"(?:[^"\\]|\\.)*"\s*:|[A-Za-z0-9_.-]+\s*=)\s*)"(?:[^"\\]|\\.)*"`)

// PageDiff is the change as a page shows it: only the lines that change,
// with the values of every line but the new entry's masked, since the
// file may hold other servers' secrets the page must not echo.
func (p ConfigChange) PageDiff() string {
	d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(p.Before)), B: difflib.SplitLines(string(p.After)), Context: 0,
	})
	removed := map[string]bool{}
	for _, l := range strings.Split(d, "\n") {
		if strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---") {
			removed[strings.TrimRight(strings.TrimSpace(l[1:]), ",")] = true
		}
	}
	var out []string
	for _, l := range strings.Split(d, "\n") {
		switch {
		case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "@@"):
			continue
		case strings.HasPrefix(l, "-"), strings.HasPrefix(l, "+") && removed[strings.TrimRight(strings.TrimSpace(l[1:]), ",")]:
			l = quotedValue.ReplaceAllString(l, `${1}"••••"`) // a line of the file as it was
		}
		out = append(out, l)
	}
	return MaskTokens(strings.TrimRight(strings.Join(out, "\n"), "\n") + "\n")
}

// Tightens reports whether Write makes the file readable by its owner
// only: it holds a Switchboard token afterwards and others may read it
// now (see Write).
func (p ConfigChange) Tightens() bool {
	if !p.Exists || !switchboardToken.Match(p.After) {
		return false
	}
	fi, err := os.Stat(p.Path)
	return err == nil && fi.Mode().Perm()&0o077 != 0
}

// Write applies the change: the file as it was is copied beside it first
// (PATH.switchboard-backup-TIME, returned, 0600: the file may hold other
// servers' secrets), then the new text replaces it whole (a temporary
// file renamed over it, with the old file's mode, 0600 for a new file; a
// file that holds a Switchboard token afterwards loses its group and
// other bits, see Tightens). A change that changes nothing writes
// nothing.
func (p ConfigChange) Write(now time.Time) (backup string, err error) {
	if !p.Changed() {
		return "", nil
	}
	mode := fs.FileMode(0o600)
	if p.Exists {
		fi, err := os.Stat(p.Path)
		if err != nil {
			return "", err
		}
		if cur, err := os.ReadFile(p.Path); err != nil || string(cur) != string(p.Before) {
			return "", fmt.Errorf("%s changed since the diff was shown; look again", p.Path)
		}
		mode = fi.Mode().Perm()
		if switchboardToken.Match(p.After) {
			mode &^= 0o077
		}
		if backup, err = writeBackup(p.Path+".switchboard-backup-"+now.UTC().Format("20060102-150405"), p.Before, 0o600); err != nil {
			return "", fmt.Errorf("back up %s: %w", p.Path, err)
		}
	}
	return backup, writeFileAtomic(p.Path, p.After, mode)
}
