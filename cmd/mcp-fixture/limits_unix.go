//go:build linux || darwin

package main

import "syscall"

// limits returns the soft core and data limits, -1 for unlimited.
func limits() (core, data int64) {
	show := func(res int) int64 {
		var l syscall.Rlimit
		if syscall.Getrlimit(res, &l) != nil || l.Cur == ^uint64(0) { // RLIM_INFINITY
			return -1
		}
		return int64(l.Cur)
	}
	return show(syscall.RLIMIT_CORE), show(syscall.RLIMIT_DATA)
}

// sessionAttr starts a child in a session of its own if setsid.
func sessionAttr(setsid bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: setsid} }
