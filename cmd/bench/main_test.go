//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

// TestQuickRun runs every figure with tiny sizes, so the benchmark code
// is compiled and exercised by the tests and never rots. The numbers of a
// quick run mean nothing; what is checked is that every figure was
// measured (a positive value, a target) and reported in both forms.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts real servers")
	}
	out := filepath.Join(t.TempDir(), "bench.json")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"-quick", "-out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var report reportJSON
	if err := json.Unmarshal(data, &report); err != nil {
		t.Fatalf("bench.json: %v", err)
	}
	if !report.Quick || report.CPUs == 0 {
		t.Errorf("report header: %+v", report)
	}
	names := map[string]bool{}
	for _, f := range report.Figures {
		names[f.Name] = true
		if f.Skipped {
			// Only a figure this machine cannot measure, with why.
			if f.Name != sandboxFigureName || !f.Pass || !strings.HasPrefix(f.Note, "skipped: ") || !strings.Contains(stdout.String(), f.Name) {
				t.Errorf("figure skipped: %+v", f)
			}
			t.Logf("skipped on this machine: %s: %s", f.Name, f.Note)
			continue
		}
		// A memory growth of a tiny catalog may be anything near zero.
		if strings.HasPrefix(f.Note, "error:") || (f.Value <= 0 && f.Unit != "MiB") || f.Target == "" {
			t.Errorf("figure not measured: %+v", f)
		}
		// A memory figure's baseline and ratio may be anything near zero
		// too (a growth against a growth): only its shape is checked.
		if f.Baseline != "" && f.Unit != "MiB" && (f.BaseVal <= 0 || f.Ratio <= 0) {
			t.Errorf("figure without its baseline: %+v", f)
		}
		if !strings.Contains(stdout.String(), f.Name) {
			t.Errorf("figure %q is not in the table", f.Name)
		}
	}
	for _, want := range []string{
		"Verify, in process: fixture",
		"Verify, in process: server-everything",
		"`switchboard verify` process: server-everything",
		sandboxFigureName,
		"Verify via dashboard (POST → SSE success): server-everything",
		"Bulk verify: 4 fixture servers (100 ms start-up), concurrency 2",
		"GET /api/v1/tools, 3 servers × 5 tools",
		"GET /api/v1/tools with If-None-Match → 304, server time p50",
		"Servers page, 3 servers, server time p50",
		"Detail page, 12 tools, server time p50",
		"Start-up to serving (exec → GET /healthz 200), 15 tools stored",
		"Start-up to serving after a crash (the full integrity check in a child first), 15 tools stored",
		"RSS growth with 15 tools stored (warmed)",
		"SSE fan-out: status event to 5 clients, p99",
		"SSE fan-out: one stalled client's cost to the others (median of each event's p99)",
		"tools/list via /mcp, 15 tools, no upstream started, p50 (POST → last byte received; the JSON is checked after)",
		"tools/list via /mcp, 15 tools, mcp-go client.ListTools p50",
		"tools/call via /mcp of a trivial fixture tool (upstream running), p50",
		"tools/call via /mcp over a bare mcp-go relay to the same upstream, p50",
	} {
		if !names[want] {
			t.Errorf("no figure %q", want)
		}
	}
	for _, want := range searchFigureNames {
		if !names[want] {
			t.Errorf("no figure %q", want)
		}
	}
	if len(report.Figures) < 20 {
		t.Errorf("%d figures, want every group's (at least 20)", len(report.Figures))
	}
	t.Logf("quick run:\n%s", stdout.String())
}

// searchFigureNames are the figures of the search group.
var searchFigureNames = []string{
	"Tool search recall@5, server-everything + server-filesystem (31 tools, 32 queries)",
	"Tool search MRR, server-everything + server-filesystem (31 tools, 32 queries)",
	"Tool search recall@5, synthetic catalog (1000 tools, 64 queries)",
	"Tool search MRR, synthetic catalog (1000 tools, 64 queries)",
	"Tool search index build, 1000 tools, median",
	"Tool search, 1000 tools, p50",
	"tools/list size in search mode (search_tools + call_tool) vs all 1000 tools",
}

// TestSearchFigures runs the search group alone, with the quick sizes: it
// needs no server, and its quality figures hold even in a quick run.
func TestSearchFigures(t *testing.T) {
	figs, err := searchFigures(context.Background(), &config{sizes: quickSizes, quick: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]figure{}
	for _, f := range figs {
		got[f.Name] = f
		if f.Value <= 0 || f.Target == "" || (f.Baseline != "" && f.Ratio <= 0) {
			t.Errorf("figure not measured: %+v", f)
		}
		if strings.HasPrefix(f.Name, "Tool search recall") || strings.HasPrefix(f.Name, "Tool search MRR") || strings.HasPrefix(f.Name, "tools/list size") {
			if !f.Pass {
				t.Errorf("figure misses its target: %+v", f)
			}
		}
	}
	for _, want := range searchFigureNames {
		if _, ok := got[want]; !ok {
			t.Errorf("no figure %q", want)
		}
	}
	var out bytes.Buffer
	printTable(&out, figs)
	t.Logf("search figures:\n%s", out.String())
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"-only", "("}, {"extra"}, {"-nope"}} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 2 || stderr.Len() == 0 {
			t.Errorf("run(%q) = %d, stderr %q; want 2 and a message", args, code, stderr.String())
		}
	}
}

func TestQuantile(t *testing.T) {
	var s samples
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	for q, want := range map[float64]time.Duration{0.5: 50 * time.Millisecond, 0.99: 99 * time.Millisecond, 1: 100 * time.Millisecond, 0: time.Millisecond} {
		if got := s.quantile(q); got != want {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if (samples{}).median() != 0 {
		t.Error("median of nothing")
	}
}

// TestMain lets the test binary play the bare client and the plain file
// server, as the bench program does (see roleEnv).
func TestMain(m *testing.M) {
	bolt.RunChildCheckIfAsked()
	discovery.RunLauncherIfAsked()
	switch os.Getenv(roleEnv) {
	case roleBareClient:
		os.Exit(runBareClient(context.Background(), os.Args[1:]))
	case roleFileServer:
		os.Exit(runFileServer(context.Background(), os.Args[1:]))
	}
	os.Exit(m.Run())
}

// TestSkippedSandboxFigure: a machine that cannot build the walls gets
// the sandbox row skipped, which passes and says why, not a failure.
func TestSkippedSandboxFigure(t *testing.T) {
	walls := &discovery.Error{Class: discovery.ClassSandbox, Message: "no Landlock"}
	if why, ok := cannotWall(fmt.Errorf("stdio start: %w", walls)); !ok || why != "no Landlock" {
		t.Errorf("cannotWall(class sandbox) = %q, %v", why, ok)
	}
	for _, err := range []error{nil, &discovery.Error{Class: discovery.ClassExited}, errors.New("other")} {
		if _, ok := cannotWall(err); ok {
			t.Errorf("cannotWall(%v) = true", err)
		}
	}
	f := skippedSandboxFigure(&config{log: io.Discard}, "no Landlock")
	if !f.Pass || !f.Skipped || !strings.HasSuffix(f.Note, "no Landlock") {
		t.Errorf("skipped figure: %+v", f)
	}
	var out bytes.Buffer
	printTable(&out, []figure{f})
	if !strings.Contains(out.String(), "skipped") || strings.Contains(out.String(), "MISS") {
		t.Errorf("table:\n%s", out.String())
	}
}
