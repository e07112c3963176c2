// The claims: a verification of a server runs on one replica at a time
// (see the package comment); replicaJobs holds this replica's claims and
// knows the other replicas' jobs from their cluster events.

package verify

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/cluster"
	"github.com/switchboard-dev/switchboard/discovery"
)

// Topics of the jobs' cluster events: a job's change, and a request to
// cancel a job, which the replica running it carries out.
const (
	jobTopic    = "job"
	cancelTopic = "cancel-job"
)

// keepDone is how long a finished job of another replica stays known
// (its API answer), as the runner keeps its own.
const keepDone = 10 * time.Minute

// replicaJobs is the verifications of every replica.
type replicaJobs struct {
	runner  *discovery.Runner
	cluster cluster.Cluster
	log     *slog.Logger
	// OnRemote is called with each change of another replica's job
	// (set before the first change can arrive).
	onRemote func(discovery.Job)

	submitMu sync.Mutex // one submit at a time: a check, then a claim
	mu       sync.Mutex
	claims   map[string]*claim // by server id

	remote map[string]discovery.Job // other replicas' jobs, by id
	cancel func()
}

// New returns the jobs of runner (whose Event must call Event) on c;
// onRemote is told of other replicas' job changes.
func newReplicaJobs(runner *discovery.Runner, c cluster.Cluster, log *slog.Logger, onRemote func(discovery.Job)) *replicaJobs {
	j := &replicaJobs{runner: runner, cluster: c, log: log, onRemote: onRemote, claims: map[string]*claim{}, remote: map[string]discovery.Job{}}
	stopJobs, stopCancels := c.Subscribe(jobTopic, j.heard), c.Subscribe(cancelTopic, func(id []byte) { runner.Cancel(string(id)) })
	j.cancel = func() { stopJobs(); stopCancels() }
	return j
}

// Cancel cancels a job queued or running on any replica: here at once,
// elsewhere by asking its replica. It reports whether such a job is
// known.
func (j *replicaJobs) Cancel(id string) bool {
	if j.runner.Cancel(id) {
		return true
	}
	j.mu.Lock()
	job, ok := j.remote[id]
	j.mu.Unlock()
	if !ok || job.Done() {
		return false
	}
	if err := j.cluster.Publish(cancelTopic, []byte(id)); err != nil {
		j.log.Warn("ask another replica to cancel a verification", "job", id, "err", err)
		return false
	}
	return true
}

// Close stops hearing other replicas and releases the claims held.
func (j *replicaJobs) Close() {
	j.cancel()
	j.mu.Lock()
	defer j.mu.Unlock()
	for id, c := range j.claims {
		c.end()
		delete(j.claims, id)
	}
}

// claim is a server's claim held by this replica, while its jobs are
// under way.
type claim struct {
	release func()
	jobs    map[string]bool
	// ended are jobs that ended before Submit recorded them (the runner
	// tells of a job from the moment it is queued).
	ended map[string]bool
	// released is closed when the claim is released (see end).
	released chan struct{}
}

func newClaim(release func()) *claim {
	return &claim{release: release, jobs: map[string]bool{}, ended: map[string]bool{}, released: make(chan struct{})}
}

// end releases the claim (j.mu held); again is nothing (Close may end
// a claim a failing submit ends too).
func (c *claim) end() {
	select {
	case <-c.released:
		return
	default:
	}
	c.release()
	close(c.released)
}

// endingWait bounds how long a Submit waits for this replica's claim of
// a job that just ended to be released (see submit).
const endingWait = 2 * time.Second

// claimName is the claim of a server's verification.
func claimName(serverID string) string { return "verify/" + serverID }

// Submit queues a verification unless one of the server is under way: on
// this replica (the runner joins it), or on another (its job is
// returned, elsewhere true). A replica that cannot reach the cluster
// verifies nothing: the error says why.
func (j *replicaJobs) Submit(ctx context.Context, req discovery.Request) (job discovery.Job, elsewhere bool, err error) {
	job, elsewhere, err = j.submit(ctx, req)
	// The replica that holds the claim tells of its job at once; wait a
	// moment for it, so that the answer names it.
	for deadline := time.Now().Add(2 * time.Second); elsewhere && job.ID == "" && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if active, ok := j.activeRemote(req.ServerID); ok {
			job = active
		}
	}
	return job, elsewhere, err
}

func (j *replicaJobs) submit(ctx context.Context, req discovery.Request) (job discovery.Job, elsewhere bool, err error) {
	j.submitMu.Lock()
	defer j.submitMu.Unlock()
	if _, ok := j.runner.Active(req.ServerID); ok {
		// Joins it, or queues the new configuration's job under the
		// claim held.
		job, _, err = j.runner.Submit(req)
		j.mu.Lock()
		if c, ok := j.claims[req.ServerID]; ok && err == nil && !job.Done() {
			c.jobs[job.ID] = true
		}
		j.mu.Unlock()
		return job, false, err
	}
	release, err := j.cluster.Claim(ctx, claimName(req.ServerID))
	if errors.Is(err, cluster.ErrClaimed) && j.waitOwnClaim(req.ServerID) {
		release, err = j.cluster.Claim(ctx, claimName(req.ServerID))
	}
	if errors.Is(err, cluster.ErrClaimed) {
		if active, ok := j.activeRemote(req.ServerID); ok {
			return active, true, nil
		}
		// Its replica's events have not come yet: say what is known.
		return discovery.Job{ServerID: req.ServerID, Status: discovery.JobRunning, Phase: discovery.PhaseQueued, QueuedAt: time.Now()}, true, nil
	}
	if err != nil {
		return discovery.Job{}, false, err
	}
	c := newClaim(release)
	j.mu.Lock()
	j.claims[req.ServerID] = c
	j.mu.Unlock()
	job, joined, err := j.runner.Submit(req)
	j.mu.Lock()
	defer j.mu.Unlock()
	if err == nil && !joined && !c.ended[job.ID] && !job.Done() {
		c.jobs[job.ID] = true
		return job, false, nil
	}
	delete(j.claims, req.ServerID)
	c.end()
	return job, false, err
}

// waitOwnClaim waits, if the server's claim is this replica's, for its
// release, and reports whether it came. The runner has no job of the
// server in flight (submit asked it first), so the claim is held by a
// job that just ended here: the runner takes it out of flight before it
// tells of its end (see Event), and the person who saw it end may
// already be asking for the next one. Not waiting would answer them
// with a job "running on another replica" that no replica runs.
func (j *replicaJobs) waitOwnClaim(serverID string) bool {
	j.mu.Lock()
	c, ok := j.claims[serverID]
	j.mu.Unlock()
	if !ok {
		return false
	}
	t := time.NewTimer(endingWait)
	defer t.Stop()
	select {
	case <-c.released:
		return true
	case <-t.C:
		return false
	}
}

// Event is the runner's Event: a change of a job of this replica. The
// other replicas hear of it, and its claim ends with it.
func (j *replicaJobs) Event(job discovery.Job) {
	if b, err := json.Marshal(job); err == nil {
		if err := j.cluster.Publish(jobTopic, b); err != nil {
			j.log.Warn("tell the other replicas of a verification's progress", "server", job.ServerID, "err", err)
		}
	}
	if !job.Done() {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	c, ok := j.claims[job.ServerID]
	switch {
	case !ok:
	case !c.jobs[job.ID]:
		c.ended[job.ID] = true // Submit has yet to record it
	default:
		delete(c.jobs, job.ID)
		if len(c.jobs) == 0 { // no other job of the server holds it
			delete(j.claims, job.ServerID)
			c.end()
		}
	}
}

// heard records another replica's job change.
func (j *replicaJobs) heard(data []byte) {
	var job discovery.Job
	if err := json.Unmarshal(data, &job); err != nil || job.ID == "" {
		j.log.Warn("an undecodable job event from another replica", "err", err)
		return
	}
	j.mu.Lock()
	j.remote[job.ID] = job
	for id, r := range j.remote {
		if r.Done() && time.Since(r.FinishedAt) > keepDone {
			delete(j.remote, id)
		}
	}
	j.mu.Unlock()
	j.onRemote(job)
}

// Active is the server's verification under way on any replica.
func (j *replicaJobs) Active(serverID string) (discovery.Job, bool) {
	if job, ok := j.runner.Active(serverID); ok {
		return job, true
	}
	return j.activeRemote(serverID)
}

func (j *replicaJobs) activeRemote(serverID string) (discovery.Job, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var found discovery.Job
	ok := false
	for _, r := range j.remote {
		if r.ServerID == serverID && !r.Done() && (!ok || r.QueuedAt.After(found.QueuedAt)) {
			found, ok = r, true
		}
	}
	return found, ok
}

// Job is the job with the id, of any replica.
func (j *replicaJobs) Job(id string) (discovery.Job, bool) {
	if job, ok := j.runner.Job(id); ok {
		return job, true
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	job, ok := j.remote[id]
	return job, ok
}
