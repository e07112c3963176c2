//go:build unix

package bolt

import (
	"fmt"
	"os/signal"
	"strconv"
	"syscall"
)

// limitFileSize sets RLIMIT_FSIZE to the given number of bytes, the way a
// full disk looks without root: writes past it fail with EFBIG. SIGXFSZ,
// which would kill the process instead, is ignored.
func limitFileSize(v string) error {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return fmt.Errorf("%s=%q: %w", helperFileSizeEnv, v, err)
	}
	signal.Ignore(syscall.SIGXFSZ)
	return syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n})
}
