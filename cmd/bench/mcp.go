//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

// mcpRuns are the repetitions of the mcp group's figures.
type mcpRuns struct {
	list       int // raw tools/list round trips per side
	clientList int // tools/list through mcp-go's client
	calls      int // tools/call per side
}

func mcpRunsFor(cfg *config) mcpRuns {
	if cfg.quick {
		return mcpRuns{list: 3, clientList: 1, calls: 5}
	}
	return mcpRuns{list: 200, clientList: 10, calls: 1000}
}

// mcpFigures measures the MCP endpoint for agents: tools/list of the
// seeded catalog without any upstream started, the cost a routed
// tools/call adds to a call made directly to the upstream, the cost of
// relaying what a server asks during a call (relayFigures), and how fast
// an ask call reaches the person (askFigures).
// Afterwards no process and no goroutine of the group may be left.
func mcpFigures(ctx context.Context, cfg *config) ([]figure, error) {
	if _, err := cfg.seededCatalog(ctx); err != nil { // before counting goroutines
		return nil, err
	}
	goroutines, children := runtime.NumGoroutine(), childProcesses()
	figs, err := mcpListFigures(ctx, cfg)
	if err != nil {
		return figs, err
	}
	calls, err := mcpCallFigures(ctx, cfg)
	if err != nil {
		return figs, err
	}
	figs = append(figs, calls...)
	relayed, err := relayFigures(ctx, cfg)
	if err != nil {
		return figs, err
	}
	figs = append(figs, relayed...)
	asks, err := askFigures(ctx, cfg)
	if err != nil {
		return figs, err
	}
	figs = append(figs, asks...)
	for _, pid := range childProcesses() {
		if !slices.Contains(children, pid) {
			return figs, fmt.Errorf("a child process (pid %d) was left running", pid)
		}
	}
	if n, err := settleGoroutines(goroutines); err != nil {
		return figs, fmt.Errorf("%d goroutines left", n)
	}
	return figs, nil
}

// mcpListFigures lists the seeded catalog (10 000 tools) through /mcp, as
// an agent's HTTP stack sees it (the figure with a target) and through
// mcp-go's client (information: the client's decoding dominates). No
// upstream server may be started by any of it.
func mcpListFigures(ctx context.Context, cfg *config) ([]figure, error) {
	cat, err := cfg.seededCatalog(ctx)
	if err != nil {
		return nil, err
	}
	// A private copy: the offer may need setting up below, and the
	// seeded catalog is shared with other groups.
	dir, err := os.MkdirTemp(cfg.dir, "mcp-list-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "switchboard.db")
	if err := copyFile(path, cat.path); err != nil {
		return nil, err
	}
	children := childProcesses()
	a, err := startApp(path, 2)
	if err != nil {
		return nil, err
	}
	defer a.close()
	fixed, err := offerEverything(a.db)
	if err != nil {
		return nil, fmt.Errorf("set up the offer: %w", err)
	}
	if err := a.noUpstreams(ctx, children); err != nil {
		return nil, err
	}

	c, initRes, err := a.mcpClient(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	session := c.GetSessionId()
	if session == "" {
		return nil, errors.New("/mcp: initialize gave no session id")
	}

	runs := mcpRunsFor(cfg)
	raw, answer, err := rawListFigure(ctx, a, session, initRes.ProtocolVersion, cat.tools, runs.list)
	if err != nil {
		return nil, err
	}
	if fixed > 0 {
		raw.Note += fmt.Sprintf("; the bench enabled, confirmed or set to ask %d servers and tools the seeding left un-offered", fixed)
	}
	figs := []figure{raw}

	var s samples
	for i := -1; i < runs.clientList; i++ {
		t0 := time.Now()
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		d := time.Since(t0)
		if err != nil {
			return figs, fmt.Errorf("mcp-go tools/list: %w", err)
		}
		if len(res.Tools) != cat.tools {
			return figs, fmt.Errorf("mcp-go tools/list: %d tools, want %d", len(res.Tools), cat.tools)
		}
		if i >= 0 {
			s = append(s, d)
		}
	}
	f := figure{
		Name: fmt.Sprintf("tools/list via /mcp, %d tools, mcp-go client.ListTools p50", cat.tools), Unit: "ms",
		Value: ms(s.median()), Baseline: "raw POST above", BaseVal: raw.Value,
		Target: "none (client decode)", Pass: true,
	}
	f.Ratio = f.Value / f.BaseVal
	// The same answer's bytes decoded as mcp-go's client decodes them.
	var decode samples
	for range max(1, runs.clientList) {
		var res struct {
			Result mcp.ListToolsResult `json:"result"`
		}
		t0 := time.Now()
		err := json.Unmarshal(answer, &res)
		decode = append(decode, time.Since(t0))
		if err != nil || len(res.Result.Tools) != cat.tools {
			return figs, fmt.Errorf("decode tools/list into mcp.ListToolsResult: %d tools, %v", len(res.Result.Tools), err)
		}
	}
	f.Note = fmt.Sprintf("information (client decode): json.Unmarshal of the answer into mcp.ListToolsResult alone takes %s; median of %d",
		formatValue(ms(decode.median()), "ms"), len(s))
	figs = append(figs, f)

	if err := a.noUpstreams(ctx, children); err != nil {
		return figs, err
	}
	return figs, nil
}

// rawListFigure times tools/list as an agent's own HTTP stack does it:
// POST /mcp with the session's headers and the JSON-RPC body, the whole
// body read, checked as JSON and its tools counted; against the same
// bytes served from memory by a bare net/http handler on loopback, the
// two alternated.
func rawListFigure(ctx context.Context, a *app, session, protocol string, want, runs int) (figure, []byte, error) {
	u := a.base + "/mcp"
	headers := http.Header{
		"Authorization":        {"Bearer " + benchMCPToken},
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Session-Id":       {session},
		"Mcp-Protocol-Version": {protocol},
	}
	ours := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer ours.CloseIdleConnections()
	id := 1000
	post := func(c *http.Client, u string) (time.Duration, []byte, error) {
		id++
		body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/list","params":{}}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Header = headers.Clone()
		t0 := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return 0, nil, err
		}
		data, err := io.ReadAll(resp.Body)
		took := time.Since(t0) // to the last byte; the client's own checks follow, untimed
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("POST %s tools/list: %d: %.200s", u, resp.StatusCode, data)
		}
		if err == nil && !json.Valid(data) {
			err = fmt.Errorf("POST %s tools/list: the answer is not JSON: %.200s", u, data)
		}
		// Every offered tool has an input schema (the offer adds one where
		// the server sent none), and the offer's JSON is canonical.
		if n := bytes.Count(data, []byte(`"inputSchema":`)); err == nil && n != want {
			err = fmt.Errorf("POST %s tools/list: %d tools, want %d", u, n, want)
		}
		return took, data, err
	}

	_, first, err := post(ours, u)
	if err != nil {
		return figure{}, nil, err
	}
	var answer struct {
		ID     int `json:"id"`
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(first, &answer); err != nil {
		return figure{}, nil, fmt.Errorf("tools/list answer: %w", err)
	}
	if answer.ID != id || len(answer.Result.Tools) != want {
		return figure{}, nil, fmt.Errorf("tools/list answer: id %d, %d tools; want id %d, %d tools", answer.ID, len(answer.Result.Tools), id, want)
	}
	for _, t := range answer.Result.Tools {
		if !strings.Contains(t.Name, store.AgentSeparator) {
			return figure{}, nil, fmt.Errorf("tools/list answer: tool %q is not named server__tool", t.Name)
		}
	}
	base, closeBase, err := serveBytes(first)
	if err != nil {
		return figure{}, nil, err
	}
	defer closeBase()
	bare := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer bare.CloseIdleConnections()

	var so, sb samples
	for i := -1; i < runs; i++ {
		// Alternate which side goes first, so that neither always runs
		// while the other's garbage is being collected.
		first, second := ours, bare
		firstURL, secondURL := u, base
		if i%2 != 0 {
			first, second, firstURL, secondURL = second, first, secondURL, firstURL
		}
		d1, _, err := post(first, firstURL)
		if err != nil {
			return figure{}, nil, err
		}
		d2, _, err := post(second, secondURL)
		if err != nil {
			return figure{}, nil, err
		}
		if i%2 != 0 {
			d1, d2 = d2, d1
		}
		if i >= 0 {
			so, sb = append(so, d1), append(sb, d2)
		}
	}

	// Where the time goes: the dashboard's own share (the request served
	// in process, the body written nowhere), and the client's JSON check
	// of the bytes alone.
	var server, check samples
	for i := -1; i < runs; i++ {
		id++
		body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/list","params":{}}`
		r, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
		r.Header = headers.Clone()
		w := &discardWriter{header: http.Header{}}
		t0 := time.Now()
		a.web.ServeHTTP(w, r)
		d := time.Since(t0)
		if w.status != http.StatusOK || w.n < len(first)-16 {
			return figure{}, nil, fmt.Errorf("tools/list in process: %d, %d bytes", w.status, w.n)
		}
		t0 = time.Now()
		ok := json.Valid(first) && bytes.Count(first, []byte(`"inputSchema":`)) == want
		dc := time.Since(t0)
		if !ok {
			return figure{}, nil, errors.New("the tools/list answer does not check")
		}
		if i >= 0 {
			server, check = append(server, d), append(check, dc)
		}
	}
	f := figure{
		Name: fmt.Sprintf("tools/list via /mcp, %d tools, no upstream started, p50 (POST → last byte received; the JSON is checked after)", want), Unit: "ms",
		Value: ms(so.median()), Baseline: "same bytes from memory", BaseVal: ms(sb.median()),
		Target: "p50 ≤ 20 ms; 0 upstreams",
	}
	f.Ratio = f.Value / f.BaseVal
	f.Pass = f.Value <= 20
	f.Note = fmt.Sprintf("%d KiB; median of %d; p99 %.1f ms; of it: server time in process %s, the client's JSON check alone %s",
		len(first)/1024, runs, ms(so.quantile(0.99)), formatValue(ms(server.median()), "ms"), formatValue(ms(check.median()), "ms"))
	return f, first, nil
}

// discardWriter is an http.ResponseWriter that keeps the status and
// counts the body's bytes.
type discardWriter struct {
	header http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *discardWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += len(b)
	return len(b), nil
}

// offerEverything makes every stored server and tool one the endpoint
// offers (enabled, its launch confirmed, tools allow or ask), where the
// seeding did not already, and says how many it had to change.
func offerEverything(db *bolt.DB) (int, error) {
	ctx := context.Background()
	fixed := 0
	sums, err := db.Summaries(ctx)
	if err != nil {
		return 0, err
	}
	for _, sum := range sums {
		srv := sum.Server
		if !srv.Enabled {
			srv.Enabled = true
			if err := db.UpdateServer(ctx, srv); err != nil {
				return fixed, err
			}
			fixed++
		}
		if !srv.LaunchConfirmedNow() {
			if err := db.ConfirmLaunch(ctx, srv.ID, srv.LaunchHash(), ""); err != nil {
				return fixed, err
			}
			fixed++
		}
	}
	tools, err := db.AllTools(ctx)
	if err != nil {
		return fixed, err
	}
	for _, t := range tools {
		if t.Effective != store.PolicyAllow && t.Effective != store.PolicyAsk || t.Pin != t.Policy.Pin {
			if _, err := db.SetPolicy(ctx, t.Ref(), store.PolicyAsk, "bench"); err != nil {
				return fixed, err
			}
			fixed++
		}
	}
	return fixed, nil
}

// mcpClient connects an agent to /mcp with mcp-go's Streamable HTTP
// client, asking for the newest session-based protocol version (the
// endpoint speaks no other), so no server/discover probe is sent.
func (a *app) mcpClient(ctx context.Context, opts ...client.ClientOption) (*client.Client, *mcp.InitializeResult, error) {
	return a.mcpClientListening(ctx, false, opts...)
}

// mcpClientListening is mcpClient, with the session's GET stream open
// if listen, on which the server's notifications come between requests.
func (a *app) mcpClientListening(ctx context.Context, listen bool, opts ...client.ClientOption) (*client.Client, *mcp.InitializeResult, error) {
	topts := []transport.StreamableHTTPCOption{transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + benchMCPToken})}
	if listen {
		//lint:ignore SA1019 the bench's agent speaks 2025-11-25, which hears notifications on the GET stream
		topts = append(topts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(a.base+"/mcp", topts...)
	if err != nil {
		return nil, nil, err
	}
	c := client.NewClient(tr, opts...)
	if err := c.Start(ctx); err != nil {
		c.Close()
		return nil, nil, err
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "bench-agent", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("/mcp initialize: %w", err)
	}
	return c, res, nil
}

// upstreamJSON is one server running for calls, as GET
// /api/v1/upstreams lists it.
type upstreamJSON struct {
	ServerID string `json:"server_id"`
	Calls    int    `json:"calls"`
}

// runningUpstreams lists the servers the dashboard runs for calls.
func (a *app) runningUpstreams(ctx context.Context) ([]upstreamJSON, error) {
	var out struct {
		Upstreams []upstreamJSON `json:"upstreams"`
	}
	err := a.api(ctx, http.MethodGet, "/api/v1/upstreams", nil, http.StatusOK, &out)
	return out.Upstreams, err
}

// noUpstreams fails if the dashboard runs an upstream server, or if this
// process has a child that was not among before.
func (a *app) noUpstreams(ctx context.Context, before []int) error {
	ups, err := a.runningUpstreams(ctx)
	if err != nil {
		return err
	}
	if len(ups) > 0 {
		return fmt.Errorf("an upstream server was started: %+v", ups)
	}
	for _, pid := range childProcesses() {
		if !slices.Contains(before, pid) {
			return fmt.Errorf("a child process (pid %d) was started", pid)
		}
	}
	return nil
}

// mcpCallFigure times tools/call of a trivial fixture tool through /mcp
// (its upstream already running) against the same call made directly to
// a fixture process of its own over stdio, with mcp-go on both sides,
// the two alternated.
// mcpCallFigures times a routed tools/call through /mcp against the same
// call made directly to the fixture, and against the same call through
// a bare mcp-go relay (an mcp-go HTTP server whose one tool calls the
// fixture through an mcp-go stdio client): what relaying itself costs,
// the limit of what Switchboard adds beyond it.
func mcpCallFigures(ctx context.Context, cfg *config) ([]figure, error) {
	a, err := startFreshApp(cfg, "mcp-call", 2)
	if err != nil {
		return nil, err
	}
	defer a.close()
	const serverID, toolName = "callfix", "tool_000"
	fixtureArgs := []string{"-tools", "5"}
	if err := a.addServer(ctx, serverID, cfg.bins.fixtureCmd(fixtureArgs...)); err != nil {
		return nil, err
	}
	if _, err := a.verifyAll(ctx, []string{serverID}); err != nil { // confirms the launch
		return nil, err
	}
	var tools struct {
		Tools []struct {
			Name      string `json:"name"`
			AgentName string `json:"agent_name"`
		} `json:"tools"`
	}
	if err := a.api(ctx, http.MethodGet, "/api/v1/servers/"+serverID+"/tools", nil, http.StatusOK, &tools); err != nil {
		return nil, err
	}
	agentName := ""
	for _, t := range tools.Tools {
		if t.Name == toolName {
			agentName = t.AgentName
		}
	}
	if agentName == "" {
		return nil, fmt.Errorf("%s has no tool %s with an agent name: %+v", serverID, toolName, tools.Tools)
	}
	if err := a.api(ctx, http.MethodPut, "/api/v1/servers/"+serverID+"/tools/"+toolName+"/policy",
		map[string]any{"policy": store.PolicyAllow}, http.StatusOK, nil); err != nil {
		return nil, err
	}

	agent, _, err := a.mcpClient(ctx)
	if err != nil {
		return nil, err
	}
	defer agent.Close()
	direct, err := startDirectFixture(ctx, cfg.bins.fixture, fixtureArgs)
	if err != nil {
		return nil, err
	}
	defer direct.Close()

	args := map[string]any{"query": "bench", "limit": 3}
	want := toolName + " " // the fixture echoes the tool's name and the arguments
	call := func(c *client.Client, name string) (time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		t0 := time.Now()
		res, err := c.CallTool(cctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
		d := time.Since(t0)
		if err != nil {
			return 0, fmt.Errorf("tools/call %s: %w", name, err)
		}
		if text := resultText(res); res.IsError || !strings.HasPrefix(text, want) {
			return 0, fmt.Errorf("tools/call %s: error %v, %q; want %q…", name, res.IsError, text, want)
		}
		return d, nil
	}

	relayUp, err := startDirectFixture(ctx, cfg.bins.fixture, fixtureArgs)
	if err != nil {
		return nil, err
	}
	defer relayUp.Close()
	relay, stopRelay, err := startBareRelay(ctx, relayUp, toolName)
	if err != nil {
		return nil, err
	}
	defer stopRelay()

	// The first call through /mcp starts the upstream; then every side
	// is warmed alike.
	cold, err := call(agent, agentName)
	if err != nil {
		return nil, err
	}
	sides := []func() (time.Duration, error){
		func() (time.Duration, error) { return call(agent, agentName) },
		func() (time.Duration, error) { return call(direct, toolName) },
		func() (time.Duration, error) { return call(relay, toolName) },
	}
	runs := mcpRunsFor(cfg).calls
	took, err := alternate(sides, runs)
	if err != nil {
		return nil, err
	}
	via, bare, relayed := took[0], took[1], took[2]

	ups, err := a.runningUpstreams(ctx)
	if err != nil {
		return nil, err
	}
	if len(ups) != 1 || ups[0].ServerID != serverID || ups[0].Calls < runs {
		return nil, fmt.Errorf("upstreams after %d calls: %+v; want %s alone, with the calls", runs, ups, serverID)
	}
	f := figure{
		Name: "tools/call via /mcp of a trivial fixture tool (upstream running), p50", Unit: "ms",
		Value: ms(via.median()), Baseline: "direct stdio mcp-go client", BaseVal: ms(bare.median()),
		Target: "≤ +1 ms",
	}
	f.Ratio = f.Value / f.BaseVal
	f.Pass = f.Value-f.BaseVal <= 1
	f.Note = fmt.Sprintf("+%.2f ms; median of %d each; p99 %.2f ms vs %.2f ms; first call (starts the upstream) %.0f ms",
		f.Value-f.BaseVal, runs, ms(via.quantile(0.99)), ms(bare.quantile(0.99)), ms(cold))
	r := figure{
		Name: "tools/call via /mcp over a bare mcp-go relay to the same upstream, p50", Unit: "ms",
		Value: ms(via.median()), Baseline: "bare mcp-go relay (HTTP server, one tool, stdio client)", BaseVal: ms(relayed.median()),
		Target: fmt.Sprintf("≤ +%.2f ms", relayMargin),
	}
	r.Ratio = r.Value / r.BaseVal
	r.Pass = r.Value-r.BaseVal <= relayMargin
	r.Note = fmt.Sprintf("%+.3f ms; median of %d each; p99 %.2f ms vs %.2f ms", r.Value-r.BaseVal, runs, ms(via.quantile(0.99)), ms(relayed.quantile(0.99)))
	return []figure{f, r}, nil
}

// alternate warms each side up (5 rounds), then times each runs times,
// in rounds that each start with the next side, so that none always
// follows another; took[i] is side i's.
func alternate(sides []func() (time.Duration, error), runs int) (took []samples, err error) {
	for range 5 {
		for _, side := range sides {
			if _, err := side(); err != nil {
				return nil, err
			}
		}
	}
	took = make([]samples, len(sides))
	for i := range runs {
		for j := range sides {
			k := (i + j) % len(sides)
			d, err := sides[k]()
			if err != nil {
				return nil, err
			}
			took[k] = append(took[k], d)
		}
	}
	return took, nil
}

// relayMargin is what a routed call may add to a bare relay's, in ms:
// the token, the policy, the audit record, per call.
const relayMargin = 0.05

// startBareRelay serves, on a loopback port, an mcp-go streamable HTTP
// server with one tool, name, whose handler makes the same call on
// upstream: the least a relay does. It returns a client of it,
// initialized as the bench's agent is, and what stops both.
func startBareRelay(ctx context.Context, upstream *client.Client, name string) (*client.Client, func(), error) {
	s := server.NewMCPServer("bare-relay", "1")
	s.AddTool(mcp.Tool{Name: name, RawInputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return upstream.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: req.Params.Arguments}})
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	hs := &http.Server{Handler: server.NewStreamableHTTPServer(s)}
	served := make(chan struct{})
	go func() { defer close(served); hs.Serve(ln) }() // ends with Close below
	stopServer := func() { hs.Close(); <-served }
	tr, err := transport.NewStreamableHTTP("http://" + ln.Addr().String() + "/mcp")
	if err != nil {
		stopServer()
		return nil, nil, err
	}
	c := client.NewClient(tr)
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "bench-agent", Version: "1"}
	err = c.Start(ctx)
	if err == nil {
		_, err = c.Initialize(ctx, init)
	}
	if err != nil {
		c.Close()
		stopServer()
		return nil, nil, fmt.Errorf("bare relay: %w", err)
	}
	return c, func() { c.Close(); stopServer() }, nil
}

// startDirectFixture starts the fixture as an agent's own stdio client
// would, connected and initialized as Switchboard's upstream sessions
// are (same discover probe timeout, no version asked for). The child
// gets a minimal environment, not the bench's. Close ends it.
func startDirectFixture(ctx context.Context, fixture string, args []string, opts ...client.ClientOption) (*client.Client, error) {
	env := []string{}
	for _, k := range []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	tr := transport.NewStdioWithOptions(fixture, env, args,
		transport.WithCommandFunc(func(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			cmd.Env = env
			return cmd, nil
		}))
	c := client.NewClient(tr, append([]client.ClientOption{client.WithDiscoverTimeout(500 * time.Millisecond)}, opts...)...)
	if err := c.Start(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("start the fixture: %w", err)
	}
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "bench-direct", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize the fixture: %w", err)
	}
	return c, nil
}

// resultText joins the text contents of a tool result.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
