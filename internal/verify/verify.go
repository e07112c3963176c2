// Package verify owns Verify, from the moment someone asks for one to the
// record it leaves: the runner that starts the servers (discovery's), the
// cluster claims that make a team's replicas verify a server on one
// replica at a time, the refresher and watches that verify without a
// person asking, and the mapping of every outcome to the store, where the
// Service writes it itself. Whoever shows verifications (the web face)
// asks the Service for them and follows them with Subscribe.
//
// A verification of a server runs on one replica at a time, whichever
// replica it was asked of (a cluster claim, held while the job is queued
// or running), and every replica knows the jobs of the others (their
// changes come as cluster events), so that a job's phases show on every
// replica's tabs and its API answers on any replica. A Switchboard on its
// own is a cluster of one, where this is the runner's own single-flight.
package verify

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/cluster"
	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/discovery/sandbox"
	"github.com/switchboard-dev/switchboard/internal/registry"
	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/store"
)

// DefaultTTL is the default of Config.DefaultTTL.
const DefaultTTL = 5 * time.Minute

// ErrClosed is returned by Submit once the Service is closing.
var ErrClosed = discovery.ErrClosed

// Config configures a Service.
type Config struct {
	// Concurrency is the limit on verifications running at once (the
	// runner's default if zero).
	Concurrency int
	// DefaultTTL is how long a successful verification counts as fresh
	// for servers that set no TTL of their own (DefaultTTL if zero).
	DefaultTTL time.Duration
	// NoVerifyOnStart turns off the start-up verifications of servers
	// left interrupted, or enabled and never verified.
	NoVerifyOnStart bool
	// WatchPingInterval is how often a held session to an auto-refreshed
	// server is pinged (the discovery default if zero).
	WatchPingInterval time.Duration
	// Cluster is how this replica coordinates with the others (a
	// Switchboard on its own if nil).
	Cluster cluster.Cluster
	Logger  *slog.Logger
	// Now dates the records (time.Now if nil).
	Now func() time.Time
}

// Tokens hands out the access tokens of remote servers' sign-ins (see
// internal/grants).
type Tokens interface {
	Source(serverID string) discovery.TokenSource
}

// Event is a change of what a server shows about its verifications: one
// of its jobs (on this replica or another) changed, or, with Job nil, its
// freshness or watch did.
type Event struct {
	ServerID string
	Job      *discovery.Job
}

// Service runs and records verifications (see the package comment).
type Service struct {
	cfg      Config
	store    store.Store
	verifier *discovery.Verifier
	tokens   Tokens
	runner   *discovery.Runner
	jobs     *replicaJobs
	refresh  *refresher
	watches  *watches
	unsub    []func()
	// closing is closed by Close; rewrites are the failures being
	// written again (see keepWriting).
	closing   chan struct{}
	rewrites  sync.WaitGroup
	closeOnce sync.Once

	subMu sync.RWMutex
	subs  map[int]func(Event)
	next  int
}

// New returns a Service verifying with v and recording in st; tokens
// sign remote servers' requests. Start it, and Close it to stop.
func New(cfg Config, st store.Store, v *discovery.Verifier, tokens Tokens) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DefaultTTL <= 0 {
		cfg.DefaultTTL = DefaultTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Cluster == nil {
		cfg.Cluster = &cluster.Local{}
	}
	s := &Service{cfg: cfg, store: st, verifier: v, tokens: tokens, subs: map[int]func(Event){}, closing: make(chan struct{})}
	s.runner = discovery.NewRunner(v, discovery.RunnerConfig{
		Concurrency: cfg.Concurrency,
		Started:     s.started,
		Finish:      s.finished,
		Event:       s.changed,
		Late:        s.lateWarnings,
	})
	s.jobs = newReplicaJobs(s.runner, cfg.Cluster, cfg.Logger, func(j discovery.Job) { s.tell(Event{ServerID: j.ServerID, Job: &j}) }, s.takeOver)
	s.watches = newWatches(watchDeps{
		Watch: func(ctx context.Context, srv store.Server, onEvent func(discovery.WatchEvent)) error {
			return v.Watch(ctx, s.Target(srv), time.Duration(srv.TimeoutMS)*time.Millisecond, cfg.WatchPingInterval, onEvent)
		},
		Summary: st.Summary,
		Verify:  func(srv store.Server, trigger string) { s.refresh.Submit(srv, trigger) },
		Publish: s.tellServer,
	})
	s.refresh = newRefresher(refreshDeps{
		Summaries: st.Summaries,
		TTL:       cfg.DefaultTTL,
		Running:   func(id string) bool { _, ok := s.jobs.Active(id); return ok },
		Submit: func(srv store.Server, trigger string) error {
			_, err := s.Submit(srv, trigger)
			return err
		},
		Publish: s.tellServer,
		Watch:   s.watches.Reconcile,
		Log:     cfg.Logger,
	})
	return s
}

// Start follows the store's changes and this replica's leadership, and
// starts the refresher (with the start-up verifications unless the
// Config turned them off).
func (s *Service) Start() {
	s.unsub = append(s.unsub,
		s.store.Subscribe(func(store.Change) { s.refresh.Poke() }),
		s.cfg.Cluster.OnLeader(s.refresh.SetLeading))
	go s.refresh.Run(!s.cfg.NoVerifyOnStart)
}

// Close cancels running verifications and waits for them (and their
// processes) to end; Subscribe's functions are called no more. Closing
// again does nothing.
func (s *Service) Close() { s.closeOnce.Do(s.close) }

func (s *Service) close() {
	for _, stop := range s.unsub {
		stop()
	}
	if len(s.unsub) > 0 { // started
		s.refresh.Close()
	}
	s.watches.Close()
	s.runner.Close()
	s.jobs.Close()
	close(s.closing)
	s.rewrites.Wait()
	s.subMu.Lock()
	clear(s.subs)
	s.subMu.Unlock()
}

// Leading reports whether this replica leads the team's (see
// cluster.Cluster): the one that verifies without a person asking.
func (s *Service) Leading() bool { return s.refresh.leading.Load() }

// Subscribe calls fn with every Event until the returned function is
// called. fn must not block.
func (s *Service) Subscribe(fn func(Event)) (unsubscribe func()) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	id := s.next
	s.next++
	s.subs[id] = fn
	return func() {
		s.subMu.Lock()
		defer s.subMu.Unlock()
		delete(s.subs, id)
	}
}

func (s *Service) tell(e Event) {
	s.subMu.RLock()
	defer s.subMu.RUnlock()
	for _, fn := range s.subs {
		fn(e)
	}
}

func (s *Service) tellServer(id string) { s.tell(Event{ServerID: id}) }

// Submit queues a verification of srv as it is now (whose launch must be
// confirmed), or joins the one in flight here or on another replica.
func (s *Service) Submit(srv store.Server, trigger string) (discovery.Job, error) {
	j, _, err := s.jobs.Submit(context.Background(), discovery.Request{
		Trigger:     trigger,
		ServerID:    srv.ID,
		ConfigHash:  srv.ConfigHash(),
		Target:      s.Target(srv),
		InitTimeout: time.Duration(srv.TimeoutMS) * time.Millisecond,
	})
	return j, err
}

// takeOver verifies again a server whose verification's replica stopped
// before it finished (see replicaJobs.claimEnded), if its record is
// still left running: a job a person was answered for (202) ends with a
// record, whichever replica ran it. Every replica that hears of it asks;
// the claim lets one of them verify.
func (s *Service) takeOver(serverID string) {
	sum, err := s.store.Summary(context.Background(), serverID)
	if err != nil || sum.Discovery.Status != store.StatusRunning || !Verifiable(sum.Server) {
		return
	}
	if _, ok := s.jobs.Active(serverID); ok {
		return
	}
	s.cfg.Logger.Warn("verifying again a server whose verification's replica stopped", "server", serverID, "job", sum.Discovery.JobID)
	s.refresh.Submit(sum.Server, store.TriggerTakeover)
}

// Requeue queues a verification of srv if Switchboard may verify it by
// itself (see Verifiable), logging why it could not; an edit's.
func (s *Service) Requeue(srv store.Server, trigger string) {
	if Verifiable(srv) {
		s.refresh.Submit(srv, trigger)
	}
}

// Cancel cancels a job queued or running on any replica, and reports
// whether such a job is known.
func (s *Service) Cancel(jobID string) bool { return s.jobs.Cancel(jobID) }

// Job is the job with the id, of any replica (finished jobs are kept for
// a while).
func (s *Service) Job(id string) (discovery.Job, bool) { return s.jobs.Job(id) }

// Active is the server's verification under way on any replica.
func (s *Service) Active(serverID string) (discovery.Job, bool) { return s.jobs.Active(serverID) }

// Watch is the server's held session (nil if it is not watched).
func (s *Service) Watch(serverID string) *WatchState { return s.watches.State(serverID) }

// DefaultTTL is how long a successful verification counts as fresh for
// servers that set no TTL of their own.
func (s *Service) DefaultTTL() time.Duration { return s.cfg.DefaultTTL }

// Machine is what the servers' walls can be on this machine.
func (s *Service) Machine() sandbox.Machine { return s.verifier.Machine() }

// Target is how discovery reaches srv: its launch or URL, its walls and,
// for a remote server, the tokens of its sign-in.
func (s *Service) Target(srv store.Server) discovery.Target {
	t := discovery.Target{
		Transport:   srv.Transport,
		Command:     srv.Command,
		Args:        srv.Args,
		Env:         srv.Env,
		Cwd:         srv.Cwd,
		URL:         srv.URL,
		Headers:     srv.Headers,
		MemoryBytes: int64(srv.MemoryMB) << 20,
		Sandbox:     serverconfig.Profile(srv),
	}
	if srv.Transport != store.TransportStdio {
		t.Token = s.tokens.Source(srv.ID)
		t.OAuthScopes = srv.OAuthSettings().Scopes
	}
	return t
}

// changed is the runner's Event: a change of a job of this replica.
func (s *Service) changed(j discovery.Job) {
	s.jobs.Event(j)
	logJob(s.cfg.Logger, j)
	s.tell(Event{ServerID: j.ServerID, Job: &j})
}

// started records that a job left the queue.
func (s *Service) started(j discovery.Job) {
	err := s.store.MarkRunning(s.jobs.fenced(context.Background(), j.ServerID), j.ServerID, j.ID, j.StartedAt)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.cfg.Logger.Error("mark verification running", "server", j.ServerID, "err", err)
	}
}

// finished records a job's outcome in the store. An outcome that cannot
// be saved makes the job fail (see saveFailed).
func (s *Service) finished(j discovery.Job, res *discovery.Result, verr *discovery.Error) error {
	ctx := s.jobs.fenced(context.Background(), j.ServerID)
	var err error
	now := s.cfg.Now()
	if verr != nil {
		err = s.store.RecordFailure(ctx, j.ServerID, failureOf(j, verr, now))
	} else {
		err = s.store.RecordSuccess(ctx, j.ServerID, successOf(j, res, now))
	}
	if verr := discarded(err); verr != nil {
		return verr
	}
	if err != nil {
		return s.saveFailed(ctx, j, now, err)
	}
	if verr == nil {
		s.recordArtifact(ctx, j.ServerID)
	}
	return nil
}

// recordArtifact records what a verification of a server added from a
// registry really ran (see registry.Artifact): another artifact than the
// one recorded under the same launch holds the server until a person
// confirms its launch again (store.ErrArtifactHeld).
func (s *Service) recordArtifact(ctx context.Context, serverID string) {
	srv, err := s.store.Server(ctx, serverID)
	if err != nil || srv.From == nil {
		return
	}
	home, _ := os.UserHomeDir()
	art, err := registry.Artifact(srv, home)
	if err != nil {
		s.cfg.Logger.Warn("what the verification ran could not be recorded", "server", serverID, "err", err)
		return
	}
	if art == "" {
		return
	}
	switch err := s.store.RecordArtifact(ctx, serverID, art); {
	case errors.Is(err, store.ErrArtifactHeld):
		s.cfg.Logger.Warn("another artifact ran under the server's launch than the one recorded: its tools are held until a person confirms the launch again",
			"server", serverID, "recorded", srv.From.Artifact, "ran", art)
	case err != nil:
		s.cfg.Logger.Error("record what the verification ran", "server", serverID, "err", err)
	}
}

// lateWarnings records warnings found after a job's success was recorded
// (a process left behind when its server stopped), unless a newer
// verification owns the record by now.
func (s *Service) lateWarnings(j discovery.Job, warnings []string) {
	err := s.store.AddLateWarnings(s.jobs.fenced(context.Background(), j.ServerID), j.ServerID, j.ID, warnings)
	if err != nil && !errors.Is(err, store.ErrOtherJob) && !errors.Is(err, store.ErrNotFound) {
		s.cfg.Logger.Error("record late warnings", "server", j.ServerID, "err", err)
	}
}
