//go:build linux

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/store/bolt"
)

// checkShareTarget is the most of the start-up the integrity check may
// take.
const checkShareTarget = 0.5

// checkFigure times the integrity check that every start runs on an
// existing database before using it (bolt.CheckInChild: a child process
// reads every page, key and value), on the seeded catalog, against the
// whole start-up to serving on it (startup, which includes the check).
// The check of the empty database, the cost of starting the child, is in
// the note; the runs alternate so that drift hits both alike.
func checkFigure(ctx context.Context, cfg *config, cat *seeded, empty string, startup figure) (figure, error) {
	var full, bare samples
	for range cfg.StartupRuns {
		for _, side := range []struct {
			path string
			into *samples
		}{{cat.path, &full}, {empty, &bare}} {
			t0 := time.Now()
			if err := bolt.CheckInChild(ctx, side.path); err != nil {
				return figure{}, err
			}
			*side.into = append(*side.into, time.Since(t0))
		}
	}
	f := figure{
		Name: fmt.Sprintf("Integrity check at start-up (a child reads every page, key and value), %d tools stored", cat.tools),
		Unit: "ms", Value: ms(full.median()),
		Baseline: "start-up to serving, same database", BaseVal: startup.Value,
		Target: fmt.Sprintf("≤ %.0f%% of start-up", 100*checkShareTarget),
	}
	f.Ratio = f.Value / f.BaseVal
	f.Pass = f.Ratio <= checkShareTarget
	f.Note = fmt.Sprintf("median of %d; empty database %.1f ms (starting the child)", len(full), ms(bare.median()))
	return f, nil
}
