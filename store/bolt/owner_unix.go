//go:build unix

package bolt

import (
	"io/fs"
	"os"
	"syscall"
)

// foreignOwner reports the uid that owns fi when it is not this
// process's user.
func foreignOwner(fi fs.FileInfo) (uid int, foreign bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), int(st.Uid) != os.Getuid()
}

// ownGroup reports whether fi's group is this process's own (a user's
// private group, which a 0775 directory of a umask-002 system has).
func ownGroup(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Gid) == os.Getgid()
}
