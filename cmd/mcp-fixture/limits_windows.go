package main

import "syscall"

// limits: Windows has no rlimits (the job object caps memory); -1 for
// both.
func limits() (core, data int64) { return -1, -1 }

// sessionAttr: Windows has no sessions to leave; a child stays in the
// job of its parent whatever it asks.
func sessionAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
