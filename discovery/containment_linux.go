package discovery

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// This file holds what containment needs of Linux (see Containment):
// the start-up sweep of what a crash left behind, and being a child
// subreaper, with the reaping of the orphans that brings, which must
// leave the exit status of every server started here to its own Wait.

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
