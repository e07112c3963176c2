package etcd

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/etcd/etcdtest"
)

// A member that silently stops answering (its bytes held, no reset) is
// left for another within the keepalive's time and timeout (gRPC's floor
// of 10 s, and 2 s): then every read answers, instead of one in two
// timing out on the held connection for as long as it is not reset
// (issue 38: 30 of 51 reads; a watch stream on the connection kept it
// from being found dead).
func TestASilentMemberIsLeftWithinTheKeepalive(t *testing.T) {
	srv, err := etcdtest.StartKeepAlive(100 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// Two paths to the member: one goes silent.
	silent, err := srv.NewProxy()
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Cut()
	other, err := srv.NewProxy()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Cut()
	db, err := Open(context.Background(), Options{Endpoints: []string{silent.Endpoint, other.Endpoint}, Prefix: "/silent/",
		RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.CreateUser(ctx, store.User{ID: "u1", Email: "ann@example.com", Role: store.RoleViewer, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	silent.Hold()
	// Within the keepalive (and a margin for a busy machine), 20 reads
	// in a row answer.
	held := time.Now()
	deadline := held.Add(25 * time.Second)
	inRow, failed := 0, 0
	for inRow < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("no 20 reads in a row within 25 s of a member going silent (%d failed)", failed)
		}
		if users, err := db.Users(ctx); err == nil && len(users) == 1 {
			inRow++
		} else {
			inRow, failed = 0, failed+1
		}
	}
	t.Logf("%d reads failed; the silent member was left %s after it went silent", failed, time.Since(held).Round(100*time.Millisecond))
}
