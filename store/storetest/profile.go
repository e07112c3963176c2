package storetest

import (
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

// Profiles: the default is built in (listed first, never changed or
// deleted); others are created, read, updated (keeping their creation
// time), listed by id, and survive a reopen; each change moves the
// revision and reaches subscribers as a profile change.
func testProfiles(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	var mu sync.Mutex
	var heard []store.Change
	cancel := db.Subscribe(func(c store.Change) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, c)
	})
	defer cancel()

	list, err := db.Profiles(ctx)
	if err != nil || len(list) != 1 || !reflect.DeepEqual(list[0], store.Default()) {
		t.Fatalf("Profiles of a new store = %+v, %v; want only the default", list, err)
	}
	if got, err := db.Profile(ctx, store.DefaultProfile); err != nil || !reflect.DeepEqual(got, store.Default()) {
		t.Errorf("Profile(default) = %+v, %v; want %+v", got, err, store.Default())
	}
	if _, err := db.Profile(ctx, "nope"); !errors.Is(err, store.ErrProfileNotFound) {
		t.Errorf("Profile(nope) = %v; want ErrProfileNotFound", err)
	}
	for name, err := range map[string]error{
		"CreateProfile(default)": db.CreateProfile(ctx, store.Profile{ID: store.DefaultProfile, Mode: store.ProfileAll}),
		"UpdateProfile(default)": db.UpdateProfile(ctx, store.Profile{ID: store.DefaultProfile, Mode: store.ProfileAll}),
		"DeleteProfile(default)": db.DeleteProfile(ctx, store.DefaultProfile),
	} {
		if !errors.Is(err, store.ErrProfileBuiltIn) {
			t.Errorf("%s = %v; want ErrProfileBuiltIn", name, err)
		}
	}

	ref := store.ToolRef{ServerID: "a", Tool: "read"}
	b := store.Profile{ID: "b-tools", Name: "Tools", Mode: store.ProfileTools, Tools: []store.ToolRef{ref},
		Overrides: map[store.ToolRef]store.Policy{ref: store.PolicyAsk}, Search: true, Pinned: []store.ToolRef{ref}, CreatedAt: At(1)}
	a := store.Profile{ID: "a-servers", Name: "Servers", Mode: store.ProfileServers, Servers: []string{"a"}, CreatedAt: At(2)}
	rev := db.Revision()
	for _, p := range []store.Profile{b, a} {
		if err := db.CreateProfile(ctx, p); err != nil {
			t.Fatalf("CreateProfile(%s) = %v", p.ID, err)
		}
	}
	if db.Revision() == rev {
		t.Error("CreateProfile did not move the revision")
	}
	if err := db.CreateProfile(ctx, a); !errors.Is(err, store.ErrProfileExists) {
		t.Errorf("CreateProfile of a taken id = %v; want ErrProfileExists", err)
	}
	a.UpdatedAt, b.UpdatedAt = a.CreatedAt, b.CreatedAt
	if got, err := db.Profile(ctx, "b-tools"); err != nil || !reflect.DeepEqual(got, b) {
		t.Errorf("Profile(b-tools) = %+v, %v; want %+v", got, err, b)
	}

	upd := a
	upd.Name, upd.Mode, upd.Servers, upd.CreatedAt, upd.UpdatedAt = "Servers 2", store.ProfileAll, nil, At(9), At(3)
	if err := db.UpdateProfile(ctx, upd); err != nil {
		t.Fatalf("UpdateProfile = %v", err)
	}
	upd.CreatedAt = a.CreatedAt
	if err := db.UpdateProfile(ctx, store.Profile{ID: "nope", Mode: store.ProfileAll}); !errors.Is(err, store.ErrProfileNotFound) {
		t.Errorf("UpdateProfile(nope) = %v; want ErrProfileNotFound", err)
	}

	db = be.Reopen(t, db)
	list, err = db.Profiles(ctx)
	want := []store.Profile{store.Default(), upd, b}
	if err != nil || !reflect.DeepEqual(list, want) {
		t.Errorf("Profiles after reopen = %+v, %v; want %+v", list, err, want)
	}

	mu.Lock()
	n := len(heard)
	for _, c := range heard {
		if c.Profile == "" || c.ServerID != "" || c.Revision == "" {
			t.Errorf("heard %+v; want a profile change with its revision", c)
		}
	}
	mu.Unlock()
	if n != 3 {
		t.Errorf("heard %d changes; want 3 (two creates, one update)", n)
	}
}

// A profile that a connected client's token belongs to is not deleted
// (ErrProfileInUse); once the token is revoked it is. A token cannot
// belong to a profile there is none of.
func testProfileInUse(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	if err := db.CreateProfile(ctx, store.Profile{ID: "p", Name: "P", Mode: store.ProfileAll, CreatedAt: At(1)}); err != nil {
		t.Fatal(err)
	}
	_, ct := store.NewClientToken("Cursor", At(2))
	ct.Profile = "nope"
	if err := db.AddClientToken(ctx, ct); !errors.Is(err, store.ErrProfileNotFound) {
		t.Errorf("AddClientToken of profile nope = %v; want ErrProfileNotFound", err)
	}
	ct.Profile = "p"
	if err := db.AddClientToken(ctx, ct); err != nil {
		t.Fatal(err)
	}
	if list, err := db.ClientTokens(ctx); err != nil || len(list) != 1 || list[0].Profile != "p" {
		t.Errorf("ClientTokens = %+v, %v; want Cursor of profile p", list, err)
	}
	rev := db.Revision()
	if err := db.DeleteProfile(ctx, "p"); !errors.Is(err, store.ErrProfileInUse) {
		t.Fatalf("DeleteProfile of a profile in use = %v; want ErrProfileInUse", err)
	}
	if db.Revision() != rev {
		t.Error("a refused DeleteProfile moved the revision")
	}
	if err := db.RevokeClientToken(ctx, ct.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteProfile(ctx, "p"); err != nil {
		t.Fatalf("DeleteProfile once unused = %v", err)
	}
	if err := db.DeleteProfile(ctx, "p"); !errors.Is(err, store.ErrProfileNotFound) {
		t.Errorf("DeleteProfile twice = %v; want ErrProfileNotFound", err)
	}
	if list, _ := db.Profiles(ctx); len(list) != 1 {
		t.Errorf("Profiles after delete = %+v; want the default only", list)
	}
}
