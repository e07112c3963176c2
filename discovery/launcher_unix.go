//go:build linux || darwin

package discovery

import (
	"encoding/json"
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
	plan, path, argv, err := parseLaunch(args)
	if err != nil {
		return fail(err)
	}
	var ctl *os.File
	if plan.Ctl() {
		ctl = os.NewFile(4, "sandbox-ctl")
	}
	// No core dumps (a core file of a server would hold the secrets in
	// its environment), the limits, and the walls.
	tier, execPath, execArgv, err := wall(plan, ctl, path, argv)
	if err != nil {
		fmt.Fprint(report, wallReport+err.Error())
		fmt.Fprintln(os.Stderr, "switchboard launcher:", err)
		return 126
	}
	if ctl != nil {
		ctl.Close()
	}
	closeOnExec()
	t, _ := json.Marshal(tier)
	fmt.Fprintf(report, "%s%s\n", tierLine, t)
	err = syscall.Exec(execPath, execArgv, os.Environ())
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
