//go:build unix

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

// A database file a running dashboard holds (bbolt's flock, taken here
// on a second descriptor as another process would) is refused within
// about the lock timeout, as source and as destination, and nothing is
// written.
func TestMigrateWhileAnotherProcessHoldsTheDatabase(t *testing.T) {
	held, _ := filledDB(t)
	holdAsADashboard(t, held)
	other := filepath.Join(t.TempDir(), "other.db")
	free, _ := filledDB(t)
	for _, args := range [][]string{{"-from", held, "-to", other}, {"-from", free, "-to", held}} {
		start := time.Now()
		_, _, err := migrate(t, args...)
		if !errors.Is(err, store.ErrInUse) || !strings.Contains(err.Error(), "stop it") {
			t.Fatalf("migrate %q with a held file = %v; want an in-use error saying to stop the dashboard", args, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("migrate %q took %v to give up; want about %v", args, d, bolt.DefaultOpenTimeout)
		}
	}
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat(%q) after the refused migrate = %v; want not exist", other, err)
	}
}
