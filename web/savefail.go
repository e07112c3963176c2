package web

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/web/internal/record"
)

// What a person sees when a verification's outcome could not be saved.
const (
	saveFailedDiskFull = "could not save: disk full"
	saveFailedOther    = "could not save: the database file could not be written"
	saveFailedAdvice   = "Switchboard records this as failed as soon as it can write again (the log has the cause); " +
		"then Verify again."
	diskFullAdvice = "Free some disk space. Switchboard records this as failed as soon as it can write again; then Verify again."
)

// saveFailed is the outcome of job j, finished at now, whose result could
// not be saved (err): a failure that says why, so that the job, the API
// and every tab show it failed rather than running or succeeded. The
// store is asked to record that failure in place of the result; when the
// file cannot be written yet, the store shows it on every read and
// writes it as soon as it can (see store/bolt/unsaved.go), so the record
// left "running" is repaired without a restart.
func (s *Server) saveFailed(j discovery.Job, now time.Time, err error) *discovery.Error {
	ctx := context.Background()
	s.log.Error("save verification result", "server", j.ServerID, "job", j.ID, "err", err)
	verr := discovery.NewError(discovery.ClassInternal, discovery.PhaseSaving, saveFailedOther)
	verr.Suggestion = saveFailedAdvice
	if errors.Is(err, syscall.ENOSPC) {
		verr.Message, verr.Suggestion = saveFailedDiskFull, diskFullAdvice
	}
	ferr := s.store.RecordFailure(ctx, j.ServerID, record.Failure(j, verr, now))
	if d := record.Discarded(ferr); d != nil {
		return d
	}
	// Any other ferr is the same failure to write: the store keeps the
	// failure and writes it later.
	return verr
}
