//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery"
)

// The baseline of every Verify figure is a bare mcp-go client doing what
// any client must: spawn, initialize, walk tools/list, close (which waits
// for the server to exit). It gets the same short discover probe as
// Switchboard, so neither side pays mcp-go's 5 s legacy fallback.
func bareVerify(ctx context.Context, sc serverCmd) (tools int, err error) {
	tr := transport.NewStdio(sc.command, nil, sc.args...)
	c := client.NewClient(tr, client.WithDiscoverTimeout(500*time.Millisecond))
	if err := c.Start(ctx); err != nil {
		return 0, err
	}
	defer func() {
		if cerr := c.Close(); err == nil && cerr != nil && !strings.Contains(cerr.Error(), "signal") {
			err = cerr
		}
	}()
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "bench-bare-client", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return 0, fmt.Errorf("initialize: %w", err)
	}
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return 0, fmt.Errorf("tools/list: %w", err)
	}
	return len(res.Tools), nil
}

// switchboardVerify is what `switchboard verify` and the dashboard's jobs
// run: the sandboxed, bounded verification pipeline.
func switchboardVerify(ctx context.Context, sc serverCmd) (int, error) {
	res, err := discovery.NewVerifier(discovery.Limits{}, nil).Verify(ctx,
		discovery.Target{Transport: "stdio", Command: sc.command, Args: sc.args}, 0, nil)
	if err != nil {
		return 0, err
	}
	return len(res.Tools), nil
}

// runBareClient is `SWITCHBOARD_BENCH_ROLE=bare-client bench -- CMD ARGS`:
// the bare client as a process of its own, the baseline of the
// `switchboard verify` process. It prints the number of tools.
func runBareClient(ctx context.Context, args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "bench bare-client: missing command")
		return 2
	}
	n, err := bareVerify(ctx, serverCmd{command: args[0], args: args[1:]})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench bare-client:", err)
		return 1
	}
	fmt.Println(n)
	return 0
}

// timed runs something once and says how many tools it saw and how long
// it took.
type timed func(context.Context) (tools int, took time.Duration, err error)

// wall times f by the clock around it.
func wall(f func(context.Context) (int, error)) timed {
	return func(ctx context.Context) (int, time.Duration, error) {
		t0 := time.Now()
		n, err := f(ctx)
		return n, time.Since(t0), err
	}
}

// timePair runs a and b alternately, runs times each after one untimed
// warm-up of each, so drift on a shared machine hits both sides alike.
// Each run must see the tools of want: a's want.ours, b's want.bare.
func timePair(ctx context.Context, runs int, want toolCounts, a, b timed) (sa, sb samples, err error) {
	once := func(f timed, want int) (time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		n, d, err := f(cctx)
		if err == nil && n != want {
			err = fmt.Errorf("got %d tools, want %d", n, want)
		}
		return d, err
	}
	for i := -1; i < runs; i++ {
		first, second, w1, w2 := a, b, want.ours, want.bare
		if i%2 != 0 {
			first, second, w1, w2 = b, a, want.bare, want.ours
		}
		d1, err := once(first, w1)
		if err != nil {
			return nil, nil, err
		}
		d2, err := once(second, w2)
		if err != nil {
			return nil, nil, err
		}
		if i < 0 {
			continue // warm-up: page cache, node's module cache
		}
		if i%2 != 0 {
			d1, d2 = d2, d1
		}
		sa, sb = append(sa, d1), append(sb, d2)
	}
	return sa, sb, nil
}

// toolCounts are the tools a verification of a server finds: ours
// (Switchboard's), and bare (a client that declares nothing, which a
// server may list fewer tools: see discovery/features.go).
type toolCounts struct{ ours, bare int }

// verifyTargets are the servers of the Verify figures: the fixture with 25
// tools on 3 pages, and the real server-everything (13 tools for every
// client, and 4 only for one that answers what they ask, which
// Switchboard finds with a second listing and the bare client does not).
func verifyTargets(cfg *config) []struct {
	sc    serverCmd
	tools toolCounts
} {
	return []struct {
		sc    serverCmd
		tools toolCounts
	}{
		{cfg.bins.fixtureCmd("-tools", "25", "-page-size", "10"), toolCounts{25, 25}},
		{cfg.bins.everythingCmd(), toolCounts{17, 13}},
	}
}

// verifyFigures compares Switchboard's verification with the bare client,
// in process (the pipeline itself) and as processes (`switchboard verify
// --json` against `bench bare-client`, both fresh Go programs).
func verifyFigures(ctx context.Context, cfg *config) ([]figure, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var figs []figure
	for _, t := range verifyTargets(cfg) {
		sc := t.sc
		ours, bare, err := timePair(ctx, cfg.VerifyRuns, t.tools,
			wall(func(ctx context.Context) (int, error) { return switchboardVerify(ctx, sc) }),
			wall(func(ctx context.Context) (int, error) { return bareVerify(ctx, sc) }))
		if err != nil {
			return figs, fmt.Errorf("verify %s: %w", sc.name, err)
		}
		figs = append(figs, verifyFigure("Verify, in process: "+sc.name, sc.name, ours, bare))

		cli := append([]string{cfg.bins.switchboard, "verify", "--json", "--"}, append([]string{sc.command}, sc.args...)...)
		bareCLI := append([]string{self, "--"}, append([]string{sc.command}, sc.args...)...)
		ours, bare, err = timePair(ctx, cfg.VerifyRuns, t.tools,
			wall(func(ctx context.Context) (int, error) { return runCountingTools(ctx, cli, nil) }),
			wall(func(ctx context.Context) (int, error) {
				return runCountingTools(ctx, bareCLI, []string{roleEnv + "=" + roleBareClient})
			}))
		if err != nil {
			return figs, fmt.Errorf("switchboard verify %s: %w", sc.name, err)
		}
		figs = append(figs, verifyFigure("`switchboard verify` process: "+sc.name, sc.name, ours, bare))
	}
	return figs, nil
}

// verifyFigure applies the targets: ≤ 1.10× the bare client for
// server-everything, ≤ +3 ms over it for the fixture.
func verifyFigure(name, server string, ours, bare samples) figure {
	f := figure{
		Name: name, Unit: "ms", Value: ms(ours.median()),
		Baseline: "bare mcp-go client", BaseVal: ms(bare.median()),
	}
	f.Ratio = f.Value / f.BaseVal
	if server == "fixture" {
		f.Target = "≤ +3 ms"
		f.Pass = f.Value-f.BaseVal <= 3
	} else {
		f.Target = "≤ 1.10×"
		f.Pass = f.Ratio <= 1.10
	}
	f.Note = fmt.Sprintf("median of %d; +%.1f ms", len(ours), f.Value-f.BaseVal)
	return f
}

// runCountingTools runs a verifying program and returns how many tools
// it reported: `switchboard verify --json` prints JSON, the bare client
// (started with env) a number.
func runCountingTools(ctx context.Context, argv, env []string) (int, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	isJSON := env == nil
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("%s: %v: %s", argv[0], err, stderr.String())
	}
	if isJSON {
		return bytes.Count(out, []byte(`"inputSchema"`)), nil
	}
	return strconv.Atoi(strings.TrimSpace(string(out)))
}

// dashboardFigures times a Verify through the running dashboard — POST
// /api/v1/servers/:id/verify until an SSE client sees the success badge —
// against the bare client on the same server.
func dashboardFigures(ctx context.Context, cfg *config) ([]figure, error) {
	a, err := startFreshApp(cfg, "dashboard", 2)
	if err != nil {
		return nil, err
	}
	defer a.close()
	if err := a.login(ctx); err != nil {
		return nil, err
	}
	stream, err := a.openSSE(ctx, 1024)
	if err != nil {
		return nil, err
	}
	defer stream.close()

	var figs []figure
	for _, t := range verifyTargets(cfg) {
		sc := t.sc
		id := "dash-" + strings.ReplaceAll(sc.name, "-", "")
		if err := a.addServer(ctx, id, sc); err != nil {
			return figs, err
		}
		// The time is taken until the success event arrived, not until
		// the API confirmed it was this job's.
		viaDashboard := func(ctx context.Context) (int, time.Duration, error) {
			t0 := time.Now()
			job, err := a.verify(ctx, id)
			if err != nil {
				return 0, 0, err
			}
			at, err := stream.waitJobs(ctx, a, map[string]string{id: job})
			if err != nil {
				return 0, 0, err
			}
			sum, err := a.db.Summary(ctx, id)
			return sum.Discovery.ToolCount, at.Sub(t0), err
		}
		ours, bare, err := timePair(ctx, cfg.DashboardRuns, t.tools, viaDashboard,
			wall(func(ctx context.Context) (int, error) { return bareVerify(ctx, sc) }))
		if err != nil {
			return figs, fmt.Errorf("dashboard verify %s: %w", sc.name, err)
		}
		f := figure{
			Name: "Verify via dashboard (POST → SSE success): " + sc.name, Unit: "ms",
			Value: ms(ours.median()), Baseline: "bare mcp-go client", BaseVal: ms(bare.median()),
		}
		f.Ratio = f.Value / f.BaseVal
		if sc.name == "fixture" {
			// The issue sets no target here; ours: what a verification
			// through the dashboard adds (two committed bbolt writes,
			// rendering, SSE) stays under 10 ms.
			f.Target = "≤ +10 ms"
			f.Pass = f.Value-f.BaseVal <= 10
		} else {
			f.Target = "≤ 1.15×"
			f.Pass = f.Ratio <= 1.15
		}
		f.Note = fmt.Sprintf("median of %d; +%.1f ms", len(ours), f.Value-f.BaseVal)
		figs = append(figs, f)
	}
	return figs, nil
}

// bulkFigures verifies BulkServers fixture servers at once at each
// concurrency and compares the wall time with the ideal: one verify's
// time × servers ÷ concurrency. Afterwards no process and no goroutine of
// the run may be left.
func bulkFigures(ctx context.Context, cfg *config) ([]figure, error) {
	var figs []figure
	for _, conc := range cfg.BulkConc {
		f, err := bulkFigure(ctx, cfg, conc)
		if err != nil {
			return figs, fmt.Errorf("bulk at concurrency %d: %w", conc, err)
		}
		figs = append(figs, f)
	}
	return figs, nil
}

func bulkFigure(ctx context.Context, cfg *config, conc int) (figure, error) {
	goroutines := runtime.NumGoroutine()
	a, err := startFreshApp(cfg, "bulk", conc)
	if err != nil {
		return figure{}, err
	}
	closed := false
	defer func() {
		if !closed {
			a.close()
		}
	}()
	// Each fixture waits 100 ms before it answers, as a real server
	// spends its start-up mostly waiting (on disk, network, an
	// interpreter). A fixture that only burns CPU cannot run 8 at a time
	// on 2 cores whatever the runner does; this figure measures the runner.
	sc := cfg.bins.fixtureCmd("-tools", "25", "-page-size", "10", "-startup-delay", "100ms")
	ids := make([]string, cfg.BulkServers)
	for i := range ids {
		ids[i] = "bulk-" + strconv.Itoa(i)
		if err := a.addServer(ctx, ids[i], sc); err != nil {
			return figure{}, err
		}
	}
	// One verify at a time, through the same dashboard: the unit of the
	// ideal.
	var single samples
	for i := range min(5, len(ids)) {
		d, err := a.verifyAll(ctx, ids[i:i+1])
		if err != nil {
			return figure{}, err
		}
		single = append(single, d)
	}
	selfCPU, childCPU := cpuTime(syscall.RUSAGE_SELF), cpuTime(syscall.RUSAGE_CHILDREN)
	total, err := a.verifyAll(ctx, ids)
	if err != nil {
		return figure{}, err
	}
	selfCPU, childCPU = cpuTime(syscall.RUSAGE_SELF)-selfCPU, cpuTime(syscall.RUSAGE_CHILDREN)-childCPU
	a.close()
	closed = true

	children := childProcesses()
	leaked, err := settleGoroutines(goroutines)
	// What this machine allows: the same servers verified by bare
	// clients at the same concurrency, outside the dashboard.
	bare, berr := bareBulk(ctx, sc, len(ids), conc)
	if berr != nil {
		return figure{}, berr
	}
	// The limit is the ideal — one verification's time, conc at once —
	// or, when the run needs more CPU than the cores give in that time,
	// the CPU floor: all the CPU the run took (the dashboard's, and its
	// children's: each server and the launcher that starts it) spread
	// over every core. Neither can be beaten on this machine.
	ideal := time.Duration(int64(single.median()) * int64(len(ids)) / int64(conc))
	n := time.Duration(len(ids))
	floor := (selfCPU + childCPU) / time.Duration(runtime.NumCPU())
	limit, bound := ideal, "the ideal, servers × single ÷ concurrency"
	if floor > ideal {
		limit, bound = floor, fmt.Sprintf("the CPU floor, all the run's CPU ÷ %d cores (above the ideal %.0f ms)", runtime.NumCPU(), ms(ideal))
	}
	f := figure{
		Name: fmt.Sprintf("Bulk verify: %d fixture servers (100 ms start-up), concurrency %d", len(ids), conc), Unit: "ms",
		Value: ms(total), Baseline: "max(servers × single ÷ concurrency, CPU floor)", BaseVal: ms(limit),
		Target: "≤ 1.2×; 0 processes, 0 goroutines left",
	}
	f.Ratio = f.Value / f.BaseVal
	f.Pass = f.Ratio <= 1.2 && len(children) == 0 && err == nil
	f.Note = fmt.Sprintf("limit: %s; single %.1f ms; CPU per verify: dashboard %.1f ms, server and its launcher %.1f ms; bare clients at this concurrency %.0f ms; %d processes, %d goroutines left",
		bound, ms(single.median()), ms(selfCPU/n), ms(childCPU/n), ms(bare), len(children), leaked)
	return f, nil
}

// bareBulk verifies n copies of sc with bare clients, conc at a time, and
// returns the wall time.
func bareBulk(ctx context.Context, sc serverCmd, n, conc int) (time.Duration, error) {
	sem := make(chan struct{}, conc)
	errs := make(chan error, n)
	start := time.Now()
	for range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			_, err := bareVerify(ctx, sc)
			errs <- err
		}()
	}
	for range conc {
		sem <- struct{}{}
	}
	took := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, fmt.Errorf("bare client: %w", err)
		}
	}
	return took, nil
}

// cpuTime is the user + system CPU time of this process (RUSAGE_SELF) or
// of its reaped children (RUSAGE_CHILDREN).
func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childProcesses lists the live processes whose parent is this one.
func childProcesses() []int {
	self := os.Getpid()
	return discovery.LiveProcesses(func(ppid, _ int) bool { return ppid == self })
}

// settleGoroutines waits up to 3 s for the goroutine count to come back
// to before, and reports how many more there are.
func settleGoroutines(before int) (int, error) {
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := runtime.NumGoroutine() - before
		if n <= 0 {
			return 0, nil
		}
		if time.Now().After(deadline) {
			return n, errors.New("goroutines left")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
