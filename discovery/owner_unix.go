//go:build unix

package discovery

import (
	"io/fs"
	"os"
	"syscall"
)

// foreignFile reports whether another user owns fi.
func foreignFile(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) != os.Getuid()
}
