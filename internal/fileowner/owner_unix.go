//go:build unix

// Package fileowner tells whether a file belongs to another user: the
// check every file Switchboard trusts (its database, token, seal, run
// records, secret key) must pass, as OpenSSH asks of its keys.
package fileowner

import (
	"io/fs"
	"os"
	"syscall"
)

// Foreign reports the uid that owns fi when it is not this process's
// user.
func Foreign(fi fs.FileInfo) (uid int, foreign bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), int(st.Uid) != os.Getuid()
}

// OwnGroup reports whether fi's group is this process's own (a user's
// private group, which a 0775 directory of a umask-002 system has).
func OwnGroup(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Gid) == os.Getgid()
}
