package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

// slowAppend is a store whose AppendCalls is held until released, so
// that records pile up behind it.
type slowAppend struct {
	Store
	release chan struct{}
	batches atomic.Int32
}

func (s *slowAppend) AppendCalls(ctx context.Context, calls []store.Call) error {
	<-s.release
	s.batches.Add(1)
	return s.Store.AppendCalls(ctx, calls)
}

// Every record added, from many goroutines at once and past the queue's
// bound while the store is slow, is written exactly once, each
// goroutine's in its order, in batches; one added after close is written
// at once.
func TestAuditLogWritesEveryRecordOnce(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "audit.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := &slowAppend{Store: db, release: make(chan struct{})}
	a := newAuditLog(st, func() {}, slog.New(slog.NewTextHandler(io.Discard, nil)), "", nil)
	const writers, each = 8, 300 // 2,400 records: over auditQueue, so adds wait
	var added atomic.Int32
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				a.add(store.Call{AgentName: fmt.Sprintf("w%d", w), Session: fmt.Sprintf("%04d", i), Outcome: "ok"}, map[string]any{"i": i})
				added.Add(1)
			}
		})
	}
	// The writer holds one batch in the stuck store and at most
	// auditQueue more wait: the adds must stop there.
	for prev := int32(-1); prev != added.Load(); {
		prev = added.Load()
		time.Sleep(50 * time.Millisecond)
	}
	if n := added.Load(); n == writers*each || n > 2*auditQueue {
		t.Errorf("%d of %d records added while the store held the first batch; want adds to wait after at most %d", n, writers*each, 2*auditQueue)
	}
	close(st.release)
	wg.Wait()
	a.close()
	a.add(store.Call{AgentName: "late", Outcome: "ok"}, nil)

	calls, _, err := db.Calls(t.Context(), writers*each+10)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != writers*each+1 {
		t.Fatalf("%d records written; want %d", len(calls), writers*each+1)
	}
	last := map[string]string{}
	for i := len(calls) - 1; i >= 0; i-- { // oldest first
		c := calls[i]
		if prev, ok := last[c.AgentName]; ok && c.Session <= prev {
			t.Fatalf("%s's record %s written after %s; want each writer's in order", c.AgentName, c.Session, prev)
		}
		last[c.AgentName] = c.Session
	}
	if last["late"] == "" && calls[0].AgentName != "late" {
		t.Errorf("the record added after close is not the newest: %+v", calls[0])
	}
	if b := st.batches.Load(); b < 2 || b > writers*each/10 {
		t.Errorf("%d batches for %d records; want them written in batches", b, writers*each)
	}
}
