package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/cluster"
)

// coordinator starts a replica's coordinator on db with a 2 s lease,
// closed when the test ends.
func coordinator(t *testing.T, db *DB) *Coordinator {
	t.Helper()
	return coordinatorTTL(t, db, 2)
}

// coordinatorTTL is coordinator with a lease of ttl seconds.
func coordinatorTTL(t *testing.T, db *DB, ttl int) *Coordinator {
	t.Helper()
	c, err := NewCoordinator(db, ttl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Of three replicas one leads; when it goes, another leads within the
// lease's TTL, and never two at once.
func TestCoordinatorElection(t *testing.T) {
	prefix := fmt.Sprintf("/coord-%d/", stores.Add(1))
	var cs []*Coordinator
	var mu sync.Mutex
	leads := map[string]bool{}
	for range 3 {
		c := coordinator(t, openAt(t, prefix))
		c.OnLeader(func(l bool) {
			mu.Lock()
			leads[c.ID()] = l
			mu.Unlock()
		})
		cs = append(cs, c)
	}
	leaders := func() (n int, who *Coordinator) {
		for _, c := range cs {
			if c.Leading() {
				n++
				who = c
			}
		}
		return n, who
	}
	waitUntil(t, 5*time.Second, "a leader", func() bool { n, _ := leaders(); return n == 1 })
	_, first := leaders()
	start := time.Now()
	first.Close() // resigns at once
	waitUntil(t, 5*time.Second, "another leader", func() bool { n, who := leaders(); return n == 1 && who != first })
	t.Logf("a new leader %s after the first closed", time.Since(start))
	mu.Lock()
	if leads[first.ID()] {
		t.Errorf("the closed replica was not told it no longer leads")
	}
	mu.Unlock()
	// A leader that dies without resigning (its connection to etcd cut)
	// leads until its lease ends: then the last replica leads.
	_, second := leaders()
	start = time.Now()
	second.cli.Close() // the election's connection, and the store's
	second.db.cli.Close()
	waitUntil(t, 10*time.Second, "the last replica leading", func() bool {
		for _, c := range cs {
			if c != first && c != second && c.Leading() {
				return true
			}
		}
		return false
	})
	took := time.Since(start)
	t.Logf("a new leader %s after the second lost etcd (lease TTL 2 s)", took)
	if took > 2*time.Duration(second.ttl)*time.Second+time.Second {
		t.Errorf("took %s; want about the lease's TTL", took)
	}
	waitUntil(t, 5*time.Second, "the cut replica knowing it no longer leads", func() bool { return !second.Leading() })
}

// A claim is one replica's until it releases it, or its session ends.
func TestCoordinatorClaims(t *testing.T) {
	prefix := fmt.Sprintf("/coord-%d/", stores.Add(1))
	a, b := coordinator(t, openAt(t, prefix)), coordinator(t, openAt(t, prefix))
	ctx := context.Background()
	var held cluster.Hold
	waitUntil(t, 5*time.Second, "a's session", func() bool {
		var err error
		held, err = a.Claim(ctx, "verify/files")
		return err == nil
	})
	waitUntil(t, 5*time.Second, "b's session", func() bool {
		_, err := b.Claim(ctx, "verify/other")
		return err == nil
	})
	if _, err := b.Claim(ctx, "verify/files"); !errors.Is(err, cluster.ErrClaimed) {
		t.Fatalf("b claims what a holds = %v; want ErrClaimed", err)
	}
	held.Release()
	rb, err := b.Claim(ctx, "verify/files")
	if err != nil {
		t.Fatalf("b claims what a released = %v", err)
	}
	rb.Release()
	// A replica that goes away loses its claims with its session.
	if _, err := a.Claim(ctx, "verify/files"); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if _, err := b.Claim(ctx, "verify/files"); err != nil {
		t.Fatalf("b claims what a closed replica held = %v", err)
	}
}

// An event reaches the other replicas' subscribers of its topic, in
// order, and not its own.
func TestCoordinatorEvents(t *testing.T) {
	prefix := fmt.Sprintf("/coord-%d/", stores.Add(1))
	a, b := coordinator(t, openAt(t, prefix)), coordinator(t, openAt(t, prefix))
	var mu sync.Mutex
	var atA, atB []string
	a.Subscribe("job", func(d []byte) { mu.Lock(); atA = append(atA, string(d)); mu.Unlock() })
	b.Subscribe("job", func(d []byte) { mu.Lock(); atB = append(atB, string(d)); mu.Unlock() })
	b.Subscribe("other", func(d []byte) { t.Errorf("topic other heard %s", d) })
	for i := range 5 {
		if err := a.Publish("job", fmt.Appendf(nil, "phase %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 5*time.Second, "b hears five", func() bool { mu.Lock(); defer mu.Unlock(); return len(atB) == 5 })
	mu.Lock()
	defer mu.Unlock()
	for i, d := range atB {
		if d != fmt.Sprintf("phase %d", i) {
			t.Errorf("b heard %q at %d", d, i)
		}
	}
	if len(atA) != 0 {
		t.Errorf("a heard its own events: %q", atA)
	}
}
