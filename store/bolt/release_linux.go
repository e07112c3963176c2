package bolt

import (
	"syscall"

	bbolt "go.etcd.io/bbolt"
)

// releaseScanned drops the pages of the file a whole-catalog scan mapped
// in from the process's resident memory. bbolt reads the file through a
// shared, read-only memory map, so every page a scan touched stays
// counted in the process (the resident set) as long as it is mapped:
// with 10,000 tools, tens of megabytes that a dashboard holds for nothing
// after building an answer it keeps. MADV_DONTNEED on a shared file
// mapping forgets only the process's mapping of the pages, not their
// contents: they stay in the operating system's page cache, and a later
// read maps them again (a minor fault each).
//
// It must run inside a transaction (tx): the transaction holds bbolt's
// map lock, so the map cannot be moved (remapped to grow) meanwhile, and
// tx.Size() is within it. Files smaller than releaseMin are left alone.
func releaseScanned(db *bbolt.DB, tx *bbolt.Tx) {
	size := tx.Size()
	if size < int64(releaseMin) {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, db.Info().Data, uintptr(size), syscall.MADV_DONTNEED) // advice: an error only leaves the pages mapped
}

// releaseMin is the smallest file whose pages releaseScanned drops (a
// variable for tests).
var releaseMin = 8 << 20
