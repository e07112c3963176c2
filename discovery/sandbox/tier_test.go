package sandbox

import (
	"slices"
	"strings"
	"testing"
)

// What a machine lacks is said before Verify (Expect) and by the
// launcher (Missing), the same way.
func TestExpectMissing(t *testing.T) {
	linux := Machine{OS: "linux", Landlock: 7, UserNS: true}
	for _, c := range []struct {
		name    string
		m       Machine
		p       Profile
		tier    string
		missing string // a word of the one thing missing; "" for nothing
	}{
		{"everything", linux, Profile{}, "landlock-v7 + netns + seccomp + rlimits", ""},
		{"root with a cgroup", Machine{OS: "linux", Landlock: 7, UserNS: true, Cgroup: "v1", Root: true}, Profile{}, "landlock-v7 + netns + seccomp + cgroup", ""},
		{"no user namespaces", Machine{OS: "linux", Landlock: 7}, Profile{}, "landlock-v7 + seccomp + rlimits", ""},
		{"root, no user namespaces, no cgroup", Machine{OS: "linux", Landlock: 7, Root: true}, Profile{}, "landlock-v7 + seccomp + rlimits", "processes"},
		{"root, network any, no cgroup", Machine{OS: "linux", Landlock: 7, UserNS: true, Root: true}, Profile{Network: NetworkAny}, "landlock-v7 + seccomp + rlimits", "processes"},
		{"root with a user namespace, no cgroup", Machine{OS: "linux", Landlock: 7, UserNS: true, Root: true}, Profile{}, "landlock-v7 + netns + seccomp + rlimits", "processes"},
		{"old kernel, no user namespaces", Machine{OS: "linux", Landlock: 3}, Profile{}, "landlock-v3 + seccomp + rlimits, no network rules", "network"},
		{"no Landlock", Machine{OS: "linux", UserNS: true}, Profile{}, "netns + seccomp + rlimits", "Landlock"},
		{"walls off", Machine{OS: "linux"}, Profile{Off: true}, "none (walls off)", ""},
		{"macOS", Machine{OS: "darwin", Seatbelt: true}, Profile{}, "seatbelt + rlimits", ""},
		{"macOS without sandbox-exec", Machine{OS: "darwin"}, Profile{}, "none", "sandbox-exec"},
		{"Windows", Machine{OS: "windows"}, Profile{}, "job+low-integrity", "network walls"},
		{"Windows reads", Machine{OS: "windows"}, Profile{Network: NetworkAny}, "job+low-integrity", "read walls"},
		{"Windows walls off", Machine{OS: "windows"}, Profile{Off: true}, "none (walls off)", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tier, missing := c.m.Expect(c.p)
			if tier.String() != c.tier {
				t.Errorf("tier = %q; want %q", tier, c.tier)
			}
			if c.missing == "" && len(missing) > 0 || c.missing != "" && !slices.ContainsFunc(missing, func(m string) bool { return strings.Contains(m, c.missing) }) {
				t.Errorf("missing = %q; want %q", missing, c.missing)
			}
		})
	}
}
