//go:build unix

package main

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// onlyMine checks that the file at path (fi) is this user's and that no
// one else may read or write it.
func onlyMine(path string, fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s may be read or written by others (mode %#o): chmod 600 it", path, fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to another user (uid %d)", path, st.Uid)
	}
	return nil
}
