package sandbox

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

var probed struct {
	once sync.Once
	m    Machine
}

// Probe finds out once what this machine can build (see Machine): the
// Landlock ABI, whether a child can have user and network namespaces of
// its own (by starting c.Self with ProbeArg in them), and whether this
// process can make cgroups.
func Probe(c Config) Machine {
	probed.once.Do(func() { probed.m = probe(c) })
	return probed.m
}

func probe(c Config) Machine {
	m := Machine{OS: "linux", Root: os.Getuid() == 0}
	if v, err := llsys.LandlockGetABIVersion(); err == nil {
		m.Landlock = min(v, 7)
	}
	self := c.Self
	if self == "" {
		self, _ = os.Executable()
	}
	if self != "" {
		cmd := exec.Command(self, ProbeArg)
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		NamespaceAttr(cmd.SysProcAttr)
		m.UserNS = cmd.Run() == nil
	}
	if m.Root && len(cgroupV1Dirs()) == len(cgroupControllers) {
		m.Cgroup = "v1"
	} else if _, err := cgroupV2Parent(); err == nil {
		m.Cgroup = "v2"
	}
	return m
}

// NamespaceAttr adds to attr what starts a process in a user namespace
// and a network namespace of its own, as the same user (root stays root
// inside, without any power over the machine's own namespaces).
//
// An ordinary user's process loses the capabilities its new user
// namespace gave it when it execs (its uid inside is not 0), so the
// launcher gets CAP_NET_ADMIN as an ambient capability, to bring up its
// namespace's loopback; it drops it before the server runs (Enforce).
func NamespaceAttr(attr *syscall.SysProcAttr) {
	uid, gid := os.Getuid(), os.Getgid()
	attr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_NET_ADMIN)
}

// Attr adds the run's namespaces to the launcher's attributes.
func (sp *Prepared) Attr(attr *syscall.SysProcAttr) {
	if sp.Plan.NetNS {
		NamespaceAttr(attr)
	}
}

// Started tells the launcher (pid, whose control socket is ctl) to go on
// once it is in the run's cgroup, and takes over the egress proxy's
// listener it opens in its network namespace. The launcher waits for it
// before it builds the walls.
func (sp *Prepared) Started(pid int, ctl *os.File) error {
	if err := sp.cgroup.place(pid); err != nil {
		return err
	}
	if _, err := ctl.Write([]byte{'G'}); err != nil {
		return fmt.Errorf("tell the launcher to go on: %w", err)
	}
	if !sp.Plan.NetNS || sp.Proxy == nil {
		return nil
	}
	ln, err := recvListener(ctl)
	if err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	sp.serve(ln)
	return nil
}

// recvListener receives a listening socket sent with SCM_RIGHTS.
func recvListener(ctl *os.File) (net.Listener, error) {
	rc, err := ctl.SyscallConn()
	if err != nil {
		return nil, err
	}
	ctl.SetReadDeadline(time.Now().Add(10 * time.Second))
	var fd = -1
	var rerr error
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	err = rc.Read(func(s uintptr) bool {
		n, oobn, _, _, e := unix.Recvmsg(int(s), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if e == unix.EAGAIN {
			return false
		}
		if e != nil {
			rerr = e
			return true
		}
		if n == 0 {
			rerr = errors.New("the launcher ended before it opened the port")
			return true
		}
		msgs, e := unix.ParseSocketControlMessage(oob[:oobn])
		if e != nil || len(msgs) != 1 {
			rerr = errors.New("no socket received")
			return true
		}
		fds, e := unix.ParseUnixRights(&msgs[0])
		if e != nil || len(fds) != 1 {
			rerr = errors.New("no socket received")
			return true
		}
		fd = fds[0]
		return true
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "egress-proxy")
	defer f.Close()
	return net.FileListener(f)
}

// CtlPair returns a connected pair of sockets: the parent's end and the
// launcher's (its fd 4).
func CtlPair() (parent, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	unix.SetNonblock(fds[0], true)
	return os.NewFile(uintptr(fds[0]), "sandbox-ctl"), os.NewFile(uintptr(fds[1]), "sandbox-ctl-launcher"), nil
}

// WaitGo is the launcher's side of Started: it waits for the parent's
// word on ctl.
func WaitGo(ctl *os.File) error {
	b := make([]byte, 1)
	n, err := ctl.Read(b)
	if n == 1 && b[0] == 'G' {
		return nil
	}
	if err == nil {
		err = errors.New("unexpected word")
	}
	return fmt.Errorf("wait for Switchboard: %w", err)
}

// --- cgroups (v1, as root) ---

var cgroupControllers = []string{"pids", "cpu", "memory"}

// cgroup is one run's cgroup: a directory per controller.
type cgroup struct {
	name string
	dirs []string
	// v2: one directory on the unified hierarchy (cgroup2_linux.go).
	v2 bool
}

// cgroupV1Dirs returns, for each controller, the directory of this
// process's own cgroup in its v1 hierarchy, if it is mounted.
func cgroupV1Dirs() map[string]string {
	mounts := map[string]string{} // controller → mount point, for hierarchies rooted at /
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			pre, post, ok := strings.Cut(sc.Text(), " - ")
			fields, tail := strings.Fields(pre), strings.Fields(post)
			if !ok || len(fields) < 5 || len(tail) < 3 || tail[0] != "cgroup" || fields[3] != "/" {
				continue
			}
			for _, opt := range strings.Split(tail[2], ",") {
				mounts[opt] = fields[4]
			}
		}
		f.Close()
	}
	own := map[string]string{}
	if data, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for line := range strings.Lines(string(data)) {
			parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
			if len(parts) != 3 {
				continue
			}
			for _, c := range strings.Split(parts[1], ",") {
				own[c] = parts[2]
			}
		}
	}
	out := map[string]string{}
	for _, c := range cgroupControllers {
		mp, ok := mounts[c]
		if !ok {
			continue
		}
		dir := filepath.Join(mp, own[c])
		if unix.Access(dir, unix.W_OK) == nil {
			out[c] = dir
		}
	}
	return out
}

// newCgroup makes the run's cgroup with the plan's limits, if the
// machine can (nil otherwise).
func newCgroup(m Machine, p *Plan) (*cgroup, error) {
	switch m.Cgroup {
	case "v1":
	case "v2":
		sweepCgroups()
		parent, err := cgroupV2Parent()
		if err != nil {
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		return newCgroupV2(parent, p)
	default:
		return nil, nil
	}
	sweepCgroups()
	b := make([]byte, 6)
	rand.Read(b)
	cg := &cgroup{name: cgroupPrefix + hex.EncodeToString(b)}
	for c, parent := range cgroupV1Dirs() {
		dir := filepath.Join(parent, cg.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.remove()
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		cg.dirs = append(cg.dirs, dir)
		var settings [][2]string
		switch c {
		case "pids":
			settings = [][2]string{{"pids.max", strconv.Itoa(p.Processes)}}
		case "cpu":
			settings = [][2]string{{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", strconv.Itoa(p.CPUPercent * 1000)}}
		case "memory":
			settings = [][2]string{{"memory.limit_in_bytes", strconv.FormatInt(p.MemoryBytes, 10)}}
		}
		for _, s := range settings {
			if err := os.WriteFile(filepath.Join(dir, s[0]), []byte(s[1]), 0); err != nil {
				cg.remove()
				return nil, fmt.Errorf("cgroup %s: %w", s[0], err)
			}
		}
	}
	return cg, nil
}

// place moves pid into the cgroup.
func (cg *cgroup) place(pid int) error {
	if cg == nil {
		return nil
	}
	for _, d := range cg.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("cgroup: %w", err)
		}
	}
	return nil
}

// cgroupPrefix starts the name of every run's cgroup.
const cgroupPrefix = "switchboard-"

// lastSweep is when sweepCgroups last ran (Unix nanoseconds).
var lastSweep atomic.Int64

// sweepCgroups removes, at most once a minute, the runs' cgroups left
// behind: by a remove that gave up (a process of the run not yet reaped),
// or by a Switchboard that died. The kernel removes only an empty cgroup,
// so nothing running is touched; one younger than a minute may be
// another Switchboard's, about to be filled, and is left alone.
func sweepCgroups() {
	now := time.Now()
	if last := lastSweep.Load(); now.UnixNano()-last < int64(time.Minute) || !lastSweep.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	parents := slices.Collect(maps.Values(cgroupV1Dirs()))
	if dir, err := cgroupV2Parent(); err == nil {
		parents = append(parents, dir)
	}
	for _, parent := range parents {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), cgroupPrefix) {
				continue
			}
			if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > time.Minute {
				os.Remove(filepath.Join(parent, e.Name()))
			}
		}
	}
}

// remove kills what is left in the cgroup and removes it.
func (cg *cgroup) remove() {
	if cg == nil {
		return
	}
	if cg.v2 {
		// Every process in it at once, escapees too (Linux 5.14).
		os.WriteFile(filepath.Join(cg.dirs[0], "cgroup.kill"), []byte("1"), 0)
	}
	for _, d := range cg.dirs {
		deadline := time.Now().Add(2 * time.Second) // then sweepCgroups's
		for {
			if data, err := os.ReadFile(filepath.Join(d, "cgroup.procs")); err == nil {
				for f := range strings.FieldsSeq(string(data)) {
					if pid, err := strconv.Atoi(f); err == nil {
						unix.Kill(pid, unix.SIGKILL)
					}
				}
			}
			if err := os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
