package sandbox

// Machine is what this machine can build walls with.
type Machine struct {
	OS string
	// Landlock is the kernel's Landlock ABI (0: none; Linux), capped at
	// the highest this build uses.
	Landlock int
	// UserNS: a server can be started in its own user and network
	// namespaces (Linux, unprivileged user namespaces allowed).
	UserNS bool
	// Cgroup: Switchboard can make a cgroup per run: "v1" when it runs as
	// root on cgroup v1, "v2" where its own cgroup on the unified
	// hierarchy is its to divide (cgroup2_linux.go); "" none.
	Cgroup string
	// Seatbelt: /usr/bin/sandbox-exec is there (macOS).
	Seatbelt bool
	// Root: Switchboard runs as root (uid 0).
	Root bool
}

// Expect returns the tier a run of profile p would get on m, and what it
// would lack (see Tier.Missing): shown before the first Verify.
func (m Machine) Expect(p Profile) (Tier, []string) {
	p, _ = p.Normalize()
	pl := &Plan{Off: p.Off, Network: p.Network, Processes: p.ProcessLimit()}
	if p.Off {
		return Tier{Off: true, Limits: true}, nil
	}
	t := Tier{Limits: true, Cgroup: m.Cgroup != ""}
	switch m.OS {
	case "linux":
		t.Landlock = m.Landlock
		t.NetNS = m.UserNS && p.Network != NetworkAny
		t.Seccomp = true
		t.Root = m.Root
	case "darwin":
		t.Seatbelt = m.Seatbelt
	case "windows":
		// The job's limits are no rlimits: the isolation names them.
		t.LowIntegrity, t.Limits = true, false
	}
	missing := t.Missing(pl)
	if m.OS == "darwin" && !m.Seatbelt {
		missing = append(missing, "walls need /usr/bin/sandbox-exec")
	}
	if m.OS != "linux" && m.OS != "darwin" && m.OS != "windows" {
		missing = append(missing, "no walls on "+m.OS)
	}
	return t, missing
}
