package bolt

import (
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// A file of schema 4 had no profiles bucket: opening it makes one, and
// opening it again keeps what was stored in it.
func TestMigrateProfiles(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	db := mustOpenPath(t, path, Options{})
	err := db.bolt.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(bucketProfiles); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketMeta), keySchemaVersion, 4)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = mustOpenPath(t, path, Options{})
	if err := db.CreateProfile(ctx, store.Profile{ID: "p", Name: "P", Mode: store.ProfileAll}); err != nil {
		t.Fatalf("CreateProfile after migrating from schema 4 = %v; want nil", err)
	}
	db.Close()
	db = mustOpenPath(t, path, Options{})
	if _, err := db.Profile(ctx, "p"); err != nil {
		t.Errorf("Profile after opening twice = %v; want kept", err)
	}
	if got, want := rawSchemaVersionOf(db), SchemaVersion; got != want {
		t.Errorf("schema version = %d; want %d", got, want)
	}
}
