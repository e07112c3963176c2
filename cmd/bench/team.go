//go:build linux

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/etcd"
	"github.com/switchboard-dev/switchboard/store/etcd/etcdtest"
)

// teamFigures measures the etcd backend (issue 23) against the bbolt file
// in the same run, through the store contract, on a real etcd member in
// process: a catalog read of every tool, a verification's write of a
// 1,000-tool server, and how long a change made on one replica takes to
// reach a subscriber of another (on bbolt: of the same process).
func teamFigures(ctx context.Context, cfg *config) ([]figure, error) {
	srv, err := etcdtest.Start()
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	open := func() (*etcd.DB, error) {
		return etcd.Open(ctx, etcd.Options{Endpoints: []string{srv.Endpoint}, Prefix: "/bench/"})
	}
	edb, err := open()
	if err != nil {
		return nil, err
	}
	defer edb.Close()
	bdb, err := bolt.Open(filepath.Join(cfg.dir, "team-bench.db"), bolt.Options{})
	if err != nil {
		return nil, err
	}
	defer bdb.Close()
	backends := []struct {
		name string
		db   store.Store
	}{{"bbolt", bdb}, {"etcd", edb}}

	servers, perServer, bigTools, runs := cfg.CatalogServers, cfg.ToolsPerServer, 1000, 10
	if cfg.quick {
		bigTools, runs = 20, 2
	}
	for _, b := range backends {
		for i := range servers {
			if err := seedServer(ctx, b.db, fmt.Sprintf("srv-%03d", i), perServer, "v1"); err != nil {
				return nil, fmt.Errorf("seed %s: %w", b.name, err)
			}
		}
	}
	var figs []figure
	// Catalog read: every tool, as the MCP offer reads it after a change.
	times := map[string]samples{}
	for _, b := range backends {
		for range runs {
			t0 := time.Now()
			n := 0
			if _, err := b.db.Catalog(ctx, func(*store.Summary, store.ToolEntry) error { n++; return nil }); err != nil {
				return figs, err
			}
			times[b.name] = append(times[b.name], time.Since(t0))
			if n != servers*perServer {
				return figs, fmt.Errorf("%s catalog read %d tools, want %d", b.name, n, servers*perServer)
			}
		}
	}
	figs = append(figs, versus(fmt.Sprintf("Catalog read, %d servers × %d tools, p50", servers, perServer), times, 5))

	// A verification's write: a 1,000-tool server verified again with
	// every tool changed (the merge, the pins, the history).
	times = map[string]samples{}
	for _, b := range backends {
		if err := seedServer(ctx, b.db, "big", bigTools, "v0"); err != nil {
			return figs, err
		}
		for i := range runs {
			t0 := time.Now()
			if err := seedServer(ctx, b.db, "big", bigTools, fmt.Sprintf("v%d", i+1)); err != nil {
				return figs, err
			}
			times[b.name] = append(times[b.name], time.Since(t0))
		}
	}
	figs = append(figs, versus(fmt.Sprintf("A verification's write, %d tools all changed, p50", bigTools), times, 20))

	// Event latency: a policy set on one replica, heard by a subscriber
	// of another (bbolt: of the same store, its only replica).
	other, err := open()
	if err != nil {
		return figs, err
	}
	defer other.Close()
	times = map[string]samples{}
	for _, b := range []struct {
		name      string
		write     store.Store
		subscribe store.Store
	}{{"bbolt", bdb, bdb}, {"etcd", edb, other}} {
		var heard atomic.Int64
		got := make(chan struct{}, 1)
		cancel := b.subscribe.Subscribe(func(c store.Change) {
			if c.ServerID == "srv-000" && c.Tools {
				heard.Store(time.Now().UnixNano())
				select {
				case got <- struct{}{}:
				default:
				}
			}
		})
		for i := range runs * 3 {
			t0 := time.Now()
			p := []store.Policy{store.PolicyAllow, store.PolicyDeny}[i%2]
			if _, err := b.write.SetPolicy(ctx, store.ToolRef{ServerID: "srv-000", Tool: "tool_000"}, p, "bench"); err != nil {
				cancel()
				return figs, err
			}
			select {
			case <-got:
			case <-time.After(10 * time.Second):
				cancel()
				return figs, fmt.Errorf("%s: the change did not reach the other replica within 10 s", b.name)
			}
			times[b.name] = append(times[b.name], time.Duration(heard.Load()-t0.UnixNano()))
		}
		cancel()
	}
	f := versus("A policy change heard on another replica, from the write's start, p50", times, 50)
	f.Note += "; bbolt: its own subscriber"
	figs = append(figs, f)
	events, err := teamEventFigures(ctx, cfg, srv.Endpoint)
	return append(figs, events...), err
}

// teamEventFigures measures, through two whole dashboards on one etcd
// (replicas A and B, each with its coordinator), how long a change made
// on A takes to reach a tab open on B (a server renamed through A's API,
// to B's /events stream) and an agent's MCP session on B (a tool's
// policy set through A's API, to notifications/tools/list_changed on B's
// /mcp), against the same change reaching A's own tab and session in the
// same round: the baseline is the replica that made the change.
func teamEventFigures(ctx context.Context, cfg *config, endpoint string) ([]figure, error) {
	start := func() (*app, error) {
		db, err := etcd.Open(ctx, etcd.Options{Endpoints: []string{endpoint}, Prefix: "/bench-events/"})
		if err != nil {
			return nil, err
		}
		coord, err := etcd.NewCoordinator(db, etcd.DefaultLeaseTTL)
		if err != nil {
			db.Close()
			return nil, err
		}
		a, err := startAppOn(db, coord, 2)
		if err != nil {
			coord.Close()
			return nil, err
		}
		a.coord = coord
		return a, a.login(ctx)
	}
	a, err := start()
	if err != nil {
		return nil, err
	}
	defer a.close()
	b, err := start()
	if err != nil {
		return nil, err
	}
	defer b.close()
	const id = "events"
	if err := seedServer(ctx, a.st, id, 3, "v1"); err != nil {
		return nil, err
	}
	srv, err := a.st.Server(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := a.st.ConfirmLaunch(ctx, id, srv.LaunchHash(), "bench"); err != nil { // its tools are offered
		return nil, err
	}
	tabs := map[string]*sseConn{}
	heard := map[string]chan time.Time{}
	for name, r := range map[string]*app{"A": a, "B": b} {
		tab, err := r.openSSE(ctx, 4096)
		if err != nil {
			return nil, err
		}
		defer tab.close()
		tabs[name] = tab
		ch := make(chan time.Time, 16)
		heard[name] = ch
		agent, _, err := r.mcpClientListening(ctx, true)
		if err != nil {
			return nil, err
		}
		defer agent.Close()
		agent.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == string(mcp.MethodNotificationToolsListChanged) {
				select {
				case ch <- time.Now():
				default:
				}
			}
		})
		if _, err := agent.ListTools(ctx, mcp.ListToolsRequest{}); err != nil { // the session has seen the offer
			return nil, err
		}
	}
	rounds := 60
	if cfg.quick {
		rounds = 3
	}
	tab, session := map[string]samples{}, map[string]samples{}
	for i := range rounds {
		// A tab: a rename on A, read off each replica's stream.
		name := fmt.Sprintf("round-%d", i)
		t0 := time.Now()
		if err := a.api(ctx, http.MethodPut, "/api/v1/servers/"+id, map[string]any{"name": name, "transport": "stdio", "command": "mcp-fixture",
			"default_policy": "ask"}, http.StatusOK, nil); err != nil {
			return nil, err
		}
		for r, c := range tabs {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			ev, err := c.waitFor(rctx, func(ev sseEvent) bool { return strings.Contains(ev.data, ">"+name+"<") })
			cancel()
			if err != nil {
				return nil, fmt.Errorf("the rename %s did not reach %s's tab: %w", name, r, err)
			}
			tab[r] = append(tab[r], ev.at.Sub(t0))
		}
		// An agent's session: a policy set on A (the tool leaves the
		// offer, or comes back), heard on each replica's session.
		// What the rename told the sessions (if anything) comes within
		// the background rebuild's pause; then the slate is clean.
		time.Sleep(300 * time.Millisecond)
		for _, ch := range heard {
			for len(ch) > 0 {
				<-ch
			}
		}
		p := []string{"deny", "allow"}[i%2]
		t0 = time.Now()
		if err := a.api(ctx, http.MethodPut, "/api/v1/servers/"+id+"/tools/tool_000/policy", map[string]any{"policy": p}, http.StatusOK, nil); err != nil {
			return nil, err
		}
		for r, ch := range heard {
			select {
			case at := <-ch:
				session[r] = append(session[r], at.Sub(t0))
			case <-time.After(10 * time.Second):
				return nil, fmt.Errorf("the policy change %d did not reach %s's MCP session as tools/list_changed", i, r)
			}
		}
	}
	fig := func(name string, got map[string]samples, q float64, target time.Duration) figure {
		v, base := got["B"].quantile(q), got["A"].quantile(q)
		f := figure{Name: name, Unit: "ms", Value: round3(ms(v)), Baseline: "the same change on A itself, same round", BaseVal: round3(ms(base)),
			Ratio: round3(float64(v) / float64(max1(base))), Pass: target == 0 || v <= target,
			Note: fmt.Sprintf("%d rounds; B p50 %.1f ms, p99 %.1f ms", len(got["B"]), ms(got["B"].median()), ms(got["B"].quantile(0.99)))}
		f.Target = "reported"
		if target > 0 {
			f.Target = fmt.Sprintf("≤ %s (idle machine)", target)
		}
		return f
	}
	return []figure{
		fig("A change on replica A → event on B's tab, p50", tab, 0.5, 0),
		fig("A change on replica A → event on B's tab, p99", tab, 0.99, 50*time.Millisecond),
		fig("A change on replica A → tools/list_changed on B's MCP session, p50", session, 0.5, 0),
		fig("A change on replica A → tools/list_changed on B's MCP session, p99", session, 0.99, 100*time.Millisecond),
	}, nil
}

// versus is the figure of etcd's median against bbolt's, passing when
// the ratio is at most max.
func versus(name string, times map[string]samples, max float64) figure {
	e, b := times["etcd"].median(), times["bbolt"].median()
	ratio := float64(e) / float64(max1(b))
	return figure{Name: name + ", etcd", Unit: "ms", Value: round3(ms(e)), Baseline: "bbolt, same run", BaseVal: round3(ms(b)),
		Ratio: round3(ratio), Target: fmt.Sprintf("≤ %g× bbolt", max), Pass: ratio <= max,
		Note: fmt.Sprintf("etcd p90 %.2f ms, bbolt p90 %.2f ms", ms(times["etcd"].quantile(0.9)), ms(times["bbolt"].quantile(0.9)))}
}

func max1(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Nanosecond
	}
	return d
}

// seedServer creates the server (unless it exists) and records a
// verification of n realistic tools at version v.
func seedServer(ctx context.Context, db store.Store, id string, n int, v string) error {
	s := store.Server{ID: id, Name: id, Transport: store.TransportStdio, Command: "mcp-fixture", DefaultPolicy: store.PolicyAsk, Enabled: true}
	if err := db.CreateServer(ctx, s); err != nil && err != store.ErrExists {
		return err
	}
	s, err := db.Server(ctx, id)
	if err != nil {
		return err
	}
	tools := make([]store.Tool, n)
	for i := range tools {
		tools[i] = benchTool(fmt.Sprintf("tool_%03d", i), v)
	}
	now := time.Now()
	return db.RecordSuccess(ctx, id, store.Verification{JobID: "bench-" + v, ConfigHash: s.ConfigHash(), StartedAt: now.Add(-time.Second),
		FinishedAt: now, ServerName: id, ServerVersion: v, Tools: tools})
}

// benchTool is a tool of about the size of a real one (a 300-byte
// description, three parameters), pinned as discovery pins.
func benchTool(name, version string) store.Tool {
	desc := name + " " + version + ": " + strings.Repeat("Looks up records by their fields and returns them sorted. ", 5)
	schema := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What to look for."},` +
		`"limit":{"type":"integer","minimum":1,"maximum":100},"sort":{"type":"string","enum":["asc","desc"]}},"required":["query"]}`)
	raw, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": schema})
	sum := sha256.Sum256(raw)
	return store.Tool{Name: name, Description: desc, InputSchema: schema, Raw: raw, Pin: hex.EncodeToString(sum[:])}
}
