//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/discovery/sandbox"
)

// sandboxTarget is the most the walls may add to a stdio server's start
// (issue 33): the walled median minus the unwalled one, in ms.
const sandboxTarget = 5

// sandboxFigures times a stdio server's start in its walls — the default
// profile: Landlock, user and network namespaces, seccomp, a cgroup or
// rlimits — against the same start without them: the same fixture, the
// same Verifier (walled as the dashboard walls it: its database, its
// port), alternately, so that drift on a shared machine hits both. Both
// sides start through the launcher; only Target.Sandbox differs. A
// machine that cannot build the walls gets a skipped row, not a failed
// one.
func sandboxFigures(ctx context.Context, cfg *config) ([]figure, error) {
	// What the walls keep every server from: Switchboard's database (the
	// runs' temp dirs go beside it) and the dashboard's port. Landlock
	// only allows, so the walls grant the entries of the database's
	// directory, and of each above it, one by one: the database is not
	// in /tmp, where the scratch directory is, as a person's is not. /tmp
	// would add a rule for each of its entries, and every test run on
	// the machine makes and removes directories there while a launcher
	// lists them.
	dir, err := os.MkdirTemp("/var/tmp", "switchboard-bench-sandbox-")
	if err != nil {
		dir, err = os.MkdirTemp(cfg.dir, "sandbox-")
	}
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "switchboard.db")
	if err := createEmptyDB(db); err != nil {
		return nil, err
	}
	dashboard, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer dashboard.Close()
	v := discovery.NewVerifier(discovery.Limits{}, nil).Walled(sandbox.Config{
		Database: db, DashboardPort: dashboard.Addr().(*net.TCPAddr).Port,
	})

	sc, tools := cfg.bins.fixtureCmd("-tools", "25", "-page-size", "10"), 25
	walled, bare := &startRuns{profile: &sandbox.Profile{}}, &startRuns{}
	// Whether this machine can build the walls: what it has (Expect),
	// then one walled start, untimed.
	if _, missing := v.Machine().Expect(*walled.profile); len(missing) > 0 {
		return []figure{skippedSandboxFigure(cfg, strings.Join(missing, "; "))}, nil
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	_, _, err = walled.timed(v, sc)(cctx)
	cancel()
	if why, ok := cannotWall(err); ok {
		return []figure{skippedSandboxFigure(cfg, why)}, nil
	} else if err != nil {
		return nil, fmt.Errorf("stdio start %s, walled: %w", sc.name, err)
	}
	fmt.Fprintf(cfg.log, "bench: sandbox: walls built: %s\n", walled.isolation)
	if strings.HasPrefix(walled.isolation, "none") {
		return nil, fmt.Errorf("the walled start got no walls: %s", walled.isolation)
	}
	// Once the walls were built here, a start that fails to build them
	// is a failure, not a machine without them.
	// Three times the Verify rows' runs: the difference sought is a few
	// ms of a 40 ms start, and a median of 15 moves by as much.
	ws, bs, err := timePair(ctx, 3*cfg.VerifyRuns, toolCounts{tools, tools}, walled.timed(v, sc), bare.timed(v, sc))
	if err != nil {
		return nil, fmt.Errorf("stdio start %s: %w", sc.name, err)
	}
	// The runs' extras, without the untimed ones: the check above and
	// timePair's warm-up.
	walled.drop(2)
	bare.drop(1)

	f := figure{
		Name: sandboxFigureName, Unit: "ms", Value: ms(ws.median()),
		Baseline: "stdio start, unwalled", BaseVal: ms(bs.median()),
		Target: fmt.Sprintf("≤ +%d ms", sandboxTarget),
	}
	f.Ratio = f.Value / f.BaseVal
	diff := f.Value - f.BaseVal
	f.Pass = diff <= sandboxTarget
	f.Note = fmt.Sprintf("median of %d; %+.1f ms; p90 %.1f vs %.1f ms; spawn (phase starting) %.1f vs %.1f ms; whole Verify, stop included, %.1f vs %.1f ms (%+.1f); tier: %s",
		len(ws), diff, ms(ws.quantile(0.9)), ms(bs.quantile(0.9)),
		ms(walled.spawn.median()), ms(bare.spawn.median()),
		ms(walled.total.median()), ms(bare.total.median()), ms(walled.total.median()-bare.total.median()),
		walled.isolation)
	return []figure{f}, nil
}

// cannotWall says why, when err is a Verify's failure to build the walls
// (class sandbox).
func cannotWall(err error) (string, bool) {
	var de *discovery.Error
	if errors.As(err, &de) && de.Class == discovery.ClassSandbox {
		return de.Message, true
	}
	return "", false
}

// skippedSandboxFigure is the row of a machine that cannot build the
// walls: skipped, which passes, with why.
func skippedSandboxFigure(cfg *config, why string) figure {
	fmt.Fprintf(cfg.log, "bench: sandbox: skipped, the walls cannot be built here: %s\n", why)
	return figure{
		Name: sandboxFigureName, Unit: "ms", Target: fmt.Sprintf("≤ +%d ms", sandboxTarget),
		Pass: true, Skipped: true,
		Note: "skipped: the default profile's walls cannot be built on this machine: " + why,
	}
}

// sandboxFigureName names the row: the start is a Verify of the fixture
// (25 tools, 3 pages) until its tools are listed, before it is stopped.
const sandboxFigureName = "stdio start, walled (default profile): fixture, Verify until tools listed"

// startRuns are one side's runs: what each took beyond the figure's own
// time, and the isolation the last one got.
type startRuns struct {
	profile   *sandbox.Profile // nil: no walls
	spawn     samples          // the starting phase: walls, launcher, exec, transport
	total     samples          // the whole Verify, the stop and the walls' removal included
	isolation string
}

// timed is one Verify of sc by v under the side's profile, timed from
// the call until the tools are listed (VerifyEarly's early, before the
// server is stopped).
func (s *startRuns) timed(v *discovery.Verifier, sc serverCmd) timed {
	t := discovery.Target{Transport: discovery.TransportStdio, Command: sc.command, Args: sc.args, Sandbox: s.profile}
	return func(ctx context.Context) (int, time.Duration, error) {
		var listed time.Duration
		t0 := time.Now()
		res, err := v.VerifyEarly(ctx, t, 0, nil, func(*discovery.Result) { listed = time.Since(t0) })
		total := time.Since(t0)
		if err != nil {
			return 0, 0, err
		}
		if listed == 0 {
			return 0, 0, fmt.Errorf("the tools were listed, but not before the stop: %q", res.Warnings)
		}
		for _, tm := range res.Timings {
			if tm.Phase == discovery.PhaseStarting {
				s.spawn = append(s.spawn, tm.Duration)
			}
		}
		s.total = append(s.total, total)
		s.isolation = res.Isolation
		return len(res.Tools), listed, nil
	}
}

// drop forgets the first n runs: the untimed ones.
func (s *startRuns) drop(n int) {
	s.spawn = s.spawn[min(n, len(s.spawn)):]
	s.total = s.total[min(n, len(s.total)):]
}
