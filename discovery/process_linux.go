package discovery

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// This file holds what isolation and containment need of Linux: the
// parent-death signal, limits, /proc, being a child subreaper, reaping
// the orphans that brings, and the start-up sweep of what a crash left
// behind (see Containment).

// groupAttr starts a server in a process group of its own, killed if
// this process dies (the launcher's exec keeps the signal).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// limitAfterStart sets the limits of a child started without the
// launcher, just after its program started.
func limitAfterStart(pid int, memory int64) (string, error) {
	return "limits set after start", limit(pid, memory)
}

// isolationOf says what a server started now gets.
func isolationOf(limits string) string {
	parts := []string{"process group", limits, "escapee sweep"}
	reaper.mu.Lock()
	if reaper.users > 0 {
		parts = append(parts, "child subreaper")
	}
	reaper.mu.Unlock()
	return strings.Join(parts, " + ")
}

// closeRangeOnExec marks every descriptor above stderr close-on-exec in
// one call (Linux 5.11 and later).
func closeRangeOnExec() bool {
	return unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil
}

// forking is held for reading while a server is started and recorded in
// owned, and for writing while adopted orphans are reaped, so that the
// reaper never sees a child of ours that is not recorded yet.
var forking sync.RWMutex

// owned holds the pids of the servers this process started and whose
// exec.Cmd.Wait has not returned yet. The reaper leaves them alone: their
// exit status is Wait's. It is process-wide, like the children it tracks.
var owned = struct {
	sync.Mutex
	pids map[int]bool
}{pids: map[int]bool{}}

// startChild starts cmd and records its pid as owned.
func startChild(cmd *exec.Cmd) error {
	forking.RLock()
	defer forking.RUnlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	owned.Lock()
	owned.pids[cmd.Process.Pid] = true
	owned.Unlock()
	return nil
}

// childReaped forgets an owned child once its Wait has returned.
func childReaped(pid int) {
	owned.Lock()
	delete(owned.pids, pid)
	owned.Unlock()
}

// reaper is the process-wide state of being a child subreaper: how many
// open Containments want it, and the goroutine that reaps.
var reaper struct {
	mu    sync.Mutex
	users int
	sig   chan os.Signal
	stop  chan struct{}
	done  chan struct{}
}

// becomeReaper makes this process a child subreaper, so that the
// orphaned descendants of the servers it starts become its children
// instead of init's (or of whatever subreaper is further up), and starts
// reaping them. release undoes it once every caller has released.
//
// Only adopted processes are reaped: children that are zombies, are not
// servers started by startChild, and are not in this process's own
// process group. Children this program starts otherwise (e.g. the
// store's integrity check) stay in its group, so their exec.Cmd.Wait
// gets their exit status; a child started elsewhere with Setpgid or
// Setsid while a Containment is open would lose it.
func becomeReaper() (release func(), err error) {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	if reaper.users == 0 {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return nil, err
		}
		reaper.sig = make(chan os.Signal, 1)
		reaper.stop = make(chan struct{})
		reaper.done = make(chan struct{})
		signal.Notify(reaper.sig, syscall.SIGCHLD)
		go reapLoop(reaper.sig, reaper.stop, reaper.done)
	}
	reaper.users++
	var once sync.Once
	return func() { once.Do(releaseReaper) }, nil
}

// releaseReaper ends one use of becomeReaper; the last one stops being a
// subreaper and stops the reaping goroutine, after a last pass.
func releaseReaper() {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	reaper.users--
	if reaper.users > 0 {
		return
	}
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	signal.Stop(reaper.sig)
	close(reaper.stop)
	<-reaper.done
}

// reapLoop reaps adopted orphans on every SIGCHLD. It returns, after a
// last pass, when stop is closed.
func reapLoop(sig <-chan os.Signal, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	reapAdopted()
	for {
		select {
		case <-sig:
			reapAdopted()
		case <-stop:
			reapAdopted()
			return
		}
	}
}

// reapAdopted reaps the zombies among this process's children that it
// adopted as a subreaper (see becomeReaper), each by its pid: never with
// a wait for any child, which would take the exit status of a server
// from its exec.Cmd.Wait.
func reapAdopted() {
	// Most SIGCHLDs are for servers, reaped by their Wait: look for a
	// zombie child, without reaping it, before reading /proc.
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if err != nil || info.Signo == 0 {
		return
	}
	forking.Lock()
	defer forking.Unlock()
	self, group := os.Getpid(), syscall.Getpgrp()
	for _, pid := range zombieChildren(self) {
		ps, _, ok := readStatAny(pid)
		owned.Lock()
		mine := owned.pids[pid]
		owned.Unlock()
		if !ok || mine || ps.pgrp == group || ps.ppid != self {
			continue
		}
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}

// zombieChildren returns the pids of the zombie children of pid, read
// from /proc.
func zombieChildren(pid int) []int {
	names, err := procNames()
	if err != nil {
		return nil
	}
	var out []int
	var buf [1024]byte
	for _, name := range names {
		child, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if ps, state, ok := statAnyOf(child, "/proc/"+name+"/stat", buf[:]); ok && state == 'Z' && ps.ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// procNames lists /proc.
func procNames() ([]string, error) {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return dir.Readdirnames(-1)
}

// readStatAny reads one process's stat, zombies included, and its state.
func readStatAny(pid int) (procStat, byte, bool) {
	var buf [1024]byte
	return statAnyOf(pid, "/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
}

// statAnyOf is statOf, zombies included, and the state letter.
func statAnyOf(pid int, path string, buf []byte) (procStat, byte, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return procStat{}, 0, false
	}
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return procStat{}, 0, false
	}
	return parseStatAny(pid, buf[:n])
}

// bootID identifies this boot of the machine: start times and process
// counts are counted from it.
func bootID() string {
	data, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return string(bytes.TrimSpace(data))
}

// pidNamespace identifies the pid namespace the pids of this process
// are numbers in.
func pidNamespace() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
}

// pidsInUse returns how many pids are in use at most, every thread
// counted (the total of the fourth field of /proc/loadavg).
func pidsInUse() (uint64, bool) {
	f, ok := loadavg()
	if !ok {
		return 0, false
	}
	_, total, ok := bytes.Cut(f[3], []byte("/"))
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(total), 10, 64)
	return n, err == nil
}

// pidClock is what a run record notes just before its server starts,
// so that the sweep can tell whether the server's pid may have been
// handed out again since: the processes created since boot, and the
// pids in use.
func pidClock() (forks, inUse uint64) {
	forks, ok1 := forkCount()
	inUse, ok2 := pidsInUse()
	if !ok1 || !ok2 {
		return 0, 0
	}
	return forks, inUse
}

// sweepRuns stops what is left of the recorded runs and returns the pids
// it stopped and those it could not. Left are the live processes that
// carry one of the runs' markers; the live members of a recorded group,
// if they started no earlier than its server and the group id can only
// be the server's (see groupIsRun); and the live descendants of these.
// Neither this process nor one of its ancestors is ever one of them.
// Each is killed by pidfd after its start time was checked again, so a
// pid handed to another process meanwhile is not hit. It keeps going
// until nothing is left, only processes it may not signal are left, or
// two seconds have passed.
func sweepRuns(runs []runInfo, boot, pidNS string) (killed, left []int) {
	markers := map[string]bool{}
	var groups []runInfo
	for _, r := range runs {
		if r.marker != "" {
			markers[r.marker] = true
		}
		if r.pgid > 1 && boot != "" && r.boot == boot && pidNS != "" && r.pidNS == pidNS && groupIsRun(r) {
			groups = append(groups, r)
		}
	}
	if len(markers) == 0 && len(groups) == 0 {
		return nil, nil
	}
	stopped := map[int]bool{}
	deadline := time.Now().Add(2 * time.Second)
	for {
		found := leftovers(markers, groups)
		refused := 0
		left = left[:0]
		for _, ps := range found {
			switch err := killExactly(ps.pid, ps.start); {
			case err == nil, errors.Is(err, syscall.ESRCH):
				stopped[ps.pid] = true
			default:
				refused++
			}
			left = append(left, ps.pid)
		}
		if len(found) == 0 || refused == len(found) || time.Now().After(deadline) {
			for pid := range stopped {
				if !contains(left, pid) {
					killed = append(killed, pid)
				}
			}
			sort.Ints(killed)
			sort.Ints(left)
			return killed, left
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killWaitMillis bounds how long killExactly waits for a killed process
// to die.
const killWaitMillis = 500

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// groupIsRun reports whether the process group r.pgid can still be the
// one its server led. While the server's pid exists (a process or a
// zombie), it is if that has the server's start time. Once it is gone,
// the kernel hands the pid out again only after it went round all pids
// (pids are given in increasing order and wrap at pid_max, skipping
// those in use), so the group is the server's if, since the record, too
// few processes were created for that: fewer than pid_max, less the pids
// in use then and the 300 below which pids are never reused, with a
// margin.
func groupIsRun(r runInfo) bool {
	if ps, _, ok := readStatAny(r.pgid); ok {
		return ps.start == r.start
	}
	forks, ok := forkCount()
	if !ok || r.forks == 0 || forks < r.forks {
		return false
	}
	return forks-r.forks+r.inUse+300+1000 < uint64(pidMax())
}

// leftovers finds the live processes of the runs: see sweepRuns.
func leftovers(markers map[string]bool, groups []runInfo) []procStat {
	procs := scanProcs(nil)
	byPid := make(map[int]procStat, len(procs))
	kids := map[int][]int{}
	for _, ps := range procs {
		byPid[ps.pid] = ps
		kids[ps.ppid] = append(kids[ps.ppid], ps.pid)
	}
	spare := map[int]bool{}
	for pid := os.Getpid(); pid > 0 && !spare[pid]; pid = byPid[pid].ppid {
		spare[pid] = true
	}
	var roots []int
	for _, ps := range procs {
		if spare[ps.pid] {
			continue
		}
		for _, g := range groups {
			if ps.pgrp == g.pgid && ps.start >= g.start {
				roots = append(roots, ps.pid)
				break
			}
		}
		if len(markers) > 0 && carriesMarker(ps.pid, markers) {
			roots = append(roots, ps.pid)
		}
	}
	family := map[int]bool{}
	for len(roots) > 0 {
		pid := roots[len(roots)-1]
		roots = roots[:len(roots)-1]
		if !family[pid] && !spare[pid] {
			family[pid] = true
			roots = append(roots, kids[pid]...)
		}
	}
	out := make([]procStat, 0, len(family))
	for pid := range family {
		out = append(out, byPid[pid])
	}
	return out
}

// carriesMarker reports whether the environment pid started with holds
// RunMarkerVar with one of the values in markers. Unreadable environments
// (another user's) do not.
func carriesMarker(pid int, markers map[string]bool) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if v, ok := strings.CutPrefix(string(kv), RunMarkerVar+"="); ok && markers[v] {
			return true
		}
	}
	return false
}

// killExactly SIGKILLs pid if it is still the process that started at
// start. It signals through a pidfd opened before the check, so that the
// signal cannot reach a process that took the pid after the check; where
// the kernel has no pidfds, by pid right after the check. With a pidfd
// it also waits, up to killWaitMillis, for the process to die.
func killExactly(pid int, start uint64) error {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ENOSYS):
		if ps, ok := readProcStat(pid); !ok || ps.start != start {
			return syscall.ESRCH
		}
		return syscall.Kill(pid, syscall.SIGKILL)
	case err != nil:
		return err
	}
	defer unix.Close(fd)
	if ps, ok := readProcStat(pid); !ok || ps.start != start {
		return syscall.ESRCH
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		return err
	}
	// The pidfd turns readable once the process has died: wait for that
	// (briefly, SIGKILL cannot be caught), so that what the caller found
	// killed is dead, not dying, when it returns. A process found only
	// through another one (the child of an escapee, say) is not found
	// again once that one is gone.
	unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, killWaitMillis)
	return nil
}

// limit sets the resource limits of a just-started child: no core dumps
// (a core file of a server would hold the secrets in its environment),
// and data memory at most memory bytes if memory is positive. Go cannot
// set limits between fork and exec, so they take effect microseconds
// after the server's program starts: before it has read a byte from us,
// and for every process it starts from then on.
func limit(pid int, memory int64) error {
	if err := unix.Prlimit(pid, unix.RLIMIT_CORE, &unix.Rlimit{}, nil); err != nil {
		return fmt.Errorf("disable core dumps of pid %d: %w", pid, err)
	}
	if memory > 0 {
		m := uint64(memory)
		if err := unix.Prlimit(pid, unix.RLIMIT_DATA, &unix.Rlimit{Cur: m, Max: m}, nil); err != nil {
			return fmt.Errorf("cap the memory of pid %d: %w", pid, err)
		}
	}
	return nil
}

// hasMarker reports whether the environment pid started with holds marker
// (NUL-terminated). Unreadable environments (another user's) do not.
func hasMarker(pid int, marker []byte) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return err == nil && (bytes.HasPrefix(env, marker) || bytes.Contains(env, append([]byte{0}, marker...)))
}

// scanProcs returns the live processes (not zombies), read from /proc:
// all of them, or with a non-nil from, those whose pid is at least
// from(number of processes). It runs twice per verification, so it reads
// each stat file into one buffer with plain system calls rather than
// allocating per process.
func scanProcs(from func(live int) int) []procStat {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	lowest := 0
	if from != nil {
		lowest = from(len(names))
	}
	out := make([]procStat, 0, len(names))
	var buf [1024]byte
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid < lowest {
			continue
		}
		if ps, ok := statOf(pid, "/proc/"+name+"/stat", buf[:]); ok {
			out = append(out, ps)
		}
	}
	return out
}

// newSince returns the lowest pid a process started since the server can
// have, given about how many processes exist: the server's own pid, as
// long as the kernel's pid cursor cannot have come round to lower pids
// since; otherwise 0 (look at every process). Pids are handed out in
// increasing order and wrap at pid_max, skipping pids in use. The cursor
// is past the server's pid, and no more processes were created since
// than it takes to go all the way round (pid_max, less the pids in use
// and the ones below 300 the kernel never reuses, less a margin for the
// processes created before startForks was read), so nothing newer can
// sit below it.
func (p *process) newSince(live int) int {
	pid := p.pgid()
	last, ok1 := lastPid()
	forks, ok2 := forkCount()
	if !ok1 || !ok2 || p.startForks == 0 || last < pid || forks < p.startForks {
		return 0
	}
	if forks-p.startForks+uint64(live)+300+1000 >= uint64(pidMax()) {
		return 0
	}
	return pid
}

// forkCount returns the number of processes created since boot, from the
// "processes" line of /proc/stat.
func forkCount() (uint64, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	_, rest, ok := bytes.Cut(data, []byte("\nprocesses "))
	if !ok {
		return 0, false
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	n, err := strconv.ParseUint(string(line), 10, 64)
	return n, err == nil
}

// lastPid returns the pid the kernel handed out last in this pid
// namespace, the last field of /proc/loadavg.
func lastPid() (int, bool) {
	f, ok := loadavg()
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(string(f[4]))
	return n, err == nil
}

// loadavg returns the five fields of /proc/loadavg.
func loadavg() ([][]byte, bool) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil, false
	}
	f := bytes.Fields(data)
	return f, len(f) == 5
}

// pidMax is the kernel's pid_max (the smallest it can be, when unknown,
// so that the pid space counts as small).
var pidMax = sync.OnceValue(func() int {
	data, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(data)))
	if err != nil {
		return 0
	}
	return n
})

// readProcStat reads one process's stat; ok is false if it is gone or a
// zombie.
func readProcStat(pid int) (procStat, bool) {
	var buf [1024]byte
	return statOf(pid, "/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
}

// statOf reads and parses the stat file at path, using buf.
func statOf(pid int, path string, buf []byte) (procStat, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return procStat{}, false
	}
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return procStat{}, false
	}
	return parseStat(pid, buf[:n])
}

// parseStat parses /proc/<pid>/stat; ok is false for a zombie.
func parseStat(pid int, data []byte) (procStat, bool) {
	ps, state, ok := parseStatAny(pid, data)
	if !ok || state == 'Z' || state == 'X' {
		return procStat{}, false
	}
	return ps, true
}

// parseStatAny parses /proc/<pid>/stat, zombies included, and returns
// the state letter too: after the command name, which is in parentheses
// and may contain anything, come state ppid pgrp ... with starttime the
// 20th field.
func parseStatAny(pid int, data []byte) (ps procStat, state byte, ok bool) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, 0, false
	}
	ps = procStat{pid: pid}
	field := 0
	for rest := data[i+1:]; field < 20; field++ {
		rest = bytes.TrimLeft(rest, " ")
		end := bytes.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		f := rest[:end]
		rest = rest[end:]
		switch field {
		case 0:
			if len(f) == 0 {
				return procStat{}, 0, false
			}
			state = f[0]
		case 1:
			ps.ppid, _ = strconv.Atoi(string(f))
		case 2:
			ps.pgrp, _ = strconv.Atoi(string(f))
		case 19:
			if len(f) == 0 {
				return procStat{}, 0, false
			}
			ps.start, _ = strconv.ParseUint(string(bytes.TrimSpace(f)), 10, 64)
		}
	}
	return ps, state, true
}
