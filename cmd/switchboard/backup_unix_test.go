//go:build unix

// The other process's lock is taken here with flock, as bbolt takes it on
// Unix.

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

// Another process's dashboard holds bbolt's lock (flock, per open file
// description on Linux, so a second descriptor here stands in for it).
func TestBackupWhileAnotherProcessHoldsTheDatabase(t *testing.T) {
	db := seedDB(t)
	holdAsADashboard(t, db)
	out := filepath.Join(t.TempDir(), "backup.db")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := run(context.Background(), []string{"backup", "--db", db, out}, env(nil), nil, &stdout, &stderr)
	if !errors.Is(err, store.ErrInUse) || !strings.Contains(err.Error(), "stop it") {
		t.Fatalf("backup of a database locked elsewhere = %v; want an in-use error saying to stop the dashboard", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("backup took %v to give up; want about %v", d, bolt.DefaultOpenTimeout)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat(%q) after the refused backup = %v; want not exist", out, err)
	}
}

// holdAsADashboard takes bbolt's lock of the database at path until the
// test ends, as a dashboard running in another process holds it.
func holdAsADashboard(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
}
