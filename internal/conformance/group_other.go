//go:build !unix

package conformance

import (
	"errors"
	"os/exec"
)

// ownGroup refuses: without a process group to kill at the end, the
// clients and servers the suite starts could outlive the run.
func ownGroup(*exec.Cmd) error {
	return errors.New("conformance: running the suite needs a Unix system (it runs in a process group of its own, killed at the end)")
}

func killGroup(*exec.Cmd) {}
