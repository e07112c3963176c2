package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/windows"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
)

// runLauncher waits until this process is in the job whose handle is the
// last argument (its parent puts it there just after starting it), builds
// the plan's wall (sandbox.PrepareWindows: the Low labels and a
// restricted low-integrity token), then runs the server as its child,
// inside the same job, with that token and this process's stdin, stdout,
// stderr and environment, and exits with its exit code. It reports on
// the pipe whose handle is the argument before the job's, as the Unix
// launcher does on fd 3: the tier it built, then why the walls or the
// start failed, if they did; it closes the pipe once the server has
// started, so that the parent knows it runs.
func runLauncher(args []string) int {
	rep, job, args, err := launcherHandles(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "switchboard launcher:", err)
		return 127
	}
	report := os.NewFile(uintptr(rep), "launch-report")
	fail := func(err error) int {
		fmt.Fprint(report, launchReport(err))
		fmt.Fprintln(os.Stderr, "switchboard launcher:", err)
		return 127
	}
	plan, path, argv, err := parseLaunch(args)
	if err != nil {
		return fail(err)
	}
	if err := waitForJob(job); err != nil {
		return fail(err)
	}
	windows.CloseHandle(job)
	tier, token, err := sandbox.PrepareWindows(plan)
	if err != nil {
		fmt.Fprint(report, wallReport+err.Error())
		fmt.Fprintln(os.Stderr, "switchboard launcher:", err)
		return 126
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if token != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Token: syscall.Token(token)}
		// With a Token and a nil Env, os/exec would give the server the
		// user's default environment, not the one Switchboard chose.
		cmd.Env = os.Environ()
	}
	t, _ := json.Marshal(tier)
	fmt.Fprintf(report, "%s%s\n", tierLine, t)
	err = cmd.Start()
	if token != 0 {
		token.Close() // the server's process holds it now
	}
	if err != nil {
		return fail(err)
	}
	report.Close()
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "switchboard launcher:", err)
		return 127
	}
	return 0
}

// launcherHandles takes the two handles the parent appends to the
// launcher's arguments (see launch): the report pipe's write end, then
// the job. It returns the arguments before them.
func launcherHandles(args []string) (report, job windows.Handle, rest []string, err error) {
	if len(args) < 2 {
		return 0, 0, nil, errors.New("the launcher is started by Switchboard for a server, not by hand")
	}
	n := len(args)
	rep, err := strconv.ParseUint(args[n-2], 10, 64)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("invalid report handle %q", args[n-2])
	}
	j, err := strconv.ParseUint(args[n-1], 10, 64)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("invalid job handle %q", args[n-1])
	}
	return windows.Handle(rep), windows.Handle(j), args[:n-2], nil
}

// waitForJob waits until this process is in job, for 10 s at most.
func waitForJob(job windows.Handle) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		in, err := inJob(job)
		if err != nil {
			return fmt.Errorf("is the launcher in its job: %w", err)
		}
		if in {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("not put in its job object within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}
