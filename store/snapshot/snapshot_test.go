package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

func source(t *testing.T, servers ...store.Server) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "src.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, s := range servers {
		if err := db.CreateServer(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// A copy replaces the destination only whole and checked: a store that
// keeps a secret in clear is not copied, and the file there stays as it
// was; a store that can be copied is, and the copy opens and holds it.
func TestACopyReplacesOnlyWhole(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	out := filepath.Join(dir, "backup.db")
	if err := os.WriteFile(out, []byte("yesterday's backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	clear := source(t, store.Server{ID: "leaky", Name: "Leaky", Transport: store.TransportStdio, Command: "/bin/true", Env: map[string]string{"TOKEN": "in clear"}})
	if _, err := Write(ctx, clear, out); !errors.Is(err, ErrClearSecrets) {
		t.Fatalf("copy of a store with a secret in clear = %v; want ErrClearSecrets", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "yesterday's backup" {
		t.Fatalf("the failed copy changed the destination: %q", b)
	}

	ok := source(t, store.Server{ID: "files", Name: "Files", Transport: store.TransportStdio, Command: "/bin/true"})
	w, err := Write(ctx, ok, out)
	if err != nil {
		t.Fatal(err)
	}
	if w.Counts.Servers != 1 || w.Size == 0 {
		t.Errorf("written = %+v; want one server", w)
	}
	copied, err := bolt.Open(out, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer copied.Close()
	if s, err := copied.Server(ctx, "files"); err != nil || s.Name != "Files" {
		t.Errorf("the copy holds %+v, %v", s, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestMain(m *testing.M) {
	bolt.RunChildCheckIfAsked() // the copy's first open checks it in a child: this binary
	os.Exit(m.Run())
}
