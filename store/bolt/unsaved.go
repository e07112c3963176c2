package bolt

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
)

// Pauses between tries to write failures that could not be written (see
// retryUnsaved): the first, doubled after each failed try up to the last.
const (
	unsavedRetryFirst = 100 * time.Millisecond
	unsavedRetryMax   = 10 * time.Second
)

// unsaved is a verification failure RecordFailure could not write.
type unsaved struct {
	f store.Failure
	// stored is the job of the server's record as it was stored when the
	// write failed: the record is still the one f's job left as long as
	// its job is f's (marked running) or this one (not even that).
	stored string
}

// applies reports whether the stored record d is still the one u's job
// left behind, so that u is what it should say.
func (u *unsaved) applies(d store.Discovery) bool { return d.JobID == u.f.JobID || d.JobID == u.stored }

// unsavedFailures holds the failures not written yet, by server id, and
// runs the retries. Its zero value is empty.
type unsavedFailures struct {
	n atomic.Int32 // len(byServer), so that reads skip the lock when it is 0

	mu       sync.Mutex
	byServer map[string]*unsaved
	retrying bool          // retryUnsaved is running
	kickc    chan struct{} // asks retryUnsaved to try now
	done     chan struct{} // closed by stop
	stopped  bool
	wg       sync.WaitGroup // retryUnsaved
}

// get returns the server's failure not written yet, or nil.
func (us *unsavedFailures) get(id string) *unsaved {
	if us.n.Load() == 0 {
		return nil
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	return us.byServer[id]
}

// overlay shows on sum the failure of its server not written yet, if the
// stored record is still the one it replaces.
func (us *unsavedFailures) overlay(sum *store.Summary) {
	if u := us.get(sum.Server.ID); u != nil && u.applies(sum.Discovery) {
		store.ApplyFailure(sum.Server, &sum.Discovery, u.f)
	}
}

// forget drops the server's failure if it is still u (it has been
// written, or replaced by a newer record).
func (us *unsavedFailures) forget(id string, u *unsaved) {
	us.mu.Lock()
	defer us.mu.Unlock()
	if us.byServer[id] == u {
		delete(us.byServer, id)
		us.n.Store(int32(len(us.byServer)))
	}
}

// kick asks the retries, if any are due, to try now: a change has just
// been written, so there may be room again.
func (us *unsavedFailures) kick() {
	if us.n.Load() == 0 {
		return
	}
	us.mu.Lock()
	c := us.kickc
	us.mu.Unlock()
	select {
	case c <- struct{}{}:
	default:
	}
}

// stop ends the retries and waits for them. Failures not written by then
// are lost with the process, as a crash loses them: the next Open marks
// the records left running as interrupted.
func (us *unsavedFailures) stop() {
	us.mu.Lock()
	if !us.stopped {
		us.stopped = true
		if us.done != nil {
			close(us.done)
		}
	}
	us.mu.Unlock()
	us.wg.Wait()
}

// keepUnsaved keeps u as the server's failure not written yet, replacing
// any earlier one, and makes sure the retries run.
func (db *DB) keepUnsaved(id string, u *unsaved) {
	us := &db.unsaved
	us.mu.Lock()
	defer us.mu.Unlock()
	if us.stopped {
		return
	}
	if us.byServer == nil {
		us.byServer = map[string]*unsaved{}
		us.kickc = make(chan struct{}, 1)
		us.done = make(chan struct{})
	}
	us.byServer[id] = u
	us.n.Store(int32(len(us.byServer)))
	if !us.retrying {
		us.retrying = true
		us.wg.Add(1)
		go db.retryUnsaved()
	}
}

// retryUnsaved tries to write the failures not written yet: whenever
// another change was written (there is room again), and otherwise after
// a pause that grows from unsavedRetryFirst to unsavedRetryMax while
// tries fail. It returns once none is left, or when the store closes.
func (db *DB) retryUnsaved() {
	us := &db.unsaved
	defer us.wg.Done()
	pause := unsavedRetryFirst
	timer := time.NewTimer(pause)
	defer timer.Stop()
	for {
		select {
		case <-us.done:
			return
		case <-us.kickc:
		case <-timer.C:
		}
		if err := db.writeUnsaved(); err != nil {
			pause = min(2*pause, unsavedRetryMax)
		} else {
			pause = unsavedRetryFirst
		}
		us.mu.Lock()
		if len(us.byServer) == 0 {
			us.retrying = false
			us.mu.Unlock()
			return
		}
		us.mu.Unlock()
		timer.Reset(pause)
	}
}

// writeUnsaved writes every failure not written yet whose record is
// still the one it replaces, with its history entry, in one transaction,
// and forgets them all once that committed.
func (db *DB) writeUnsaved() error {
	us := &db.unsaved
	us.mu.Lock()
	pending := make(map[string]*unsaved, len(us.byServer))
	for id, u := range us.byServer {
		pending[id] = u
	}
	us.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	ids := make([]string, 0, len(pending))
	for id := range pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	err := db.updateMany(context.Background(), func(tx *bbolt.Tx) ([]store.Change, error) {
		var changes []store.Change
		for _, id := range ids {
			// Dropped since the snapshot (its server deleted, perhaps
			// created again under the same id): not the record's to say.
			if us.get(id) != pending[id] {
				continue
			}
			wrote, err := writeUnsavedTx(tx, id, pending[id])
			if err != nil {
				return nil, err
			}
			if wrote {
				changes = append(changes, store.Change{ServerID: id, History: true})
			}
		}
		return changes, nil
	})
	if err != nil {
		return err
	}
	for id, u := range pending {
		us.forget(id, u)
	}
	return nil
}

// writeUnsavedTx writes u as the server's record, with its history entry,
// if the server still exists and its record is still the one u replaces.
// It reports whether it wrote.
func writeUnsavedTx(tx *bbolt.Tx, id string, u *unsaved) (bool, error) {
	sum, err := readSummary(tx, []byte(id))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	d := sum.Discovery
	if !u.applies(d) {
		return false, nil
	}
	if err := appendHistory(tx, id, store.ApplyFailure(sum.Server, &d, u.f)); err != nil {
		return false, err
	}
	return true, putJSON(tx.Bucket(bucketDiscovery), []byte(id), d)
}
