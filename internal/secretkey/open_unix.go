//go:build unix

package secretkey

import (
	"os"
	"syscall"
)

// openNoFollow opens path for reading, refusing a symbolic link.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}
