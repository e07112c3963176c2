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
