package bolt

import (
	"path/filepath"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

// A file of schema 4 had no profiles bucket: opening it makes one, and
// opening it again keeps what was stored in it.
func TestMigrateProfiles(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	db := mustOpenPath(t, path, Options{})
	makeOlder(t, db, bucketProfiles, 4)
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
