package verify

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/cluster"
	"github.com/switchboard-dev/switchboard/discovery"
)

// A Verify asked the moment the last one ended — the runner has it out of
// flight, the person saw it end, but its end is not yet told (the claim
// still held) — starts a new job here: it is not answered with a job
// "running on another replica" that no replica runs, and that has no id.
func TestVerifyAgainAsTheLastEnds(t *testing.T) {
	var jobs *replicaJobs
	held := make(chan struct{}) // closed to let the first end be told
	var holding atomic.Bool
	runner := discovery.NewRunner(discovery.NewVerifier(discovery.Limits{}, nil), discovery.RunnerConfig{
		Event: func(job discovery.Job) {
			if job.Done() && holding.CompareAndSwap(false, true) {
				<-held
			}
			jobs.Event(job)
		},
	})
	defer runner.Close()
	defer func() { // a failed test ends with the runner's job let go
		if holding.Load() {
			select {
			case <-held:
			default:
				close(held)
			}
		}
	}()
	jobs = newReplicaJobs(runner, &cluster.Local{}, slog.New(slog.DiscardHandler), func(discovery.Job) {}, nil)
	defer jobs.Close()
	// A server that refuses the connection: each job ends at once, failed.
	req := discovery.Request{Trigger: "manual", ServerID: "s", ConfigHash: "h", InitTimeout: time.Second,
		Target: discovery.Target{Transport: discovery.TransportHTTP, URL: "http://127.0.0.1:1/mcp"}}

	first, elsewhere, err := jobs.Submit(t.Context(), req)
	if err != nil || elsewhere || first.ID == "" {
		t.Fatalf("first Submit = %+v, elsewhere %v, %v; want a job here", first, elsewhere, err)
	}
	waitUntil(t, "the first job ended in the runner", func() bool {
		j, ok := runner.Job(first.ID)
		_, active := runner.Active("s")
		return ok && j.Done() && !active
	})

	type submitted struct {
		job       discovery.Job
		elsewhere bool
		err       error
	}
	second := make(chan submitted, 1)
	go func() {
		j, elsewhere, err := jobs.Submit(t.Context(), req)
		second <- submitted{j, elsewhere, err}
	}()
	// The second Submit is under way (it holds the submit lock), or has
	// answered, while the first job's end is still untold: whatever it
	// has reached, it met the claim held.
	var got submitted
	answered := false
	waitUntil(t, "the second Submit started", func() bool {
		select {
		case got = <-second:
			answered = true
			return true
		default:
		}
		if jobs.submitMu.TryLock() {
			jobs.submitMu.Unlock()
			return false
		}
		return true
	})
	close(held)
	if !answered {
		got = <-second
	}
	if got.err != nil || got.elsewhere || got.job.ID == "" || got.job.ID == first.ID {
		t.Fatalf("Submit as the last job ends = %+v, elsewhere %v, %v; want a new job here", got.job, got.elsewhere, got.err)
	}
	waitUntil(t, "the second job ended", func() bool {
		j, ok := runner.Job(got.job.ID)
		return ok && j.Done()
	})
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
	}
}

// A claim ended twice (Close, then a failing submit of the same claim)
// is released once, without a panic.
func TestClaimEndsOnce(t *testing.T) {
	released := 0
	c := newClaim(cluster.NewHold(func() { released++ }, nil, nil))
	c.end()
	c.end()
	select {
	case <-c.released:
	default:
		t.Error("the claim's released channel is open after end")
	}
	if released != 1 {
		t.Errorf("released %d times; want once", released)
	}
}
