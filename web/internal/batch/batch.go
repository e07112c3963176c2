// Package batch keeps the recent "Verify all" runs: the jobs each started
// or joined, with their latest statuses, and the servers each left out.
package batch

import (
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/views"
)

// Kept bounds the batches the API can still report.
const Kept = 20

// Batch is one "Verify all": the jobs it started (or joined), with the
// status each last had, and the servers it left out.
type Batch struct {
	ID      string
	Created time.Time
	Jobs    []Job
	Skipped []views.Skipped
	// Cancelled says a person cancelled the batch; Dismissed that a
	// person put its panel away (its jobs go on).
	Cancelled, Dismissed bool
	// Ended is when its last job ended (zero while one has not).
	Ended time.Time
}

// Linger is how long a batch's panel is still shown on pages loaded after
// its last job ended: pages open then keep it until dismissed, later ones
// do not show a leftover.
const Linger = 2 * time.Minute

// Job is one job of a batch, with the status it last had.
type Job struct {
	ServerID string
	JobID    string
	Status   string
}

// Recent keeps the recent batches; the newest is the one pages show. The
// zero value is ready to use.
type Recent struct {
	mu     sync.Mutex
	recent []*Batch // oldest first
	// Now is the clock (time.Now if nil).
	Now func() time.Time
}

func (bs *Recent) now() time.Time {
	if bs.Now != nil {
		return bs.Now()
	}
	return time.Now()
}

// noteEnd records when b's last job ended, if it has.
func (bs *Recent) noteEnd(b *Batch) {
	if b.Ended.IsZero() {
		if v := b.View(); v.Finished() { // a batch that skipped every server ends at once
			b.Ended = bs.now()
		}
	}
}

// Add registers a batch, taking each job's status from the runner (a job
// may have moved on between Submit and now; later moves come through
// update).
func (bs *Recent) Add(b *Batch, current func(jobID string) (discovery.Job, bool)) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for i := range b.Jobs {
		if j, ok := current(b.Jobs[i].JobID); ok {
			b.Jobs[i].Status = j.Status
		}
	}
	bs.noteEnd(b)
	bs.recent = append(bs.recent, b)
	if len(bs.recent) > Kept {
		bs.recent = bs.recent[1:]
	}
}

// Update records a job's new status; it reports whether the newest batch
// holds the job, and that batch's progress if so.
func (bs *Recent) Update(j discovery.Job) (views.BatchView, bool) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if len(bs.recent) == 0 {
		return views.BatchView{}, false
	}
	newest := bs.recent[len(bs.recent)-1]
	found := false
	for _, b := range bs.recent {
		for i := range b.Jobs {
			if b.Jobs[i].JobID == j.ID {
				b.Jobs[i].Status = j.Status
				found = found || b == newest
				bs.noteEnd(b)
			}
		}
	}
	return newest.View(), found
}

// Latest returns the newest batch's progress for a page being loaded, or
// nil if there was none, or it ended more than Linger ago (no leftover
// panel).
func (bs *Recent) Latest() *views.BatchView {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if len(bs.recent) == 0 {
		return nil
	}
	b := bs.recent[len(bs.recent)-1]
	if !b.Ended.IsZero() && bs.now().Sub(b.Ended) > Linger {
		return nil
	}
	v := b.View()
	return &v
}

// Cancel marks the batch with the given id cancelled and returns the ids
// of its jobs not finished yet, for the caller to cancel; ok is false if
// there is no such batch.
func (bs *Recent) Cancel(id string) (jobIDs []string, ok bool) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b := bs.find(id)
	if b == nil {
		return nil, false
	}
	b.Cancelled = true
	for _, j := range b.Jobs {
		if j.Status == discovery.JobQueued || j.Status == discovery.JobRunning {
			jobIDs = append(jobIDs, j.JobID)
		}
	}
	return jobIDs, true
}

// Dismiss puts the panel of the batch with the given id away; it reports
// whether there is such a batch.
func (bs *Recent) Dismiss(id string) bool {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b := bs.find(id)
	if b != nil {
		b.Dismissed = true
	}
	return b != nil
}

func (bs *Recent) find(id string) *Batch {
	for _, b := range bs.recent {
		if b.ID == id {
			return b
		}
	}
	return nil
}

// Get returns a copy of the batch with the given id.
func (bs *Recent) Get(id string) (Batch, bool) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b := bs.find(id)
	if b == nil {
		return Batch{}, false
	}
	c := *b
	c.Jobs = append([]Job(nil), b.Jobs...)
	return c, true
}

// View is the batch's progress as pages show it.
func (b *Batch) View() views.BatchView {
	v := views.BatchView{ID: b.ID, Total: len(b.Jobs), Skipped: b.Skipped, Stopped: b.Cancelled, Dismissed: b.Dismissed}
	for _, j := range b.Jobs {
		switch j.Status {
		case discovery.JobQueued:
			v.Queued++
		case discovery.JobRunning:
			v.Running++
		case discovery.JobSuccess:
			v.Succeeded++
		case discovery.JobCancelled:
			v.Cancelled++
		default:
			v.Failed++
		}
	}
	return v
}
