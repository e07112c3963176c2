package sandbox

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The unified hierarchy (cgroup v2). A run's cgroup is a child of this
// process's own cgroup, which must be Switchboard's to use: writable (as
// root, or delegated to the user, as systemd delegates a user service
// with Delegate=yes), with the pids, cpu and memory controllers
// available, and holding no process but Switchboard. Cgroup v2 lets no
// cgroup below the root hold processes and give controllers to its
// children, so Switchboard first moves itself into a leaf of its own
// (v2Leaf), then enables the controllers for the children. A cgroup
// shared with other processes (a terminal's scope, holding the shell)
// is left alone: the runs then get rlimits, and the tier says so.
//
// This machine mounts cgroup v1, so this file is tested on files (see
// TestCgroupV2), not on a kernel.

// v2Leaf is the child of Switchboard's cgroup that Switchboard moves
// itself into. Its name does not start with cgroupPrefix: sweepCgroups
// leaves it alone.
const v2Leaf = "switchboard"

// v2Controllers are the controllers a run's cgroup uses.
var v2Controllers = []string{"pids", "cpu", "memory"}

var v2Parent struct {
	once sync.Once
	dir  string
	err  error
}

// cgroupV2Parent returns the directory the runs' cgroups are made in on
// the unified hierarchy, readying it the first time; "" and why if this
// process cannot make them.
func cgroupV2Parent() (string, error) {
	v2Parent.once.Do(func() {
		mount, own, ok := unifiedCgroup()
		if !ok {
			v2Parent.err = errors.New("no cgroup v2 hierarchy with this process in it")
			return
		}
		v2Parent.dir, v2Parent.err = setupV2(mount, own, os.Getpid())
	})
	return v2Parent.dir, v2Parent.err
}

// unifiedCgroup returns where cgroup2 is mounted and this process's
// cgroup in it ("0::/path" in /proc/self/cgroup).
func unifiedCgroup() (mount, own string, ok bool) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, found := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if found && len(fields) >= 5 && len(tail) >= 1 && tail[0] == "cgroup2" && fields[3] == "/" {
			mount = fields[4]
			break
		}
	}
	data, err := os.ReadFile("/proc/self/cgroup")
	if mount == "" || err != nil {
		return "", "", false
	}
	for line := range strings.Lines(string(data)) {
		if path, found := strings.CutPrefix(strings.TrimSpace(line), "0::"); found {
			return mount, path, true
		}
	}
	return "", "", false
}

// setupV2 readies own (a cgroup path beneath mount) for the runs of the
// process self, and returns its directory: the controllers available and
// writable, self moved into its leaf (unless own is the root cgroup,
// which may hold processes), the controllers given to the children.
func setupV2(mount, own string, self int) (string, error) {
	dir := filepath.Join(mount, own)
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return "", err
	}
	have := strings.Fields(string(data))
	for _, c := range v2Controllers {
		if !slices.Contains(have, c) {
			return "", fmt.Errorf("cgroup %s: the %s controller is not delegated to it", dir, c)
		}
	}
	for _, f := range []string{"", "cgroup.subtree_control", "cgroup.procs"} {
		if err := unix.Access(filepath.Join(dir, f), unix.W_OK); err != nil {
			return "", fmt.Errorf("cgroup %s is not this user's to write: %w", dir, err)
		}
	}
	if own != "/" {
		procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return "", err
		}
		for _, f := range strings.Fields(string(procs)) {
			if f != strconv.Itoa(self) {
				return "", fmt.Errorf("cgroup %s holds other processes than Switchboard (%s)", dir, f)
			}
		}
		leaf := filepath.Join(dir, v2Leaf)
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(self)), 0); err != nil {
			return "", fmt.Errorf("move Switchboard into %s: %w", leaf, err)
		}
	}
	enable := "+" + strings.Join(v2Controllers, " +")
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(enable), 0); err != nil {
		return "", fmt.Errorf("give the controllers to %s's children: %w", dir, err)
	}
	return dir, nil
}

// newCgroupV2 makes a run's cgroup in parent with the plan's limits.
func newCgroupV2(parent string, p *Plan) (*cgroup, error) {
	b := make([]byte, 6)
	rand.Read(b)
	cg := &cgroup{name: cgroupPrefix + hex.EncodeToString(b), v2: true}
	dir := filepath.Join(parent, cg.name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	cg.dirs = []string{dir}
	for _, s := range [][2]string{
		{"pids.max", strconv.Itoa(p.Processes)},
		{"cpu.max", strconv.Itoa(p.CPUPercent*1000) + " 100000"},
		{"memory.max", memoryMax(p.MemoryBytes)},
	} {
		if err := os.WriteFile(filepath.Join(dir, s[0]), []byte(s[1]), 0); err != nil {
			cg.remove()
			return nil, fmt.Errorf("cgroup %s: %w", s[0], err)
		}
	}
	return cg, nil
}

// memoryMax is a memory.max value: "max" for no cap.
func memoryMax(bytes int64) string {
	if bytes <= 0 {
		return "max"
	}
	return strconv.FormatInt(bytes, 10)
}

// ScopeEnv, set in its environment, says a process runs in the scope
// ScopeArgv asked systemd for (so it does not ask again).
const ScopeEnv = "SWITCHBOARD_SCOPE"

// ScopeArgv returns the command line that runs argv (this program's) again
// in a transient systemd scope whose cgroup is delegated to it
// (Delegate=yes), or nil. It asks for one only where the runs could have
// cgroups there and cannot where this process is: on the unified
// hierarchy, in a cgroup it shares (a terminal's scope, with the shell),
// with a systemd that starts the scope (tried first, with `true`).
// Podman asks for the same when it runs rootless.
func ScopeArgv(argv []string, getenv func(string) string) []string {
	if getenv(ScopeEnv) != "" || len(cgroupV1Dirs()) == len(cgroupControllers) && os.Getuid() == 0 {
		return nil
	}
	if _, _, ok := unifiedCgroup(); !ok {
		return nil
	}
	if _, err := cgroupV2Parent(); err == nil {
		return nil // it has one
	}
	run, err := exec.LookPath("systemd-run")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if exec.CommandContext(ctx, run, scopeArgs(os.Getuid(), []string{"true"})...).Run() != nil {
		return nil
	}
	return append([]string{run}, scopeArgs(os.Getuid(), argv)...)
}

// scopeArgs are systemd-run's arguments that run argv in a transient
// scope with its cgroup delegated: the user's manager's, or the system's
// for root.
func scopeArgs(uid int, argv []string) []string {
	args := []string{"--scope", "--quiet", "--collect", "-p", "Delegate=yes", "--"}
	if uid != 0 {
		args = append([]string{"--user"}, args...)
	}
	return append(args, argv...)
}
