package discovery

import (
	"fmt"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// This file holds what isolation needs of Linux: the parent-death
// signal and the limits. What it reads of /proc is in procfs_linux.go;
// the child subreaper and the start-up sweep of what a crash left behind
// are in containment_linux.go.

// groupAttr starts a server in a session, and so a process group, of its
// own, killed if this process dies (the launcher's exec keeps the
// signal). A session of its own has no controlling terminal: a server
// cannot type into the terminal Switchboard was started from (TIOCSTI).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
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
