package bolt

import (
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

// A schema-1 file gets the approved definitions of its tools when opened.
func TestMigrateToSchema2(t *testing.T) {
	ctx := t.Context()
	path := t.TempDir() + "/old.db"
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := store.Server{ID: "files", Name: "f", Transport: store.TransportStdio, Command: "x", DefaultPolicy: store.PolicyAsk}
	if err := db.CreateServer(ctx, s); err != nil {
		t.Fatal(err)
	}
	s, _ = db.Server(ctx, "files")
	r1, w1, w2 := storetest.MkTool("read", "v1"), storetest.MkTool("write", "v1"), storetest.MkTool("write", "v2")
	storetest.MustRecordSuccess(t, db, s.ID, storetest.Verification(s, "j1", storetest.At(1), r1, w1))
	storetest.MustRecordSuccess(t, db, s.ID, storetest.Verification(s, "j2", storetest.At(2), r1, w2))
	// Make it look like schema 1: no approved definitions, no history.
	err = db.bolt.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketApproved, bucketHistory} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return putJSON(tx.Bucket(bucketMeta), keySchemaVersion, 1)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	db = mustOpenPath(t, path, Options{})
	if _, approved, err := db.ToolVersions(ctx, store.ToolRef{ServerID: "files", Tool: "read"}); err != nil || approved == nil || approved.Pin != r1.Pin {
		t.Errorf("ToolVersions(read) after migration: approved %+v, %v; want v1", approved, err)
	}
	if e, approved, err := db.ToolVersions(ctx, store.ToolRef{ServerID: "files", Tool: "write"}); err != nil || approved != nil || e.State != store.ToolChanged {
		t.Errorf("ToolVersions(write) after migration: approved %+v, state %s, %v; want none (never stored), changed", approved, e.State, err)
	}
	err = db.bolt.View(func(tx *bbolt.Tx) error {
		var v int
		if err := getJSON(tx.Bucket(bucketMeta), keySchemaVersion, &v); err != nil || v != SchemaVersion {
			t.Errorf("schema version after migration = %d, %v; want %d", v, err, SchemaVersion)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// makeOlder makes db's file one of an older schema, version, which did
// not have bucket yet: for the tests of the migration that adds it.
func makeOlder(t *testing.T, db *DB, bucket []byte, version int) {
	t.Helper()
	err := db.bolt.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(bucket); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketMeta), keySchemaVersion, version)
	})
	if err != nil {
		t.Fatal(err)
	}
}
