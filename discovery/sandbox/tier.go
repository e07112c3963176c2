package sandbox

import (
	"strconv"
	"strings"
)

// Tier is what the walls of one run really were, as the launcher built
// them; the UI and API show it (as String) for every run.
type Tier struct {
	// Landlock is the Landlock ABI the file, TCP and scope rules were
	// built with (0: none). Linux.
	Landlock int  `json:"landlock,omitempty"`
	NetNS    bool `json:"netns,omitempty"`
	Seccomp  bool `json:"seccomp,omitempty"`
	// Cgroup: processes, CPU and memory capped by a cgroup; else Limits
	// says the rlimits were set.
	Cgroup bool `json:"cgroup,omitempty"`
	Limits bool `json:"limits,omitempty"`
	// Seatbelt: macOS's sandbox-exec profile. LowIntegrity: Windows'
	// restricted low-integrity token in the job.
	Seatbelt     bool `json:"seatbelt,omitempty"`
	LowIntegrity bool `json:"low_integrity,omitempty"`
	// Off: the person turned the walls off.
	Off bool `json:"off,omitempty"`
	// Root: the server started as root, whom RLIMIT_NPROC does not bind.
	Root bool `json:"root,omitempty"`
}

// String is the tier as people read it: "landlock-v7 + netns + seccomp +
// cgroup", "landlock-v3, no network rules", "seatbelt", "none".
func (t Tier) String() string {
	if t.Off {
		return "none (walls off)"
	}
	var parts []string
	if t.Landlock > 0 {
		parts = append(parts, "landlock-v"+strconv.Itoa(t.Landlock))
	}
	if t.NetNS {
		parts = append(parts, "netns")
	}
	if t.Seccomp {
		parts = append(parts, "seccomp")
	}
	if t.Seatbelt {
		parts = append(parts, "seatbelt")
	}
	if t.LowIntegrity {
		parts = append(parts, "job+low-integrity")
	}
	switch {
	case t.Cgroup:
		parts = append(parts, "cgroup")
	case t.Limits && len(parts) > 0:
		parts = append(parts, "rlimits")
	}
	if len(parts) == 0 {
		return "none"
	}
	s := strings.Join(parts, " + ")
	if t.Landlock > 0 && t.Landlock < 4 && !t.NetNS {
		s += ", no network rules"
	}
	return s
}

// Missing lists the walls the plan asks for that the tier lacks.
func (t Tier) Missing(p *Plan) []string {
	if p.Off || t.Seatbelt {
		return nil
	}
	if t.LowIntegrity {
		return lowIntegrityMissing(p)
	}
	var m []string
	if t.Landlock < 1 {
		m = append(m, "file walls need Landlock (Linux 5.13 or later, enabled in the kernel)")
	} else if t.Landlock < 6 {
		m = append(m, "keeping signals and abstract sockets in needs Landlock v6 (Linux 6.12)")
	}
	if p.Network != NetworkAny && !t.NetNS && !(t.Landlock >= 4 && t.Seccomp) {
		m = append(m, "network walls need a network namespace (unprivileged user namespaces), or Landlock v4 and seccomp")
	}
	if p.Processes > 0 && t.Root && !t.Cgroup {
		// Its uid is root's, in its user namespace too: RLIMIT_NPROC never
		// binds it.
		m = append(m, "capping a root server's processes needs a cgroup (cgroup v1, or a cgroup v2 Switchboard has to itself)")
	}
	return m
}

// WeakerError: this machine cannot build every wall the plan asks for.
type WeakerError struct {
	Tier    Tier
	Missing []string
}

func (e *WeakerError) Error() string {
	return "this machine cannot build every wall the profile asks for (" + strings.Join(e.Missing, "; ") +
		"): choose to run the server with the walls it has (" + e.Tier.String() + "), or not at all"
}
