// Package discovery talks to upstream MCP servers: it starts stdio
// servers in their own process group, connects to remote ones, runs the
// initialize handshake and walks tools/list, all under deadlines and byte
// limits, and runs verifications as background jobs.
package discovery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Phases of a verification, in order. The terminal outcomes are the job
// statuses (success, failed, timeout, cancelled).
const (
	PhaseQueued       = "queued"
	PhaseStarting     = "starting"
	PhaseInitializing = "initializing"
	PhaseListing      = "listing"
	PhaseSaving       = "saving"
)

// Transports.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportSSE   = "sse"
)

// Target is what to verify: a stdio command or a remote URL.
type Target struct {
	Transport string
	Command   string
	Args      []string
	Env       map[string]string
	Cwd       string
	URL       string
	Headers   map[string]string
}

// secrets returns the values that must never be shown: env and header
// values.
func (t Target) secrets() []string {
	var out []string
	for _, m := range []map[string]string{t.Env, t.Headers} {
		for _, v := range m {
			if len(v) >= 4 {
				out = append(out, v)
			}
		}
	}
	return out
}

// Limits bound one verification. Zero fields take the defaults.
type Limits struct {
	InitTimeout     time.Duration // start + initialize
	ListTimeout     time.Duration // the whole tools/list walk
	DiscoverTimeout time.Duration // mcp-go's server/discover probe
	Grace           time.Duration // per stop step (stdin close, SIGTERM)
	MessageBytes    int           // one message
	TotalBytes      int64         // everything read in one verification
	MaxPages        int
	MaxTools        int
	StderrBytes     int
}

// DefaultLimits are the limits of design.md.
var DefaultLimits = Limits{
	InitTimeout:     30 * time.Second,
	ListTimeout:     30 * time.Second,
	DiscoverTimeout: 500 * time.Millisecond,
	Grace:           2 * time.Second,
	MessageBytes:    4 << 20,
	TotalBytes:      16 << 20,
	MaxPages:        100,
	MaxTools:        1000,
	StderrBytes:     8 << 10,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.InitTimeout > 0 {
		d.InitTimeout = l.InitTimeout
	}
	if l.ListTimeout > 0 {
		d.ListTimeout = l.ListTimeout
	}
	if l.DiscoverTimeout != 0 {
		d.DiscoverTimeout = l.DiscoverTimeout
	}
	if l.Grace > 0 {
		d.Grace = l.Grace
	}
	if l.MessageBytes > 0 {
		d.MessageBytes = l.MessageBytes
	}
	if l.TotalBytes > 0 {
		d.TotalBytes = l.TotalBytes
	}
	if l.MaxPages > 0 {
		d.MaxPages = l.MaxPages
	}
	if l.MaxTools > 0 {
		d.MaxTools = l.MaxTools
	}
	if l.StderrBytes > 0 {
		d.StderrBytes = l.StderrBytes
	}
	return d
}

// Progress is one step of a running verification.
type Progress struct {
	Phase   string
	Page    int // listing: the page being fetched, from 1
	Elapsed time.Duration
}

// Timing is how long one phase took.
type Timing struct {
	Phase    string        `json:"phase"`
	Duration time.Duration `json:"-"`
}

// Tool is one tool exactly as the server sent it (Raw), with the fields
// Switchboard shows decoded from it.
type Tool struct {
	Name         string
	Title        string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  json.RawMessage
	Raw          json.RawMessage
	// Pin is the SHA-256 of the RFC 8785 canonical form of Raw.
	Pin string
}

// Result is a successful verification.
type Result struct {
	ProtocolVersion string
	ServerName      string
	ServerVersion   string
	Capabilities    json.RawMessage
	Instructions    string
	Tools           []Tool
	Pages           int
	Timings         []Timing
	Warnings        []string
	StderrTail      string
}

// Verifier runs verifications. The zero value is not usable; use
// NewVerifier.
type Verifier struct {
	limits Limits
	getenv func(string) string
}

// NewVerifier returns a Verifier. getenv is read for the variables in
// AllowedEnv only; nil means os.Getenv.
func NewVerifier(limits Limits, getenv func(string) string) *Verifier {
	if getenv == nil {
		getenv = os.Getenv
	}
	return &Verifier{limits: limits.withDefaults(), getenv: getenv}
}

// Limits returns the limits in effect.
func (v *Verifier) Limits() Limits { return v.limits }

// Verify connects to the target, runs the handshake and walks every
// tools/list page. progress, if not nil, is called at each phase and page.
// initTimeout overrides the start + initialize deadline when positive.
// Cancelling ctx cancels the verification. On failure the error is an
// *Error. Any process started is stopped, with its whole group, before
// Verify returns.
func (v *Verifier) Verify(ctx context.Context, t Target, initTimeout time.Duration, progress func(Progress)) (*Result, error) {
	return v.VerifyEarly(ctx, t, initTimeout, progress, nil)
}

// VerifyEarly is Verify, but also hands a successful result to early as
// soon as the tools are listed, before the server is stopped: stopping
// takes whatever the server takes to exit (some node servers, ~350 ms),
// which nobody waiting for the result needs to wait for. It still returns
// only once the process group is gone, with the same result. early is not
// called on failure.
func (v *Verifier) VerifyEarly(ctx context.Context, t Target, initTimeout time.Duration, progress func(Progress), early func(*Result)) (*Result, error) {
	limits := v.limits
	if initTimeout > 0 {
		limits.InitTimeout = initTimeout
	}
	run := &verification{v: v, limits: limits, target: t, progress: progress, early: early, start: time.Now(), rec: &recorder{}}
	res, err := run.do(ctx)
	var killed, left []int
	if run.proc != nil {
		killed, left = run.proc.escapeReport()
	}
	if err != nil {
		var tooLarge errTooLarge
		if run.tally != nil && run.tally.overflow.Load() && !errors.As(err, &tooLarge) {
			// The body cut at the budget may have surfaced as something
			// else (an SSE stream that ended, then a missing endpoint).
			err = errTooLarge{fmt.Sprintf("server sent more than %d bytes in one verification", limits.TotalBytes)}
		}
		exited, code := run.exited()
		e := classify(err, run.phase, ctx, exited, code)
		if len(left) > 0 {
			e.Message += "; " + leftWarning(left)
		}
		e.StderrTail = redact(run.stderr(), t.secrets())
		e.Message = displayable(redact(e.Message, t.secrets()))
		return nil, e
	}
	if len(killed)+len(left) > 0 {
		// A copy: early may have handed res to someone already.
		out := *res
		out.Warnings = slices.Clip(res.Warnings)
		if len(killed) > 0 {
			out.Warnings = append(out.Warnings, fmt.Sprintf("the server started background processes that left its process group (pid %s); they were killed when it stopped", pidList(killed)))
		}
		if len(left) > 0 {
			out.Warnings = append(out.Warnings, leftWarning(left))
		}
		res = &out
	}
	return res, nil
}

// leftWarning says which processes of the server outlived the
// verification.
func leftWarning(pids []int) string {
	return fmt.Sprintf("left background processes: pid %s (outside the server's process group, and they could not be killed)", pidList(pids))
}

// pidList formats pids as "12, 34".
func pidList(pids []int) string {
	s := make([]string, len(pids))
	for i, pid := range pids {
		s[i] = strconv.Itoa(pid)
	}
	return strings.Join(s, ", ")
}

// verification is the state of one Verify call.
type verification struct {
	v        *Verifier
	limits   Limits
	target   Target
	progress func(Progress)
	early    func(*Result)
	start    time.Time
	rec      *recorder

	phase      string
	phaseStart time.Time
	timings    []Timing
	proc       *process
	stdio      *stdioTransport
	tally      *httpTally // remote transports only
	cutShort   context.CancelFunc

	// Whether the child exited on its own, decided once, before cleanup
	// stops it (after which every child has exited).
	exitChecked bool
	exitedSelf  bool
	exitCode    int
}

func (r *verification) enter(phase string, page int) {
	now := time.Now()
	if r.phase != "" && r.phase != phase {
		r.timings = append(r.timings, Timing{Phase: r.phase, Duration: now.Sub(r.phaseStart)})
		r.phaseStart = now
	}
	if r.phase == "" {
		r.phaseStart = now
	}
	r.phase = phase
	if r.progress != nil {
		r.progress(Progress{Phase: phase, Page: page, Elapsed: now.Sub(r.start)})
	}
}

// closeTimings ends the current phase's timing and returns all of them.
func (r *verification) closeTimings() []Timing {
	return append(r.timings, Timing{Phase: r.phase, Duration: time.Since(r.phaseStart)})
}

func (r *verification) exited() (bool, int) {
	if r.proc == nil {
		return false, 0
	}
	if !r.exitChecked {
		r.exitChecked = true
		// A process that is about to exit (it closed stdout) gets a moment, so
		// "exited with code 1" wins over "closed stdout".
		r.proc.waitExit(50 * time.Millisecond)
		r.exitedSelf, r.exitCode = r.proc.exited()
	}
	return r.exitedSelf, r.exitCode
}

func (r *verification) stderr() string {
	if r.proc == nil {
		return ""
	}
	return r.proc.stderr.String()
}

func (r *verification) do(ctx context.Context) (_ *Result, err error) {
	// Cut short when an HTTP body hits the byte budget: then nothing more
	// can arrive, and VerifyEarly reports the budget.
	ctx, cutShort := context.WithCancel(ctx)
	defer cutShort()
	r.cutShort = cutShort
	r.enter(PhaseStarting, 0)
	initCtx, cancelInit := context.WithTimeout(ctx, r.limits.InitTimeout)
	defer cancelInit()

	tr, cleanup, err := r.connect(initCtx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.exited() // before cleanup stops the child
		}
		cleanup()
	}()
	c := client.NewClient(tr, client.WithDiscoverTimeout(r.limits.DiscoverTimeout))
	// The context given to Start owns the connection (the SSE stream), so
	// it must last the whole verification; the init deadline still bounds
	// Start itself.
	connCtx, cancelConn := context.WithCancel(ctx)
	defer cancelConn()
	stopInitBound := context.AfterFunc(initCtx, cancelConn)
	err = c.Start(connCtx)
	stopInitBound()
	if err != nil {
		if initErr := initCtx.Err(); initErr != nil {
			return nil, fmt.Errorf("%w: %v", initErr, err)
		}
		return nil, err
	}

	r.enter(PhaseInitializing, 0)
	initRes, err := c.Initialize(initCtx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "switchboard", Version: "1"},
	}})
	if err != nil {
		return nil, err
	}
	res := &Result{
		ProtocolVersion: initRes.ProtocolVersion,
		ServerName:      initRes.ServerInfo.Name,
		ServerVersion:   initRes.ServerInfo.Version,
		Instructions:    initRes.Instructions,
	}
	res.Capabilities, _ = json.Marshal(initRes.Capabilities)

	if initRes.Capabilities.Tools != nil {
		listCtx, cancelList := context.WithTimeout(ctx, r.limits.ListTimeout)
		defer cancelList()
		if err := r.listTools(listCtx, c, res); err != nil {
			return nil, err
		}
	} else {
		res.Warnings = append(res.Warnings, "server declares no tools capability")
	}
	res.Timings = r.closeTimings()
	if r.stdio != nil {
		res.Warnings = append(res.Warnings, r.stdio.Warnings()...)
	}
	for i, w := range res.Warnings {
		res.Warnings[i] = displayable(redact(w, r.target.secrets()))
	}
	res.StderrTail = redact(r.stderr(), r.target.secrets())
	// Before the deferred cleanup stops the server. A server with
	// processes outside its group is reported after the stop instead,
	// with what became of them.
	if r.early != nil && (r.proc == nil || len(r.proc.escapees()) == 0) {
		r.early(res)
	}
	return res, nil
}

// connect starts the process or prepares the remote transport. cleanup
// stops everything connect started.
func (r *verification) connect(ctx context.Context) (transport.Interface, func(), error) {
	t := r.target
	switch t.Transport {
	case TransportStdio:
		p, err := startProcess(processConfig{
			Command:   t.Command,
			Args:      t.Args,
			Env:       childEnv(r.v.getenv, t.Env),
			Dir:       t.Cwd,
			StderrCap: r.limits.StderrBytes,
			Grace:     r.limits.Grace,
		})
		if err != nil {
			return nil, nil, spawnError(err, t.Command)
		}
		r.proc = p
		r.stdio = newStdioTransport(p, r.limits, r.rec)
		return r.stdio, func() { r.stdio.Close() }, nil
	case TransportHTTP:
		r.tally = &httpTally{onOverflow: r.cutShort}
		hc := httpClient(r.limits, r.tally)
		tr, err := transport.NewStreamableHTTP(t.URL,
			transport.WithHTTPBasicClient(hc),
			transport.WithHTTPHeaders(t.Headers),
			transport.WithHTTPTimeout(r.limits.ListTimeout))
		if err != nil {
			return nil, nil, newError(ClassProtocol, PhaseStarting, "invalid URL: "+err.Error(), err)
		}
		return streamableTap{tr, r.rec, r.tally}, func() { tr.Close(); closeIdle(hc) }, nil
	case TransportSSE:
		r.tally = &httpTally{onOverflow: r.cutShort}
		hc := httpClient(r.limits, r.tally)
		tr, err := transport.NewSSE(t.URL,
			transport.WithHTTPClient(hc),
			transport.WithHeaders(t.Headers),
			transport.WithEndpointTimeout(r.limits.InitTimeout),
			transport.WithResponseTimeout(r.limits.ListTimeout))
		if err != nil {
			return nil, nil, newError(ClassProtocol, PhaseStarting, "invalid URL: "+err.Error(), err)
		}
		return sseTap{tr, r.rec}, func() { tr.Close(); closeIdle(hc) }, nil
	}
	return nil, nil, newError(ClassInternal, PhaseStarting, fmt.Sprintf("unknown transport %q", t.Transport), nil)
}

// listTools walks tools/list page by page, stopping at a repeated cursor
// or the page cap with a warning, and refusing more than MaxTools.
func (r *verification) listTools(ctx context.Context, c *client.Client, res *Result) error {
	seen := map[string]bool{"": true}
	cursor := ""
	byName := map[string]bool{}
	for page := 1; ; page++ {
		if page > r.limits.MaxPages {
			res.Warnings = append(res.Warnings, fmt.Sprintf("stopped after %d pages of tools/list (page limit); more tools may exist", r.limits.MaxPages))
			return nil
		}
		r.enter(PhaseListing, page)
		req := mcp.ListToolsRequest{}
		req.Params.Cursor = mcp.Cursor(cursor)
		if _, err := c.ListToolsByPage(ctx, req); err != nil {
			return err
		}
		res.Pages = page
		var raw struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(r.rec.take(), &raw); err != nil {
			return fmt.Errorf("tools/list page %d is not a valid result: %w", page, err)
		}
		for _, rt := range raw.Tools {
			tool, err := decodeTool(rt)
			if err != nil {
				res.Warnings = append(res.Warnings, fmt.Sprintf("skipped a tool on page %d: %v", page, err))
				continue
			}
			if byName[tool.Name] {
				res.Warnings = append(res.Warnings, fmt.Sprintf("tool name %q appears more than once; kept the first definition", tool.Name))
				continue
			}
			byName[tool.Name] = true
			res.Tools = append(res.Tools, tool)
		}
		if len(res.Tools) > r.limits.MaxTools {
			return errTooLarge{fmt.Sprintf("server offers more than %d tools", r.limits.MaxTools)}
		}
		if raw.NextCursor == "" {
			return nil
		}
		if seen[raw.NextCursor] {
			res.Warnings = append(res.Warnings, fmt.Sprintf("tools/list repeated cursor %q on page %d; stopped the walk", sample([]byte(raw.NextCursor)), page))
			return nil
		}
		seen[raw.NextCursor] = true
		cursor = raw.NextCursor
	}
}

// decodeTool reads the fields Switchboard shows and computes the pin.
func decodeTool(raw json.RawMessage) (Tool, error) {
	var f struct {
		Name         string          `json:"name"`
		Title        string          `json:"title"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
		Annotations  json.RawMessage `json:"annotations"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return Tool{}, fmt.Errorf("not a tool object: %w", err)
	}
	if f.Name == "" {
		return Tool{}, errors.New("tool without a name")
	}
	canon, err := jcs.Transform(raw)
	if err != nil {
		return Tool{}, fmt.Errorf("tool %q cannot be canonicalised: %w", f.Name, err)
	}
	sum := sha256.Sum256(canon)
	return Tool{
		Name:         f.Name,
		Title:        f.Title,
		Description:  f.Description,
		InputSchema:  f.InputSchema,
		OutputSchema: f.OutputSchema,
		Annotations:  f.Annotations,
		Raw:          append(json.RawMessage(nil), raw...),
		Pin:          hex.EncodeToString(sum[:]),
	}, nil
}

// redact replaces every secret value in s.
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}
