package discovery

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"golang.org/x/sys/windows"
)

// runLauncher waits until this process is in the job whose handle is the
// last argument (its parent puts it there just after starting it), then
// runs the server as its child, inside the same job, with this process's
// stdin, stdout, stderr and environment, and exits with its exit code.
func runLauncher(args []string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "switchboard launcher:", err)
		return 127
	}
	if len(args) < 4 {
		return fail(errors.New("the launcher is started by Switchboard for a server, not by hand"))
	}
	handle, err := strconv.ParseUint(args[len(args)-1], 10, 64)
	if err != nil {
		return fail(fmt.Errorf("invalid job handle %q", args[len(args)-1]))
	}
	_, path, argv, err := parseLaunch(args[:len(args)-1])
	if err != nil {
		return fail(err)
	}
	job := windows.Handle(handle)
	deadline := time.Now().Add(10 * time.Second)
	for {
		in, err := inJob(job)
		if err != nil {
			return fail(fmt.Errorf("is the launcher in its job: %w", err))
		}
		if in {
			break
		}
		if time.Now().After(deadline) {
			return fail(errors.New("not put in its job object within 10 s"))
		}
		time.Sleep(time.Millisecond)
	}
	windows.CloseHandle(job)
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		return fail(err)
	}
	return 0
}
