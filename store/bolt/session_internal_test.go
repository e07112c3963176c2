package bolt

import (
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// A file of schema 3 had no sessions bucket: opening it makes one, and
// opening it again changes nothing.
func TestMigrateSessions(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	db := mustOpenPath(t, path, Options{})
	makeOlder(t, db, bucketSessions, 3)
	db.Close()
	db = mustOpenPath(t, path, Options{})
	_, s := store.NewBrowserSession("Firefox", time.Now(), time.Hour)
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatalf("CreateSession after migrating from schema 3 = %v; want nil", err)
	}
	db.Close()
	db = mustOpenPath(t, path, Options{})
	if _, err := db.Session(ctx, s.Hash); err != nil {
		t.Errorf("Session after opening twice = %v; want kept", err)
	}
	if got, want := rawSchemaVersionOf(db), SchemaVersion; got != want {
		t.Errorf("schema version = %d; want %d", got, want)
	}
}

func rawSchemaVersionOf(db *DB) int {
	var v int
	db.bolt.View(func(tx *bbolt.Tx) error { return getJSON(tx.Bucket(bucketMeta), keySchemaVersion, &v) })
	return v
}
