package discovery

import (
	"regexp"
	"slices"
	"strings"
)

// Refused is what a server's walls refused it during a run, for learn
// mode: the hosts its egress proxy refused (with why), and the paths
// named in its stderr next to a permission error (as far as the server
// said: the kernel tells the server, not Switchboard).
type Refused struct {
	Hosts []RefusedHost
	Paths []string
}

// RefusedHost is one host:port the egress proxy refused.
type RefusedHost struct {
	Host   string
	Port   int
	Reason string
}

// Empty reports whether nothing was refused.
func (r *Refused) Empty() bool { return r == nil || len(r.Hosts)+len(r.Paths) == 0 }

// maxRefusedPaths bounds the paths read from stderr.
const maxRefusedPaths = 20

// permissionLine matches a stderr line that reports a refusal by the
// kernel (Go, Node, Python and C spell it these ways).
var permissionLine = regexp.MustCompile(`(?i)EACCES|EPERM|permission denied|operation not permitted`)

// pathInLine finds absolute paths in a line, bare or quoted.
var pathInLine = regexp.MustCompile(`(?:^|[\s'"(=])(/[^/\s'"():,][^\s'"():,]*)`)

// npmErrorLine is a line of an npm error report, which names the code
// and the path on lines of their own ("npm error code EACCES", "npm
// error path /home/me/.npm"; "npm ERR!" before npm 10).
var npmErrorLine = regexp.MustCompile(`^npm (?:error|ERR!) (code|path) (.*)$`)

// refusedPaths returns the absolute paths named on permission-error
// lines of stderr, and in npm's permission-error reports, first seen
// first.
func refusedPaths(stderr string) []string {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) && len(out) < maxRefusedPaths {
			out = append(out, p)
		}
	}
	npmRefused := false // within an npm error whose code is EACCES or EPERM
	for line := range strings.Lines(stderr) {
		if m := npmErrorLine.FindStringSubmatch(strings.TrimRight(line, "\r\n")); m != nil {
			switch p := strings.TrimSpace(m[2]); {
			case m[1] == "code":
				npmRefused = permissionLine.MatchString(p)
			case npmRefused && strings.HasPrefix(p, "/"):
				add(p)
			}
		} else if !strings.HasPrefix(line, "npm ") {
			npmRefused = false
		}
		if !permissionLine.MatchString(line) {
			continue
		}
		for _, m := range pathInLine.FindAllStringSubmatch(line, -1) {
			add(strings.TrimRight(m[1], "."))
		}
	}
	return out
}

// refused is what this run's walls refused: nil if it had none, or
// nothing was.
func (r *verification) refused(stderr string) *Refused {
	if r.proc == nil || r.proc.walls == nil {
		return nil
	}
	out := &Refused{Paths: refusedPaths(stderr)}
	if px := r.proc.walls.Proxy; px != nil {
		for _, a := range px.Asked() {
			if !a.Allowed {
				out.Hosts = append(out.Hosts, RefusedHost{Host: a.Host, Port: a.Port, Reason: a.Reason})
			}
		}
	}
	if out.Empty() {
		return nil
	}
	return out
}
