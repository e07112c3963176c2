//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/switchboard-dev/switchboard/internal/registry"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

// registryFigures measures a search of a registry's copy (issue 39):
// 5,000 servers of realistic size in the store, searched with words of
// their names and descriptions, against reading the copy from the store
// (the cost the cache saves), same run.
func registryFigures(ctx context.Context, cfg *config) ([]figure, error) {
	n, runs := 5000, 200
	if cfg.quick {
		n, runs = 50, 5
	}
	db, err := bolt.Open(filepath.Join(cfg.dir, "registry-bench.db"), bolt.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	const reg = "https://registry.bench.invalid"
	entries := make([]store.RegistryEntry, 0, n)
	for i := range n {
		name := fmt.Sprintf("io.github.bench-%04d/server-%04d", i/3, i)
		doc, _ := json.Marshal(map[string]any{
			"$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
			"name":    name, "version": "1.0.0", "title": fmt.Sprintf("Bench server %d", i),
			"description": fmt.Sprintf("Reads and writes the records of service %d: issues, pages and comments, with a token.", i%97),
			"packages": []any{map[string]any{"registryType": "npm", "identifier": fmt.Sprintf("bench-server-%d", i), "version": "1.0.0",
				"transport": map[string]any{"type": "stdio"}, "environmentVariables": []any{map[string]any{"name": "TOKEN", "isRequired": true, "isSecret": true}}}},
		})
		entries = append(entries, store.RegistryEntry{Name: name, Version: "1.0.0", Latest: true, Status: "active", Server: doc})
	}
	if err := db.PutRegistryEntries(ctx, reg, entries, store.RegistryPull{At: time.Now(), Full: true}); err != nil {
		return nil, err
	}
	copies := registry.NewCopies(db, []string{reg}, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	queries := []string{"server-0042", "bench 7", "records of service 13", "issues comments", "token", "no such thing at all"}
	if _, err := copies.Search(ctx, "", "", 1); err != nil { // the copy decoded, as after its first read
		return nil, err
	}
	var search, read samples
	for i := range runs {
		q := queries[i%len(queries)]
		t0 := time.Now()
		if _, err := copies.Search(ctx, q, "", registry.DefaultLimit); err != nil {
			return nil, err
		}
		search = append(search, time.Since(t0))
		if i%10 == 0 {
			t0 = time.Now()
			if _, _, err := db.RegistryCopy(ctx, reg); err != nil {
				return nil, err
			}
			read = append(read, time.Since(t0))
		}
	}
	v, base := search.median(), read.median()
	return []figure{{Name: fmt.Sprintf("Registry search over a %d-server copy, p50", n), Unit: "ms", Value: round3(ms(v)),
		Baseline: "reading the copy from the store, same run", BaseVal: round3(ms(base)), Ratio: round3(float64(v) / float64(max1(base))),
		Target: "≤ 5 ms", Pass: v <= 5*time.Millisecond,
		Note: fmt.Sprintf("p90 %.2f ms over %d searches of %d queries", ms(search.quantile(0.9)), len(search), len(queries))}}, nil
}
