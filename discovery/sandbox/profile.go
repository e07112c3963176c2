// Package sandbox walls in the stdio servers Switchboard starts: what
// each may read and write, which hosts it may reach, and how much memory,
// CPU and how many processes it may use. A Profile says what a server is
// allowed; Prepare turns it into a Plan for one run (absolute paths, a
// private temp dir, an egress proxy for an allow-list); the launcher
// (Switchboard run again between fork and the server's exec) enforces the
// Plan with what the operating system offers, and reports the Tier it
// really got. Nothing here is silent: a wall this machine cannot build is
// an error unless the person chose to run the server weaker.
package sandbox

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Network modes.
const (
	// NetworkNone: no network at all (the default, for discovery and calls
	// alike).
	NetworkNone = "none"
	// NetworkAllow: only the hosts in Profile.Allow, through Switchboard's
	// egress proxy (HTTP and HTTPS clients that honour HTTP(S)_PROXY).
	NetworkAllow = "allow"
	// NetworkAny: the machine's network as it is, loopback included. Shown
	// as a warning.
	NetworkAny = "any"
)

// File modes.
const (
	// FilesDefault: reads everywhere but the secrets (DefaultSecrets and
	// Profile.Deny), writes only to the working directory, the run's temp
	// dir and Profile.Write.
	FilesDefault = "default"
	// FilesStrict: reads only the system's runtime and the listed paths.
	FilesStrict = "strict"
)

// Default limits.
const (
	DefaultMemoryBytes = 1 << 30 // 1 GiB
	DefaultCPUPercent  = 100     // one core's worth
	DefaultProcesses   = 128
)

// Profile is what one server may do. The zero Profile is the default:
// files FilesDefault, network none, default limits.
type Profile struct {
	// Files is FilesDefault or FilesStrict ("" is FilesDefault).
	Files string `json:"files,omitempty"`
	// Read and Write are paths granted read-only and read-write on top of
	// what Files gives. Deny are secrets added to DefaultSecrets (Files
	// default only). A leading "~/" is the user's home.
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// Network is NetworkNone, NetworkAllow or NetworkAny ("" is none);
	// Allow lists host, host:port and *.domain entries (NetworkAllow).
	Network string   `json:"network,omitempty"`
	Allow   []string `json:"allow,omitempty"`
	// CPUPercent is the CPU share (100 is one core), Processes the most
	// processes and threads at once; 0 takes the default.
	CPUPercent int `json:"cpu_percent,omitempty"`
	Processes  int `json:"processes,omitempty"`
	// Runner names the package-runner preset the profile started from
	// (see Presets); informative, the preset's grants are in the lists.
	Runner string `json:"runner,omitempty"`
	// SkipArgPaths lists the paths named in the server's arguments that
	// the person removed from the grants (see ArgPaths).
	SkipArgPaths []string `json:"skip_arg_paths,omitempty"`
	// Weaker is set when the person chose to run the server with the
	// walls this machine can build when it cannot build them all (see
	// Check); otherwise such a server does not start.
	Weaker bool `json:"weaker,omitempty"`
	// Off turns the walls off altogether (shown as a warning everywhere).
	Off bool `json:"off,omitempty"`
}

// DefaultSecrets are the paths under the user's home that hold keys and
// credentials; no server reads them unless its profile lists them in
// Read or Write.
var DefaultSecrets = []string{
	"~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube",
	"~/.docker/config.json", "~/.netrc", "~/.npmrc", "~/.pypirc", "~/.git-credentials",
	"~/.config/gh", "~/.password-store", "~/.local/share/keyrings", "~/.pki",
	"~/.mozilla", "~/.config/google-chrome", "~/.config/chromium", "~/.config/BraveSoftware",
	"~/.config/microsoft-edge", "~/.config/Code/User/globalStorage",
	"~/Library/Keychains", "~/Library/Application Support/Google/Chrome",
	"~/Library/Application Support/Firefox", "~/Library/Cookies",
	"~/.vault-token", "~/.terraform.d/credentials.tfrc.json", "~/.config/op",
}

// Limits of a profile's lists.
const (
	maxPaths   = 64
	maxAllow   = 64
	maxPathLen = 4096
)

// FieldError is a problem with one field of a profile.
type FieldError struct {
	Field   string // "files", "read", "write", "deny", "network", "allow", "cpu_percent", "processes"
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Normalize returns p with defaults filled in (files, network) and lists
// cleaned, sorted and without duplicates, or the first field that is
// wrong.
func (p Profile) Normalize() (Profile, error) {
	switch p.Files {
	case "":
		p.Files = FilesDefault
	case FilesDefault, FilesStrict:
	default:
		return p, &FieldError{"files", fmt.Sprintf("%q is not a file mode (default or strict)", p.Files)}
	}
	switch p.Network {
	case "":
		p.Network = NetworkNone
	case NetworkNone, NetworkAllow, NetworkAny:
	default:
		return p, &FieldError{"network", fmt.Sprintf("%q is not a network mode (none, allow or any)", p.Network)}
	}
	var err error
	for _, l := range []struct {
		field string
		list  *[]string
	}{{"read", &p.Read}, {"write", &p.Write}, {"deny", &p.Deny}, {"skip_arg_paths", &p.SkipArgPaths}} {
		if *l.list, err = cleanPaths(l.field, *l.list); err != nil {
			return p, err
		}
	}
	if len(p.Allow) > maxAllow {
		return p, &FieldError{"allow", fmt.Sprintf("at most %d hosts", maxAllow)}
	}
	allow := make([]string, 0, len(p.Allow))
	for _, a := range p.Allow {
		a = strings.ToLower(strings.TrimSpace(a))
		if a == "" {
			continue
		}
		if _, err := ParseHost(a); err != nil {
			return p, &FieldError{"allow", err.Error()}
		}
		allow = append(allow, a)
	}
	slices.Sort(allow)
	p.Allow = slices.Compact(allow)
	if len(p.Allow) == 0 {
		p.Allow = nil
	}
	if p.Network != NetworkAllow && len(p.Allow) > 0 {
		return p, &FieldError{"allow", "hosts are listed only with network mode allow"}
	}
	if p.CPUPercent < 0 || p.CPUPercent > 6400 {
		return p, &FieldError{"cpu_percent", "between 1 and 6400 (100 is one core), or 0 for the default"}
	}
	if p.Processes < 0 || p.Processes > 1<<16 {
		return p, &FieldError{"processes", "between 1 and 65536, or 0 for the default"}
	}
	return p, nil
}

// cleanPaths checks and cleans a list of paths: absolute or starting
// with "~/", no NUL, at most maxPaths.
func cleanPaths(field string, in []string) ([]string, error) {
	if len(in) > maxPaths {
		return nil, &FieldError{field, fmt.Sprintf("at most %d paths", maxPaths)}
	}
	out := make([]string, 0, len(in))
	for _, p := range in {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if len(p) > maxPathLen || strings.ContainsRune(p, 0) {
			return nil, &FieldError{field, "a path is too long or holds a NUL byte"}
		}
		home := strings.HasPrefix(p, "~/")
		if !home && !filepath.IsAbs(p) {
			return nil, &FieldError{field, fmt.Sprintf("%q: a path must be absolute or start with ~/", p)}
		}
		if home {
			p = "~/" + strings.TrimPrefix(filepath.Clean("/"+p[2:]), "/")
		} else {
			p = filepath.Clean(p)
		}
		out = append(out, p)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// CPU is the CPU share in percent of one core, with its default.
func (p Profile) CPU() int {
	if p.CPUPercent > 0 {
		return p.CPUPercent
	}
	return DefaultCPUPercent
}

// ProcessLimit is the most processes (and threads) at once.
func (p Profile) ProcessLimit() int {
	if p.Processes > 0 {
		return p.Processes
	}
	return DefaultProcesses
}

// Host is one entry of a network allow-list.
type Host struct {
	// Name is a host name or an IP address, lower case; with Wildcard it
	// is the domain whose subdomains match ("*.example.com" has Name
	// "example.com").
	Name     string
	Wildcard bool
	// Port is 0 for the web's ports (80 and 443).
	Port int
}

// ParseHost reads an allow-list entry: "host", "host:port",
// "*.domain", "*.domain:port", "[v6]:port".
func ParseHost(s string) (Host, error) {
	if s == "" || len(s) > 260 {
		return Host{}, errors.New("a host must be 1 to 260 characters")
	}
	var h Host
	name := s
	if host, port, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return Host{}, fmt.Errorf("%q: the port must be 1–65535", s)
		}
		name, h.Port = host, n
	} else if strings.Count(s, ":") == 1 || strings.HasPrefix(s, "[") {
		return Host{}, fmt.Errorf("%q: write host:port, or [v6 address]:port", s)
	}
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		h.Wildcard, name = true, rest
	}
	name = strings.ToLower(name)
	if ip := net.ParseIP(name); ip != nil {
		if h.Wildcard {
			return Host{}, fmt.Errorf("%q: a wildcard takes a domain, not an address", s)
		}
		h.Name = ip.String()
		return h, nil
	}
	if !validDomain(name) {
		return Host{}, fmt.Errorf("%q is not a host name, *.domain or IP address", s)
	}
	if h.Wildcard && !strings.Contains(name, ".") {
		return Host{}, fmt.Errorf("%q: a wildcard needs a domain with a dot (*.example.com)", s)
	}
	h.Name = name
	return h, nil
}

func validDomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Matches reports whether the entry allows host (a name or address, as
// the client asked for it) at port.
func (h Host) Matches(host string, port int) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		host = ip.String()
	}
	if h.Port == 0 {
		if port != 80 && port != 443 {
			return false
		}
	} else if port != h.Port {
		return false
	}
	if h.Wildcard {
		return strings.HasSuffix(host, "."+h.Name)
	}
	return host == h.Name
}

func (h Host) String() string {
	s := h.Name
	if h.Wildcard {
		s = "*." + s
	}
	if h.Port != 0 {
		if strings.Contains(s, ":") {
			s = "[" + s + "]"
		}
		s += ":" + strconv.Itoa(h.Port)
	}
	return s
}
