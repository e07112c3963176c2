package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// Grants are kept per server and issuer, the latest is the one last
// saved, a sign-out forgets them, and so does deleting the server; none
// of their secrets is in the server's summary.
func testGrants(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := MustCreate(t, db, StdioServer("srv"))
	if _, ok, err := db.LatestGrant(ctx, s.ID); ok || err != nil {
		t.Fatalf("LatestGrant of a server never signed in to = %v, %v; want none", ok, err)
	}
	first := store.Grant{Issuer: "https://as1.example", TokenEndpoint: "https://as1.example/token", Resource: "https://mcp.example/mcp",
		ClientID: "c1", ClientSecret: "client-secret-1", AccessToken: "access-token-1", RefreshToken: "refresh-token-1",
		ExpiresAt: time.Date(2026, 11, 25, 13, 0, 0, 0, time.UTC), SavedAt: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	second := first
	second.Issuer, second.ClientID, second.AccessToken, second.SavedAt = "https://as2.example", "c2", "access-token-2", first.SavedAt.Add(time.Minute)
	for _, g := range []store.Grant{first, second} {
		if err := db.SaveGrant(ctx, s.ID, g); err != nil {
			t.Fatalf("SaveGrant(%s) = %v", g.Issuer, err)
		}
	}
	if g, ok, err := db.Grant(ctx, s.ID, first.Issuer); !ok || err != nil || g != first {
		t.Errorf("Grant(%s) = %+v, %v, %v; want the first grant, not mixed with the second", first.Issuer, g, ok, err)
	}
	if g, ok, err := db.LatestGrant(ctx, s.ID); !ok || err != nil || g != second {
		t.Errorf("LatestGrant = %+v, %v, %v; want the one saved last", g, ok, err)
	}
	refreshed := first
	refreshed.AccessToken, refreshed.SavedAt = "access-token-1b", second.SavedAt.Add(time.Minute)
	if err := db.SaveGrant(ctx, s.ID, refreshed); err != nil {
		t.Fatal(err)
	}
	if g, _, _ := db.LatestGrant(ctx, s.ID); g != refreshed {
		t.Errorf("LatestGrant after a refresh = %+v; want the refreshed first grant", g)
	}

	sum, err := db.Summary(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := json.Marshal(sum); strings.Contains(string(data), "token-1") || strings.Contains(string(data), "client-secret") {
		t.Errorf("the summary holds a grant's secret: %s", data)
	}

	if err := db.DeleteGrants(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.LatestGrant(ctx, s.ID); ok {
		t.Error("a grant is left after DeleteGrants")
	}
	if err := db.SaveGrant(ctx, s.ID, first); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteServer(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Grant(ctx, s.ID, first.Issuer); ok {
		t.Error("a grant is left after its server was deleted")
	}
	for what, err := range map[string]error{"SaveGrant": db.SaveGrant(ctx, "nope", first), "DeleteGrants": db.DeleteGrants(ctx, "nope")} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of an unknown server = %v; want ErrNotFound", what, err)
		}
	}
}

// Connected clients' tokens are kept by hash, listed oldest first, and
// revoked one by one.
func testClientTokens(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	if list, err := db.ClientTokens(ctx); err != nil || list == nil || len(list) != 0 {
		t.Fatalf("ClientTokens of a new store = %v, %v; want empty, not nil", list, err)
	}
	tokA, a := store.NewClientToken("Claude Desktop", At(1))
	_, b := store.NewClientToken("Cursor", At(2))
	for _, ct := range []store.ClientToken{b, a} {
		if err := db.AddClientToken(ctx, ct); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AddClientToken(ctx, a); err == nil {
		t.Error("AddClientToken with a taken id succeeded")
	}
	list, err := db.ClientTokens(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "Claude Desktop" || list[1].Name != "Cursor" {
		t.Fatalf("ClientTokens = %+v, %v; want Claude Desktop then Cursor", list, err)
	}
	if list[0].Hash != store.HashToken(tokA) || strings.Contains(fmt.Sprint(list), tokA) {
		t.Errorf("kept %+v; want the token's hash, never the token", list[0])
	}
	if err := db.RevokeClientToken(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.RevokeClientToken(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking twice = %v; want ErrNotFound", err)
	}
	if list, _ := db.ClientTokens(ctx); len(list) != 1 || list[0].ID != b.ID {
		t.Errorf("after revoking Claude Desktop: %+v", list)
	}

	// An update keeps the token's identity, whatever fn does, and saves
	// the rest; a failing fn saves nothing.
	ref := store.ToolRef{ServerID: "s", Tool: "write"}
	got, err := db.UpdateClientToken(ctx, b.ID, func(ct *store.ClientToken) error {
		ct.Approvals = store.ApprovalsOnDashboard
		ct.Allow(ref, "pin1", At(3))
		ct.ID, ct.Hash, ct.Name, ct.Profile = "other", "forged", "Renamed", "narrow"
		return nil
	})
	if err != nil || got.ID != b.ID || got.Hash != b.Hash || got.Name != "Cursor" || got.Profile != "" || !got.Allows(ref, "pin1") {
		t.Fatalf("UpdateClientToken = %+v, %v; want Cursor's identity kept, write allowed", got, err)
	}
	if _, err := db.UpdateClientToken(ctx, b.ID, func(ct *store.ClientToken) error {
		ct.Allowed = nil
		return errors.New("no")
	}); err == nil || err.Error() != "no" {
		t.Errorf("UpdateClientToken with a failing fn = %v; want its error", err)
	}
	list, _ = db.ClientTokens(ctx)
	if len(list) != 1 || list[0].Approvals != store.ApprovalsOnDashboard || !list[0].Allows(ref, "pin1") || list[0].Allows(ref, "pin2") {
		t.Errorf("after the updates: %+v; want dashboard approvals, write allowed at pin1 only", list)
	}
	if _, err := db.UpdateClientToken(ctx, a.ID, func(*store.ClientToken) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("updating a revoked token = %v; want ErrNotFound", err)
	}
}
