//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// binaries are the programs the figures run, built fresh for this run.
type binaries struct {
	root        string // repository root
	switchboard string
	fixture     string
	everything  string // server-everything's entry point (run with node)
}

// buildBinaries builds switchboard and mcp-fixture into dir and finds
// @modelcontextprotocol/server-everything, installed by `make deps-e2e`.
func buildBinaries(ctx context.Context, dir string) (binaries, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		return binaries{}, fmt.Errorf("run bench inside the switchboard module (go env GOMOD: %v)", err)
	}
	b := binaries{root: filepath.Dir(strings.TrimSpace(string(out)))}
	b.switchboard = filepath.Join(dir, "switchboard")
	b.fixture = filepath.Join(dir, "mcp-fixture")
	for bin, pkg := range map[string]string{b.switchboard: "./cmd/switchboard", b.fixture: "./cmd/mcp-fixture"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
		cmd.Dir = b.root
		if out, err := cmd.CombinedOutput(); err != nil {
			return binaries{}, fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	b.everything = filepath.Join(b.root, "e2e", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(b.everything); err != nil {
		return binaries{}, fmt.Errorf("@modelcontextprotocol/server-everything is not installed (%v): run `make deps-e2e`", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		return binaries{}, fmt.Errorf("node is needed for server-everything: %v", err)
	}
	return b, nil
}

// gitCommit names the commit measured, with "+dirty" for local changes.
func gitCommit(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty=+dirty").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// serverCmd is one stdio MCP server the figures verify.
type serverCmd struct {
	name    string
	command string
	args    []string
}

func (b binaries) fixtureCmd(args ...string) serverCmd {
	return serverCmd{name: "fixture", command: b.fixture, args: args}
}

func (b binaries) everythingCmd() serverCmd {
	return serverCmd{name: "server-everything", command: "node", args: []string{b.everything, "stdio"}}
}

// samples are timed repetitions of one thing.
type samples []time.Duration

func (s samples) sorted() samples {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// quantile returns the q-quantile (0 ≤ q ≤ 1, nearest rank).
func (s samples) quantile(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := s.sorted()
	i := int(q*float64(len(c))+0.5) - 1
	return c[max(0, min(i, len(c)-1))]
}

func (s samples) median() time.Duration { return s.quantile(0.5) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
