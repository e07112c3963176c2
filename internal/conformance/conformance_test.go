package conformance

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "expected.txt")
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestReadExpected(t *testing.T) {
	scenarios := []string{"tools-list", "prompts-list", "server-stateless", "auth/dpop"}
	required := []string{"tools-list", "server-stateless"}
	for _, tc := range []struct {
		name, file string
		want       []Expectation
		wantErr    string
	}{
		{
			name: "scenarios and checks with reasons",
			file: "# a comment\n\nprompts-list   # no prompts\nserver-stateless:sep-1 # needs test_x\nauth/dpop#an extension\n",
			want: []Expectation{
				{Scenario: "prompts-list", Reason: "no prompts", Line: 3},
				{Scenario: "server-stateless", Check: "sep-1", Reason: "needs test_x", Line: 4},
				{Scenario: "auth/dpop", Reason: "an extension", Line: 5},
			},
		},
		{name: "no reason", file: "prompts-list\n", wantErr: `:1: "prompts-list" has no reason`},
		{name: "empty reason", file: "# ok\nprompts-list   #  \n", wantErr: `:2: "prompts-list" has no reason`},
		{name: "unknown scenario", file: "prompt-list # typo\n", wantErr: ":1: prompt-list is not a scenario of this run"},
		{name: "required as a whole", file: "tools-list # no\n", wantErr: ":1: tools-list is required to pass"},
		{name: "listed twice", file: "prompts-list # a\nprompts-list # b\n", wantErr: ":2: prompts-list is listed twice (line 1)"},
		{name: "check listed twice", file: "server-stateless:c # a\nserver-stateless:c # b\n", wantErr: ":2: server-stateless:c is listed twice (line 1)"},
		{name: "whole and by check", file: "prompts-list # a\nprompts-list:c # b\n", wantErr: ":2: prompts-list is listed both as a whole and check by check (line 1)"},
		{name: "two on a line", file: "prompts-list tools-list # a\n", wantErr: "one scenario (or scenario:check-id) per line"},
		{name: "no check after the colon", file: "prompts-list: # a\n", wantErr: "names no check after the colon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, tc.file)
			got, err := ReadExpected(file, scenarios, required)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ReadExpected(%q) = %v, %v; want error containing %q", tc.file, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ReadExpected(%q) = %+v, %v; want %+v", tc.file, got, err, tc.want)
			}
		})
	}
}

func checks(statuses ...string) []Check {
	var out []Check
	for _, s := range statuses {
		id, status, _ := strings.Cut(s, "=")
		out = append(out, Check{ID: id, Status: status, ErrorMessage: "because"})
	}
	return out
}

func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scenario Scenario
		expected []Expectation
		exit     int
		want     []string // each a part of one problem, in order
	}{
		{name: "passes, not listed", scenario: Scenario{Name: "a", Ran: true, Checks: checks("x=SUCCESS", "y=INFO")}},
		{name: "fails, listed", scenario: Scenario{Name: "a", Ran: true, Checks: checks("x=FAILURE")},
			expected: []Expectation{{Scenario: "a", Line: 3}}, exit: 1},
		{name: "no results, listed", scenario: Scenario{Name: "a"}, expected: []Expectation{{Scenario: "a", Line: 3}}, exit: 1},
		{name: "fails, not listed", scenario: Scenario{Name: "a", Ran: true, Checks: checks("x=SUCCESS", "y=FAILURE")}, exit: 1,
			want: []string{"scenario a failed and f.txt does not list it: y FAILURE: because"}},
		{name: "warns, not listed", scenario: Scenario{Name: "a", Ran: true, Checks: checks("y=WARNING")},
			want: []string{"scenario a failed and f.txt does not list it: y WARNING"}},
		{name: "no successful check, not listed", scenario: Scenario{Name: "a", Ran: true, Checks: checks("x=INFO")},
			want: []string{"scenario a failed and f.txt does not list it: no check succeeded"}},
		{name: "no successful check, listed", scenario: Scenario{Name: "a", Ran: true}, expected: []Expectation{{Scenario: "a", Line: 3}}},
		{name: "no results, not listed", scenario: Scenario{Name: "a"}, exit: 1,
			want: []string{"scenario a: the suite wrote no results"}},
		{name: "passes, listed", scenario: Scenario{Name: "a", Ran: true, Checks: checks("x=SUCCESS")},
			expected: []Expectation{{Scenario: "a", Line: 3}}, want: []string{"scenario a passes but f.txt:3 lists it: remove it"}},
		{name: "listed check fails, the others pass", scenario: Scenario{Name: "a", Ran: true, Checks: checks("x=SUCCESS", "y=FAILURE", "y=SUCCESS")},
			expected: []Expectation{{Scenario: "a", Check: "y", Line: 4}}, exit: 1},
		{name: "another check fails too", scenario: Scenario{Name: "a", Ran: true, Checks: checks("x=FAILURE", "y=FAILURE")},
			expected: []Expectation{{Scenario: "a", Check: "y", Line: 4}}, exit: 1,
			want: []string{"scenario a failed and f.txt does not list it: x FAILURE"}},
		{name: "listed check passes", scenario: Scenario{Name: "a", Ran: true, Checks: checks("y=SUCCESS")},
			expected: []Expectation{{Scenario: "a", Check: "y", Line: 4}}, want: []string{"check a:y passes but f.txt:4 lists it: remove it"}},
		{name: "listed check not reported", scenario: Scenario{Name: "a", Ran: true, Checks: checks("x=SUCCESS")},
			expected: []Expectation{{Scenario: "a", Check: "y", Line: 4}}, want: []string{"check a:y listed in f.txt:4 was not reported"}},
		{name: "exit status disagrees", scenario: Scenario{Name: "a", Ran: true, Checks: checks("y=FAILURE")},
			expected: []Expectation{{Scenario: "a", Line: 3}}, exit: 0, want: []string{"the suite exited with status 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.scenario.Scored = true
			r := &Report{Mode: Server, Requirements: "2026-07-28", Scenarios: []Scenario{tc.scenario}, Expected: tc.expected,
				ExitCode: tc.exit, expectedFile: "f.txt"}
			got := r.Problems()
			ok := len(got) == len(tc.want)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.Contains(got[i], tc.want[i])
			}
			if !ok {
				t.Errorf("Problems() = %q; want problems containing %q", got, tc.want)
			}
		})
	}
}

// listOutput is what `list --requirements 2026-07-28` prints, cut short.
const listOutput = `Required for 2026-07-28 (6 scenarios, frozen; run at the 2026-07-28 wire):

Server scenarios (test against a server):
  - server-stateless
  - tools-list

Client scenarios (test against a client):
  - tools_call
  - auth/metadata-default

Run and reported, but never scored:
  extension (2):
    - auth/dpop [client]
    - tasks-lifecycle [server]
  pending (1):
    - http-header-validation [server]

`

func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		mode      Mode
		want      []Scenario
	}{
		{name: "server requirements", out: listOutput, mode: Server, want: []Scenario{
			{Name: "server-stateless", Scored: true}, {Name: "tools-list", Scored: true},
			{Name: "tasks-lifecycle", NotScored: "extension"}, {Name: "http-header-validation", NotScored: "pending"}}},
		{name: "client requirements", out: listOutput, mode: Client, want: []Scenario{
			{Name: "tools_call", Scored: true}, {Name: "auth/metadata-default", Scored: true}, {Name: "auth/dpop", NotScored: "extension"}}},
		{name: "every server scenario", mode: Server,
			out:  "Server scenarios (test against a server):\n  - server-initialize\n  - tools-list [2025-06-18]\n",
			want: []Scenario{{Name: "server-initialize", Scored: true}, {Name: "tools-list", Scored: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseList(tc.out, tc.mode); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseList(%s) = %+v; want %+v", tc.mode, got, tc.want)
			}
		})
	}
}

func TestReadResults(t *testing.T) {
	dir := t.TempDir()
	for rel, content := range map[string]string{
		"server-tools-list-2026-11-25T07-10-24-061Z/checks.json":       `[{"id":"tools-list","status":"SUCCESS"}]`,
		"server-server-stateless-2026-11-25T07-10-24-100Z/checks.json": `[{"id":"a","status":"FAILURE","errorMessage":"no"}]`,
		"auth/dpop-2026-11-25T07-10-28-967Z/checks.json":               `[{"id":"dpop","status":"FAILURE"}]`,
	} {
		path := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := readResults(dir, Server); err == nil || !strings.Contains(err.Error(), "unexpected result directory auth/dpop") {
		t.Errorf("readResults(server) with a client result = %v; want an unexpected directory", err)
	}
	os.RemoveAll(filepath.Join(dir, "auth"))
	got, err := readResults(dir, Server)
	want := map[string][]Check{
		"tools-list":       {{ID: "tools-list", Status: "SUCCESS"}},
		"server-stateless": {{ID: "a", Status: "FAILURE", ErrorMessage: "no"}},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("readResults(server) = %+v, %v; want %+v", got, err, want)
	}

	dir = t.TempDir()
	path := filepath.Join(dir, "auth/dpop-2026-11-25T07-10-28-967Z/checks.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte(`[{"id":"dpop","status":"FAILURE"}]`), 0o600)
	got, err = readResults(dir, Client)
	if names := slices.Collect(maps.Keys(got)); err != nil || !slices.Equal(names, []string{"auth/dpop"}) {
		t.Errorf("readResults(client) = %+v, %v; want auth/dpop", got, err)
	}
}
