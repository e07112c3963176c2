package store

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Grants are kept per server and issuer, the latest is the one last
// saved, a sign-out forgets them, and so does deleting the server; none
// of their secrets is in the server's summary.
func TestGrants(t *testing.T) {
	db := mustOpen(t)
	s := mustCreate(t, db, stdioServer("srv"))
	if _, ok, err := db.LatestGrant(s.ID); ok || err != nil {
		t.Fatalf("LatestGrant of a server never signed in to = %v, %v; want none", ok, err)
	}
	first := Grant{Issuer: "https://as1.example", TokenEndpoint: "https://as1.example/token", Resource: "https://mcp.example/mcp",
		ClientID: "c1", ClientSecret: "client-secret-1", AccessToken: "access-token-1", RefreshToken: "refresh-token-1",
		ExpiresAt: time.Date(2026, 11, 25, 13, 0, 0, 0, time.UTC), SavedAt: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	second := first
	second.Issuer, second.ClientID, second.AccessToken, second.SavedAt = "https://as2.example", "c2", "access-token-2", first.SavedAt.Add(time.Minute)
	for _, g := range []Grant{first, second} {
		if err := db.SaveGrant(s.ID, g); err != nil {
			t.Fatalf("SaveGrant(%s) = %v", g.Issuer, err)
		}
	}
	if g, ok, err := db.Grant(s.ID, first.Issuer); !ok || err != nil || g != first {
		t.Errorf("Grant(%s) = %+v, %v, %v; want the first grant, not mixed with the second", first.Issuer, g, ok, err)
	}
	if g, ok, err := db.LatestGrant(s.ID); !ok || err != nil || g != second {
		t.Errorf("LatestGrant = %+v, %v, %v; want the one saved last", g, ok, err)
	}
	refreshed := first
	refreshed.AccessToken, refreshed.SavedAt = "access-token-1b", second.SavedAt.Add(time.Minute)
	if err := db.SaveGrant(s.ID, refreshed); err != nil {
		t.Fatal(err)
	}
	if g, _, _ := db.LatestGrant(s.ID); g != refreshed {
		t.Errorf("LatestGrant after a refresh = %+v; want the refreshed first grant", g)
	}

	sum, err := db.Summary(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := json.Marshal(sum); strings.Contains(string(data), "token-1") || strings.Contains(string(data), "client-secret") {
		t.Errorf("the summary holds a grant's secret: %s", data)
	}

	if err := db.DeleteGrants(s.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.LatestGrant(s.ID); ok {
		t.Error("a grant is left after DeleteGrants")
	}
	if err := db.SaveGrant(s.ID, first); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteServer(s.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Grant(s.ID, first.Issuer); ok {
		t.Error("a grant is left after its server was deleted")
	}
	for what, err := range map[string]error{"SaveGrant": db.SaveGrant("nope", first), "DeleteGrants": db.DeleteGrants("nope")} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s of an unknown server = %v; want ErrNotFound", what, err)
		}
	}
}

// The integrity check reads grants as what they are: a damaged one is
// reported, not taken for a sound file.
func TestCheckReadsGrants(t *testing.T) {
	db := mustOpen(t)
	s := mustCreate(t, db, stdioServer("srv"))
	if err := db.SaveGrant(s.ID, Grant{Issuer: "https://as.example", AccessToken: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := db.bolt.View(readAll); err != nil {
		t.Fatalf("check of a sound file with a grant = %v", err)
	}
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketGrants).Bucket([]byte(s.ID)).Put([]byte("https://as.example"), []byte(`{"issuer": 7}`))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.bolt.View(readAll); err == nil || !strings.Contains(err.Error(), "grants") {
		t.Errorf("check of a damaged grant = %v; want it named", err)
	}
}
