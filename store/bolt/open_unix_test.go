//go:build unix

// The file modes checked here (0600, 0700) are Unix's.

package bolt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenPermissions: a new database is 0600 in a 0700 directory under
// any umask; looser modes on an existing file are repaired, and a loose
// directory is repaired when it is Switchboard's own and reported
// otherwise.
func TestOpenPermissions(t *testing.T) {
	mode := func(p string) os.FileMode {
		t.Helper()
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return info.Mode().Perm()
	}
	open := func(path string, private bool) []string {
		t.Helper()
		var notes []string
		db, err := Open(path, Options{PrivateDir: private, Warn: func(m string) { notes = append(notes, m) }})
		if err != nil {
			t.Fatalf("Open(%q) = %v; want nil", path, err)
		}
		db.Close()
		return notes
	}

	t.Run("new", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "fresh", "switchboard.db")
		if notes := open(path, true); len(notes) != 0 {
			t.Errorf("notes for a new database = %q; want none", notes)
		}
		if got := mode(filepath.Dir(path)); got != 0o700 {
			t.Errorf("new directory mode = %04o; want 0700", got)
		}
		if got := mode(path); got != 0o600 {
			t.Errorf("new file mode = %04o; want 0600", got)
		}
	})

	t.Run("loose private directory and file are repaired", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "switchboard")
		path := filepath.Join(dir, "switchboard.db")
		open(path, true)
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		notes := open(path, true)
		if got := mode(dir); got != 0o700 {
			t.Errorf("directory mode after Open = %04o; want 0700", got)
		}
		if got := mode(path); got != 0o600 {
			t.Errorf("file mode after Open = %04o; want 0600", got)
		}
		if len(notes) != 2 || !strings.Contains(notes[0], "changed to 0700") || !strings.Contains(notes[1], "changed to 0600") {
			t.Errorf("notes = %q; want the directory and file repairs", notes)
		}
	})

	t.Run("a directory the person chose is reported, not changed", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "mine.db")
		notes := open(path, false)
		if got := mode(dir); got != 0o755 {
			t.Errorf("directory mode = %04o; want it left at 0755", got)
		}
		if got := mode(path); got != 0o600 {
			t.Errorf("file mode = %04o; want 0600", got)
		}
		if len(notes) != 1 || !strings.Contains(notes[0], "open to other users (mode 0755)") {
			t.Errorf("notes = %q; want one about the directory", notes)
		}
	})
}

// A database another user could have put in place is refused, not run
// (issue 34, M4): in a directory others may write (a shared /tmp), or a
// file or directory another user owns.
func TestOpenRefusesForeign(t *testing.T) {
	open := func(path string) error {
		db, err := Open(path, Options{})
		if err == nil {
			db.Close()
		}
		return err
	}
	shared := t.TempDir()
	if err := os.Chmod(shared, 0o1777); err != nil { // as /tmp is
		t.Fatal(err)
	}
	if err := open(filepath.Join(shared, "switchboard.db")); err == nil || !strings.Contains(err.Error(), "written by other users") {
		t.Errorf("Open in a world-writable directory = %v; want it refused", err)
	}
	if os.Getuid() != 0 {
		t.Skip("the rest needs root, to give files to another user (CI runs as root)")
	}
	const other = 65534
	theirs := t.TempDir()
	if err := os.Chown(theirs, other, other); err != nil {
		t.Fatal(err)
	}
	if err := open(filepath.Join(theirs, "switchboard.db")); err == nil || !strings.Contains(err.Error(), "belongs to another user") {
		t.Errorf("Open in another user's directory = %v; want it refused", err)
	}
	mine := t.TempDir()
	planted := filepath.Join(mine, "switchboard.db")
	if err := open(planted); err != nil { // a real database
		t.Fatal(err)
	}
	if err := os.Chown(planted, other, other); err != nil {
		t.Fatal(err)
	}
	if err := open(planted); err == nil || !strings.Contains(err.Error(), "belongs to another user") {
		t.Errorf("Open of another user's database file = %v; want it refused", err)
	}
	// A seal another user wrote is no seal: the file is checked in full.
	sealedDB := filepath.Join(t.TempDir(), "switchboard.db")
	if err := open(sealedDB); err != nil {
		t.Fatal(err)
	}
	if !sealed(sealedDB, nil) {
		t.Fatal("a cleanly closed database is not sealed")
	}
	if err := os.Chown(sealPath(sealedDB), other, other); err != nil {
		t.Fatal(err)
	}
	if sealed(sealedDB, nil) {
		t.Error("another user's seal was taken as the file's")
	}
}
