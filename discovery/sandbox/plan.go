package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Plan is a profile resolved for one run: absolute paths, the run's temp
// dir, how the network is cut. The parent (Switchboard) makes it; the
// launcher enforces it before it execs the server. It travels as JSON.
type Plan struct {
	// Off: no walls but the limits (Profile.Off).
	Off bool `json:"off,omitempty"`
	// Weaker: build what this machine can, and say what it built.
	Weaker bool `json:"weaker,omitempty"`

	// ReadRoots are read (and executed) with everything beneath them but
	// Secrets and Always; Read and Write are what the person granted,
	// beneath which Always and the Secrets strictly beneath the grant are
	// denied (granting ~ is no grant of ~/.ssh; granting ~/.ssh is).
	ReadRoots []string `json:"read_roots"`
	Read      []string `json:"read,omitempty"`
	Write     []string `json:"write,omitempty"`
	// Secrets are denied beneath ReadRoots and grants (DefaultSecrets and
	// Profile.Deny, resolved).
	Secrets []string `json:"secrets,omitempty"`
	// Always are denied whatever was granted: Switchboard's files (every
	// entry of the database's directory whose name starts with the
	// database's name, listed in AlwaysPrefixes) and the other runs' temp
	// dirs.
	Always         []string `json:"always,omitempty"`
	AlwaysPrefixes []string `json:"always_prefixes,omitempty"`
	// UnixSockets: the server may open Unix sockets, because a Write
	// path is one (the docker preset's engine socket). Landlock (below
	// ABI 9) does not confine connect(2) to a socket's path, so this
	// opens every socket the user can reach: ssh-agent's, the session
	// bus's. Otherwise only socketpair(2) makes them.
	UnixSockets bool `json:"unix_sockets,omitempty"`
	// Devices are device files read and written (/dev/null and kin).
	Devices []string `json:"devices,omitempty"`
	// TempDir is the run's private temp dir (TMPDIR), read-write.
	TempDir string `json:"temp_dir"`

	// Network is NetworkNone, NetworkAllow or NetworkAny. ProxyPort is the
	// TCP port of the egress proxy the server may connect to (allow), on
	// loopback: in the server's own network namespace when NetNS, else
	// the host's.
	Network   string `json:"network"`
	NetNS     bool   `json:"netns,omitempty"`
	ProxyPort int    `json:"proxy_port,omitempty"`

	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	CPUPercent  int   `json:"cpu_percent,omitempty"`
	Processes   int   `json:"processes,omitempty"`
	// Cgroup is the cgroup the server runs in (made by the parent, which
	// puts the launcher in it before it execs); "" for none: the limits
	// are then rlimits.
	Cgroup string `json:"cgroup,omitempty"`
}

// Encode returns the plan as the launcher's argument.
func (p *Plan) Encode() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// DecodePlan reads a plan made by Encode.
func DecodePlan(s string) (*Plan, error) {
	var p Plan
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return nil, fmt.Errorf("sandbox plan: %w", err)
	}
	return &p, nil
}

// Run is what a plan is made for: the server's launch, and where
// Switchboard keeps its own files.
type Run struct {
	// Path is the program's resolved path; Args its arguments; Cwd its
	// working directory ("" for Switchboard's own, which is then not
	// granted).
	Path string
	Args []string
	Cwd  string
	// Home is the user's home directory ("~/" in profiles).
	Home string
	// Database is Switchboard's database file: every entry of its
	// directory whose name starts with its name is always denied (the
	// database, token files, seal, run records, backups, run temp dirs).
	Database string
	// TempRoot is the directory of the per-run temp dirs ("" puts them
	// beside the database, in <db>.tmp).
	TempRoot string
	// ExtraDeny are more paths always denied (another store's files).
	ExtraDeny []string
}

// expand resolves "~/" against home and cleans p.
func expand(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home == "" {
			return ""
		}
		return filepath.Join(home, rest)
	}
	return filepath.Clean(p)
}

// ExpandAll is ps with "~/" resolved against home, cleaned; an entry
// that needs a home and has none is left out.
func ExpandAll(ps []string, home string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if e := expand(p, home); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// runtimeRoots are what a strict profile reads besides its lists: the
// system's programs and libraries, configuration, and the kernel's views
// of the process.
var runtimeRoots = []string{"/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix/store", "/proc", "/sys", "/System", "/Library", "/Applications", "/private/etc", "/private/var/db/timezone", "/dev/random", "/dev/urandom"}

// devices every server may read and write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/ptmx", "/dev/pts"}

// ArgPaths returns the existing paths named in a server's arguments (an
// absolute path, or one relative to cwd containing a separator), as a
// launch confirmation grants them: directories read-write, files
// read-only. "--root=/srv/x" names /srv/x.
func ArgPaths(args []string, cwd string) (dirs, files []string) {
	for _, a := range args {
		if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			a = v
		}
		if a == "" || strings.HasPrefix(a, "-") || !strings.ContainsRune(a, filepath.Separator) {
			continue
		}
		p := a
		if !filepath.IsAbs(p) {
			if cwd == "" {
				continue
			}
			p = filepath.Join(cwd, p)
		}
		p = filepath.Clean(p)
		fi, err := os.Stat(p)
		if err != nil || p == "/" {
			continue
		}
		if fi.IsDir() {
			dirs = append(dirs, p)
		} else {
			files = append(files, p)
		}
	}
	slices.Sort(dirs)
	slices.Sort(files)
	return slices.Compact(dirs), slices.Compact(files)
}

// NewPlan resolves a normalized profile for run. It makes nothing: the
// temp dir and the proxy are the caller's (see Prepare).
func NewPlan(p Profile, r Run, memory int64) *Plan {
	pl := &Plan{
		Off: p.Off, Weaker: p.Weaker, Network: p.Network,
		MemoryBytes: memory, CPUPercent: p.CPU(), Processes: p.ProcessLimit(),
		Devices: slices.Clone(devices),
	}
	if pl.MemoryBytes <= 0 {
		pl.MemoryBytes = DefaultMemoryBytes
	}
	if pl.Network == "" {
		pl.Network = NetworkNone
	}
	if p.Files == FilesStrict {
		pl.ReadRoots = slices.Clone(runtimeRoots)
		// The program's own directory (and its parent: a node_modules/.bin
		// link leads one up).
		if r.Path != "" {
			dir := filepath.Dir(r.Path)
			pl.ReadRoots = append(pl.ReadRoots, dir, filepath.Dir(dir))
		}
	} else {
		pl.ReadRoots = []string{"/"}
	}
	// Beneath a grant too (the home named in the arguments), in either
	// mode: a grant lifts only the secrets it is or lies beneath.
	pl.Secrets = ExpandAll(append(slices.Clone(DefaultSecrets), p.Deny...), r.Home)
	pl.Read = ExpandAll(p.Read, r.Home)
	pl.Write = ExpandAll(p.Write, r.Home)
	if r.Cwd != "" {
		pl.Write = append(pl.Write, filepath.Clean(r.Cwd))
	}
	dirs, files := ArgPaths(r.Args, r.Cwd)
	skip := ExpandAll(p.SkipArgPaths, r.Home)
	for _, d := range dirs {
		if !slices.Contains(skip, d) {
			pl.Write = append(pl.Write, d)
		}
	}
	for _, f := range files {
		if !slices.Contains(skip, f) {
			pl.Read = append(pl.Read, f)
		}
	}
	if r.Database != "" {
		// As written and as it really is: a directory reached through a
		// link is granted where it leads.
		db := filepath.Clean(r.Database)
		pl.AlwaysPrefixes = []string{db}
		if dir, err := filepath.EvalSymlinks(filepath.Dir(db)); err == nil && dir != filepath.Dir(db) {
			pl.AlwaysPrefixes = append(pl.AlwaysPrefixes, filepath.Join(dir, filepath.Base(db)))
		}
	}
	for _, w := range pl.Write {
		if fi, err := os.Stat(w); err == nil && fi.Mode()&os.ModeSocket != 0 {
			pl.UnixSockets = true
		}
	}
	pl.Always = ExpandAll(r.ExtraDeny, r.Home)
	for _, l := range []*[]string{&pl.ReadRoots, &pl.Read, &pl.Write, &pl.Secrets, &pl.Always} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	return pl
}

// TempRootOf is where the per-run temp dirs of run go.
func TempRootOf(r Run) string {
	if r.TempRoot != "" {
		return r.TempRoot
	}
	if r.Database != "" {
		return filepath.Clean(r.Database) + ".tmp"
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("switchboard-runs-%d", os.Getuid()))
}

// alwaysDenied reports whether path is, or is beneath, a path the plan
// always denies.
func (p *Plan) alwaysDenied(path string) bool {
	for _, a := range p.Always {
		if within(path, a) {
			return true
		}
	}
	for _, pre := range p.AlwaysPrefixes {
		dir, base := filepath.Dir(pre), filepath.Base(pre)
		if rel, err := filepath.Rel(dir, path); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			first, _, _ := strings.Cut(rel, string(filepath.Separator))
			if strings.HasPrefix(first, base) {
				return true
			}
		}
	}
	return false
}

// within reports whether path is dir or beneath it.
func within(path, dir string) bool {
	if path == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}
