//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/toolsearch"
	"github.com/switchboard-dev/switchboard/internal/toolsearch/toolsearchtest"
)

// searchFigures measures tool search (issue 22) in process, with no
// server: the quality of the ranking on the labelled query sets of
// toolsearchtest (recall@5 and MRR, against its Floors), how
// long an index of the 1,000-tool synthetic catalog takes to build and
// to search, and how much smaller the search-mode tools/list is than the
// full one.
func searchFigures(ctx context.Context, cfg *config) ([]figure, error) {
	builds, passes := 10, 20
	if cfg.quick {
		builds, passes = 1, 1
	}
	real, err := toolsearchtest.RealCatalog()
	if err != nil {
		return nil, err
	}
	synthetic := toolsearchtest.Synthetic()
	var figs []figure
	for _, c := range []struct {
		name, label string
		tools       []toolsearch.Tool
	}{
		{"real", "server-everything + server-filesystem", real},
		{"synthetic", "synthetic catalog", synthetic},
	} {
		floor := toolsearchtest.Floors[c.name]
		qs, err := toolsearchtest.Queries(c.name)
		if err != nil {
			return figs, err
		}
		x, err := toolsearch.Build(c.tools)
		if err != nil {
			return figs, err
		}
		q, err := toolsearchtest.Measure(x, qs, 5)
		x.Close()
		if err != nil {
			return figs, err
		}
		label := fmt.Sprintf("%s (%d tools, %d queries)", c.label, len(c.tools), q.Queries)
		note := fmt.Sprintf("%d misses", len(q.Misses))
		if len(q.Noisy) > 0 {
			note += fmt.Sprintf("; %d must-find-nothing queries found something", len(q.Noisy))
		}
		figs = append(figs,
			figure{Name: "Tool search recall@5, " + label, Value: round3(q.RecallAt), Target: fmt.Sprintf("≥ %.2f", floor.RecallAt5),
				Pass: q.RecallAt >= floor.RecallAt5 && len(q.Noisy) == 0, Note: note},
			figure{Name: "Tool search MRR, " + label, Value: round3(q.MRR), Target: fmt.Sprintf("≥ %.2f", floor.MRR), Pass: q.MRR >= floor.MRR})
	}
	if ctx.Err() != nil {
		return figs, ctx.Err()
	}

	// Index build: the median of several builds of the whole catalog, as
	// a catalog change costs.
	var build samples
	var x *toolsearch.Index
	for range builds {
		if x != nil {
			x.Close()
		}
		t0 := time.Now()
		if x, err = toolsearch.Build(synthetic); err != nil {
			return figs, err
		}
		build = append(build, time.Since(t0))
		if ctx.Err() != nil {
			break
		}
	}
	defer x.Close()
	b := build.median()
	figs = append(figs, figure{Name: fmt.Sprintf("Tool search index build, %d tools, median", len(synthetic)),
		Value: ms(b), Unit: "ms", Target: "≤ 500 ms", Pass: b <= 500*time.Millisecond,
		Note: fmt.Sprintf("%d builds", len(build))})

	qs, err := toolsearchtest.Queries("synthetic")
	if err != nil {
		return figs, err
	}
	var search samples
	for range passes {
		for _, q := range qs.Queries {
			t0 := time.Now()
			if _, err := x.Search(q.Query, toolsearch.DefaultLimit); err != nil {
				return figs, err
			}
			search = append(search, time.Since(t0))
		}
	}
	p50, p99 := search.quantile(0.5), search.quantile(0.99)
	figs = append(figs, figure{Name: fmt.Sprintf("Tool search, %d tools, p50", len(synthetic)),
		Value: ms(p50), Unit: "ms", Target: "p50 ≤ 2 ms", Pass: p50 <= 2*time.Millisecond,
		Note: fmt.Sprintf("p99 %.2f ms, %d searches", ms(p99), len(search))})

	// What an agent reads before its first call: the result of tools/list
	// (JSON, without the JSON-RPC envelope), every tool against the two
	// of search mode.
	full, err := listBytes(synthetic)
	if err != nil {
		return figs, err
	}
	modeList, err := json.Marshal(mcp.ListToolsResult{Tools: []mcp.Tool{toolsearch.SearchTool(), toolsearch.CallTool()}})
	if err != nil {
		return figs, err
	}
	sm, fl := float64(len(modeList)), float64(len(full))
	figs = append(figs, figure{
		Name:  fmt.Sprintf("tools/list size in search mode (search_tools + call_tool) vs all %d tools", len(synthetic)),
		Value: sm, Unit: "bytes", Baseline: "full list", BaseVal: fl, Ratio: sm / fl,
		Target: "≤ 0.01×", Pass: sm/fl <= 0.01,
		Note: fmt.Sprintf("%.2f%% of it; ≈ %d vs %d tokens (bytes/4)", 100*sm/fl, len(modeList)/4, len(full)/4),
	})
	return figs, nil
}

// round3 rounds a quality figure to three decimals, as it is printed.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// listBytes is the JSON of the tools/list result offering tools, each as
// agents get it.
func listBytes(tools []toolsearch.Tool) ([]byte, error) {
	defs := make([]json.RawMessage, len(tools))
	for i, t := range tools {
		defs[i] = t.Definition
	}
	return json.Marshal(struct {
		Tools []json.RawMessage `json:"tools"`
	}{defs})
}
