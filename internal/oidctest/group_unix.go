//go:build unix

package oidctest

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// ownGroup makes cmd start in a process group of its own, so that
// killGroup reaches everything it starts.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the process group of cmd, if anything is left in it.
func killGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// groupGone says what is left of the process group of cmd, which has
// been waited for, after 5 s; nil once it is empty.
func groupGone(cmd *exec.Cmd) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Kill(-cmd.Process.Pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d of %s still has processes (kill 0: %v)", cmd.Process.Pid, cmd.Path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
