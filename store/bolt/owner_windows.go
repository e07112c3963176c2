package bolt

import "io/fs"

// foreignOwner: a Windows file's owner is in its ACL, not read here.
func foreignOwner(fs.FileInfo) (int, bool) { return 0, false }

// ownGroup: no groups in Windows file modes.
func ownGroup(fs.FileInfo) bool { return true }
