package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

// A team's people: kept oldest first, one per email, changed by a
// function that cannot change who they are, forgotten; they survive a
// reopen.
func testPeople(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	if us, err := db.Users(ctx); err != nil || len(us) != 0 {
		t.Fatalf("Users of a new store = %v, %v", us, err)
	}
	ann := store.User{ID: "u1", Email: "ann@example.com", Role: store.RoleAdmin, TokenHash: store.HashToken("sbu_ann"), CreatedAt: At(1)}
	bob := store.User{ID: "u2", Email: "bob@example.com", Role: store.RoleViewer, CreatedAt: At(2), CreatedBy: "ann@example.com"}
	for _, u := range []store.User{bob, ann} {
		if err := db.CreateUser(ctx, u); err != nil {
			t.Fatalf("CreateUser(%s) = %v", u.Email, err)
		}
	}
	if err := db.CreateUser(ctx, store.User{ID: "u3", Email: "ann@example.com", Role: store.RoleViewer, CreatedAt: At(3)}); !errors.Is(err, store.ErrUserExists) {
		t.Errorf("a second person with ann's email = %v; want ErrUserExists", err)
	}
	if err := db.CreateUser(ctx, store.User{ID: "u1", Email: "carl@example.com", Role: store.RoleViewer, CreatedAt: At(3)}); !errors.Is(err, store.ErrUserExists) {
		t.Errorf("a second person with ann's id = %v; want ErrUserExists", err)
	}
	db = be.Reopen(t, db)
	us, err := db.Users(ctx)
	if err != nil || len(us) != 2 || us[0].Email != "ann@example.com" || us[1].CreatedBy != "ann@example.com" || us[0].TokenHash != ann.TokenHash {
		t.Fatalf("Users = %+v, %v; want ann then bob", us, err)
	}
	got, err := db.UpdateUser(ctx, "u2", func(u *store.User) error {
		u.Role, u.Email, u.ID, u.CreatedAt = store.RoleApprover, "mallory@example.com", "u9", At(9)
		u.LastSignIn = At(5)
		return nil
	})
	if err != nil || got.Role != store.RoleApprover || got.Email != "bob@example.com" || got.ID != "u2" || !got.CreatedAt.Equal(At(2)) || !got.LastSignIn.Equal(At(5)) {
		t.Errorf("UpdateUser = %+v, %v; want the role and sign-in changed, who it is kept", got, err)
	}
	if _, err := db.UpdateUser(ctx, "nobody", func(*store.User) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateUser(nobody) = %v; want ErrNotFound", err)
	}
	refused := errors.New("no")
	if _, err := db.UpdateUser(ctx, "u2", func(u *store.User) error { u.Role = store.RoleAdmin; return refused }); !errors.Is(err, refused) {
		t.Errorf("UpdateUser whose fn fails = %v", err)
	}
	if err := db.DeleteUser(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteUser(ctx, "u1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteUser again = %v; want ErrNotFound", err)
	}
	us, _ = db.Users(ctx)
	if len(us) != 1 || us[0].Role != store.RoleApprover {
		t.Errorf("after: %+v", us)
	}
}

// People added at once, as on two replicas: of eight adding one email,
// one is kept; of eight signing in first on a fresh store, one is its
// first person (issue 38: two first admins).
func testPeopleAtOnce(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	race := func(add func(i int) error) (kept int, errs []error) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 8 {
			wg.Go(func() {
				<-start
				err := add(i)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					kept++
				} else {
					errs = append(errs, err)
				}
			})
		}
		close(start)
		wg.Wait()
		return kept, errs
	}
	kept, errs := race(func(i int) error {
		return db.CreateFirstUser(ctx, store.User{ID: fmt.Sprintf("first-%d", i), Email: fmt.Sprintf("p%d@example.com", i), Role: store.RoleAdmin, CreatedAt: At(i)})
	})
	if kept != 1 {
		t.Errorf("%d first people kept of eight at once; want one", kept)
	}
	for _, err := range errs {
		if !errors.Is(err, store.ErrNotFirst) {
			t.Errorf("a first person refused with %v; want ErrNotFirst", err)
		}
	}
	kept, errs = race(func(i int) error {
		return db.CreateUser(ctx, store.User{ID: fmt.Sprintf("same-%d", i), Email: "same@example.com", Role: store.RoleViewer, CreatedAt: At(10 + i)})
	})
	if kept != 1 {
		t.Errorf("%d people kept with one email, of eight at once; want one", kept)
	}
	for _, err := range errs {
		if !errors.Is(err, store.ErrUserExists) {
			t.Errorf("a second person with the email refused with %v; want ErrUserExists", err)
		}
	}
	if us, err := db.Users(ctx); err != nil || len(us) != 2 {
		t.Errorf("people after the races = %d, %v; want the first and one of the same email", len(us), err)
	}
}
