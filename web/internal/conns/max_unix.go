//go:build unix

package conns

import "syscall"

// Max is how many connections the server holds at once: half of the
// descriptors the process may open (the rest are for the store, the
// servers' pipes and outgoing connections), between 64 and 8192.
func Max() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 1024
	}
	return int(min(max(l.Cur/2, 64), 8192))
}
