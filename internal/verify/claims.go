// The claims: a verification of a server runs on one replica at a time
// (see the package comment); replicaJobs holds this replica's claims and
// knows the other replicas' jobs from their cluster events.

package verify

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
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

	// onOrphan is told of a server whose claim ended while no replica
	// had told of its job's end (see claimEnded).
	onOrphan func(serverID string)
	closed   chan struct{} // closed by Close
	sweeps   sync.WaitGroup
}

// New returns the jobs of runner (whose Event must call Event) on c;
// onRemote is told of other replicas' job changes, onOrphan (if not nil)
// of servers whose replica stopped verifying them (see claimEnded).
func newReplicaJobs(runner *discovery.Runner, c cluster.Cluster, log *slog.Logger, onRemote func(discovery.Job), onOrphan func(serverID string)) *replicaJobs {
	if onOrphan == nil {
		onOrphan = func(string) {}
	}
	j := &replicaJobs{runner: runner, cluster: c, log: log, onRemote: onRemote, claims: map[string]*claim{}, remote: map[string]discovery.Job{},
		onOrphan: onOrphan, closed: make(chan struct{})}
	stopJobs, stopCancels := c.Subscribe(jobTopic, j.heard), c.Subscribe(cancelTopic, func(id []byte) { runner.Cancel(string(id)) })
	stopEnded := c.OnClaimEnded(j.claimEnded)
	j.cancel = func() { stopJobs(); stopCancels(); stopEnded() }
	return j
}

// orphanGrace is how long after a claim ended its job's end may still be
// on its way from the replica that held it (it tells of the end, then
// releases the claim; the two come by different watches).
const orphanGrace = time.Second

// claimEnded is told of each claim that ended. A server's verification
// claim that ended while another replica's job of the server is not
// known to have ended means that replica stopped (died, or lost etcd
// for its lease) before the job finished: after orphanGrace, if no
// replica holds the claim again, the job is known to have failed here
// (issue 38: others answered with the dead job, "running", for 20 s),
// and onOrphan is told, so that the server is verified again (see
// Service.takeOver) rather than left "running" for good.
func (j *replicaJobs) claimEnded(name string) {
	serverID, ok := strings.CutPrefix(name, "verify/")
	if !ok {
		return
	}
	if _, here := j.runner.Active(serverID); here {
		return
	}
	j.mu.Lock()
	select {
	case <-j.closed: // Close waits for the sweeps: none starts after it
		j.mu.Unlock()
		return
	default:
	}
	j.sweeps.Add(1)
	j.mu.Unlock()
	go func() {
		defer j.sweeps.Done()
		select {
		case <-j.closed:
			return
		case <-time.After(orphanGrace):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		held, err := j.cluster.Held(ctx, name)
		cancel()
		if err != nil || held {
			return // verifying again somewhere, or nothing can be known now
		}
		now := time.Now()
		var dead []discovery.Job
		j.mu.Lock()
		for id, r := range j.remote {
			if r.ServerID == serverID && !r.Done() {
				r.Status, r.FinishedAt = discovery.JobFailed, now
				r.Error = discovery.NewError(discovery.ClassInternal, r.Phase, replicaStopped)
				r.Error.Suggestion = replicaStoppedAdvice
				j.remote[id] = r
				dead = append(dead, r)
			}
		}
		j.mu.Unlock()
		for _, r := range dead {
			j.log.Warn("a verification's replica stopped before it finished", "server", serverID, "job", r.ID)
			j.onRemote(r)
		}
		j.onOrphan(serverID)
	}()
}

// What a job whose replica stopped before it finished says.
const (
	replicaStopped       = "the replica running this verification stopped (or lost etcd) before it finished"
	replicaStoppedAdvice = "The leading replica verifies the server again; its new verification shows here."
)

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
	close(j.closed)
	j.mu.Unlock()
	j.sweeps.Wait()
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
	hold    cluster.Hold
	release func()
	jobs    map[string]bool
	// ended are jobs that ended before Submit recorded them (the runner
	// tells of a job from the moment it is queued).
	ended map[string]bool
	// released is closed when the claim is released (see end).
	released chan struct{}
}

func newClaim(hold cluster.Hold) *claim {
	return &claim{hold: hold, release: hold.Release, jobs: map[string]bool{}, ended: map[string]bool{}, released: make(chan struct{})}
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
			select {
			case <-c.hold.Lost: // joined to a claim lost meanwhile: stopped too
				j.runner.Cancel(job.ID)
			default:
			}
		}
		j.mu.Unlock()
		return job, false, err
	}
	hold, err := j.cluster.Claim(ctx, claimName(req.ServerID))
	if errors.Is(err, cluster.ErrClaimed) && j.waitOwnClaim(req.ServerID) {
		hold, err = j.cluster.Claim(ctx, claimName(req.ServerID))
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
	c := newClaim(hold)
	j.mu.Lock()
	j.claims[req.ServerID] = c
	j.mu.Unlock()
	job, joined, err := j.runner.Submit(req)
	j.mu.Lock()
	defer j.mu.Unlock()
	if err == nil && !joined && !c.ended[job.ID] && !job.Done() {
		c.jobs[job.ID] = true
		if hold.Lost != nil {
			go j.stopWhenLost(req.ServerID, c)
		}
		return job, false, nil
	}
	delete(j.claims, req.ServerID)
	c.end()
	return job, false, err
}

// stopWhenLost cancels the jobs held by claim c of the server if the
// claim is lost before it is released: this replica lost the store for
// long enough that the claim may be another replica's, which may be
// verifying the server now. Whatever such a job still writes is refused
// by the store (the claim's fence), so it ends failed, saying why (see
// saveFailed).
func (j *replicaJobs) stopWhenLost(serverID string, c *claim) {
	select {
	case <-c.released:
		return
	case <-c.hold.Lost:
	}
	// The claim stays recorded until its jobs end (see Event), so that
	// their last writes still carry its fence.
	j.mu.Lock()
	ids := make([]string, 0, len(c.jobs))
	for id := range c.jobs {
		ids = append(ids, id)
	}
	j.mu.Unlock()
	j.log.Warn("this replica lost its claim on a server's verification: its jobs are stopped", "server", serverID, "jobs", ids)
	for _, id := range ids {
		j.runner.Cancel(id)
	}
}

// fenced is ctx for a write of the server's verification under this
// replica's claim of it (cluster.WithFence): the store refuses it once
// the claim is lost. Without a claim held here, ctx as it is.
func (j *replicaJobs) fenced(ctx context.Context, serverID string) context.Context {
	j.mu.Lock()
	c, ok := j.claims[serverID]
	j.mu.Unlock()
	if !ok {
		return ctx
	}
	return cluster.WithFence(ctx, c.hold)
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
