package clientconfig

import (
	"os"
	"path/filepath"
)

// Location is a client config file that exists on this machine.
type Location struct {
	Path   string
	Format string
	Client string // "Claude Desktop", "Claude Code", "Cursor", "Windsurf", "VS Code", "Codex"
}

// wellKnown lists the config files clients read, relative to the home
// directory or the working directory, in the order WellKnown reports them.
var wellKnown = []struct {
	inHome bool
	path   string
	format string
	client string
}{
	{true, ".config/Claude/claude_desktop_config.json", Claude, "Claude Desktop"},
	{true, "Library/Application Support/Claude/claude_desktop_config.json", Claude, "Claude Desktop"},
	{true, "AppData/Roaming/Claude/claude_desktop_config.json", Claude, "Claude Desktop"},
	{true, ".claude.json", Claude, "Claude Code"},
	{true, ".cursor/mcp.json", Cursor, "Cursor"},
	{true, ".codeium/windsurf/mcp_config.json", Claude, "Windsurf"},
	{true, ".config/Code/User/mcp.json", VSCode, "VS Code"},
	{true, "Library/Application Support/Code/User/mcp.json", VSCode, "VS Code"},
	{true, "AppData/Roaming/Code/User/mcp.json", VSCode, "VS Code"},
	{true, ".codex/config.toml", Codex, "Codex"},
	{false, ".mcp.json", Claude, "Claude Code"},
	{false, ".vscode/mcp.json", VSCode, "VS Code"},
	{false, ".cursor/mcp.json", Cursor, "Cursor"},
	{false, ".codex/config.toml", Codex, "Codex"},
}

// WellKnown lists the well-known config files that exist (as regular
// files, symbolic links followed) under home (Linux, macOS and Windows paths) and
// in cwd (project files: .mcp.json, .vscode/mcp.json, .cursor/mcp.json,
// .codex/config.toml), in that order. An empty home or cwd is skipped; a
// file found through both (cwd is home) is listed once.
func WellKnown(home, cwd string) []Location {
	var out []Location
	seen := map[string]bool{}
	for _, w := range wellKnown {
		dir := cwd
		if w.inHome {
			dir = home
		}
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(w.path))
		if seen[p] {
			continue
		}
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		seen[p] = true
		out = append(out, Location{Path: p, Format: w.format, Client: w.client})
	}
	return out
}
