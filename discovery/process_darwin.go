package discovery

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// This file holds what isolation needs of macOS: process listing by
// sysctl (there is no /proc), and no child subreaper, so the start-up
// sweep of a crashed run's records only removes them.

// groupAttr starts a server in a session of its own: no controlling
// terminal to type into (see process_linux.go).
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// limitAfterStart: macOS cannot set another process's limits.
func limitAfterStart(_ int, memory int64) (string, error) {
	if memory > 0 {
		return "", fmt.Errorf("a memory cap needs the launcher on macOS (see RunLauncherIfAsked)")
	}
	return "no limits", nil
}

func isolationOf(limits string) string {
	return strings.Join([]string{"process group", limits, "descendants swept"}, " + ")
}

func closeRangeOnExec() bool { return false }

func startChild(cmd *exec.Cmd) error { return cmd.Start() }

func childReaped(int) {}

func becomeReaper() (release func(), err error) {
	return nil, fmt.Errorf("macOS has no child subreaper")
}

func bootID() string {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d.%06d", tv.Sec, tv.Usec)
}

func pidNamespace() string { return "" }

func pidClock() (forks, inUse uint64) { return 0, 0 }

func forkCount() (uint64, bool) { return 0, false }

func sweepRuns([]runInfo, string, string) (killed, left []int) { return nil, nil }

// hasMarker: macOS does not show another process's environment cheaply;
// escapees are found by parent only.
func hasMarker(int, []byte) bool { return false }

// newSince: every process is looked at.
func (p *process) newSince(int) int { return 0 }

// startOf is a process's start time in microseconds since the epoch.
func startOf(kp *unix.KinfoProc) uint64 {
	tv := kp.Proc.P_starttime
	return uint64(tv.Sec)*1e6 + uint64(tv.Usec)
}

// zombie is p_stat's value for a zombie (SZOMB).
const zombie = 5

// scanProcs returns the live processes (not zombies); from is ignored.
func scanProcs(func(live int) int) []procStat {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	out := make([]procStat, 0, len(kps))
	for i := range kps {
		kp := &kps[i]
		if kp.Proc.P_stat == zombie || kp.Proc.P_pid <= 0 {
			continue
		}
		out = append(out, procStat{pid: int(kp.Proc.P_pid), ppid: int(kp.Eproc.Ppid), pgrp: int(kp.Eproc.Pgid), start: startOf(kp)})
	}
	return out
}

// readStatAny reads one process, zombies included, and whether it is one
// ('Z').
func readStatAny(pid int) (procStat, byte, bool) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || kp.Proc.P_pid != int32(pid) {
		return procStat{}, 0, false
	}
	state := byte('R')
	if kp.Proc.P_stat == zombie {
		state = 'Z'
	}
	return procStat{pid: pid, ppid: int(kp.Eproc.Ppid), pgrp: int(kp.Eproc.Pgid), start: startOf(kp)}, state, true
}
