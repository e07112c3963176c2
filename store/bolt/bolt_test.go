package bolt

import (
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

// TestStore runs the store's conformance suite against a file.
func TestStore(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Store { return mustOpen(t) },
		Reopen: func(t *testing.T, st store.Store) store.Store {
			db := st.(*DB)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			return mustOpenPath(t, db.Path(), Options{})
		},
		Leftovers: func(t *testing.T, st store.Store, id string) []string {
			var left []string
			err := st.(*DB).bolt.View(func(tx *bbolt.Tx) error {
				key := []byte(id)
				for _, name := range [][]byte{bucketServers, bucketDiscovery} {
					if tx.Bucket(name).Get(key) != nil {
						left = append(left, string(name)+"/"+id)
					}
				}
				for _, name := range perServerBuckets {
					if tx.Bucket(name).Bucket(key) != nil {
						left = append(left, string(name)+"/"+id+"/")
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return left
		},
	})
}

// mustOpen opens a fresh store in a temporary directory and closes it when
// the test ends.
func mustOpen(t *testing.T) *DB {
	t.Helper()
	return mustOpenOpts(t, Options{})
}

func mustOpenOpts(t *testing.T, opts Options) *DB {
	t.Helper()
	return mustOpenPath(t, filepath.Join(t.TempDir(), "switchboard.db"), opts)
}

// mustOpenPath opens the store at path and closes it when the test ends
// (a test may close it earlier).
func mustOpenPath(t *testing.T, path string, opts Options) *DB {
	t.Helper()
	db, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%q) = %v; want nil", path, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close() = %v; want nil", err)
		}
	})
	return db
}
