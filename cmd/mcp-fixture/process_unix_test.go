//go:build unix

package main

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// ownGroup makes cmd start in a process group of its own, so that
// killGroup reaches everything it starts.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the process group of cmd, if anything is left in it.
func killGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// assertGroupGone fails t unless the process group of cmd, which has
// been waited for, is empty within 5 s.
func assertGroupGone(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Kill(-cmd.Process.Pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("process group %d of %s still has processes (kill 0: %v)", cmd.Process.Pid, cmd.Path, err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
