//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

// seeded is a database file holding the catalog figures read.
type seeded struct {
	path        string
	storedBytes int64
	tools       int
}

// seededCatalog returns a closed database file with CatalogServers ×
// ToolsPerServer tools (200 × 50 = 10 000), seeding it on first use. Users
// may open it (one at a time) but must leave its servers and tools as
// they are.
func (cfg *config) seededCatalog(ctx context.Context) (*seeded, error) {
	if cfg.catalog != nil {
		return cfg.catalog, nil
	}
	path := filepath.Join(cfg.dir, "catalog.db")
	t0 := time.Now()
	n, err := seedCatalog(ctx, cfg, path, cfg.CatalogServers, cfg.ToolsPerServer)
	if err != nil {
		return nil, fmt.Errorf("seed the catalog: %w", err)
	}
	fmt.Fprintf(cfg.log, "bench: seeded %d servers × %d tools (%d stored bytes) in %v\n",
		cfg.CatalogServers, cfg.ToolsPerServer, n, time.Since(t0).Round(time.Millisecond))
	cfg.catalog = &seeded{path: path, storedBytes: n, tools: cfg.CatalogServers * cfg.ToolsPerServer}
	return cfg.catalog, nil
}

// seedCatalog fills the database at dbPath the way a person would: it
// registers servers fixture servers of toolsPerServer tools each (the
// fixture generates the same realistic tools every run) and verifies them
// all through the dashboard. It returns the bytes the tools and policies
// take in the store (their stored JSON), which memory is measured against.
func seedCatalog(ctx context.Context, cfg *config, dbPath string, servers, toolsPerServer int) (storedBytes int64, err error) {
	a, err := startApp(dbPath, 4)
	if err != nil {
		return 0, err
	}
	defer a.close()
	ids := make([]string, servers)
	for i := range ids {
		ids[i] = "srv-" + strconv.Itoa(i)
		sc := cfg.bins.fixtureCmd("-tools", strconv.Itoa(toolsPerServer), "-page-size", "100", "-name", ids[i])
		if err := a.addServer(ctx, ids[i], sc); err != nil {
			return 0, err
		}
	}
	if _, err := a.verifyAll(ctx, ids); err != nil {
		return 0, err
	}
	tools, err := a.db.AllTools(ctx)
	if err != nil {
		return 0, err
	}
	if len(tools) != servers*toolsPerServer {
		return 0, fmt.Errorf("seeded %d tools, want %d", len(tools), servers*toolsPerServer)
	}
	for _, t := range tools {
		tb, _ := json.Marshal(t.Tool)
		pb, _ := json.Marshal(t.Policy)
		storedBytes += int64(len(tb) + len(pb))
	}
	return storedBytes, nil
}

// verifyAll verifies every server through the API at once (the runner
// queues them at its concurrency) and waits, on an SSE stream as a browser
// would, until each shows success. It returns the time from the first
// request to the last success event.
func (a *app) verifyAll(ctx context.Context, ids []string) (time.Duration, error) {
	if err := a.login(ctx); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	stream, err := a.openSSE(ctx, 4096)
	if err != nil {
		return 0, err
	}
	defer stream.close()
	jobs := map[string]string{} // server id → job id
	start := time.Now()
	for _, id := range ids {
		job, err := a.verify(ctx, id)
		if err != nil {
			return 0, err
		}
		jobs[id] = job
	}
	var last time.Time
	for len(jobs) > 0 {
		at, err := stream.waitJobs(ctx, a, jobs)
		if err != nil {
			return 0, fmt.Errorf("waiting for %d verifications: %w", len(jobs), err)
		}
		last = at
	}
	return last.Sub(start), nil
}

// waitJobs waits for one of jobs (server id → job id) to end, removes it
// from jobs and returns when its final status event arrived. A status
// event looks final also when it shows an earlier job's outcome (the
// snapshot on connect, or a second publication of the last one), so the
// job's own state is confirmed through the API. A job that did not
// succeed is an error.
func (c *sseConn) waitJobs(ctx context.Context, a *app, jobs map[string]string) (time.Time, error) {
	for {
		var id string
		ev, err := c.waitFor(ctx, func(ev sseEvent) bool {
			for sid := range jobs {
				if finalStatus(ev, sid) != "" {
					id = sid
					return true
				}
			}
			return false
		})
		if err != nil {
			return time.Time{}, err
		}
		var out struct {
			Job struct {
				Status string `json:"status"`
				Error  *struct {
					Message string `json:"message"`
				} `json:"error"`
			} `json:"job"`
		}
		if err := a.api(ctx, http.MethodGet, "/api/v1/jobs/"+jobs[id], nil, http.StatusOK, &out); err != nil {
			return time.Time{}, err
		}
		switch out.Job.Status {
		case "queued", "running":
			continue // the event was about an earlier job
		case "success":
			delete(jobs, id)
			return ev.at, nil
		}
		msg := ""
		if out.Job.Error != nil {
			msg = ": " + out.Job.Error.Message
		}
		return time.Time{}, fmt.Errorf("verification of %s ended %s%s", id, out.Job.Status, msg)
	}
}
