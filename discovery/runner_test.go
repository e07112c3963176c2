package discovery

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// runLog records the Runner callbacks of a test.
type runLog struct {
	mu       sync.Mutex
	events   map[string][]Job
	started  map[string]int
	finishes map[string][]finishCall
	late     map[string][][]string
	running  map[string]bool
	maxRun   int
	changed  chan struct{}
	finishFn func(Job, *Result, *Error) error
}

type finishCall struct {
	job  Job
	res  *Result
	verr *Error
}

func newRunLog() *runLog {
	return &runLog{
		events:   map[string][]Job{},
		started:  map[string]int{},
		finishes: map[string][]finishCall{},
		late:     map[string][][]string{},
		running:  map[string]bool{},
		changed:  make(chan struct{}, 1),
	}
}

func (l *runLog) config(concurrency int) RunnerConfig {
	return RunnerConfig{
		Concurrency: concurrency,
		Started: func(j Job) {
			l.mu.Lock()
			l.started[j.ID]++
			l.mu.Unlock()
		},
		Finish: func(j Job, res *Result, verr *Error) error {
			l.mu.Lock()
			l.finishes[j.ID] = append(l.finishes[j.ID], finishCall{j, res, verr})
			fn := l.finishFn
			l.mu.Unlock()
			if fn != nil {
				return fn(j, res, verr)
			}
			return nil
		},
		Late: func(j Job, warnings []string) {
			l.mu.Lock()
			l.late[j.ID] = append(l.late[j.ID], warnings)
			l.mu.Unlock()
		},
		Event: func(j Job) {
			l.mu.Lock()
			l.events[j.ID] = append(l.events[j.ID], j)
			switch {
			case j.Done():
				delete(l.running, j.ID)
			case j.Status == JobRunning:
				l.running[j.ID] = true
				l.maxRun = max(l.maxRun, len(l.running))
			}
			l.mu.Unlock()
			select {
			case l.changed <- struct{}{}:
			default:
			}
		},
	}
}

// last returns the latest event of a job.
func (l *runLog) last(id string) (Job, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := l.events[id]
	if len(ev) == 0 {
		return Job{}, false
	}
	return ev[len(ev)-1], true
}

// waitUntil waits for cond on a job's latest event.
func (l *runLog) waitUntil(t *testing.T, id string, what string, cond func(Job) bool) Job {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		if j, ok := l.last(id); ok && cond(j) {
			return j
		}
		select {
		case <-l.changed:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			j, _ := l.last(id)
			t.Fatalf("job %s: timed out waiting until %s; last event %+v", id, what, j)
		}
	}
}

func (l *runLog) waitDone(t *testing.T, id string) Job {
	t.Helper()
	return l.waitUntil(t, id, "done", Job.Done)
}

func (l *runLog) waitPhase(t *testing.T, id, phase string) Job {
	t.Helper()
	return l.waitUntil(t, id, "phase "+phase, func(j Job) bool { return j.Phase == phase || j.Done() })
}

func newTestRunner(t *testing.T, limits Limits, concurrency int) (*Runner, *runLog) {
	t.Helper()
	l := newRunLog()
	r := NewRunner(NewVerifier(limits, nil), l.config(concurrency))
	t.Cleanup(r.Close)
	return r, l
}

func submit(t *testing.T, r *Runner, req Request) Job {
	t.Helper()
	j, joined, err := r.Submit(req)
	if err != nil {
		t.Fatal(err)
	}
	if joined {
		t.Fatalf("Submit(%s, %s) joined job %s", req.ServerID, req.ConfigHash, j.ID)
	}
	if j.ID == "" || j.Status != JobQueued || j.Phase != PhaseQueued || j.QueuedAt.IsZero() || j.ServerID != req.ServerID || j.ConfigHash != req.ConfigHash {
		t.Errorf("Submit returned %+v", j)
	}
	return j
}

// fixtureReq asks to verify the fixture with the arguments; at the end of
// the test (when every job has finished), no process of its group may be
// left (see groupGoneAtEnd).
func fixtureReq(t *testing.T, server, hash string, args ...string) Request {
	t.Helper()
	target := groupGoneAtEnd(t, Target{Transport: TransportStdio, Command: fixture, Args: args})
	return Request{ServerID: server, ConfigHash: hash, Target: target}
}

// phaseRank orders the phases a job goes through.
var phaseRank = map[string]int{
	PhaseQueued: 0, PhaseStarting: 1, PhaseInitializing: 2, PhaseListing: 3, PhaseAskTools: 4, PhaseSaving: 5,
	JobSuccess: 6, JobFailed: 6, JobTimeout: 6, JobCancelled: 6,
}

func TestRunnerEventsInOrder(t *testing.T) {
	r, l := newTestRunner(t, Limits{}, 2)
	j := submit(t, r, fixtureReq(t, "srv", "h1", "-tools", "25", "-page-size", "10"))
	final := l.waitDone(t, j.ID)
	if final.Status != JobSuccess || final.Phase != JobSuccess || final.Error != nil || final.ToolCount != 25 {
		t.Fatalf("final %+v", final)
	}
	if final.StartedAt.IsZero() || final.FinishedAt.Before(final.StartedAt) || final.StartedAt.Before(final.QueuedAt) {
		t.Errorf("times queued %v started %v finished %v", final.QueuedAt, final.StartedAt, final.FinishedAt)
	}
	if len(final.Timings) != 4 {
		t.Errorf("Timings %v", final.Timings)
	}
	if final.Elapsed(time.Now().Add(time.Hour)) != final.FinishedAt.Sub(final.QueuedAt) {
		t.Error("Elapsed of a finished job keeps growing")
	}
	l.mu.Lock()
	events := slices.Clone(l.events[j.ID])
	l.mu.Unlock()
	if events[0].Status != JobQueued {
		t.Errorf("first event %+v", events[0])
	}
	var pages []int
	for i, ev := range events {
		if i > 0 {
			prev := events[i-1]
			if phaseRank[ev.Phase] < phaseRank[prev.Phase] || (ev.Phase == prev.Phase && ev.Page < prev.Page) {
				t.Errorf("event %d (%s page %d) after %s page %d", i, ev.Phase, ev.Page, prev.Phase, prev.Page)
			}
		}
		if ev.Done() != (i == len(events)-1) {
			t.Errorf("event %d of %d: Done() = %v", i, len(events), ev.Done())
		}
		if ev.Phase == PhaseListing {
			pages = append(pages, ev.Page)
		}
	}
	if !slices.Equal(pages, []int{1, 2, 3}) {
		t.Errorf("listing pages %v, want [1 2 3]", pages)
	}
	var phases []string
	for _, ev := range events {
		if len(phases) == 0 || phases[len(phases)-1] != ev.Phase {
			phases = append(phases, ev.Phase)
		}
	}
	if want := []string{PhaseQueued, PhaseStarting, PhaseInitializing, PhaseListing, PhaseAskTools, PhaseSaving, JobSuccess}; !slices.Equal(phases, want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
	got, ok := r.Job(j.ID)
	if !ok || got.Status != JobSuccess || !got.FinishedAt.Equal(final.FinishedAt) {
		t.Errorf("Job(%s) = %+v, %v", j.ID, got, ok)
	}
	if _, ok := r.Job("job_unknown"); ok {
		t.Error("Job(unknown) found")
	}
	if _, ok := r.Active("srv"); ok {
		t.Error("Active(srv) after the job finished")
	}
}

func TestRunnerConcurrencyLimit(t *testing.T) {
	r, l := newTestRunner(t, Limits{}, 2)
	start := time.Now()
	var ids []string
	for i := range 4 {
		ids = append(ids, submit(t, r, fixtureReq(t, fmt.Sprintf("srv-%d", i), "h", "-startup-delay", "300ms", "-tools", "1")).ID)
	}
	for _, id := range ids {
		if j := l.waitDone(t, id); j.Status != JobSuccess {
			t.Errorf("job %s: %+v", id, j)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxRun != 2 {
		t.Errorf("at most %d jobs ran at once, want exactly 2", l.maxRun)
	}
	for _, id := range ids {
		if l.started[id] != 1 {
			t.Errorf("Started called %d times for %s", l.started[id], id)
		}
	}
	// Two rounds of two 300 ms start-ups.
	if d := time.Since(start); d < 600*time.Millisecond {
		t.Errorf("4 jobs of 300 ms with concurrency 2 took only %v", d)
	}
}

func TestRunnerSingleFlight(t *testing.T) {
	r, l := newTestRunner(t, Limits{Grace: 200 * time.Millisecond}, 2)
	req := fixtureReq(t, "srv", "h1", "-mode", "hang-init")
	first := submit(t, r, req)
	again, joined, err := r.Submit(req)
	if err != nil || !joined || again.ID != first.ID {
		t.Fatalf("second Submit = %s joined %v err %v, want to join %s", again.ID, joined, err, first.ID)
	}
	other := submit(t, r, fixtureReq(t, "srv", "h2", "-mode", "hang-init"))
	if other.ID == first.ID {
		t.Fatal("a different config hash joined the running job")
	}
	if a, ok := r.Active("srv"); !ok || (a.ID != first.ID && a.ID != other.ID) {
		t.Errorf("Active(srv) = %+v, %v", a, ok)
	}
	l.waitPhase(t, first.ID, PhaseInitializing)
	// Joining a running job returns its current state.
	again, joined, _ = r.Submit(req)
	if !joined || again.ID != first.ID || again.Status != JobRunning {
		t.Errorf("joined a running job: %+v joined %v", again, joined)
	}
	r.Cancel(first.ID)
	r.Cancel(other.ID)
	l.waitDone(t, first.ID)
	l.waitDone(t, other.ID)
	// Once finished, the same request starts a new job.
	next := submit(t, r, fixtureReq(t, "srv", "h1", "-tools", "1"))
	if next.ID == first.ID {
		t.Error("a finished job was joined")
	}
	l.waitDone(t, next.ID)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range []string{first.ID, other.ID, next.ID} {
		if n := len(l.finishes[id]); n != 1 {
			t.Errorf("Finish called %d times for %s", n, id)
		}
	}
}

func TestRunnerFinish(t *testing.T) {
	r, l := newTestRunner(t, Limits{Grace: 200 * time.Millisecond}, 4)
	ok := submit(t, r, fixtureReq(t, "ok", "h", "-tools", "5"))
	crash := submit(t, r, fixtureReq(t, "crash", "h", "-mode", "crash"))
	slow := fixtureReq(t, "slow", "h", "-mode", "hang-init")
	slow.InitTimeout = 300 * time.Millisecond
	timeout := submit(t, r, slow)
	missing := submit(t, r, Request{ServerID: "missing", ConfigHash: "h", Target: Target{Transport: TransportStdio, Command: "switchboard-no-such-command"}})
	want := map[string]string{ok.ID: JobSuccess, crash.ID: JobFailed, timeout.ID: JobTimeout, missing.ID: JobFailed}
	for id, status := range want {
		if j := l.waitDone(t, id); j.Status != status {
			t.Errorf("job %s: status %s, want %s (%v)", j.ServerID, j.Status, status, j.Error)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range want {
		calls := l.finishes[id]
		if len(calls) != 1 {
			t.Errorf("Finish called %d times for %s", len(calls), id)
			continue
		}
		c := calls[0]
		if c.job.ID != id || c.job.Phase != PhaseSaving || c.job.Done() {
			t.Errorf("Finish got job %+v", c.job)
		}
		if (c.res == nil) == (c.verr == nil) {
			t.Errorf("Finish for %s got res %v and verr %v: want exactly one", c.job.ServerID, c.res != nil, c.verr)
		}
	}
	if c := l.finishes[ok.ID][0]; c.res == nil || len(c.res.Tools) != 5 || c.job.ToolCount != 5 {
		t.Errorf("success Finish: %+v", c)
	}
	if c := l.finishes[crash.ID][0]; c.verr == nil || c.verr.Class != ClassExited || c.verr.ExitCode != 3 {
		t.Errorf("crash Finish: %v", c.verr)
	}
	if c := l.finishes[timeout.ID][0]; c.verr == nil || c.verr.Class != ClassTimeout {
		t.Errorf("timeout Finish: %v", c.verr)
	}
	if c := l.finishes[missing.ID][0]; c.verr == nil || c.verr.Class != ClassNotFound {
		t.Errorf("missing Finish: %v", c.verr)
	}
}

func TestRunnerFinishError(t *testing.T) {
	r, l := newTestRunner(t, Limits{}, 2)
	diskFull := NewError(ClassTooLarge, PhaseSaving, "store is full")
	l.finishFn = func(j Job, _ *Result, _ *Error) error {
		switch j.ServerID {
		case "typed":
			return fmt.Errorf("saving: %w", diskFull)
		case "plain":
			return errors.New("bolt: database not open")
		}
		return nil
	}
	typed := submit(t, r, fixtureReq(t, "typed", "h", "-tools", "1"))
	plain := submit(t, r, fixtureReq(t, "plain", "h", "-tools", "1"))
	j := l.waitDone(t, typed.ID)
	if j.Status != JobFailed || j.Error == nil || j.Error.Class != ClassTooLarge || j.Error.Message != "store is full" {
		t.Errorf("typed Finish error: %+v %v", j, j.Error)
	}
	j = l.waitDone(t, plain.ID)
	if j.Status != JobFailed || j.Error == nil || j.Error.Class != ClassInternal || j.Error.Phase != PhaseSaving || j.Error.Suggestion == "" {
		t.Errorf("plain Finish error: %+v %v", j, j.Error)
	}
	if cause := j.Error.Unwrap(); cause == nil || cause.Error() != "bolt: database not open" {
		t.Errorf("internal error does not wrap the cause: %v", cause)
	}
}

func TestRunnerRetain(t *testing.T) {
	l := newRunLog()
	cfg := l.config(1)
	cfg.Retain = 2
	r := NewRunner(NewVerifier(Limits{}, nil), cfg)
	defer r.Close()
	var ids []string
	for i := range 3 {
		j, _, err := r.Submit(Request{ServerID: fmt.Sprintf("s%d", i), ConfigHash: "h", Target: Target{Transport: TransportStdio, Command: "/nonexistent/cmd"}})
		if err != nil {
			t.Fatal(err)
		}
		l.waitDone(t, j.ID)
		ids = append(ids, j.ID)
	}
	if _, ok := r.Job(ids[0]); ok {
		t.Error("oldest finished job still retained with Retain 2")
	}
	for _, id := range ids[1:] {
		if j, ok := r.Job(id); !ok || j.Status != JobFailed || j.Error.Class != ClassNotFound {
			t.Errorf("Job(%s) = %+v, %v", id, j, ok)
		}
	}
}
