package bolt

import "errors"

// limitFileSize fails: Windows has no file size limit a process can set
// on itself, so the "fill" helper (TestDiskFullFailsCleanly) needs a Unix
// system.
func limitFileSize(string) error {
	return errors.New("a file size limit (RLIMIT_FSIZE) needs a Unix system")
}
