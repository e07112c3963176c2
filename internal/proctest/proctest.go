// Package proctest counts running processes, for tests that check that
// what they started is gone.
package proctest

import (
	"bytes"
	"os"
	"path/filepath"
)

// Count counts the live processes whose command line holds marker: a
// process that exited but was not yet reaped (a zombie) does not count.
// It reads /proc, so it counts nothing where there is none (macOS,
// Windows).
func Count(marker string) int {
	n := 0
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue // exited
		}
		n++
	}
	return n
}
