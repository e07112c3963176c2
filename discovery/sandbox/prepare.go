package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ProbeArg, as the first argument, makes a program that handles it (see
// discovery.RunLauncherIfAsked) exit 0 at once: Probe starts it in new
// namespaces to learn whether this machine can make them.
const ProbeArg = "__switchboard_sandbox_probe"

// Config is what Switchboard tells the walls about itself.
type Config struct {
	// Database is Switchboard's database file (see Run.Database).
	Database string
	// DashboardPort is the port Switchboard serves on, on loopback: the
	// egress proxy refuses it unless a profile lists it.
	DashboardPort int
	// Home is the user's home ("" is os.UserHomeDir).
	Home string
	// Self is the launcher program, for Probe; "" is os.Executable.
	Self string
	// ExtraDeny are more paths no server reads (a team store's client
	// key and certificate).
	ExtraDeny []string
	// Machine, if set, replaces Probe's findings (tests).
	Machine *Machine
}

// Prepared is a run's walls, made ready in the parent: the plan for the
// launcher, the variables the server gets, the egress proxy. Start the
// launcher with Attr's namespaces, call Started once it runs, and
// Close when the run is over.
type Prepared struct {
	Plan *Plan
	// Env are variables to add to the server's environment (TMPDIR, the
	// proxy's address).
	Env []string
	// Proxy is the run's egress proxy (networks none and allow; nil for
	// any or without walls); its Asked tells what the server asked for.
	Proxy     *Proxy
	cgroup    *cgroup
	closeOnce sync.Once
	proxyDone chan struct{}
}

// Prepare makes ready the walls of one run of a server with profile p
// (normalized here): its plan, a private temp dir and, for an allow-list,
// the egress proxy.
func Prepare(p Profile, r Run, memory int64, c Config, m Machine) (*Prepared, error) {
	p, err := p.Normalize()
	if err != nil {
		return nil, err
	}
	if r.Home == "" {
		r.Home = c.Home
	}
	if r.Home == "" {
		r.Home, _ = os.UserHomeDir()
	}
	if r.Database == "" {
		r.Database = c.Database
	}
	if r.Database != "" {
		// The walls hold paths as the launcher sees them, wherever it runs.
		if abs, err := filepath.Abs(r.Database); err == nil {
			r.Database = abs
		}
	}
	r.ExtraDeny = append(r.ExtraDeny, c.ExtraDeny...)
	if c.Machine != nil {
		m = *c.Machine
	}
	makeCaches(p, r.Home)
	pl := NewPlan(p, r, memory)
	root := TempRootOf(r)
	// Beside the database, whose directory a first `switchboard verify`
	// may be the first to need.
	os.MkdirAll(filepath.Dir(root), 0o700)
	if err := os.Mkdir(root, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("sandbox temp dir: %w", err)
	}
	tmp, err := os.MkdirTemp(root, "run-")
	if err != nil {
		return nil, fmt.Errorf("sandbox temp dir: %w", err)
	}
	pl.TempDir = tmp
	if !pl.alwaysDenied(root) {
		pl.Always = append(pl.Always, root) // the other runs' temp dirs
	}
	sp := &Prepared{Plan: pl, Env: []string{"TMPDIR=" + tmp, "TMP=" + tmp, "TEMP=" + tmp}}
	pl.NetNS = m.UserNS && !pl.Off && pl.Network != NetworkAny
	if cg, err := newCgroup(m, pl); err != nil {
		sp.Close()
		return nil, err
	} else if cg != nil {
		sp.cgroup, pl.Cgroup = cg, cg.name
	}
	// The egress proxy runs for network none too, with nothing allowed:
	// the hosts a server asks for are then known (learn mode).
	if pl.Network != NetworkAny && !pl.Off {
		hosts := make([]Host, 0, len(p.Allow))
		for _, a := range p.Allow {
			h, _ := ParseHost(a)
			hosts = append(hosts, h)
		}
		sp.Proxy = NewProxy(ProxyConfig{Allow: hosts, DashboardPort: c.DashboardPort})
		if pl.NetNS {
			pl.ProxyPort = nsProxyPort
		} else {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				sp.Close()
				return nil, fmt.Errorf("egress proxy: %w", err)
			}
			pl.ProxyPort = ln.Addr().(*net.TCPAddr).Port
			sp.serve(ln)
		}
		proxy := "http://127.0.0.1:" + strconv.Itoa(pl.ProxyPort)
		sp.Env = append(sp.Env,
			"HTTP_PROXY="+proxy, "HTTPS_PROXY="+proxy, "http_proxy="+proxy, "https_proxy="+proxy,
			"NO_PROXY=", "no_proxy=", "npm_config_proxy="+proxy, "npm_config_https_proxy="+proxy,
			"NODE_USE_ENV_PROXY=1")
	}
	return sp, nil
}

// nsProxyPort is the egress proxy's port inside a server's own network
// namespace (any port would do: nothing else listens there).
const nsProxyPort = 3128

// serve runs the proxy on ln until Close.
func (sp *Prepared) serve(ln net.Listener) {
	sp.proxyDone = make(chan struct{})
	go func() {
		defer close(sp.proxyDone)
		sp.Proxy.Serve(ln)
	}()
}

// Ctl reports whether the launcher takes a control socket (as fd 4) and
// waits on it for the parent's word (see Prepared.Started) before it
// builds the walls.
func (p *Plan) Ctl() bool { return p.NetNS || p.Cgroup != "" }

// Close ends the run's walls: the proxy stops, the temp dir is removed,
// the cgroup too (once its processes are gone). Call it after the
// server's processes are stopped.
func (sp *Prepared) Close() {
	if sp == nil {
		return
	}
	sp.closeOnce.Do(func() {
		if sp.Proxy != nil {
			sp.Proxy.Close()
			if sp.proxyDone != nil {
				<-sp.proxyDone
			}
		}
		if sp.Plan.TempDir != "" {
			os.RemoveAll(sp.Plan.TempDir)
		}
		sp.cgroup.remove()
	})
}

// makeCaches makes the cache directories of p's package-runner preset
// that p still grants and that do not exist yet (npm never ran): a
// missing path opens nothing, and the server, which may not write in
// the home itself, could not make them.
func makeCaches(p Profile, home string) {
	i := slices.IndexFunc(Presets, func(pr Preset) bool { return pr.Name == p.Runner })
	if i < 0 || home == "" {
		return
	}
	for _, w := range Presets[i].Write {
		if strings.HasPrefix(w, "~/") && slices.Contains(p.Write, w) {
			os.MkdirAll(expand(w, home), 0o700)
		}
	}
}
