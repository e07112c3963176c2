package verify

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

// What a person sees when a verification's outcome could not be saved.
const (
	saveFailedDiskFull = "could not save: disk full"
	saveFailedOther    = "could not save: the database file could not be written"
	saveFailedAdvice   = "Switchboard records this as failed as soon as it can write again (the log has the cause); " +
		"then Verify again."
	diskFullAdvice        = "Free some disk space. Switchboard records this as failed as soon as it can write again; then Verify again."
	saveFailedUnreachable = "could not save: the store could not be reached"
	saveFailedFenced      = "not saved: this replica lost etcd for longer than its lease, so its claim on this verification ended " +
		"and another replica may be verifying the server now"
	fencedAdvice = "Look at the server's page on a replica that reaches etcd; Verify again if no verification shows there."
)

// saveFailed is the outcome of job j, finished at now, whose result could
// not be saved (err): a failure that says why, so that the job, the API
// and every tab show it failed rather than running or succeeded. The
// store is asked to record that failure in place of the result; while
// it cannot, the failure is written again and again (see keepWriting),
// whatever the backend, so the record left "running" is repaired
// without a restart. (The bbolt store also shows a failure it could not
// write on every read meanwhile: see store/bolt/unsaved.go.)
//
// ctx carries the fence of this replica's claim on the verification (see
// replicaJobs.fenced): every write of the failure, including those made
// once the store is back, is refused if the claim was lost meanwhile, so
// that it never overwrites the record of the replica that verifies the
// server now.
func (s *Service) saveFailed(ctx context.Context, j discovery.Job, now time.Time, err error) *discovery.Error {
	s.cfg.Logger.Error("save verification result", "server", j.ServerID, "job", j.ID, "err", err)
	verr := discovery.NewError(discovery.ClassInternal, discovery.PhaseSaving, saveFailedOther)
	verr.Suggestion = saveFailedAdvice
	switch {
	case errors.Is(err, syscall.ENOSPC):
		verr.Message, verr.Suggestion = saveFailedDiskFull, diskFullAdvice
	case errors.Is(err, store.ErrUnavailable): // etcd out of reach: no file of this replica's
		verr.Message = saveFailedUnreachable
	}
	if errors.Is(err, store.ErrFenced) {
		// Whatever this replica writes of the job is refused: the
		// record is the claim's new holder's to write.
		verr.Message, verr.Suggestion = saveFailedFenced, fencedAdvice
		return verr
	}
	ctx = context.WithoutCancel(ctx)
	f := failureOf(j, verr, now)
	ferr := s.store.RecordFailure(ctx, j.ServerID, f)
	if d := discarded(ferr); d != nil {
		return d
	}
	if errors.Is(ferr, store.ErrFenced) {
		verr.Message, verr.Suggestion = saveFailedFenced, fencedAdvice
		return verr
	}
	if ferr != nil { // the same failure to write
		s.keepWriting(ctx, j.ServerID, f)
	}
	return verr
}

// Pauses between tries to write a failure that could not be written (see
// keepWriting): the first, doubled after each failed try up to the last.
const (
	rewriteFirst = 100 * time.Millisecond
	rewriteMax   = 10 * time.Second
)

// keepWriting writes f, the failure of a job whose outcome could not be
// saved, until it is written, a newer verification, the server's
// deletion or the loss of the claim (ctx's fence) makes it moot, or the
// Service closes.
func (s *Service) keepWriting(ctx context.Context, serverID string, f store.Failure) {
	s.rewrites.Add(1)
	go func() {
		defer s.rewrites.Done()
		pause := rewriteFirst
		for {
			select {
			case <-s.closing:
				return
			case <-time.After(pause):
			}
			err := s.store.RecordFailure(ctx, serverID, f)
			if err == nil || discarded(err) != nil || errors.Is(err, store.ErrFenced) {
				return
			}
			pause = min(2*pause, rewriteMax)
		}
	}()
}
