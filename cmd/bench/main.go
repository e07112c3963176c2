//go:build linux

// Command bench measures Switchboard against baselines measured in the
// same run and prints one table: each figure, its baseline, the ratio and
// the target, marked ok or MISS. Ratios, not absolute times, are what hold
// on a noisy shared machine.
//
//	go run ./cmd/bench [-quick] [-only REGEXP] [-out bench.json]
//
// `make bench` runs it. It exits 1 when a figure misses its target, 2 on
// bad usage. -quick runs every figure with tiny sizes (the tests do, so
// the benchmark code never rots); its numbers mean nothing.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

func main() {
	bolt.RunChildCheckIfAsked()    // the store checks a file in a child: this program
	discovery.RunLauncherIfAsked() // servers start through this program (discovery/launcher.go)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var code int
	switch os.Getenv(roleEnv) {
	case roleBareClient:
		code = runBareClient(ctx, os.Args[1:])
	case roleFileServer:
		code = runFileServer(ctx, os.Args[1:])
	default:
		code = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	stop()
	os.Exit(code)
}

// The bench program also plays the bare client and the plain file server,
// each as a process of its own, when started with roleEnv set to its role
// (an environment variable, so that the test binary can play them too).
const (
	roleEnv        = "SWITCHBOARD_BENCH_ROLE"
	roleBareClient = "bare-client"
	roleFileServer = "file-server"
)

// sizes are the inputs of every figure; -quick shrinks them.
type sizes struct {
	VerifyRuns     int   // timed verifications per server and side
	DashboardRuns  int   // POST verify → success event, per side
	BulkServers    int   // servers verified at once
	BulkConc       []int // concurrency levels
	CatalogServers int   // servers in the catalog figure
	ToolsPerServer int   // tools each of them has
	DetailTools    int   // tools on the detail page figure
	ReadRuns       int   // requests per read figure
	SSEClients     int   // connected SSE clients
	SSEEvents      int   // status events timed
	StartupRuns    int   // process starts timed
}

var fullSizes = sizes{
	VerifyRuns: 15, DashboardRuns: 10,
	BulkServers: 100, BulkConc: []int{2, 4, 8},
	CatalogServers: 200, ToolsPerServer: 50, DetailTools: 500, ReadRuns: 300,
	SSEClients: 1000, SSEEvents: 50,
	StartupRuns: 5,
}

var quickSizes = sizes{
	VerifyRuns: 1, DashboardRuns: 1,
	BulkServers: 4, BulkConc: []int{2},
	CatalogServers: 3, ToolsPerServer: 5, DetailTools: 12, ReadRuns: 3,
	SSEClients: 5, SSEEvents: 2,
	StartupRuns: 1,
}

// config is what every figure gets.
type config struct {
	sizes
	quick bool
	dir   string // scratch directory, removed at the end
	bins  binaries
	log   io.Writer // progress lines

	catalog *seeded // see seededCatalog
}

// figure is one row of the table.
type figure struct {
	Name     string  `json:"name"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	Baseline string  `json:"baseline,omitempty"` // what Value is compared with
	BaseVal  float64 `json:"baseline_value,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"` // Value / BaseVal
	Target   string  `json:"target"`
	Pass     bool    `json:"pass"`
	// Skipped: the figure cannot be measured on this machine (Note says
	// why); it counts as passed.
	Skipped bool   `json:"skipped,omitempty"`
	Note    string `json:"note,omitempty"`
}

// group measures related figures sharing a set-up.
type group struct {
	name string
	run  func(ctx context.Context, cfg *config) ([]figure, error)
}

// groups run in this order; a group's error becomes a failed row.
var groups = []group{
	{"verify", verifyFigures},
	{"sandbox", sandboxFigures},
	{"dashboard", dashboardFigures},
	{"bulk", bulkFigures},
	{"reads", readFigures},
	{"sse", sseFigures},
	{"process", processFigures},
	{"mcp", mcpFigures},
	{"search", searchFigures},
	{"registry", registryFigures},
	{"team", teamFigures},
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "tiny sizes: checks the code runs, measures nothing")
	only := fs.String("only", "", "run only the groups whose name matches this regexp (verify, sandbox, dashboard, bulk, reads, sse, process, mcp, search, registry, team)")
	out := fs.String("out", "", "also write the results as JSON to this file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (the dashboard's side) to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var match *regexp.Regexp
	if *only != "" {
		var err error
		if match, err = regexp.Compile(*only); err != nil {
			fmt.Fprintf(stderr, "bench: -only: %v\n", err)
			return 2
		}
	}

	dir, err := os.MkdirTemp("", "switchboard-bench-")
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	cfg := &config{sizes: fullSizes, quick: *quick, dir: dir, log: stderr}
	if *quick {
		cfg.sizes = quickSizes
	}
	fmt.Fprintln(stderr, "bench: building binaries")
	if cfg.bins, err = buildBinaries(ctx, dir); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "bench: -cpuprofile: %v\n", err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}

	start := time.Now()
	var figs []figure
	for _, g := range groups {
		if match != nil && !match.MatchString(g.name) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(stderr, "bench: %s\n", g.name)
		t0 := time.Now()
		got, err := g.run(ctx, cfg)
		figs = append(figs, got...)
		if err != nil {
			figs = append(figs, figure{Name: g.name, Target: "runs", Note: "error: " + err.Error()})
		}
		fmt.Fprintf(stderr, "bench: %s took %v\n", g.name, time.Since(t0).Round(time.Millisecond))
	}

	report := reportJSON{
		At: time.Now().UTC(), Quick: *quick, GoVersion: runtime.Version(), CPUs: runtime.NumCPU(),
		Commit: gitCommit(ctx), Seconds: time.Since(start).Seconds(), Figures: figs,
	}
	printTable(stdout, figs)
	if *out != "" {
		data, _ := json.MarshalIndent(report, "", "  ")
		if err := os.WriteFile(*out, append(data, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return 1
		}
	}
	if ctx.Err() != nil {
		return 1
	}
	for _, f := range figs {
		if !f.Pass && !*quick {
			return 1
		}
	}
	return 0
}

type reportJSON struct {
	At        time.Time `json:"at"`
	Commit    string    `json:"commit,omitempty"`
	Quick     bool      `json:"quick"`
	GoVersion string    `json:"go"`
	CPUs      int       `json:"cpus"`
	Seconds   float64   `json:"seconds"`
	Figures   []figure  `json:"figures"`
}

// printTable prints the results, one row per figure.
func printTable(w io.Writer, figs []figure) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\tbaseline\tratio\ttarget\tok\tnote")
	for _, f := range figs {
		base, ratio := "—", "—"
		if f.Baseline != "" {
			base = fmt.Sprintf("%s: %s", f.Baseline, formatValue(f.BaseVal, f.Unit))
		}
		if f.Ratio != 0 {
			ratio = fmt.Sprintf("%.2f×", f.Ratio)
		}
		value, ok := formatValue(f.Value, f.Unit), "ok"
		switch {
		case f.Skipped:
			value, base, ratio, ok = "—", "—", "—", "skipped"
		case !f.Pass:
			ok = "MISS"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Name, value, base, ratio, f.Target, ok, f.Note)
	}
	tw.Flush()
}

// formatValue prints a value in its unit: durations are kept in
// milliseconds, sizes in MiB.
func formatValue(v float64, unit string) string {
	switch unit {
	case "ms":
		if v < 1 {
			return fmt.Sprintf("%.0f µs", v*1000)
		}
		return fmt.Sprintf("%.1f ms", v)
	case "MiB":
		return fmt.Sprintf("%.1f MiB", v)
	case "bytes":
		return fmt.Sprintf("%.0f bytes", v)
	case "":
		return fmt.Sprintf("%g", v)
	}
	return strings.TrimSpace(fmt.Sprintf("%.2f %s", v, unit))
}
