//go:build linux || darwin

package discovery

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
)

// On Linux and macOS a server runs in a process group of its own, is
// signalled as a group, and gets its limits from the launcher (see
// launcher.go) before its program runs; processes that leave the group
// are found by parent (and, on Linux, by run marker) and killed.

// AllowedEnv lists the variables of Switchboard's own environment that a
// child may inherit. Everything else, including Switchboard's token, stays
// out; the server's own env is added on top.
var AllowedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "TMPDIR"}

// startIsolated starts p.cmd, the program at path, in a new process
// group: through the launcher where this program is one (limits set
// before exec), otherwise directly (limits set just after start on
// Linux; none on macOS). It reads the child's start time and says in
// p.isolation what it got.
func (p *process) startIsolated(path string, pc processConfig) error {
	if p.killEscapee == nil {
		p.killEscapee = syscall.Kill
	}
	cmd := p.cmd
	cmd.SysProcAttr = groupAttr()
	launched := false
	plan := unwalled(pc.MemoryBytes)
	if p.walls != nil {
		plan = p.walls.Plan
	}
	if self, ok := launcherPath(); ok {
		tier, err := launch(cmd, self, path, plan, p.walls)
		if err != nil {
			return err
		}
		p.tier = tier
		launched = true
	} else if !plan.Off {
		return &wallError{errors.New("the walls need the launcher (a program that starts servers calls discovery.RunLauncherIfAsked first in main)")}
	} else if err := startChild(cmd); err != nil {
		return err
	}
	// The child exists (at worst as a zombie, not yet reaped) until its
	// Wait returns, so its start time can be read.
	if ps, _, ok := readStatAny(cmd.Process.Pid); ok {
		p.startTicks = ps.start
	}
	limits := "limits set before exec"
	if !launched {
		var err error
		if limits, err = limitAfterStart(cmd.Process.Pid, pc.MemoryBytes); err != nil {
			// Fail closed: a server is never left running without its
			// limits.
			p.killAll()
			cmd.Wait()
			childReaped(cmd.Process.Pid)
			return err
		}
		p.tier = sandbox.Tier{Off: true}
	}
	p.isolation = p.tier.String() + " · " + isolationOf(limits)
	return nil
}

// launch starts cmd through the launcher at self: the launcher builds the
// plan's walls and limits, marks every inherited descriptor close-on-exec
// and execs path in place, so the server has the launcher's pid, group,
// walls and limits from its first instruction. The launcher reports the
// walls it built, and a failure (walls, exec), on a pipe that closes when
// exec succeeds, so that a command that cannot run fails here, as
// exec.Cmd.Start would. With walls that need it (see sandbox.Plan.Ctl),
// the launcher also gets a control socket and waits on it until the
// parent has put it in its cgroup and taken over the egress proxy's port.
func launch(cmd *exec.Cmd, self, path string, plan *sandbox.Plan, walls *sandbox.Prepared) (sandbox.Tier, error) {
	errR, errW, err := os.Pipe()
	if err != nil {
		return sandbox.Tier{}, err
	}
	defer errR.Close()
	cmd.Args = launcherArgs(path, plan, cmd.Args)
	cmd.Path = self
	cmd.ExtraFiles = []*os.File{errW} // fd 3 in the launcher
	var ctl, ctlChild *os.File
	if plan.Ctl() {
		if ctl, ctlChild, err = sandbox.CtlPair(); err != nil {
			errW.Close()
			return sandbox.Tier{}, &wallError{err}
		}
		defer ctl.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, ctlChild) // fd 4
	}
	if walls != nil {
		walls.Attr(cmd.SysProcAttr)
	}
	err = startChild(cmd)
	errW.Close()
	if ctlChild != nil {
		ctlChild.Close()
	}
	if err != nil {
		if walls != nil && walls.Plan.NetNS {
			return sandbox.Tier{}, &wallError{fmt.Errorf("start in new namespaces: %w", err)}
		}
		return sandbox.Tier{}, err
	}
	if ctl != nil {
		if err := walls.Started(cmd.Process.Pid, ctl); err != nil {
			syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			childReaped(cmd.Process.Pid)
			// The launcher's own word, if it gave one, says why.
			report, _ := io.ReadAll(io.LimitReader(errR, 8192))
			if _, failure := parseReport(string(report)); failure != "" {
				err = fmt.Errorf("%w: %s", err, strings.TrimPrefix(failure, wallReport))
			}
			return sandbox.Tier{}, &wallError{err}
		}
	}
	report, _ := io.ReadAll(io.LimitReader(errR, 8192))
	tier, failure := parseReport(string(report))
	if failure == "" {
		return tier, nil
	}
	cmd.Wait()
	childReaped(cmd.Process.Pid)
	if msg, ok := strings.CutPrefix(failure, wallReport); ok {
		return tier, &wallError{errors.New(msg)}
	}
	return tier, launchError(path, failure)
}

// terminate sends SIGTERM to the group.
func (p *process) terminate() bool {
	syscall.Kill(-p.pgid(), syscall.SIGTERM)
	return true
}

// killAll sends SIGKILL to the group.
func (p *process) killAll() { syscall.Kill(-p.pgid(), syscall.SIGKILL) }

// release frees what startIsolated held beyond the process: nothing here.
func (p *process) release() {}

// groupGone reports whether no live process of p's group is left.
func (p *process) groupGone() bool { return groupGone(p.pgid()) }

// lookPath resolves command against the PATH the child will get, not
// Switchboard's own.
func lookPath(command string, env []string) (string, error) {
	if strings.Contains(command, "/") {
		fi, err := os.Stat(command)
		if err != nil {
			return "", fmt.Errorf("command %q: %w", command, err)
		}
		if fi.IsDir() {
			return "", fmt.Errorf("command %q is a directory: %w", command, syscall.EISDIR)
		}
		if fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("command %q is not executable: %w", command, os.ErrPermission)
		}
		return command, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, command)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", notFoundInPath(command, path)
}

// pgid is the process group id, which equals the child's pid.
func (p *process) pgid() int { return p.cmd.Process.Pid }

// escapees returns the live processes that belong to the server but are
// outside its process group, where a signal to the group misses them:
// descendants of the child or of its group (by parent pid), and processes
// started since the child that carry its run marker (orphans whose parent
// exited, e.g. after a double fork). They are remembered by pid and start
// time, so one seen once is found again after it is reparented, and a
// reused pid is never taken for it. Likewise a member of the group counts
// only if it started no earlier than the child: once the group is gone,
// its id may be reused by a group of strangers.
func (p *process) escapees() []int {
	pgid := p.pgid()
	procs := scanProcs(p.newSince)
	p.mu.Lock()
	defer p.mu.Unlock()
	byPid := make(map[int]procStat, len(procs))
	kids := map[int][]int{}
	var roots []int
	for _, ps := range procs {
		byPid[ps.pid] = ps
		kids[ps.ppid] = append(kids[ps.ppid], ps.pid)
		switch {
		case ps.pgrp == pgid && ps.start >= p.startTicks, p.escaped[ps.pid] == ps.start && ps.start != 0:
			roots = append(roots, ps.pid)
		case ps.start >= p.startTicks && hasMarker(ps.pid, p.marker):
			roots = append(roots, ps.pid)
		}
	}
	if ps, ok := byPid[pgid]; ok && ps.start == p.startTicks {
		roots = append(roots, pgid)
	}
	family := map[int]bool{}
	for len(roots) > 0 {
		pid := roots[len(roots)-1]
		roots = roots[:len(roots)-1]
		if !family[pid] {
			family[pid] = true
			roots = append(roots, kids[pid]...)
		}
	}
	var out []int
	for pid := range family {
		if ps := byPid[pid]; ps.pgrp != pgid {
			out = append(out, pid)
			p.escaped[pid] = ps.start
		}
	}
	sort.Ints(out)
	return out
}

// killEscapees SIGKILLs the escapees, and whatever they start meanwhile,
// until none is left, only those it may not signal are left, or a second
// has passed. It records which it killed and which are left.
func (p *process) killEscapees() {
	deadline := time.Now().Add(time.Second)
	killed := map[int]bool{}
	for {
		esc := p.escapees()
		refused := 0
		for _, pid := range esc {
			if err := p.killEscapee(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				refused++
			} else {
				killed[pid] = true
			}
		}
		if len(esc) == 0 || refused == len(esc) || time.Now().After(deadline) {
			p.mu.Lock()
			defer p.mu.Unlock()
			for pid := range killed {
				if !slices.Contains(esc, pid) {
					p.killed = append(p.killed, pid)
				}
			}
			sort.Ints(p.killed)
			p.left = esc
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// groupGone reports whether no live process is left in the group. The
// cheap check comes first: once the group is empty (the usual case, the
// child reaped), kill(-pgid, 0) fails with ESRCH; only when something is
// left, zombies included, is /proc read to tell the living from zombies.
func groupGone(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	return len(GroupMembers(pgid)) == 0
}

// GroupMembers returns the pids of live processes (not zombies) in the
// process group, read from /proc.
func GroupMembers(pgid int) []int {
	return LiveProcesses(func(_, pgrp int) bool { return pgrp == pgid })
}

// LiveProcesses returns the pids of live processes (not zombies) whose
// parent pid and process group match, read from /proc.
func LiveProcesses(match func(ppid, pgrp int) bool) []int {
	var pids []int
	for _, ps := range scanProcs(nil) {
		if match(ps.ppid, ps.pgrp) {
			pids = append(pids, ps.pid)
		}
	}
	return pids
}

// procStat is what stop needs of /proc/<pid>/stat.
type procStat struct {
	pid, ppid, pgrp int
	start           uint64 // clock ticks after boot
}

// osProcess is what Linux and macOS keep of a process beyond the common
// fields: nothing (the process group is the common pgid).
//
//lint:ignore U1000 the field of process that holds it is Windows's
type osProcess struct{}
