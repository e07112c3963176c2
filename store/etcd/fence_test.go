package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchboard-dev/switchboard/cluster"
	"github.com/switchboard-dev/switchboard/store"
)

// A leader cut off from etcd (its bytes held, as when its network drops
// packets) stops leading, and gives up its claims, before another replica
// can lead or claim: never two leaders, never two holders of one claim
// (issue 38: two leaders for 0.3 s). Its answers from etcd come 0.8 s
// late (a slow network): without keepValid the cut replica counts its
// lease's TTL from the last answer it had, 0.8 s after etcd renewed the
// lease, so it still leads when etcd lets the lease go and the other
// takes over.
func TestACutOffReplicaStepsDownBeforeAnotherTakesOver(t *testing.T) {
	prefix := fmt.Sprintf("/fence-%d/", stores.Add(1))
	proxy, err := server.NewProxy()
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Cut()
	proxy.Delay(800 * time.Millisecond)
	dbA, err := Open(context.Background(), Options{Endpoints: []string{proxy.Endpoint}, Prefix: prefix, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer dbA.Close()
	const ttl = 3
	a := coordinatorTTL(t, dbA, ttl)
	var mu sync.Mutex
	var heldAt, aStopped, bLeads, aLost, bClaimed time.Time
	a.OnLeader(func(l bool) {
		mu.Lock()
		defer mu.Unlock()
		if !l && aStopped.IsZero() && !heldAt.IsZero() {
			aStopped = time.Now()
		}
	})
	waitUntil(t, 10*time.Second, "a leading", a.Leading)
	ctx := context.Background()
	held, err := a.Claim(ctx, "verify/files")
	if err != nil {
		t.Fatal(err)
	}
	b := coordinatorTTL(t, openAt(t, prefix), ttl)
	b.OnLeader(func(l bool) {
		mu.Lock()
		defer mu.Unlock()
		if l && bLeads.IsZero() {
			bLeads = time.Now()
		}
	})
	waitUntil(t, 10*time.Second, "b's session", func() bool {
		_, err := b.Claim(ctx, "verify/other")
		return err == nil
	})

	mu.Lock()
	heldAt = time.Now()
	mu.Unlock()
	proxy.Hold()
	go func() {
		<-held.Lost
		mu.Lock()
		aLost = time.Now()
		mu.Unlock()
	}()
	waitUntil(t, 20*time.Second, "b claiming what a held", func() bool {
		_, err := b.Claim(ctx, "verify/files")
		if err == nil {
			mu.Lock()
			bClaimed = time.Now()
			mu.Unlock()
		}
		return err == nil
	})
	waitUntil(t, 20*time.Second, "b leading", b.Leading)
	mu.Lock()
	defer mu.Unlock()
	if aStopped.IsZero() || aLost.IsZero() {
		t.Fatalf("the cut-off replica still leads (%v) or holds its claim (%v) after the other took over", aStopped.IsZero(), aLost.IsZero())
	}
	held0 := heldAt
	t.Logf("after the hold: a stopped leading at %s, b led at %s; a's claim lost at %s, b claimed it at %s",
		aStopped.Sub(held0).Round(time.Millisecond), bLeads.Sub(held0).Round(time.Millisecond),
		aLost.Sub(held0).Round(time.Millisecond), bClaimed.Sub(held0).Round(time.Millisecond))
	if !aStopped.Before(bLeads) {
		t.Errorf("two leaders for %s: the cut-off replica stopped leading after the other led", aStopped.Sub(bLeads))
	}
	if !aLost.Before(bClaimed) {
		t.Errorf("two holders of one claim for %s", aLost.Sub(bClaimed))
	}
	if n := testutil.ToFloat64(a.lapses); n < 1 {
		t.Errorf("switchboard_etcd_session_lapses_total = %v on the cut replica; want it counted", n)
	}
}

// A write under a claim the replica no longer holds is refused by etcd,
// whatever the replica believes: its claim's key went with its lease
// (here the lease is revoked under it, as etcd expires the lease of a
// replica cut off for TTL seconds), and another replica's claim of the
// same name is a key of its own. Unfenced, the write would overwrite
// the new holder's record.
func TestAWriteUnderALostClaimIsRefused(t *testing.T) {
	prefix := fmt.Sprintf("/fence-%d/", stores.Add(1))
	dbA, dbB := openAt(t, prefix), openAt(t, prefix)
	a, b := coordinator(t, dbA), coordinator(t, dbB)
	ctx := context.Background()
	if err := dbA.CreateServer(ctx, store.Server{ID: "files", Name: "files", Transport: store.TransportStdio, Command: "/bin/true", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	var held cluster.Hold
	waitUntil(t, 10*time.Second, "a's claim", func() bool {
		var err error
		held, err = a.Claim(ctx, "verify/files")
		return err == nil
	})
	fenced := cluster.WithFence(ctx, held)
	if err := dbA.MarkRunning(fenced, "files", "job_a1", time.Now()); err != nil {
		t.Fatalf("a write under a claim held = %v", err)
	}

	// a's lease ends in etcd (as when it expires) without a noticing.
	a.mu.Lock()
	lease := a.session.Lease()
	a.mu.Unlock()
	if _, err := dbB.cli.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	var heldB cluster.Hold
	waitUntil(t, 10*time.Second, "b's claim", func() bool {
		var err error
		heldB, err = b.Claim(ctx, "verify/files")
		return err == nil
	})
	if err := dbB.MarkRunning(cluster.WithFence(ctx, heldB), "files", "job_b1", time.Now()); err != nil {
		t.Fatalf("the new holder's write = %v", err)
	}
	if err := dbA.MarkRunning(fenced, "files", "job_a2", time.Now()); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a write under the lost claim = %v; want ErrFenced", err)
	}
	sum, err := dbB.Summary(ctx, "files")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Discovery.JobID != "job_b1" {
		t.Errorf("the record is of %s; want the new holder's job_b1", sum.Discovery.JobID)
	}
	// The lost claim is lost for a too, at once or within its renewals.
	select {
	case <-held.Lost:
	case <-time.After(10 * time.Second):
		t.Error("a never learnt its claim was lost")
	}
}

// A replica whose watch of the store stopped delivering is not ready:
// the catalog it would serve is no longer the store's (issue 38:
// readiness that tells the truth, "watches current").
func TestAReplicaWithAWatchBehindIsNotReady(t *testing.T) {
	prefix := fmt.Sprintf("/fence-%d/", stores.Add(1))
	dbA, dbB := openAt(t, prefix), openAt(t, prefix)
	a := coordinator(t, dbA)
	ctx := context.Background()
	add := func(id string) {
		t.Helper()
		if err := dbB.CreateServer(ctx, store.Server{ID: id, Name: id, Transport: store.TransportStdio, Command: "/bin/true"}); err != nil {
			t.Fatal(err)
		}
	}
	add("one")
	waitUntil(t, 10*time.Second, "a ready", func() bool { return a.Ready(ctx) == nil })
	// a's watch stops (as on a stream no member feeds any more); its
	// reads still answer.
	dbA.stop()
	<-dbA.stopped
	add("two")
	if _, err := dbA.Server(ctx, "two"); err != nil {
		t.Fatalf("a read on a = %v", err)
	}
	err := a.Ready(ctx)
	if err == nil || !strings.Contains(err.Error(), "watch of the store is behind") {
		t.Fatalf("Ready with the watch behind = %v; want it behind", err)
	}
}
