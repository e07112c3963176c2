package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Enforce builds the plan's walls around this process, which is the
// launcher and execs the server next: the network namespace's loopback
// and the egress proxy's listener (handed to the parent over ctl), the
// limits, Landlock's file, TCP and scope rules, and a seccomp filter that
// refuses every socket but Unix and plain TCP ones. It returns the tier
// it built. A wall the plan needs and this kernel lacks is an error,
// unless the plan is Weaker. The caller must exec at once: the walls hold
// this process and everything it becomes.
//
// Every wall is built on this goroutine's thread, locked to it for good:
// exec keeps the calling thread's capabilities, no_new_privs, Landlock
// domain and seccomp filter and ends the others. (Building them on every
// thread, as psx does, costs milliseconds a start.)
func Enforce(p *Plan, ctl *os.File) (Tier, error) {
	runtime.LockOSThread() // never unlocked
	t := Tier{Root: os.Geteuid() == 0}
	if p.Ctl() {
		if err := WaitGo(ctl); err != nil {
			return t, err
		}
	}
	if p.NetNS {
		if err := loopbackUp(); err != nil {
			return t, fmt.Errorf("bring up the network namespace's loopback: %w", err)
		}
		t.NetNS = true
		if p.ProxyPort > 0 {
			if err := handOverListener(p.ProxyPort, ctl); err != nil {
				return t, fmt.Errorf("open the egress proxy's port: %w", err)
			}
		}
	}
	if err := setLimits(p); err != nil {
		return t, err
	}
	t.Cgroup = p.Cgroup != ""
	t.Limits = true
	if p.Off {
		t.Off = true
		return t, nil
	}
	if err := dropCapabilities(); err != nil {
		return t, err
	}
	// A session keyring of its own, empty (the user's may hold
	// credentials: Kerberos caches, tokens); seccomp then refuses the
	// keyring calls altogether. A kernel without keyrings has none.
	if _, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); e != 0 && e != unix.ENOSYS {
		return t, fmt.Errorf("a session keyring of its own: %w", e)
	}
	// no_new_privs first: Landlock and seccomp need it, and
	// a setuid program the server runs gains nothing.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return t, fmt.Errorf("no_new_privs: %w", err)
	}
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil {
		abi = 0
	}
	t.Landlock = min(abi, 7)
	if err := restrictLandlock(p, t.Landlock); err != nil {
		return t, err
	}
	if err := refuseSockets(p); err != nil {
		if !p.Weaker {
			return t, fmt.Errorf("seccomp: %w", err)
		}
	} else {
		t.Seccomp = true
	}
	if missing := t.Missing(p); len(missing) > 0 && !p.Weaker {
		return t, &WeakerError{Tier: t, Missing: missing}
	}
	return t, nil
}

// userTasks counts the tasks (threads) of the processes uid owns, as
// RLIMIT_NPROC does.
func userTasks(uid int) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name(), &st) != nil || int(st.Uid) != uid {
			continue
		}
		if tasks, err := os.ReadDir("/proc/" + e.Name() + "/task"); err == nil {
			n += len(tasks)
		}
	}
	return n
}

// dropCapabilities leaves the launcher, and so the server, no
// capability at all. A launcher in a user namespace of its own holds
// some there: root's server would get every capability of the bounding
// set at exec (uid 0 does), and an ordinary user's launcher has the
// ambient CAP_NET_ADMIN it brought its loopback up with (NamespaceAttr).
// Without a namespace, root's server would hold them over the machine.
// So root empties the bounding set, and everyone clears the effective,
// permitted and inheritable sets (which clears the ambient one), before
// the exec, on the thread that execs (see Enforce).
func dropCapabilities() error {
	if os.Geteuid() == 0 {
		last := unix.CAP_LAST_CAP
		if data, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				last = n
			}
		}
		for c := 0; c <= last; c++ {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
				return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
			}
		}
	}
	var none [2]unix.CapUserData
	if err := unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &none[0]); err != nil {
		return fmt.Errorf("clear the capabilities: %w", err)
	}
	return nil
}

// restrictLandlock applies the plan's Landlock rules at the given ABI.
func restrictLandlock(p *Plan, abi int) error {
	if abi < 1 {
		return nil
	}
	var rules []landlock.Rule
	// A path gone since grants() listed it (a lock file, another
	// program's temp dir) opens nothing: it does not fail the start.
	for _, g := range p.grants() {
		switch {
		case g.dir && g.write:
			rules = append(rules, landlock.RWDirs(g.path).WithRefer().WithIoctlDev().IgnoreIfMissing())
		case g.list:
			rules = append(rules, landlock.PathAccess(llsys.AccessFSReadDir, g.path).IgnoreIfMissing())
		case g.dir:
			rules = append(rules, landlock.RODirs(g.path).IgnoreIfMissing())
		case g.write:
			rules = append(rules, landlock.RWFiles(g.path).WithIoctlDev().IgnoreIfMissing())
		default:
			rules = append(rules, landlock.ROFiles(g.path).IgnoreIfMissing())
		}
	}
	cfg := landlock.V7.BestEffort()
	if p.Network == NetworkAny {
		cfg = landlock.Config{HandledAccessFS: cfg.HandledAccessFS, Scoped: cfg.Scoped}.BestEffort()
	} else if p.ProxyPort > 0 {
		rules = append(rules, landlock.ConnectTCP(uint16(p.ProxyPort)))
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if fd < 0 {
		return nil // nothing to enforce on this kernel
	}
	defer unix.Close(fd)
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// setLimits sets the rlimits: no core dumps, data memory, processes.
func setLimits(p *Plan) error {
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return fmt.Errorf("disable core dumps: %w", err)
	}
	if p.MemoryBytes > 0 {
		m := uint64(p.MemoryBytes)
		if err := unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: m, Max: m}); err != nil {
			return fmt.Errorf("cap the memory: %w", err)
		}
	}
	if p.Processes > 0 {
		n := uint64(p.Processes)
		if !p.NetNS {
			// Outside a user namespace of its own, RLIMIT_NPROC counts
			// every task of the user, the desktop's included: the server
			// may have Processes more than the user has now.
			n += uint64(userTasks(os.Getuid()))
		}
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			return fmt.Errorf("cap the processes: %w", err)
		}
	}
	return nil
}

// loopbackUp brings up lo in this (new) network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// handOverListener listens on 127.0.0.1:port in this network namespace
// and sends the listening socket to the parent over ctl: the egress
// proxy accepts the server's connections on it from outside.
func handOverListener(port int, ctl *os.File) error {
	if ctl == nil {
		return errors.New("no control socket")
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return err
	}
	if err := unix.Listen(fd, 128); err != nil {
		return err
	}
	return unix.Sendmsg(int(ctl.Fd()), []byte("L"), unix.UnixRights(fd), nil, 0)
}

// seccomp's return values and the offsets in struct seccomp_data.
const (
	secRetAllow  = 0x7fff0000
	secRetErrno  = 0x00050000
	secRetKill   = 0x80000000
	offNR        = 0
	offArch      = 4
	offArg0      = 16 // low 32 bits on little-endian machines
	offArg1      = 24
	offArg2      = 32
	ipprotoMPTCP = 262
)

// tiocLinux is TIOCLINUX (not in x/sys/unix): its subcommands paste
// into a virtual console.
const tiocLinux = 0x541c

// filterAsm assembles a seccomp program whose jumps name labels.
type filterAsm struct {
	ins    []bpf.Instruction
	jumps  map[int][2]string // instruction → labels if true, if false ("" the next)
	labels map[string]int
}

func (a *filterAsm) add(i bpf.Instruction) { a.ins = append(a.ins, i) }

func (a *filterAsm) label(name string) { a.labels[name] = len(a.ins) }

// jump tests the loaded word against val, and goes to ifTrue or ifFalse.
func (a *filterAsm) jump(cond bpf.JumpTest, val uint32, ifTrue, ifFalse string) {
	a.jumps[len(a.ins)] = [2]string{ifTrue, ifFalse}
	a.add(bpf.JumpIf{Cond: cond, Val: val})
}

func (a *filterAsm) assemble() ([]bpf.RawInstruction, error) {
	for at, to := range a.jumps {
		j := a.ins[at].(bpf.JumpIf)
		for k, skip := range []*uint8{&j.SkipTrue, &j.SkipFalse} {
			if to[k] == "" {
				continue
			}
			target, ok := a.labels[to[k]]
			if !ok || target <= at || target-at-1 > 255 {
				return nil, fmt.Errorf("seccomp: bad jump from %d to %q", at, to[k])
			}
			*skip = uint8(target - at - 1)
		}
		a.ins[at] = j
	}
	return bpf.Assemble(a.ins)
}

// socketFilter returns the seccomp program. socket(2) is refused for
// every family but AF_INET/AF_INET6 stream sockets of protocol TCP (not
// UDP, raw, netlink, packet, nor MPTCP, which Landlock's TCP rules do not
// see), unless the network is any; and for AF_UNIX unless unixSockets
// (Landlock below ABI 9 does not see connect(2) to a socket's path:
// ssh-agent's, the session bus's, docker's would all be open;
// socketpair(2) stays allowed). The keyrings are refused (the user's
// session keyring may hold credentials), as are the ioctls that type
// into a terminal (TIOCSTI, TIOCLINUX) and io_uring (its socket
// operations pass seccomp by). A foreign architecture's or x32 system
// call kills the process.
func socketFilter(network string, unixSockets bool) ([]bpf.RawInstruction, error) {
	a := &filterAsm{jumps: map[int][2]string{}, labels: map[string]int{}}
	eq := bpf.JumpEqual
	a.add(bpf.LoadAbsolute{Off: offArch, Size: 4})
	a.jump(eq, auditArch, "", "kill")
	a.add(bpf.LoadAbsolute{Off: offNR, Size: 4})
	a.jump(bpf.JumpGreaterOrEqual, x32Bit, "kill", "")
	a.jump(eq, uint32(unix.SYS_IO_URING_SETUP), "enosys", "")
	for _, nr := range []int{unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY} {
		a.jump(eq, uint32(nr), "eperm", "")
	}
	a.jump(eq, uint32(unix.SYS_IOCTL), "ioctl", "")
	a.jump(eq, uint32(unix.SYS_SOCKET), "socket", "allow")

	a.label("ioctl")
	a.add(bpf.LoadAbsolute{Off: offArg1, Size: 4})
	a.jump(eq, unix.TIOCSTI, "eperm", "")
	a.jump(eq, tiocLinux, "eperm", "allow")

	a.label("socket")
	a.add(bpf.LoadAbsolute{Off: offArg0, Size: 4})
	unixVerdict := "eacces"
	if unixSockets {
		unixVerdict = "allow"
	}
	a.jump(eq, unix.AF_UNIX, unixVerdict, "")
	if network == NetworkAny {
		a.add(bpf.RetConstant{Val: secRetAllow}) // every other family
	} else {
		a.jump(eq, unix.AF_INET, "inet", "")
		a.jump(eq, unix.AF_INET6, "inet", "eacces")
		a.label("inet")
		a.add(bpf.LoadAbsolute{Off: offArg1, Size: 4})
		a.add(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xf}) // SOCK_TYPE_MASK
		a.jump(eq, unix.SOCK_STREAM, "", "eacces")
		a.add(bpf.LoadAbsolute{Off: offArg2, Size: 4})
		a.jump(eq, 0, "allow", "")
		a.jump(eq, unix.IPPROTO_TCP, "allow", "eacces")
	}

	for name, val := range map[string]uint32{
		"allow":  secRetAllow,
		"kill":   secRetKill,
		"enosys": secRetErrno | uint32(unix.ENOSYS),
		"eperm":  secRetErrno | uint32(unix.EPERM),
		"eacces": secRetErrno | uint32(unix.EACCES),
	} {
		a.label(name)
		a.add(bpf.RetConstant{Val: val})
	}
	return a.assemble()
}

// refuseSockets installs socketFilter on every thread of this process.
func refuseSockets(p *Plan) error {
	raw, err := socketFilter(p.Network, p.UnixSockets)
	if err != nil {
		return err
	}
	filters := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filters[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filters)), Filter: &filters[0]}
	runtime.LockOSThread() // never unlocked: the caller execs on this thread
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filters)
	if errno != 0 {
		return errno
	}
	return nil
}
