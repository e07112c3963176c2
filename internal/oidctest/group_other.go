//go:build !unix

package oidctest

import "os/exec"

// ownGroup does nothing where there are no process groups to signal.
func ownGroup(*exec.Cmd) {}

// killGroup kills the process of cmd.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

// groupGone checks nothing: without process groups, the process waited
// for is all there was to end.
func groupGone(*exec.Cmd) error { return nil }
