//go:build !unix

package main

import (
	"os/exec"
	"testing"
)

// ownGroup does nothing where there are no process groups to signal.
func ownGroup(*exec.Cmd) {}

// killGroup kills the process of cmd.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

// assertGroupGone checks nothing: without process groups, the process
// waited for is all there was to end.
func assertGroupGone(*testing.T, *exec.Cmd) {}
