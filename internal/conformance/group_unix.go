//go:build unix

package conformance

import (
	"os/exec"
	"syscall"
)

// ownGroup makes cmd the leader of a process group of its own, killed
// as a whole when its context ends.
func ownGroup(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return nil
}

// killGroup kills what is left of cmd's process group after it exited.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
