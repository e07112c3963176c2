package discovery

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
)

// The launcher: a program that starts stdio servers runs itself again,
// with launchArg first, for each server. On Linux and macOS the launcher
// sets the server's limits on itself and execs the server in place, so
// the limits hold from the server's first instruction (Go cannot run code
// between fork and exec); on Windows it waits until it is in the server's
// Job Object and then starts the server as its own child, inside the job.

// launchArg, as the first argument, makes a program that calls
// RunLauncherIfAsked the launcher of a server.
const launchArg = "__switchboard_launch"

// launcherReady is set by RunLauncherIfAsked: this program can be its own
// launcher.
var launcherReady atomic.Bool

// RunLauncherIfAsked must be called first in main (and TestMain) of every
// program that starts stdio servers through this package. Started as a
// server's launcher, the program runs as that and never returns;
// otherwise the call notes that the program can launch servers. Without
// the call servers still start, isolated less (see Result.Isolation).
func RunLauncherIfAsked() {
	if len(os.Args) > 1 && os.Args[1] == launchArg {
		os.Exit(runLauncher(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == sandbox.ProbeArg {
		os.Exit(0) // started in new namespaces: they can be made
	}
	launcherReady.Store(true)
}

var selfPath = sync.OnceValues(os.Executable)

// launcherPath is the program to launch servers with, if this one can.
func launcherPath() (string, bool) {
	if !launcherReady.Load() {
		return "", false
	}
	p, err := selfPath()
	return p, err == nil
}

// launcherArgs are the launcher's arguments for the program at path with
// argv under plan (the walls and limits it builds before exec).
func launcherArgs(path string, plan *sandbox.Plan, argv []string) []string {
	return append([]string{"switchboard-launcher", launchArg, plan.Encode(), path}, argv...)
}

// parseLaunch reads the launcher's arguments (after launchArg).
func parseLaunch(args []string) (plan *sandbox.Plan, path string, argv []string, err error) {
	if len(args) < 3 {
		return nil, "", nil, fmt.Errorf("the launcher is started by Switchboard for a server, not by hand")
	}
	plan, err = sandbox.DecodePlan(args[0])
	if err != nil {
		return nil, "", nil, err
	}
	return plan, args[1], args[2:], nil
}

// wallReport starts the launcher's report that it could not build the
// walls.
const wallReport = "wall "

// tierLine starts the launcher's report of the walls it built, written
// (as JSON, one line) before it execs the server.
const tierLine = "tier "

// parseReport reads what the launcher wrote on its report pipe: the
// walls it built, and, if exec did not happen, why (else "").
func parseReport(report string) (tier sandbox.Tier, failure string) {
	for {
		line, rest, found := strings.Cut(report, "\n")
		js, ok := strings.CutPrefix(line, tierLine)
		if !ok || !found {
			break
		}
		json.Unmarshal([]byte(js), &tier)
		report = rest
	}
	return tier, report
}

// launchReport is how the launcher tells its parent why the server could
// not be started: "ERRNO message", ERRNO 0 when there is no errno.
func launchReport(err error) string {
	errno := 0
	var en syscall.Errno
	if asErrno(err, &en) {
		errno = int(en)
	}
	return strconv.Itoa(errno) + " " + err.Error()
}

// launchError turns a launcher's report into the error Start would have
// returned: with the errno, so that not_found and permission are told
// apart as for a direct start.
func launchError(path, report string) error {
	num, msg, _ := strings.Cut(report, " ")
	if n, err := strconv.Atoi(num); err == nil && n != 0 {
		return &os.PathError{Op: "exec", Path: path, Err: syscall.Errno(n)}
	}
	return fmt.Errorf("start %s: %s", path, msg)
}
