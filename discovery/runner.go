package discovery

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-dev/switchboard/internal/tracing"
)

// Job statuses.
const (
	JobQueued    = "queued"
	JobRunning   = "running"
	JobSuccess   = "success"
	JobFailed    = "failed"
	JobTimeout   = "timeout"
	JobCancelled = "cancelled"
)

// Job is a snapshot of one verification job. Snapshots are values: a
// caller may keep and read them freely.
type Job struct {
	ID         string
	ServerID   string
	ConfigHash string
	Status     string
	Phase      string
	Page       int
	QueuedAt   time.Time
	StartedAt  time.Time // zero while queued
	FinishedAt time.Time // zero until done
	Timings    []Timing
	ToolCount  int
	Error      *Error
	// Trigger is what asked for the job (Request.Trigger); a request
	// that joins a job in flight does not change it.
	Trigger string
	// LateWarnings are warnings that came after a success was recorded:
	// what stopping the server found (processes it left behind). They
	// are not in the Result that Finish got; see RunnerConfig.Late.
	LateWarnings []string
}

// Done reports whether the job has finished.
func (j Job) Done() bool { return !j.FinishedAt.IsZero() }

// Elapsed is the time since the job was queued, up to its end.
func (j Job) Elapsed(now time.Time) time.Duration {
	if j.Done() {
		return j.FinishedAt.Sub(j.QueuedAt)
	}
	return now.Sub(j.QueuedAt)
}

// Request asks for one verification.
type Request struct {
	// Trigger says what asked for the verification ("manual", "ttl",
	// ...); the runner only passes it on.
	Trigger     string
	ServerID    string
	ConfigHash  string
	Target      Target
	InitTimeout time.Duration
}

// RunnerConfig wires a Runner to the rest of the program.
type RunnerConfig struct {
	// Concurrency is the global limit on running verifications (default 2).
	Concurrency int
	// Started is called when a job leaves the queue, before it connects.
	Started func(Job)
	// Finish records the outcome, in phase saving. Exactly one of res and
	// verr is set. An error it returns becomes the job's error; an *Error
	// keeps its class, anything else is internal.
	Finish func(j Job, res *Result, verr *Error) error
	// Late, if set, is called when stopping the server of a job whose
	// success was already recorded (through Finish, before the server was
	// stopped) found more to warn about: processes the server left behind.
	// warnings come in addition to those of the Result Finish got, and
	// are the job's LateWarnings. Late is called at most once per job,
	// after Finish, and before the job's Event that shows them.
	Late func(j Job, warnings []string)
	// Event is called after every change of any job, in order per job.
	Event func(Job)
	// Retain is how many finished jobs stay queryable (default 500).
	Retain int
}

// Runner runs verification jobs in the background with a global
// concurrency limit and single flight per (server, config hash).
type Runner struct {
	verifier *Verifier
	cfg      RunnerConfig
	sem      chan struct{}
	ctx      context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup

	mu       sync.Mutex
	jobs     map[string]*job
	inflight map[string]*job // by flightKey
	finished []string        // ids of finished jobs, oldest first
}

type job struct {
	snap   Job
	req    Request
	cancel context.CancelFunc
	ctx    context.Context
}

// NewRunner returns a Runner. Close it to cancel and wait for all jobs.
func NewRunner(v *Verifier, cfg RunnerConfig) *Runner {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 2
	}
	if cfg.Retain <= 0 {
		cfg.Retain = 500
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Runner{
		verifier: v,
		cfg:      cfg,
		sem:      make(chan struct{}, cfg.Concurrency),
		ctx:      ctx,
		stop:     stop,
		jobs:     map[string]*job{},
		inflight: map[string]*job{},
	}
}

func flightKey(r Request) string { return r.ServerID + "\x00" + r.ConfigHash }

// ErrClosed is returned by Submit after Close.
var ErrClosed = errors.New("discovery: runner is closed")

// Submit queues a verification and returns its job. If one for the same
// server and configuration is already queued or running, Submit returns
// that job and joined is true.
func (r *Runner) Submit(req Request) (j Job, joined bool, err error) {
	r.mu.Lock()
	if r.ctx.Err() != nil {
		r.mu.Unlock()
		return Job{}, false, ErrClosed
	}
	if existing, ok := r.inflight[flightKey(req)]; ok {
		snap := existing.snap
		r.mu.Unlock()
		return snap, true, nil
	}
	ctx, cancel := context.WithCancel(r.ctx)
	jb := &job{
		req:    req,
		ctx:    ctx,
		cancel: cancel,
		snap: Job{
			ID:         newJobID(),
			ServerID:   req.ServerID,
			ConfigHash: req.ConfigHash,
			Status:     JobQueued,
			Phase:      PhaseQueued,
			QueuedAt:   time.Now(),
			Trigger:    req.Trigger,
		},
	}
	r.jobs[jb.snap.ID] = jb
	r.inflight[flightKey(req)] = jb
	snap := jb.snap
	r.wg.Add(1)
	r.mu.Unlock()

	r.emit(snap)
	go r.run(jb)
	return snap, false, nil
}

// run executes one job. It returns when the job has finished, its
// process is gone and its outcome is recorded. A success is recorded
// (and the job done) as soon as the tools are listed, while the server
// is still being stopped; the job's concurrency slot, and Close, wait for
// the stop.
func (r *Runner) run(jb *job) {
	defer r.wg.Done()
	defer jb.cancel()
	select {
	case r.sem <- struct{}{}:
	case <-jb.ctx.Done():
		r.finish(jb, nil, newError(ClassCancelled, PhaseQueued, "cancelled while queued", nil))
		return
	}
	defer func() { <-r.sem }()
	if jb.ctx.Err() != nil {
		// Cancelled just as a slot freed: do not start the server.
		r.finish(jb, nil, newError(ClassCancelled, PhaseQueued, "cancelled while queued", nil))
		return
	}

	snap := r.update(jb, func(j *Job) {
		j.Status = JobRunning
		j.Phase = PhaseStarting
		j.StartedAt = time.Now()
	})
	if r.cfg.Started != nil {
		r.cfg.Started(snap)
	}
	// A success is recorded as soon as the tools are listed; the slot is
	// held until the server's process is gone. What stopping it finds
	// comes after, as late warnings.
	// The verification's span: its handshake and listing requests are
	// its children (see traceRequest).
	ctx, span := tracing.Tracer().Start(jb.ctx, "verify "+jb.req.ServerID, trace.WithAttributes(
		tracing.ServerID.String(jb.req.ServerID), tracing.JobID.String(snap.ID), tracing.Trigger.String(jb.req.Trigger)))
	defer func() {
		j, _ := r.Job(snap.ID)
		span.SetAttributes(tracing.Outcome.String(j.Status), attribute.Int("switchboard.tool_count", j.ToolCount))
		if j.Error != nil {
			tracing.Fail(span, j.Error.Class, errors.New(j.Error.Message))
		}
		span.End()
	}()
	var delivered *Result
	res, err := r.verifier.VerifyEarly(ctx, jb.req.Target, jb.req.InitTimeout, func(p Progress) {
		r.update(jb, func(j *Job) { j.Phase = p.Phase; j.Page = p.Page })
	}, func(res *Result) {
		delivered = res
		r.finish(jb, res, nil)
	})
	if delivered != nil {
		if late := res.Warnings[len(delivered.Warnings):]; len(late) > 0 {
			r.late(jb, slices.Clone(late))
		}
		return
	}
	var verr *Error
	if err != nil && !errors.As(err, &verr) {
		verr = newError(ClassInternal, "", err.Error(), err)
	}
	r.finish(jb, res, verr)
}

// finish records the outcome through cfg.Finish and publishes the final
// state.
func (r *Runner) finish(jb *job, res *Result, verr *Error) {
	snap := r.update(jb, func(j *Job) {
		j.Phase = PhaseSaving
		if res != nil {
			j.Timings = res.Timings
			j.ToolCount = len(res.Tools)
		}
	})
	if r.cfg.Finish != nil {
		if err := r.cfg.Finish(snap, res, verr); err != nil {
			if !errors.As(err, &verr) {
				verr = newError(ClassInternal, PhaseSaving, "could not save the result", err)
			}
		}
	}
	r.mu.Lock()
	j := &jb.snap
	j.FinishedAt = time.Now()
	switch {
	case verr == nil:
		j.Status = JobSuccess
	case verr.Class == ClassTimeout:
		j.Status = JobTimeout
	case verr.Class == ClassCancelled:
		j.Status = JobCancelled
	default:
		j.Status = JobFailed
	}
	j.Phase = j.Status
	j.Error = verr
	delete(r.inflight, flightKey(jb.req))
	r.finished = append(r.finished, j.ID)
	for len(r.finished) > r.cfg.Retain {
		delete(r.jobs, r.finished[0])
		r.finished = r.finished[1:]
	}
	final := *j
	r.mu.Unlock()
	r.emit(final)
}

// late records warnings that came after the job's success was recorded,
// and publishes them.
func (r *Runner) late(jb *job, warnings []string) {
	r.mu.Lock()
	jb.snap.LateWarnings = warnings
	snap := jb.snap
	r.mu.Unlock()
	if r.cfg.Late != nil {
		r.cfg.Late(snap, warnings)
	}
	r.emit(snap)
}

func (r *Runner) update(jb *job, fn func(*Job)) Job {
	r.mu.Lock()
	fn(&jb.snap)
	snap := jb.snap
	r.mu.Unlock()
	r.emit(snap)
	return snap
}

func (r *Runner) emit(j Job) {
	if r.cfg.Event != nil {
		r.cfg.Event(j)
	}
}

// Job returns the job with the given id, if it is still known.
func (r *Runner) Job(id string) (Job, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	jb, ok := r.jobs[id]
	if !ok {
		return Job{}, false
	}
	return jb.snap, true
}

// Active returns the queued or running job of a server, if any.
func (r *Runner) Active(serverID string) (Job, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, jb := range r.inflight {
		if jb.snap.ServerID == serverID {
			return jb.snap, true
		}
	}
	return Job{}, false
}

// Cancel cancels a queued or running job. It reports whether the job was
// still in flight.
func (r *Runner) Cancel(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	jb, ok := r.jobs[id]
	if !ok || jb.snap.Done() {
		return false
	}
	jb.cancel()
	return true
}

// Close cancels every job and waits until all have finished (their
// processes stopped and outcomes recorded).
func (r *Runner) Close() {
	r.mu.Lock()
	r.stop()
	r.mu.Unlock()
	r.wg.Wait()
}

func newJobID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "job_" + hex.EncodeToString(b)
}
