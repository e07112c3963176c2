package conformance

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// Expectation is one entry of an expected-failures file: a scenario
// expected to fail, or (Check set) one check of a scenario expected to
// fail while the scenario's other checks must pass.
type Expectation struct {
	Scenario string
	Check    string
	Reason   string
	Line     int
}

// ReadExpected reads an expected-failures file. Each entry is a line
//
//	scenario            # why it fails
//	scenario:check-id   # why this check fails
//
// (the suite's own baseline syntax, check ids as its output prints them).
// Every entry must give its reason after a #; a line that starts with #
// is a comment. scenarios are the scenarios of the run: an entry naming
// any other is refused, and so is an entry listing a required scenario as
// a whole, a scenario listed twice, or listed both whole and by check.
func ReadExpected(file string, scenarios, required []string) ([]Expectation, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	var out []Expectation
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		entry, reason, commented := strings.Cut(line, "#")
		entry, reason = strings.TrimSpace(entry), strings.TrimSpace(reason)
		if entry == "" {
			continue
		}
		if !commented || reason == "" {
			return nil, fmt.Errorf("%s:%d: %q has no reason: write why it fails after a #", file, n, entry)
		}
		if strings.ContainsAny(entry, " \t") {
			return nil, fmt.Errorf("%s:%d: %q: one scenario (or scenario:check-id) per line", file, n, entry)
		}
		e := Expectation{Reason: reason, Line: n}
		e.Scenario, e.Check, _ = strings.Cut(entry, ":")
		name := e.Scenario
		if e.Check != "" {
			name += ":" + e.Check
		}
		switch {
		case strings.HasSuffix(entry, ":"):
			return nil, fmt.Errorf("%s:%d: %q names no check after the colon", file, n, entry)
		case !slices.Contains(scenarios, e.Scenario):
			return nil, fmt.Errorf("%s:%d: %s is not a scenario of this run", file, n, e.Scenario)
		case e.Check == "" && slices.Contains(required, e.Scenario):
			return nil, fmt.Errorf("%s:%d: %s is required to pass: it cannot be listed as a whole (a check of it can, with its reason)", file, n, e.Scenario)
		}
		for _, prev := range out {
			switch {
			case prev.Scenario != e.Scenario:
			case prev.Check == e.Check:
				return nil, fmt.Errorf("%s:%d: %s is listed twice (line %d)", file, n, name, prev.Line)
			case prev.Check == "" || e.Check == "":
				return nil, fmt.Errorf("%s:%d: %s is listed both as a whole and check by check (line %d)", file, n, e.Scenario, prev.Line)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// expectationsOf returns the entry listing the scenario as a whole, if
// any, and the entries listing checks of it.
func expectationsOf(all []Expectation, scenario string) (whole *Expectation, checks []Expectation) {
	for i, e := range all {
		switch {
		case e.Scenario != scenario:
		case e.Check == "":
			whole = &all[i]
		default:
			checks = append(checks, e)
		}
	}
	return whole, checks
}
