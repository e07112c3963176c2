package main

import "golang.org/x/sys/unix"

// undumpable makes this process undumpable: no core file, and its
// /proc/<pid> entries (environ, mem, maps, fd) are root's alone and
// closed to ptrace by anyone without CAP_SYS_PTRACE in its namespace.
func undumpable() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
