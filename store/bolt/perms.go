package bolt

import (
	"fmt"
	"os"
	"path/filepath"
)

// The database holds secrets (server env and header values), so only its
// owner may read it: the file is 0600 and, when the directory is
// Switchboard's own, the directory 0700.
const (
	filePerm = 0o600
	dirPerm  = 0o700
)

// securePermissions tightens what it may and reports what it changed or
// could not fix. The file (if it exists) is always Switchboard's, so group
// and other bits are removed. The directory is tightened only when
// privateDir says it holds nothing but Switchboard's files; otherwise
// (a directory the person chose, such as a project folder or /tmp) a
// loose mode is reported, not changed.
func securePermissions(path string, privateDir bool) (notes []string) {
	dir := filepath.Dir(path)
	if info, err := os.Stat(dir); err == nil && info.Mode().Perm()&0o077 != 0 {
		switch {
		case !privateDir:
			notes = append(notes, fmt.Sprintf("directory %s is open to other users (mode %04o); the database file in it is %04o, but a directory of its own is safer", dir, info.Mode().Perm(), filePerm))
		case os.Chmod(dir, dirPerm) != nil:
			notes = append(notes, fmt.Sprintf("directory %s is open to other users (mode %04o) and could not be changed to %04o: fix it by hand", dir, info.Mode().Perm(), dirPerm))
		default:
			notes = append(notes, fmt.Sprintf("directory %s was open to other users (mode %04o); changed to %04o", dir, info.Mode().Perm(), dirPerm))
		}
	}
	info, err := os.Lstat(path)
	if err != nil || !info.Mode().IsRegular() {
		return notes // created 0600 by bbolt, or refused later with a clear error
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		if err := os.Chmod(path, perm&^0o077); err != nil {
			notes = append(notes, fmt.Sprintf("database %s is readable by other users (mode %04o) and could not be changed: %v", path, perm, err))
		} else {
			notes = append(notes, fmt.Sprintf("database %s was open to other users (mode %04o); changed to %04o", path, perm, perm&^0o077))
		}
	}
	return notes
}

// refuseForeign refuses, as OpenSSH refuses a key or a config it does not
// control, a database that another user could have put in place: a file,
// or a directory, that another user owns, or a directory others may
// write (a shared /tmp). Another user's database would have Switchboard
// run that user's commands, as whoever runs it (issue 34, M4).
func refuseForeign(path string) error {
	dir := filepath.Dir(path)
	if info, err := os.Stat(dir); err == nil {
		if uid, foreign := foreignOwner(info); foreign {
			return fmt.Errorf("store: directory %s belongs to another user (uid %d): keep the database in a directory of your own", dir, uid)
		}
		// Writable by anyone (a sticky /tmp too: another user may create
		// the database's name there first), or by a group not the user's
		// own private one.
		if perm := info.Mode().Perm(); perm&0o002 != 0 || perm&0o020 != 0 && !ownGroup(info) {
			return fmt.Errorf("store: directory %s may be written by other users (mode %04o): another user could put a database there for Switchboard to run; keep it in a directory of your own", dir, info.Mode().Perm())
		}
	}
	if info, err := os.Lstat(path); err == nil {
		if uid, foreign := foreignOwner(info); foreign {
			return fmt.Errorf("store: %s belongs to another user (uid %d): Switchboard does not run what another user's database says", path, uid)
		}
	}
	return nil
}
