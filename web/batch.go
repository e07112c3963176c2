package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/r3labs/sse/v2"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// batchesKept bounds the "Verify all" batches the API can still report.
const batchesKept = 20

// batch is one "Verify all": the jobs it started (or joined), with the
// status each last had, and the servers it left out.
type batch struct {
	ID      string
	Created time.Time
	Jobs    []batchJob
	Skipped []views.Skipped
}

type batchJob struct {
	ServerID string
	JobID    string
	Status   string
}

// batches keeps the recent batches; the newest is the one pages show.
type batches struct {
	mu     sync.Mutex
	recent []*batch // oldest first
}

// add registers a batch, taking each job's status from the runner (a job
// may have moved on between Submit and now; later moves come through
// update).
func (bs *batches) add(b *batch, current func(jobID string) (discovery.Job, bool)) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for i := range b.Jobs {
		if j, ok := current(b.Jobs[i].JobID); ok {
			b.Jobs[i].Status = j.Status
		}
	}
	bs.recent = append(bs.recent, b)
	if len(bs.recent) > batchesKept {
		bs.recent = bs.recent[1:]
	}
}

// update records a job's new status; it reports whether the newest batch
// holds the job, and that batch's progress if so.
func (bs *batches) update(j discovery.Job) (views.BatchView, bool) {
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
			}
		}
	}
	return newest.view(), found
}

// latest returns the newest batch's progress, or nil if there was none.
func (bs *batches) latest() *views.BatchView {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if len(bs.recent) == 0 {
		return nil
	}
	v := bs.recent[len(bs.recent)-1].view()
	return &v
}

// get returns a copy of the batch with the given id.
func (bs *batches) get(id string) (batch, bool) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for _, b := range bs.recent {
		if b.ID == id {
			c := *b
			c.Jobs = append([]batchJob(nil), b.Jobs...)
			return c, true
		}
	}
	return batch{}, false
}

func (b *batch) view() views.BatchView {
	v := views.BatchView{Total: len(b.Jobs), Skipped: b.Skipped}
	for _, j := range b.Jobs {
		switch j.Status {
		case discovery.JobQueued:
			v.Queued++
		case discovery.JobRunning:
			v.Running++
		case discovery.JobSuccess:
			v.Succeeded++
		default:
			v.Failed++
		}
	}
	return v
}

// verifyAll starts a verification of every enabled server whose launch a
// person confirmed; the runner's concurrency limit paces them. Disabled
// and unconfirmed servers are skipped, with the reason.
func (s *Server) verifyAll(ctx context.Context) (*batch, error) {
	sums, err := s.store.Summaries(ctx)
	if err != nil {
		return nil, err
	}
	id := make([]byte, 8)
	rand.Read(id)
	b := &batch{ID: hex.EncodeToString(id), Created: time.Now()}
	for _, sum := range sums {
		srv := sum.Server
		switch {
		case !srv.Enabled:
			b.Skipped = append(b.Skipped, views.Skipped{ServerID: srv.ID, Reason: "disabled"})
			continue
		case !srv.LaunchConfirmedNow():
			b.Skipped = append(b.Skipped, views.Skipped{ServerID: srv.ID, Reason: "its command must be confirmed first: open it and press Verify…"})
			continue
		}
		j, err := s.submit(srv, store.TriggerVerifyAll)
		if err != nil {
			return nil, err
		}
		b.Jobs = append(b.Jobs, batchJob{ServerID: srv.ID, JobID: j.ID, Status: j.Status})
	}
	s.batches.add(b, s.runner.Job)
	s.publishBatch()
	return b, nil
}

// batchEvent is the newest batch's progress as an SSE event.
func (s *Server) batchEvent() *sse.Event {
	v := s.batches.latest()
	if v == nil {
		return nil
	}
	return &sse.Event{Event: []byte(views.EventVerifyAll), Data: renderString(views.VerifyAllProgress(v))}
}

func (s *Server) publishBatch() {
	if ev := s.batchEvent(); ev != nil {
		s.hub.Publish(ev)
	}
}

// handleVerifyAll serves POST /verify-all (htmx, from the servers page);
// progress arrives over SSE.
func (s *Server) handleVerifyAll(c echo.Context) error {
	ctx := c.Request().Context()
	if _, err := s.verifyAll(ctx); err != nil {
		return err
	}
	return c.NoContent(http.StatusAccepted)
}

// handleAPIVerifyAll serves POST /api/v1/verify-all: 202 with the batch.
func (s *Server) handleAPIVerifyAll(c echo.Context) error {
	ctx := c.Request().Context()
	b, err := s.verifyAll(ctx)
	if err != nil {
		return err
	}
	got, _ := s.batches.get(b.ID)
	return c.JSON(http.StatusAccepted, map[string]any{"batch": batchToJSON(got)})
}

// handleAPIBatch serves GET /api/v1/batches/:id.
func (s *Server) handleAPIBatch(c echo.Context) error {
	b, ok := s.batches.get(c.Param("id"))
	if !ok {
		return &apiError{Status: http.StatusNotFound, Message: "no batch with this id (the latest 20 are kept)"}
	}
	return c.JSON(http.StatusOK, map[string]any{"batch": batchToJSON(b)})
}

type batchJSON struct {
	ID        string         `json:"id"`
	CreatedAt time.Time      `json:"created_at"`
	Total     int            `json:"total"`
	Queued    int            `json:"queued"`
	Running   int            `json:"running"`
	Succeeded int            `json:"succeeded"`
	Failed    int            `json:"failed"`
	Done      bool           `json:"done"`
	Jobs      []batchJobJSON `json:"jobs"`
	Skipped   []skippedJSON  `json:"skipped"`
}

type batchJobJSON struct {
	ServerID string `json:"server_id"`
	JobID    string `json:"job_id"`
	Status   string `json:"status"`
}

type skippedJSON struct {
	ServerID string `json:"server_id"`
	Reason   string `json:"reason"`
}

func batchToJSON(b batch) batchJSON {
	v := b.view()
	out := batchJSON{ID: b.ID, CreatedAt: b.Created, Total: v.Total, Queued: v.Queued, Running: v.Running,
		Succeeded: v.Succeeded, Failed: v.Failed, Done: v.Finished(), Jobs: []batchJobJSON{}, Skipped: []skippedJSON{}}
	for _, j := range b.Jobs {
		out.Jobs = append(out.Jobs, batchJobJSON(j))
	}
	for _, sk := range b.Skipped {
		out.Skipped = append(out.Skipped, skippedJSON(sk))
	}
	return out
}
