package sandbox

import (
	"path/filepath"
	"slices"
	"strings"
)

// Preset is what a package runner needs to fetch and start a server: its
// caches read-write and its registries on the network allow-list. A
// profile takes a preset's grants into its own lists (WithPreset), where
// the person sees and edits them.
type Preset struct {
	Name string
	// Commands are the program names the preset is for.
	Commands []string
	Write    []string
	Allow    []string
	// Note says what the preset grants beyond files and hosts, if
	// anything (shown with it).
	Note string
}

// Presets are the package runners Switchboard recognises.
var Presets = []Preset{
	{
		Name:     "npx",
		Commands: []string{"npx", "npm", "pnpm", "yarn"},
		Write:    []string{"~/.npm", "~/.cache/node", "~/.cache/yarn", "~/.local/share/pnpm"},
		Allow:    []string{"registry.npmjs.org"},
	},
	{
		Name:     "bunx",
		Commands: []string{"bunx", "bun"},
		Write:    []string{"~/.bun/install/cache"},
		Allow:    []string{"registry.npmjs.org"},
	},
	{
		Name:     "uvx",
		Commands: []string{"uvx", "uv"},
		Write:    []string{"~/.cache/uv", "~/.local/share/uv"},
		Allow:    []string{"pypi.org", "files.pythonhosted.org", "github.com", "objects.githubusercontent.com", "release-assets.githubusercontent.com"},
	},
	{
		Name:     "pipx",
		Commands: []string{"pipx"},
		Write:    []string{"~/.local/pipx", "~/.local/share/pipx", "~/.cache/pip", "~/.cache/pipx"},
		Allow:    []string{"pypi.org", "files.pythonhosted.org"},
	},
	{
		Name:     "docker",
		Commands: []string{"docker", "podman"},
		Write:    []string{"/var/run/docker.sock", "/run/podman/podman.sock"},
		Note: "the container engine's socket is as powerful as its owner: the container runs " +
			"with the engine's network and files, not this profile's; and a socket to write " +
			"opens every Unix socket you can reach (ssh-agent's, the session bus's)",
	},
}

// PresetFor returns the preset of the package runner command runs, if it
// is one ("npx", "/usr/bin/npx", "npx.cmd").
func PresetFor(command string) (Preset, bool) {
	base := strings.ToLower(filepath.Base(command))
	for _, ext := range []string{".exe", ".cmd", ".bat", ".ps1"} {
		base = strings.TrimSuffix(base, ext)
	}
	for _, p := range Presets {
		if slices.Contains(p.Commands, base) {
			return p, true
		}
	}
	return Preset{}, false
}

// WithPreset returns p with the preset's grants added: its caches to
// Write and its registries to Allow (and network allow if p had none).
// A profile with network any keeps it.
func (p Profile) WithPreset(pr Preset) Profile {
	p.Runner = pr.Name
	p.Write = append(slices.Clone(p.Write), pr.Write...)
	if len(pr.Allow) > 0 && p.Network != NetworkAny {
		p.Network = NetworkAllow
		p.Allow = append(slices.Clone(p.Allow), pr.Allow...)
	}
	return p
}

// ForCommand is the profile a new server running command starts with:
// the default, plus the preset of its package runner if it is one.
func ForCommand(command string) Profile {
	p := Profile{Files: FilesDefault, Network: NetworkNone}
	if pr, ok := PresetFor(command); ok {
		p = p.WithPreset(pr)
	}
	n, _ := p.Normalize()
	return n
}
