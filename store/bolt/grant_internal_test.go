package bolt

import (
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

// The integrity check reads grants as what they are: a damaged one is
// reported, not taken for a sound file.
func TestCheckReadsGrants(t *testing.T) {
	ctx := t.Context()
	db := mustOpen(t)
	s := storetest.MustCreate(t, db, storetest.StdioServer("srv"))
	if err := db.SaveGrant(ctx, s.ID, store.Grant{Issuer: "https://as.example", AccessToken: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := db.bolt.View(readAll); err != nil {
		t.Fatalf("check of a sound file with a grant = %v", err)
	}
	if err := db.bolt.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketGrants).Bucket([]byte(s.ID)).Put([]byte("https://as.example"), []byte(`{"issuer": 7}`))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.bolt.View(readAll); err == nil || !strings.Contains(err.Error(), "grants") {
		t.Errorf("check of a damaged grant = %v; want it named", err)
	}
}
