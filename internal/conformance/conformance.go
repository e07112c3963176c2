// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in e2e/package.json) from Go
// tests, in either direction, and judges its results against an
// expected-failures file.
//
// In Server mode the suite is a client of a server that is already
// running at Options.URL. In Client mode the suite starts a test server of
// its own per scenario (several at once) and runs Options.Command once for
// each, with that server's URL appended as the last argument, and in its
// environment MCP_CONFORMANCE_SCENARIO (the scenario's name),
// MCP_CONFORMANCE_PROTOCOL_VERSION (the revision to speak: stateful up to
// 2025-11-25, stateless from 2026-07-28) and, for scenarios that need it
// (credentials), MCP_CONFORMANCE_CONTEXT (JSON). The suite splits Command
// at spaces and hands the pieces and the URL to a shell (sh -c), so no
// argument can hold a space, and shell syntax in Command is the shell's.
// A client harness is typically the test binary itself, told by a
// variable in Options.Env to act as the client of the scenario it is
// given (see TestMain in run_test.go).
//
// A run is bounded by Options.Timeout. The suite runs in its own process
// group, which is killed when the run ends, so nothing it started (the
// clients of Client mode included) outlives it.
//
// A typical test:
//
//	rep, err := conformance.Run(ctx, conformance.Options{
//		Mode: conformance.Server, URL: url, Requirements: "2026-07-28",
//		ExpectedFailures: "testdata/conformance-2026-07-28.txt",
//		Required: []string{"server-stateless", "tools-list"},
//	})
//	if err != nil {
//		t.Fatal(err)
//	}
//	t.Log(rep.Summary())
//	for _, p := range rep.Problems() {
//		t.Error(p)
//	}
package conformance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Mode is the side of MCP the suite tests.
type Mode string

const (
	// Server tests a running MCP server: the suite is its client.
	Server Mode = "server"
	// Client tests an MCP client: the suite is the server it talks to.
	Client Mode = "client"
)

// DefaultTimeout bounds a run when Options.Timeout is zero.
const DefaultTimeout = 5 * time.Minute

// Options says what to run and how to judge it.
type Options struct {
	Mode Mode
	// URL is the MCP endpoint under test (Server mode).
	URL string
	// Command runs the client under test (Client mode), as described in
	// the package documentation.
	Command string
	// Requirements is the specification revision whose requirement set
	// runs (e.g. "2026-07-28"): the scenarios the revision requires and
	// those it runs without scoring, each at that revision's wire
	// version. Empty runs every scenario of the mode (--suite all).
	Requirements string
	// ExpectedFailures is the path of the expected-failures file (see
	// ReadExpected); empty means every scenario must pass.
	ExpectedFailures string
	// Required are scenarios that must pass: the expected-failures file
	// may not list them as a whole (a single check of one, with its
	// reason, it may).
	Required []string
	// Timeout bounds the whole run (DefaultTimeout if zero).
	Timeout time.Duration
	// Env is added to the suite's environment, which Client mode passes
	// on to Command.
	Env []string
	// Root is the repository root, which holds e2e/node_modules; if
	// empty, the nearest directory above the working directory that holds
	// go.mod.
	Root string
}

// Check is one check of a scenario, as the suite writes it to the
// scenario's checks.json.
type Check struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO or SKIPPED
	ErrorMessage string `json:"errorMessage"`
}

// failing reports whether the check counts against its scenario: the
// suite's own baseline check treats a warning as a failure too.
func (c Check) failing() bool { return c.Status == "FAILURE" || c.Status == "WARNING" }

// Scenario is one scenario of a run and what the suite found.
type Scenario struct {
	Name string
	// Scored is false for a scenario the requirement set runs without
	// counting it (NotScored says why: extension, added-after-release,
	// pending); true when no requirement set was given.
	Scored    bool
	NotScored string
	// Ran is whether the suite wrote the scenario's results.
	Ran    bool
	Checks []Check
}

// Passed reports whether the scenario ran, no check failed or warned,
// and one succeeded at least (a client that never connects gets a
// scenario without checks).
func (s Scenario) Passed() bool {
	return s.Ran && len(s.failingChecks()) == 0 && slices.ContainsFunc(s.Checks, func(c Check) bool { return c.Status == "SUCCESS" })
}

// failingChecks are the failing checks, one per check id (its worst
// occurrence: an id may be reported more than once), in report order.
func (s Scenario) failingChecks() []Check {
	var out []Check
	for _, c := range worstByID(s.Checks) {
		if c.failing() {
			out = append(out, c)
		}
	}
	return out
}

// worstByID collapses the checks to one per id, keeping the most severe
// status of each (FAILURE, then WARNING, then the rest), in the order the
// ids first appear.
func worstByID(checks []Check) []Check {
	severity := func(status string) int {
		switch status {
		case "FAILURE":
			return 3
		case "WARNING":
			return 2
		case "SUCCESS":
			return 1
		}
		return 0
	}
	var out []Check
	at := map[string]int{}
	for _, c := range checks {
		i, seen := at[c.ID]
		switch {
		case !seen:
			at[c.ID] = len(out)
			out = append(out, c)
		case severity(c.Status) > severity(out[i].Status):
			out[i] = c
		}
	}
	return out
}

// Report is the outcome of a run.
type Report struct {
	Mode         Mode
	Requirements string
	// Scenarios are those the run was to cover, in the suite's order.
	Scenarios []Scenario
	// Expected is the expected-failures file's content.
	Expected []Expectation
	// ExitCode is the suite's own exit status.
	ExitCode int
	// Output is what the suite printed (stdout and stderr).
	Output   string
	Duration time.Duration

	expectedFile string
}

// Problems compares the run with the expected failures and returns what
// is wrong, one sentence each; none means the run is as expected:
//
//   - a scenario that failed (or wrote no results) and is not listed;
//   - a failing check of a scenario listed check by check that is not
//     one of them;
//   - a listed scenario that passed, or a listed check that passed or was
//     not reported: the entry must go;
//   - with a requirement set, the suite's exit status disagreeing with the
//     checks read (it exits non-zero exactly when a scored scenario has a
//     failed check).
func (r *Report) Problems() []string {
	var problems []string
	for _, s := range r.Scenarios {
		problems = append(problems, r.judge(s)...)
	}
	if r.Requirements != "" {
		scoredFailed := slices.ContainsFunc(r.Scenarios, func(s Scenario) bool {
			return s.Scored && (!s.Ran || slices.ContainsFunc(s.Checks, func(c Check) bool { return c.Status == "FAILURE" }))
		})
		if scoredFailed != (r.ExitCode != 0) {
			problems = append(problems, fmt.Sprintf("the suite exited with status %d, but the results read say that a scored scenario failed is %v", r.ExitCode, scoredFailed))
		}
	}
	return problems
}

// judge returns what is wrong with one scenario's outcome.
func (r *Report) judge(s Scenario) []string {
	file := cmp.Or(r.expectedFile, "the expected failures")
	whole, checks := expectationsOf(r.Expected, s.Name)
	switch {
	case whole != nil && s.Passed():
		return []string{fmt.Sprintf("scenario %s passes but %s:%d lists it: remove it", s.Name, file, whole.Line)}
	case whole != nil:
		return nil // expected to fail, and it did
	case !s.Ran:
		return []string{fmt.Sprintf("scenario %s: the suite wrote no results for it (see its output)", s.Name)}
	}
	var problems, unexpected []string
	failing := s.failingChecks()
	for _, c := range failing {
		if !slices.ContainsFunc(checks, func(e Expectation) bool { return e.Check == c.ID }) {
			unexpected = append(unexpected, describe(c))
		}
	}
	if len(failing) == 0 && !s.Passed() {
		unexpected = append(unexpected, "no check succeeded")
	}
	if len(unexpected) > 0 {
		problems = append(problems, fmt.Sprintf("scenario %s failed and %s does not list it: %s", s.Name, file, strings.Join(unexpected, "; ")))
	}
	all := worstByID(s.Checks)
	for _, e := range checks {
		i := slices.IndexFunc(all, func(c Check) bool { return c.ID == e.Check })
		switch {
		case i < 0:
			problems = append(problems, fmt.Sprintf("check %s:%s listed in %s:%d was not reported by the scenario: remove it or correct it", s.Name, e.Check, file, e.Line))
		case !all[i].failing():
			problems = append(problems, fmt.Sprintf("check %s:%s passes but %s:%d lists it: remove it", s.Name, e.Check, file, e.Line))
		}
	}
	return problems
}

// Summary is one line of figures: scenarios run, passed, passed but for
// the checks listed, failed as listed, and failed otherwise.
func (r *Report) Summary() string {
	var passed, butChecks, listed, other int
	for _, s := range r.Scenarios {
		whole, _ := expectationsOf(r.Expected, s.Name)
		switch {
		case s.Passed():
			passed++
		case len(r.judge(s)) > 0:
			other++
		case whole == nil:
			butChecks++
		default:
			listed++
		}
	}
	what := "all " + string(r.Mode) + " scenarios"
	if r.Requirements != "" {
		what = string(r.Mode) + " scenarios of " + r.Requirements
	}
	return fmt.Sprintf("%d %s in %s: %d passed, %d passed but for checks listed, %d failed as listed, %d failed otherwise",
		len(r.Scenarios), what, r.Duration.Round(time.Millisecond), passed, butChecks, listed, other)
}

func describe(c Check) string {
	if c.ErrorMessage == "" {
		return c.ID + " " + c.Status
	}
	return c.ID + " " + c.Status + ": " + c.ErrorMessage
}

// Run runs the suite as opts says and reads its results. The error is for
// a run that could not happen or finish (no Node 22 or suite, a bad
// expected-failures file, the timeout); what the suite found is judged by
// the Report's Problems.
func Run(ctx context.Context, opts Options) (*Report, error) {
	switch opts.Mode {
	case Server:
		if opts.URL == "" {
			return nil, errors.New("conformance: Server mode needs the URL of the server under test")
		}
	case Client:
		if opts.Command == "" {
			return nil, errors.New("conformance: Client mode needs the command that runs the client under test")
		}
	default:
		return nil, fmt.Errorf("conformance: unknown mode %q (want %q or %q)", opts.Mode, Server, Client)
	}
	timeout := cmp.Or(opts.Timeout, DefaultTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// A step that the timeout cut short says so, whichever it was (a
	// loaded machine may spend it on listing the scenarios).
	timedOut := func(err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("conformance: the suite did not finish within %s: %w", timeout, err)
		}
		return err
	}
	s, err := findSuite(ctx, opts.Root)
	if err != nil {
		return nil, timedOut(err)
	}
	scenarios, err := s.list(ctx, opts.Mode, opts.Requirements)
	if err != nil {
		return nil, timedOut(err)
	}
	names := make([]string, len(scenarios))
	for i, sc := range scenarios {
		names[i] = sc.Name
	}
	for _, name := range opts.Required {
		if !slices.Contains(names, name) {
			return nil, fmt.Errorf("conformance: required scenario %s is not one the suite runs (%s)", name, strings.Join(names, ", "))
		}
	}
	var expected []Expectation
	if opts.ExpectedFailures != "" {
		if expected, err = ReadExpected(opts.ExpectedFailures, names, opts.Required); err != nil {
			return nil, err
		}
	}

	out, err := os.MkdirTemp("", "conformance-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(out)
	args := []string{string(opts.Mode)}
	if opts.Mode == Server {
		args = append(args, "--url", opts.URL)
	} else {
		args = append(args, "--command", opts.Command)
	}
	if opts.Requirements != "" {
		args = append(args, "--requirements", opts.Requirements)
	} else {
		args = append(args, "--suite", "all")
	}
	args = append(args, "--output-dir", out)
	start := time.Now()
	output, exitCode, err := s.run(ctx, opts.Env, args...)
	rep := &Report{Mode: opts.Mode, Requirements: opts.Requirements, Expected: expected, ExitCode: exitCode,
		Output: output, Duration: time.Since(start), expectedFile: opts.ExpectedFailures}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("the suite did not finish within %s", timeout)
		}
		return nil, fmt.Errorf("conformance: %s %s: %w; its output ends:\n%s", opts.Mode, strings.Join(args[1:], " "), err, tail(output, 4<<10))
	}
	results, err := readResults(out, opts.Mode)
	if err != nil {
		return nil, err
	}
	for _, sc := range scenarios {
		sc.Checks, sc.Ran = results[sc.Name]
		rep.Scenarios = append(rep.Scenarios, sc)
	}
	return rep, nil
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// repoRoot is the nearest directory at or above the working directory
// that holds go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("conformance: no go.mod above the working directory; set Options.Root to the repository root")
		}
		dir = parent
	}
}
