//go:build unix

// These follow servers by the pids sh records (whether one started, what
// is left of its group), or run one through sh.

package discovery

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestRunnerCancelRunning(t *testing.T) {
	r, l := newTestRunner(t, Limits{Grace: 200 * time.Millisecond}, 2)
	target, pidfile := pidWrapped(t, fixture, "-mode", "hang-init")
	j := submit(t, r, Request{ServerID: "srv", ConfigHash: "h", Target: target})
	l.waitPhase(t, j.ID, PhaseInitializing)
	pgid := readPid(t, pidfile)
	if len(GroupMembers(pgid)) == 0 {
		t.Fatal("the server is not running")
	}
	start := time.Now()
	if !r.Cancel(j.ID) {
		t.Fatal("Cancel of a running job returned false")
	}
	final := l.waitDone(t, j.ID)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancel took %v", d)
	}
	assertGroupGone(t, pgid)
	if final.Status != JobCancelled || final.Error == nil || final.Error.Class != ClassCancelled || final.Error.Phase != PhaseInitializing {
		t.Errorf("final %+v error %v", final, final.Error)
	}
	if r.Cancel(j.ID) {
		t.Error("Cancel of a finished job returned true")
	}
	if r.Cancel("job_unknown") {
		t.Error("Cancel of an unknown job returned true")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.finishes[j.ID]; len(f) != 1 || f[0].res != nil || f[0].verr == nil || f[0].verr.Class != ClassCancelled {
		t.Errorf("Finish calls %+v", f)
	}
}

func TestRunnerCancelQueued(t *testing.T) {
	r, l := newTestRunner(t, Limits{Grace: 200 * time.Millisecond}, 1)
	blocker := submit(t, r, fixtureReq(t, "a", "h", "-mode", "hang-init"))
	l.waitPhase(t, blocker.ID, PhaseInitializing)
	queuedTarget, pidfile := pidWrapped(t, fixture, "-tools", "1")
	queued := submit(t, r, Request{ServerID: "b", ConfigHash: "h", Target: queuedTarget})
	time.Sleep(50 * time.Millisecond)
	if j, _ := r.Job(queued.ID); j.Status != JobQueued {
		t.Fatalf("second job is %s with concurrency 1", j.Status)
	}
	if !r.Cancel(queued.ID) {
		t.Fatal("Cancel of a queued job returned false")
	}
	final := l.waitDone(t, queued.ID)
	if final.Status != JobCancelled || final.Error == nil || final.Error.Class != ClassCancelled || final.Error.Phase != PhaseQueued || !final.StartedAt.IsZero() {
		t.Errorf("final %+v error %v", final, final.Error)
	}
	// The blocker is still running, unaffected.
	if j, _ := r.Job(blocker.ID); j.Done() {
		t.Errorf("blocker finished: %+v", j)
	}
	r.Cancel(blocker.ID)
	l.waitDone(t, blocker.ID)
	if _, err := readPidNoWait(pidfile); err == nil {
		t.Error("the cancelled queued job started its server")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started[queued.ID] != 0 {
		t.Error("Started was called for a job cancelled while queued")
	}
	for _, ev := range l.events[queued.ID] {
		if ev.Status == JobRunning {
			t.Errorf("cancelled queued job had a running event: %+v", ev)
		}
	}
	if f := l.finishes[queued.ID]; len(f) != 1 || f[0].verr == nil || f[0].verr.Class != ClassCancelled {
		t.Errorf("Finish calls %+v", f)
	}
}

func TestRunnerClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := newRunLog()
	r := NewRunner(NewVerifier(Limits{Grace: 200 * time.Millisecond}, nil), l.config(2))
	var pidfiles []string
	var ids []string
	for i := range 3 {
		target, pidfile := pidWrapped(t, fixture, "-mode", "hang-init")
		pidfiles = append(pidfiles, pidfile)
		j, _, err := r.Submit(Request{ServerID: fmt.Sprintf("s%d", i), ConfigHash: "h", Target: target})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	// Two running (concurrency 2), one queued.
	deadline := time.Now().Add(10 * time.Second)
	for {
		initializing, queued := 0, 0
		for _, id := range ids {
			j, _ := l.last(id)
			switch j.Phase {
			case PhaseInitializing:
				initializing++
			case PhaseQueued:
				queued++
			}
		}
		if initializing == 2 && queued == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs initializing, %d queued", initializing, queued)
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	r.Close()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
	for _, id := range ids {
		j, ok := r.Job(id)
		if !ok || !j.Done() || j.Status != JobCancelled {
			t.Errorf("after Close, job %s: %+v", id, j)
		}
		if last, _ := l.last(id); !last.Done() {
			t.Errorf("last event of %s is not final: %+v", id, last)
		}
	}
	started := 0
	for _, f := range pidfiles {
		if pid, err := readPidNoWait(f); err == nil {
			started++
			assertGroupGone(t, pid)
		}
	}
	if started != 2 {
		t.Errorf("%d servers were started before Close, want 2", started)
	}
	if _, _, err := r.Submit(fixtureReq(t, "late", "h")); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Close: %v, want ErrClosed", err)
	}
	r.Close() // idempotent
}

// TestRunnerReportsBeforeStop: a success is recorded once the tools are
// listed, without waiting for the server to exit (here a wrapper lingers
// for a second after its server ends); the runner still holds the job
// until the process group is gone.
func TestRunnerReportsBeforeStop(t *testing.T) {
	l := newRunLog()
	r := NewRunner(NewVerifier(Limits{Grace: 5 * time.Second}, nil), l.config(1))
	const linger = time.Second
	target := Target{Transport: TransportStdio, Command: "sh",
		Args: []string{"-c", `"$@"; sleep 1`, "sh", fixture, "-tools", "3"}}
	j := submit(t, r, Request{ServerID: "slow-exit", ConfigHash: "h", Target: target})
	done := l.waitDone(t, j.ID)
	finished := time.Now()
	if done.Status != JobSuccess || done.ToolCount != 3 {
		t.Fatalf("job %+v", done)
	}
	if took := done.FinishedAt.Sub(done.QueuedAt); took >= linger {
		t.Errorf("the success was recorded %v after the job was queued: it waited for the server to exit", took)
	}
	r.Close() // waits for the job's process to be gone
	if waited := time.Since(finished); waited < linger/2 {
		t.Errorf("Close returned %v after the success: the server cannot have exited yet", waited)
	}
}
