package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A run's cgroup left behind (a Switchboard that died, a process not
// reaped in time) is removed by a later run's sweep once it is a minute
// old and empty; a young one, maybe another Switchboard's, stays.
func TestSweepCgroups(t *testing.T) {
	dirs := cgroupV1Dirs()
	if os.Getuid() != 0 || len(dirs) != len(cgroupControllers) {
		t.Skip("needs root on cgroup v1 (as CI runs)")
	}
	parent := dirs["pids"]
	old, young := filepath.Join(parent, cgroupPrefix+"sweep-old"), filepath.Join(parent, cgroupPrefix+"sweep-young")
	for _, d := range []string{old, young} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(d) })
	}
	if err := os.Chtimes(old, time.Now().Add(-2*time.Minute), time.Now().Add(-2*time.Minute)); err != nil {
		t.Skipf("cgroupfs keeps no times set here: %v", err)
	}
	lastSweep.Store(0)
	sweepCgroups()
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the old empty cgroup is still there (%v)", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("the young cgroup was removed: %v", err)
	}
}

// fakeCgroup makes a cgroup v2 directory as the kernel shows one, in a
// temp dir standing for the mount: its controllers and processes.
func fakeCgroup(t *testing.T, mount, own, controllers string, procs ...int) string {
	t.Helper()
	dir := filepath.Join(mount, own)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var p []string
	for _, pid := range procs {
		p = append(p, strconv.Itoa(pid))
	}
	for name, content := range map[string]string{
		"cgroup.controllers": controllers, "cgroup.procs": strings.Join(p, "\n"), "cgroup.subtree_control": "",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// On the unified hierarchy Switchboard moves itself into a leaf of its
// own cgroup and gives the controllers to the children, where each run's
// cgroup gets the plan's limits; a cgroup it shares, or without the
// controllers, is left alone. (This machine mounts cgroup v1: these are
// the files the kernel would be told, not a kernel.)
func TestCgroupV2(t *testing.T) {
	const self = 4242
	mount := t.TempDir()
	dir := fakeCgroup(t, mount, "/user.slice/switchboard.service", "cpuset cpu io memory pids", self)
	got, err := setupV2(mount, "/user.slice/switchboard.service", self)
	if err != nil || got != dir {
		t.Fatalf("setupV2 = %q, %v; want %s", got, err, dir)
	}
	if procs := readFile(t, filepath.Join(dir, v2Leaf, "cgroup.procs")); procs != "4242" {
		t.Errorf("leaf cgroup.procs = %q; want Switchboard moved in", procs)
	}
	if sub := readFile(t, filepath.Join(dir, "cgroup.subtree_control")); sub != "+pids +cpu +memory" {
		t.Errorf("cgroup.subtree_control = %q; want the three controllers given to the children", sub)
	}

	cg, err := newCgroupV2(dir, &Plan{Processes: 128, CPUPercent: 50, MemoryBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"pids.max": "128", "cpu.max": "50000 100000", "memory.max": "1073741824"} {
		if got := readFile(t, filepath.Join(cg.dirs[0], file)); got != want {
			t.Errorf("%s = %q; want %q", file, got, want)
		}
	}
	if err := cg.place(77); err != nil || readFile(t, filepath.Join(cg.dirs[0], "cgroup.procs")) != "77" {
		t.Errorf("place: %v; want the launcher's pid in the run's cgroup.procs", err)
	}

	shared := fakeCgroup(t, mount, "/user.slice/vte-spawn.scope", "cpu memory pids", self, 99)
	if _, err := setupV2(mount, "/user.slice/vte-spawn.scope", self); err == nil {
		t.Error("setupV2 of a cgroup shared with a shell succeeded; want it left alone")
	}
	if _, err := os.Stat(filepath.Join(shared, v2Leaf)); err == nil {
		t.Error("a shared cgroup was divided")
	}
	fakeCgroup(t, mount, "/no-cpu.scope", "memory pids", self)
	if _, err := setupV2(mount, "/no-cpu.scope", self); err == nil || !strings.Contains(err.Error(), "cpu") {
		t.Errorf("setupV2 without the cpu controller = %v; want an error naming it", err)
	}
	// The root cgroup may hold processes: no leaf.
	root := fakeCgroup(t, mount, "/", "cpu memory pids", self, 1, 2)
	if _, err := setupV2(mount, "/", self); err != nil {
		t.Errorf("setupV2 of the root cgroup: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, v2Leaf)); err == nil {
		t.Error("the root cgroup got a leaf; want none")
	}
}

// The scope asked of systemd: the user's manager's, or the system's for
// root, with its cgroup delegated, running this program as it was run.
func TestScopeArgs(t *testing.T) {
	argv := []string{"/usr/bin/switchboard", "serve", "-addr", "127.0.0.1:7420"}
	want := "--user --scope --quiet --collect -p Delegate=yes -- /usr/bin/switchboard serve -addr 127.0.0.1:7420"
	if got := strings.Join(scopeArgs(1000, argv), " "); got != want {
		t.Errorf("scopeArgs(1000) = %q; want %q", got, want)
	}
	if got := strings.Join(scopeArgs(0, argv), " "); got != strings.TrimPrefix(want, "--user ") {
		t.Errorf("scopeArgs(0) = %q; want the system's scope", got)
	}
	if ScopeArgv(argv, func(k string) string { return map[string]string{ScopeEnv: "1"}[k] }) != nil {
		t.Error("ScopeArgv asked again from within the scope")
	}
}
