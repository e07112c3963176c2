//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/switchboard-dev/switchboard/store/bolt"
)

const (
	// The start-up targets (issue 24): serving within startupRatio of
	// the empty database's start, the whole catalog served through /mcp
	// within catalogRatio, and memory at most memoryGrowth over the
	// empty database's once warmed.
	startupRatio = 5
	catalogRatio = 8
	memoryGrowth = 30 << 20

	startTimeout = 10 * time.Second // exec to serving, before giving up
	stopTimeout  = 5 * time.Second  // SIGTERM to exit, before SIGKILL
	settleTime   = time.Second      // after warming, before reading RSS
	warmRounds   = 3
)

// processFigures measures the switchboard binary as a person runs it: how
// long it takes to serve with the seeded catalog stored, and how much
// more memory it holds for that catalog once warmed, each against an
// empty database in the same run. Every process gets a private copy of
// its database (serve writes to the file it opens) and a minimal
// environment, and is stopped with SIGTERM and checked gone.
func processFigures(ctx context.Context, cfg *config) ([]figure, error) {
	cat, err := cfg.seededCatalog(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(cfg.dir, "process-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	empty := filepath.Join(dir, "empty.db")
	if err := createEmptyDB(empty); err != nil {
		return nil, err
	}
	start, served, crashed, err := startupFigures(ctx, cfg, dir, cat, empty)
	if err != nil {
		return nil, err
	}
	mem, err := memoryFigure(ctx, cfg, dir, cat, empty)
	if err != nil {
		return []figure{start, served, crashed}, err
	}
	return []figure{start, served, crashed, mem}, nil
}

// createEmptyDB makes the baseline database as switchboard itself makes
// it on first start, so both sides open an existing file.
func createEmptyDB(path string) error {
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		return err
	}
	return db.Close()
}

// How a process is started on its copy of a database.
type launchKind int

const (
	// serveClosed runs switchboard on a database as its last run closed
	// it, seal included: the daily start.
	serveClosed launchKind = iota
	// serveCrashed runs switchboard on a database without its seal, as
	// after a crash: it checks the whole file in a child first.
	serveCrashed
	// plainServer runs a Go HTTP server that reads the whole file, then
	// serves /healthz (runFileServer): the least a start that reads the
	// database can take.
	plainServer
)

// startupFigures times StartupRuns starts of each kind, alternating them
// so that drift on a shared machine hits all alike: to serving (GET
// /healthz) and to the whole catalog served (a tools/list through /mcp
// answered with every tool), each against the empty database's start; and
// to serving after a crash, against the plain server that reads the file.
func startupFigures(ctx context.Context, cfg *config, dir string, cat *seeded, empty string) (start, served, crashed figure, err error) {
	var full, bare, listed, afterCrash, plain samples
	for range cfg.StartupRuns {
		for _, side := range []struct {
			src  string
			kind launchKind
			into *samples
		}{{cat.path, serveClosed, &full}, {empty, serveClosed, &bare}, {cat.path, plainServer, &plain}, {cat.path, serveCrashed, &afterCrash}} {
			p, d, err := launch(ctx, cfg, dir, side.src, side.kind)
			if err != nil {
				return start, served, crashed, err
			}
			*side.into = append(*side.into, d)
			if side.into == &full {
				body, err := p.listTools(ctx)
				at := time.Since(p.started) // the last byte received; the JSON is checked after
				if err == nil {
					err = checkToolList(body, cat.tools)
				}
				if err != nil {
					p.stop()
					return start, served, crashed, err
				}
				listed = append(listed, at)
			}
			if err := p.stop(); err != nil {
				return start, served, crashed, err
			}
		}
	}
	base, limit := ms(bare.median()), ms(plain.median())
	start = figure{
		Name: fmt.Sprintf("Start-up to serving (exec → GET /healthz 200), %d tools stored", cat.tools),
		Unit: "ms", Value: ms(full.median()), Baseline: "empty database", BaseVal: base,
		Target: fmt.Sprintf("≤ %d× the empty database", startupRatio),
		Note: fmt.Sprintf("median of %d; max %.1f ms; database file %.1f MiB; limit, a plain Go server that reads the whole file first: %.1f ms",
			len(full), ms(full.quantile(1)), mib(fileSize(cat.path)), limit),
	}
	start.Ratio = start.Value / base
	start.Pass = start.Ratio <= startupRatio
	served = figure{
		Name: fmt.Sprintf("Start-up to the whole catalog served (exec → tools/list via /mcp with all %d tools, last byte received)", cat.tools),
		Unit: "ms", Value: ms(listed.median()), Baseline: "empty database, to serving", BaseVal: base,
		Target: fmt.Sprintf("≤ %d× the empty database", catalogRatio),
		Note:   fmt.Sprintf("median of %d; max %.1f ms", len(listed), ms(listed.quantile(1))),
	}
	served.Ratio = served.Value / base
	served.Pass = served.Ratio <= catalogRatio
	crashed = figure{
		Name: fmt.Sprintf("Start-up to serving after a crash (the full integrity check in a child first), %d tools stored", cat.tools),
		Unit: "ms", Value: ms(afterCrash.median()), Baseline: "a plain Go server that reads the whole file first", BaseVal: limit,
		Target: "none (only after a crash, or a file changed while closed)", Pass: true,
		Note: fmt.Sprintf("median of %d; max %.1f ms", len(afterCrash), ms(afterCrash.quantile(1))),
	}
	crashed.Ratio = crashed.Value / limit
	return start, served, crashed, nil
}

// runFileServer is `SWITCHBOARD_BENCH_ROLE=file-server bench FILE`: it
// reads FILE whole, then serves GET /healthz on a loopback port it
// prints as switchboard does ("Open http://…"), until SIGTERM.
func runFileServer(ctx context.Context, args []string) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: file-server FILE")
		return 2
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "ok, %d bytes read\n", len(data))
	})}
	fmt.Printf("Open http://%s/\n", ln.Addr())
	go func() { <-ctx.Done(); srv.Close() }() // ends with ctx
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// listTools lists the tools through /mcp as a 2026-07-28 client does, in
// one request, and returns the answer's body once it is all received.
func (p *serverProc) listTools(ctx context.Context) ([]byte, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/mcp", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+benchMCPToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("tools/list: status %d", resp.StatusCode)
	}
	return io.ReadAll(resp.Body)
}

// checkToolList checks that a tools/list answer lists want tools.
func checkToolList(body []byte, want int) error {
	var out struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if n := len(out.Result.Tools); n != want {
		return fmt.Errorf("tools/list after start-up: %d tools, want %d", n, want)
	}
	return nil
}

// memoryFigure runs switchboard on both databases at once, warms them
// identically — the catalog (which the server renders and keeps), the
// server list, the servers page and a detail page, as an agent and a
// person first use it — lets them settle and compares their resident
// memory. A process's garbage cannot be collected from outside, so the
// figure includes whatever the Go runtime holds at that moment, as a
// person's `ps` would show it. An idle server does not collect again
// until the runtime's forced GC two minutes on, so waiting longer than
// settleTime changes nothing short of that.
func memoryFigure(ctx context.Context, cfg *config, dir string, cat *seeded, empty string) (figure, error) {
	bare, _, err := launch(ctx, cfg, dir, empty, serveClosed)
	if err != nil {
		return figure{}, err
	}
	defer bare.stop()
	full, _, err := launch(ctx, cfg, dir, cat.path, serveClosed)
	if err != nil {
		return figure{}, err
	}
	defer full.stop()
	if err := bare.warm(ctx, http.StatusNotFound); err != nil {
		return figure{}, fmt.Errorf("warm the empty server: %w", err)
	}
	if err := full.warm(ctx, http.StatusOK); err != nil {
		return figure{}, fmt.Errorf("warm the seeded server: %w", err)
	}
	select {
	case <-time.After(settleTime):
	case <-ctx.Done():
		return figure{}, ctx.Err()
	}
	memBare, err := readMemory(bare.pid())
	if err != nil {
		return figure{}, err
	}
	memFull, err := readMemory(full.pid())
	if err != nil {
		return figure{}, err
	}
	if err := errors.Join(bare.stop(), full.stop()); err != nil {
		return figure{}, err
	}

	growth := memFull.rss - memBare.rss
	f := figure{
		Name: fmt.Sprintf("RSS growth with %d tools stored (warmed)", cat.tools),
		Unit: "MiB", Value: mib(growth),
		Baseline: "stored bytes", BaseVal: mib(cat.storedBytes),
		Target: fmt.Sprintf("growth ≤ %.0f MiB over the empty database", mib(memoryGrowth)),
	}
	f.Ratio = float64(growth) / float64(cat.storedBytes)
	f.Pass = growth <= memoryGrowth
	f.Note = fmt.Sprintf("RSS seeded %s, empty %s", memFull, memBare)
	return f, nil
}

// procMemory is a process's memory from /proc/PID/status, in bytes.
type procMemory struct {
	rss, hwm, anon, file int64 // VmRSS, VmHWM, RssAnon, RssFile
}

// String shows the resident size with its split: the file-backed part
// is mostly the database's memory map, the anonymous part Go's heap.
func (m procMemory) String() string {
	return fmt.Sprintf("%.1f MiB (anon %.1f, file %.1f; peak %.1f)", mib(m.rss), mib(m.anon), mib(m.file), mib(m.hwm))
}

// readMemory reads a process's resident sizes. Linux only, as is the
// figure.
func readMemory(pid int) (procMemory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMemory{}, err
	}
	var m procMemory
	fields := map[string]*int64{"VmRSS:": &m.rss, "VmHWM:": &m.hwm, "RssAnon:": &m.anon, "RssFile:": &m.file}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[2] != "kB" || fields[f[0]] == nil {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return procMemory{}, fmt.Errorf("/proc/%d/status: %s: %w", pid, f[0], err)
		}
		*fields[f[0]] = kb << 10
		delete(fields, f[0])
	}
	if len(fields) > 0 {
		return procMemory{}, fmt.Errorf("/proc/%d/status lacks the memory fields", pid)
	}
	return m, nil
}

// serverProc is a running `switchboard serve`, in a process group of its
// own so that nothing it starts can outlive it unnoticed.
type serverProc struct {
	cmd    *exec.Cmd
	dir    string // its database copy and home, removed when it stops
	base   string // http://127.0.0.1:PORT
	client *http.Client
	stderr bytes.Buffer // read only once it exited

	started time.Time     // just before exec
	exited  chan struct{} // closed when Wait returned
	waitErr error

	stopOnce sync.Once
	stopErr  error
}

// launch starts a process of kind on a private copy of src — `switchboard
// serve`, or the plain file server — and returns once it answers GET
// /healthz with 200, with the time from just before exec to that answer.
// The copy is made before the clock starts, so it is in the page cache,
// as a database used daily is.
func launch(ctx context.Context, cfg *config, dir, src string, kind launchKind) (*serverProc, time.Duration, error) {
	pdir, err := os.MkdirTemp(dir, "run-")
	if err != nil {
		return nil, 0, err
	}
	db, home := filepath.Join(pdir, "switchboard.db"), filepath.Join(pdir, "home")
	err = errors.Join(copyFile(db, src), os.Mkdir(home, 0o700))
	if kind == serveClosed && err == nil {
		err = copyFile(db+".seal", src+".seal")
	}
	if err != nil {
		os.RemoveAll(pdir)
		return nil, 0, err
	}
	cmd := exec.CommandContext(ctx, cfg.bins.switchboard, "serve", "-addr", "127.0.0.1:0", "-db", db)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SWITCHBOARD_TOKEN=" + benchToken, "SWITCHBOARD_MCP_TOKEN=" + benchMCPToken}
	if kind == plainServer {
		self, err := os.Executable()
		if err != nil {
			os.RemoveAll(pdir)
			return nil, 0, err
		}
		cmd = exec.CommandContext(ctx, self, db)
		cmd.Env = []string{roleEnv + "=" + roleFileServer}
	}
	cmd.Dir = home
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	found := make(chan string, 1)
	cmd.Stdout = &openLineWriter{found: found}
	jar, _ := cookiejar.New(nil)
	p := &serverProc{
		cmd: cmd, dir: pdir, exited: make(chan struct{}),
		client: &http.Client{
			Jar:           jar,
			Transport:     &http.Transport{},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	cmd.Stderr = &p.stderr

	t0 := time.Now()
	p.started = t0
	if err := cmd.Start(); err != nil {
		os.RemoveAll(pdir)
		return nil, 0, fmt.Errorf("start switchboard: %w", err)
	}
	go func() { p.waitErr = cmd.Wait(); close(p.exited) }()
	err = p.awaitServing(ctx, found)
	d := time.Since(t0)
	if err != nil {
		// stop ends it (and its group) whatever state it is in; what it
		// would report is this failure again.
		p.stop()
		return nil, 0, fmt.Errorf("switchboard did not start: %w; stderr: %s", err, p.stderr.String())
	}
	return p, d, nil
}

// awaitServing waits for the "Open http://..." line, then requests
// /healthz until it answers 200. serve prints the line once its listener
// is bound and being served, so the first request is normally the one
// answered (connections wait in the listen backlog); a failed one is
// retried every millisecond until startTimeout.
func (p *serverProc) awaitServing(ctx context.Context, found <-chan string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	select {
	case p.base = <-found:
	case <-p.exited:
		return fmt.Errorf("it exited: %v", p.waitErr)
	case <-ctx.Done():
		return fmt.Errorf("no %q line on its output: %w", "Open http://", ctx.Err())
	}
	for {
		err := p.get(ctx, "/healthz", false, http.StatusOK)
		if err == nil {
			return nil
		}
		select {
		case <-time.After(time.Millisecond):
		case <-p.exited:
			return fmt.Errorf("it exited: %v", p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("GET /healthz: %w", err)
		}
	}
}

// openLineWriter is the server's standard output: it sends, once, the
// base URL of the "Open http://HOST:PORT/login?code=..." line.
type openLineWriter struct {
	partial []byte
	found   chan<- string
}

func (w *openLineWriter) Write(b []byte) (int, error) {
	w.partial = append(w.partial, b...)
	for {
		line, rest, ok := bytes.Cut(w.partial, []byte("\n"))
		if !ok {
			return len(b), nil
		}
		w.partial = rest
		link, isOpen := strings.CutPrefix(string(line), "Open ")
		if !isOpen || w.found == nil {
			continue
		}
		if u, err := url.Parse(link); err == nil {
			w.found <- u.Scheme + "://" + u.Host
			w.found = nil
		}
	}
}

// warm makes the server do what an agent and a person first do, a few
// times: read the catalog and the server list through the API, log in,
// open the servers page and srv-0's detail page (detail answers 200 on
// the seeded database, 404 on the empty one).
func (p *serverProc) warm(ctx context.Context, detail int) error {
	if err := p.login(ctx); err != nil {
		return err
	}
	for range warmRounds {
		for _, r := range []struct {
			path string
			api  bool
			want int
		}{
			{"/api/v1/tools", true, http.StatusOK},
			{"/api/v1/servers", true, http.StatusOK},
			{"/", false, http.StatusOK},
			{"/servers/srv-0", false, detail},
		} {
			if err := p.get(ctx, r.path, r.api, r.want); err != nil {
				return err
			}
		}
	}
	return nil
}

// get requests path (with the bearer token for the API, the session
// cookie otherwise), reads the whole body and checks the status.
func (p *serverProc) get(ctx context.Context, path string, api bool, want int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return err
	}
	if api {
		req.Header.Set("Authorization", "Bearer "+benchToken)
	}
	return p.do(req, want)
}

// login starts a browser session, as the login form does.
func (p *serverProc) login(ctx context.Context) error {
	form := url.Values{"token": {benchToken}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/login", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return p.do(req, http.StatusSeeOther)
}

func (p *serverProc) do(req *http.Request, want int) error {
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d, want %d", req.Method, req.URL.Path, resp.StatusCode, want)
	}
	return nil
}

func (p *serverProc) pid() int { return p.cmd.Process.Pid }

// stop ends the server as a service manager would — SIGTERM, then after
// stopTimeout SIGKILL to its whole group — and removes its files. It
// reports an unclean exit and anything of its group still running.
// Later calls return the first one's result, so a deferred stop covers
// every failure path.
func (p *serverProc) stop() error {
	p.stopOnce.Do(func() {
		p.stopErr = p.terminate()
		p.client.CloseIdleConnections()
		os.RemoveAll(p.dir)
	})
	return p.stopErr
}

func (p *serverProc) terminate() error {
	var err error
	select {
	case <-p.exited:
		err = fmt.Errorf("switchboard exited before it was stopped: %v", p.waitErr)
	default:
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
			if p.waitErr != nil {
				err = fmt.Errorf("switchboard did not exit cleanly on SIGTERM: %v: %s", p.waitErr, p.stderr.String())
			}
		case <-time.After(stopTimeout):
			syscall.Kill(-p.pid(), syscall.SIGKILL)
			<-p.exited
			err = fmt.Errorf("switchboard did not exit within %v of SIGTERM", stopTimeout)
		}
	}
	// The group (its id is the server's pid) must be empty now.
	if gone := syscall.Kill(-p.pid(), 0); !errors.Is(gone, syscall.ESRCH) {
		syscall.Kill(-p.pid(), syscall.SIGKILL)
		err = errors.Join(err, fmt.Errorf("processes of switchboard's group %d outlived it", p.pid()))
	}
	return err
}

// copyFile copies src to a new file dst, synced so that the copy's
// write-back does not land inside a timed start.
func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Sync(), out.Close())
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
