//go:build linux || darwin

package discovery

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// runLauncher sets the server's limits on this process, marks every
// descriptor above stderr close-on-exec and execs the server. A failure
// is reported on fd 3, which closes unread when exec succeeds.
func runLauncher(args []string) int {
	report := os.NewFile(3, "launch-report")
	fail := func(err error) int {
		fmt.Fprint(report, launchReport(err))
		fmt.Fprintln(os.Stderr, "switchboard launcher:", err)
		return 127
	}
	memory, path, argv, err := parseLaunch(args)
	if err != nil {
		return fail(err)
	}
	// No core dumps: a core file of a server would hold the secrets in
	// its environment.
	if err := syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{}); err != nil {
		return fail(fmt.Errorf("disable core dumps: %w", err))
	}
	closeOnExec()
	if memory > 0 {
		m := uint64(memory)
		if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: m, Max: m}); err != nil {
			return fail(fmt.Errorf("cap the memory: %w", err))
		}
	}
	err = syscall.Exec(path, argv, os.Environ())
	return fail(&os.PathError{Op: "exec", Path: path, Err: err})
}

// closeOnExec marks every open descriptor above stderr close-on-exec, so
// the server inherits only its stdin, stdout and stderr (fd 3 included:
// its closing tells the parent that exec succeeded).
func closeOnExec() {
	if closeRangeOnExec() {
		return
	}
	entries, err := os.ReadDir("/dev/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

func asErrno(err error, en *syscall.Errno) bool { return errors.As(err, en) }
