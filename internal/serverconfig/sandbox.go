package serverconfig

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
	"github.com/switchboard-dev/switchboard/store"
)

// Sandbox returns srv's permission profile as it runs: the stored one, or
// the default for its command (with its package runner's preset). Nil
// for a remote server.
func Sandbox(srv store.Server) *store.Sandbox {
	if srv.Transport != store.TransportStdio {
		return nil
	}
	if srv.Sandbox != nil {
		return srv.Sandbox
	}
	p := store.Sandbox(sandbox.ForCommand(srv.Command))
	return &p
}

// Profile is srv's permission profile as the walls take it.
func Profile(srv store.Server) *sandbox.Profile {
	sb := Sandbox(srv)
	if sb == nil {
		return nil
	}
	p := sandbox.Profile(*sb)
	return &p
}

// validateSandbox sets s's permission profile from in: as submitted, or
// the stored one (with the preset of a newly chosen package runner), or
// the default for its command. Errors go to "sandbox_<field>".
func validateSandbox(in Input, old *store.Server, s *store.Server, errs map[string]string) {
	var sb store.Sandbox
	switch {
	case in.Sandbox == nil && old != nil && old.Sandbox == nil && in.SandboxCPU == "" && in.SandboxProcesses == "":
		return // the default for its command, as before
	case in.Sandbox != nil:
		sb = *in.Sandbox
		// A package runner's preset joins a profile that has none yet
		// (a new server's form): its caches and registries, visible in the
		// lists from then on.
		if pr, ok := sandbox.PresetFor(s.Command); ok && sb.Runner == "" {
			sb = store.Sandbox(sandbox.Profile(sb).WithPreset(pr))
		}
	case old != nil && old.Sandbox != nil:
		sb = *old.Sandbox
		if pr, ok := sandbox.PresetFor(s.Command); ok && pr.Name != sb.Runner {
			sb = store.Sandbox(sandbox.Profile(sb).WithPreset(pr))
		}
	default:
		sb = store.Sandbox(sandbox.ForCommand(s.Command))
	}
	for _, n := range []struct {
		text, field string
		out         *int
	}{{in.SandboxCPU, "cpu_percent", &sb.CPUPercent}, {in.SandboxProcesses, "processes", &sb.Processes}} {
		t := strings.TrimSpace(n.text)
		if t == "" {
			continue
		}
		v, err := strconv.Atoi(t)
		if err != nil {
			errs["sandbox_"+n.field] = "Must be a whole number, or empty for the default."
			continue
		}
		*n.out = v
	}
	p, err := sandbox.Profile(sb).Normalize()
	if fe := (*sandbox.FieldError)(nil); errors.As(err, &fe) {
		errs["sandbox_"+fe.Field] = capitalize(fe.Message) + "."
		return
	}
	out := store.Sandbox(p)
	s.Sandbox = &out
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// formSandbox reads the form's permission profile, nil if the form has
// none (a remote server's).
func formSandbox(v url.Values) (*store.Sandbox, string, string) {
	if !v.Has("sandbox_network") {
		return nil, "", ""
	}
	lines := func(name string) []string {
		var out []string
		for l := range strings.Lines(strings.ReplaceAll(v.Get(name), "\r\n", "\n")) {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	sb := &store.Sandbox{
		Files: v.Get("sandbox_files"), Network: v.Get("sandbox_network"),
		Allow: lines("sandbox_allow"), Read: lines("sandbox_read"), Write: lines("sandbox_write"), Deny: lines("sandbox_deny"),
		Runner: v.Get("sandbox_runner"), SkipArgPaths: lines("sandbox_skip_arg_paths"),
		Weaker: v.Get("sandbox_weaker") == "on", Off: v.Get("sandbox_off") == "on",
	}
	return sb, v.Get("sandbox_cpu_percent"), v.Get("sandbox_processes")
}

// SandboxLines is a list as the form's text areas show it.
func SandboxLines(list []string) string { return strings.Join(slices.Clone(list), "\n") }
