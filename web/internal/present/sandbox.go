package present

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// Sandbox is srv's walls as pages show them, with what machine m builds
// of them; nil for a remote server.
func Sandbox(srv store.Server, m sandbox.Machine) *views.SandboxView {
	p := serverconfig.Profile(srv)
	if p == nil {
		return nil
	}
	n, _ := p.Normalize()
	v := &views.SandboxView{
		Files: n.Files, Network: n.Network, Allow: n.Allow, Read: n.Read, Write: n.Write, Deny: n.Deny,
		Skipped: n.SkipArgPaths, MemoryMB: srv.MemoryMB, CPUPercent: n.CPU(), Processes: n.ProcessLimit(),
		Runner: n.Runner, Off: n.Off, Weaker: n.Weaker,
	}
	if v.MemoryMB == 0 {
		v.MemoryMB = sandbox.DefaultMemoryBytes >> 20
	}
	if pr, ok := sandbox.PresetFor(srv.Command); ok && pr.Name == n.Runner {
		v.RunnerNote = pr.Note
	}
	dirs, files := sandbox.ArgPaths(srv.Args, srv.Cwd)
	for _, d := range dirs {
		if !contains(n.SkipArgPaths, d) {
			v.ArgDirs = append(v.ArgDirs, d)
		}
	}
	for _, f := range files {
		if !contains(n.SkipArgPaths, f) {
			v.ArgFiles = append(v.ArgFiles, f)
		}
	}
	if home, err := os.UserHomeDir(); err == nil && !n.Off {
		for _, w := range append(sandbox.ExpandAll(n.Write, home), v.ArgDirs...) {
			if rel, err := filepath.Rel(w, home); err == nil && !strings.HasPrefix(rel, "..") {
				v.HomeWritten = true
			}
		}
	}
	tier, missing := m.Expect(n)
	v.Expected, v.Missing = tier.String(), missing
	return v
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Refused is what a run's walls refused, as the error view lists it.
func Refused(r *store.Refused) (hosts []views.RefusedHost, paths []string) {
	if r == nil {
		return nil, nil
	}
	for _, h := range r.Hosts {
		hosts = append(hosts, views.RefusedHost{Entry: h.Entry(), Reason: h.Reason, Allowable: sandbox.OneClick(h.Entry(), h.Reason)})
	}
	return hosts, r.Paths
}
