package bolt

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

// A seal forged for a damaged file is no seal where the store is opened
// with a seal key (issue 34 L5): neither an unkeyed seal (a CRC anyone
// can compute) nor one made with another key lets the file skip the full
// check, which refuses it. The right key's seal still skips the check.
func TestForgedSealIsNoSeal(t *testing.T) {
	key, other := []byte("the seal key, kept apart from it"), []byte("another key, which is not the one")
	path := filepath.Join(t.TempDir(), "sb.db")
	db := mustOpenPath(t, path, Options{SealKey: key})
	storetest.Fill(t, db)
	padBuckets(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if !sealed(path, key) || sealed(path, nil) || sealed(path, other) {
		t.Fatalf("after Close: sealed with the key %v, without %v, with another %v; want only the key's", sealed(path, key), sealed(path, nil), sealed(path, other))
	}
	db = mustOpenPath(t, path, Options{SealKey: key})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	damageBucketPages(t, path)
	for _, forged := range [][]byte{nil, other} {
		if err := writeSeal(path, forged); err != nil {
			t.Fatal(err)
		}
		if db, err := Open(path, Options{SealKey: key}); !errors.Is(err, store.ErrDamaged) {
			if err == nil {
				db.Close()
			}
			t.Errorf("Open of a damaged file with a seal made with key %q = %v; want ErrDamaged (the full check)", forged, err)
		}
	}
}
