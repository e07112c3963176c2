package bolt

import (
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

// A schema-2 file gets agent names for its tools when opened.
func TestMigrateToSchema3(t *testing.T) {
	path := t.TempDir() + "/old.db"
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := storetest.MustCreate(t, db, storetest.StdioServer("files"))
	storetest.MustRecordSuccess(t, db, s.ID, storetest.Verification(s, "j1", storetest.At(1), storetest.MkTool("read", "v1"), storetest.MkTool("a.b", "v1")))
	err = db.bolt.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(bucketAgentNames); err != nil {
			return err
		}
		tb := tx.Bucket(bucketTools).Bucket([]byte("files"))
		for _, name := range []string{"read", "a.b"} {
			var t store.Tool
			if err := getJSON(tb, []byte(name), &t); err != nil {
				return err
			}
			t.AgentName = ""
			if err := putJSON(tb, []byte(name), t); err != nil {
				return err
			}
		}
		return putJSON(tx.Bucket(bucketMeta), keySchemaVersion, 2)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = mustOpenPath(t, path, Options{})
	if got := storetest.AgentNames(t, db, "files"); got["read"] != "files__read" || got["a.b"] != store.AgentName("files", "a.b") {
		t.Errorf("agent names after migration = %v", got)
	}
}
