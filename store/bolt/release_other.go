//go:build !linux

package bolt

import bbolt "go.etcd.io/bbolt"

// releaseScanned does nothing here: macOS and Windows count a file's
// mapped pages differently, and keep them only as long as memory allows.
func releaseScanned(*bbolt.DB, *bbolt.Tx) {}
