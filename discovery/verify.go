// Package discovery talks to upstream MCP servers: it starts stdio
// servers in their own process group, connects to remote ones, runs the
// initialize handshake and walks tools/list, all under deadlines and byte
// limits, and runs verifications as background jobs.
package discovery

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

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
	// Token, if set, gives the OAuth access token of a remote server's
	// requests (ignored for stdio): asked for each HTTP request, and sent
	// as Authorization: Bearer (in place of a configured Authorization
	// header) to the server's origin only, as the headers are (see
	// OutboundPolicy). A *Error of class ClassAuth it returns ends the
	// verification, watch or call as ClassAuth, with its message. The
	// tokens it hands out are redacted from errors, warnings and stderr
	// like header values.
	Token TokenSource
	// OAuthScopes are the scopes a person configured for the server's
	// sign-in (see AuthScopes.Configured): the sign-in a failed
	// verification finds (Error.SignIn) asks for them.
	OAuthScopes []string
	// MemoryBytes caps a stdio server's data memory (RLIMIT_DATA); 0 is
	// no cap.
	MemoryBytes int64
}

// secrets returns the values that must never be shown: env and header
// values, and the access tokens handed out so far (once a verification
// has wrapped Token in its tokenRecorder).
func (t Target) secrets() []string {
	var out []string
	for _, m := range []map[string]string{t.Env, t.Headers} {
		for _, v := range m {
			if len(v) >= 4 {
				out = append(out, v)
			}
		}
	}
	if rec, ok := t.Token.(*tokenRecorder); ok {
		for _, v := range rec.handedOut() {
			if len(v) >= 4 {
				out = append(out, v)
			}
		}
	}
	return out
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

// States of a tool that cannot be offered to agents as the server sent
// it. A sound tool's State is empty.
const (
	// ToolOversized: a part of the tool is over a limit (schema size or
	// depth, description, the whole object). The part over the limit is
	// not kept (a description is cut), nor is Raw.
	ToolOversized = "oversized"
	// ToolInvalid: the tool is ambiguous or outside the spec (invalid
	// UTF-8, duplicate keys, a name outside the tool name charset, two
	// definitions under one name). It is kept as decoded, for review.
	ToolInvalid = "invalid"
)

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
	// Pin is the SHA-256 of the RFC 8785 canonical form of Raw, or of
	// the bytes as received when they have none (invalid UTF-8, duplicate
	// keys) or the tool object is over Limits.ToolBytes.
	Pin string
	// State is empty, ToolOversized or ToolInvalid; Problems says why,
	// one sentence each.
	State    string
	Problems []string
}

// Result is a successful verification.
type Result struct {
	ProtocolVersion string
	// ListTTL is how long the server said its tool list may be cached
	// (2026-07-28's ttlMs, the least of all pages), nil if it did not
	// say; CacheScope is the scope it gave with it (public, private).
	ListTTL    *time.Duration
	CacheScope string
	// Isolation says how a stdio server was isolated on this operating
	// system ("process group + limits set before exec + …"); empty for a
	// remote server.
	Isolation     string
	ServerName    string
	ServerVersion string
	Capabilities  json.RawMessage
	Instructions  string
	Tools         []Tool
	Pages         int
	Timings       []Timing
	Warnings      []string
	StderrTail    string
}

// Verifier runs verifications. The zero value is not usable; use
// NewVerifier.
type Verifier struct {
	limits Limits
	getenv func(string) string
	// killEscapee, if set, replaces syscall.Kill for processes that left
	// a server's group (tests).
	killEscapee func(pid int, sig syscall.Signal) error
	// watchWindow, if set, replaces WatchWindow (tests).
	watchWindow time.Duration
	// runs, if set, records every stdio run (see Contained).
	runs *Containment
	// classOf and resolver, if set, replace how remote addresses are
	// classed and host names resolved (tests; see OutboundPolicy).
	classOf  func(netip.AddrPort) netClass
	resolver *net.Resolver
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
// only once the process group is gone, with the same result, to which
// what the stop found is added as warnings at the end: processes the
// server left behind (which a caller of early hears of only this way).
// early is not called on failure.
//
// A remote server's verification that ends asking for a sign-in
// (ClassAuth) also says where to sign in (Error.SignIn, or
// Error.SignInProblem), which takes up to signInDiscoveryTimeout more.
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
		e, exited, code := run.failure(ctx, err)
		if e.Class == ClassExited && t.MemoryBytes > 0 && exited && likelyOutOfMemory(code) {
			e.Message += fmt.Sprintf(" (it ran under a memory cap of %d MiB: raise the cap if the server needs more)", t.MemoryBytes>>20)
		}
		if len(left) > 0 {
			e.Message += "; " + leftWarning(left)
		}
		if e.Class == ClassAuth && e.Auth != nil && t.Transport != TransportStdio {
			e.SignIn, e.SignInProblem = run.signInPlan(ctx, *e.Auth)
		}
		return nil, run.shown(e)
	}
	if len(killed)+len(left) > 0 {
		// A copy: early may have handed res to someone already. Its
		// warnings left room for these (see maxWarnings).
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

// likelyOutOfMemory reports whether a server that ran under a memory cap
// (RLIMIT_DATA) and exited with code (-1: killed by a signal) probably
// ran out of memory, so that the error suggests raising the cap. An
// allocation refused under the cap commonly ends a program by a signal
// (SIGABRT from C++'s std::bad_alloc or node's heap limit, SIGSEGV),
// with 2 (the Go runtime's fatal "out of memory"), or with 134 or 137,
// a shell's report of a child ended by SIGABRT or SIGKILL. Other codes,
// 1 above all (which every kind of failure exits with, Python's
// MemoryError included), get no note: it would be on every failure.
func likelyOutOfMemory(code int) bool {
	switch code {
	case -1, 2, 134, 137:
		return true
	}
	return false
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
	// disconnect stops what handshake started: it ends the connection,
	// closes the transport and stops the process group (see connect).
	disconnect func()
	// held marks a watch's session (see Verifier.Watch), which differs
	// from a verification's in what connect sets up: Streamable HTTP's
	// stream for server notifications, no whole-request HTTP timeout, a
	// byte budget for each WatchWindow rather than in all, and the message
	// cap on remote bodies too. streamEnded hears when a remote event
	// stream ends.
	held        bool
	streamEnded func()

	// Whether the child exited on its own, decided once, before cleanup
	// stops it (after which every child has exited). A session asks from
	// several goroutines.
	exitMu      sync.Mutex
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
	r.exitMu.Lock()
	defer r.exitMu.Unlock()
	if !r.exitChecked {
		r.exitChecked = true
		// A process that is about to exit (it closed stdout) gets a moment, so
		// "exited with code 1" wins over "closed stdout".
		r.proc.waitExit(50 * time.Millisecond)
		r.exitedSelf, r.exitCode = r.proc.exited()
	}
	return r.exitedSelf, r.exitCode
}

// failure classifies the error that ended a run: a body cut at the byte
// budget wins over what the cut surfaced as first (an SSE stream that
// ended, then a missing endpoint), and a child that exited says so.
func (r *verification) failure(ctx context.Context, err error) (e *Error, exited bool, code int) {
	var tooLarge errTooLarge
	if cut := r.tally.tooLarge(); cut != nil && !errors.As(err, &tooLarge) {
		err = cut
	}
	exited, code = r.exited()
	if te := r.tally.signInAsked(); te != nil && ctx.Err() == nil {
		return tokenRefused(te, r.phase, r.tally.challenge(), err), exited, code
	}
	if c := r.tally.challenge(); c != nil && ctx.Err() == nil {
		msg := fmt.Sprintf("the server answered %d: it wants a signed-in client", c.Status)
		if c.Error == "insufficient_scope" {
			msg = fmt.Sprintf("the server answered %d insufficient_scope: it wants a sign-in with the scopes %q", c.Status, c.Scope)
		}
		e := newError(ClassAuth, r.phase, msg, err)
		e.Auth = c
		return e, exited, code
	}
	return classify(err, r.phase, ctx, exited, code), exited, code
}

// signInDiscoveryTimeout bounds the discovery of where to sign in that a
// verification ending with ClassAuth runs (see Error.SignIn).
const signInDiscoveryTimeout = 10 * time.Second

// signInPlan finds where to sign in to the run's server, which answered
// challenge: the plan, or why there is none (displayable, the run's
// secrets redacted). It takes at most signInDiscoveryTimeout.
func (r *verification) signInPlan(ctx context.Context, challenge AuthChallenge) (*AuthPlan, string) {
	ctx, cancel := context.WithTimeout(ctx, signInDiscoveryTimeout)
	defer cancel()
	plan, err := r.v.DiscoverAuth(ctx, r.target.URL, challenge, AuthScopes{Configured: r.target.OAuthScopes})
	if err == nil {
		return plan, ""
	}
	msg := err.Error()
	var oe *OAuthError
	if errors.As(err, &oe) {
		msg = oe.Message
	}
	return nil, displayable(redact(msg, r.target.secrets()))
}

// tokenRefused is the ClassAuth error of a run that ended because its
// TokenSource refused with te: te's message (and suggestion, if it has
// one), and the server's last challenge if it gave one, else a zero one
// (the sign-in is then found from the well-known locations).
func tokenRefused(te *Error, phase string, c *AuthChallenge, cause error) *Error {
	e := newError(ClassAuth, phase, te.Message, cause)
	if te.Suggestion != "" {
		e.Suggestion = te.Suggestion
	}
	e.Auth = c
	if e.Auth == nil {
		e.Auth = &AuthChallenge{}
	}
	return e
}

// shown finishes an error for a person: the stderr tail, and secrets
// redacted from its message.
func (r *verification) shown(e *Error) *Error {
	e.StderrTail = r.stderr()
	e.Message = displayable(redact(e.Message, r.target.secrets()))
	return e
}

// stderr returns the server's stderr tail, redacted.
func (r *verification) stderr() string {
	if r.proc == nil {
		return ""
	}
	return r.proc.stderr.redacted(r.target.secrets())
}

func (r *verification) do(ctx context.Context) (_ *Result, err error) {
	// Cut short when an HTTP body hits the byte budget: then nothing more
	// can arrive, and VerifyEarly reports the budget.
	ctx, cutShort := context.WithCancel(ctx)
	defer cutShort()
	r.cutShort = cutShort
	// The connection lasts the whole verification: the SSE stream must
	// outlive the handshake, for the listing.
	c, initRes, err := r.handshake(ctx, ctx, listeners{})
	defer func() {
		if err != nil {
			r.exited() // before disconnect stops the child
		}
		r.disconnect()
	}()
	if err != nil {
		return nil, err
	}
	res := r.greeting(initRes)

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
	res.Warnings = capWarnings(res.Warnings, maxWarnings-stopWarnings)
	for i, w := range res.Warnings {
		res.Warnings[i] = displayable(redact(w, r.target.secrets()))
	}
	res.StderrTail = r.stderr()
	// Before the deferred disconnect stops the server. A server with
	// processes outside its group is reported after the stop instead,
	// with what became of them. Stop looks again (a process may leave
	// the group in between); what it finds is added to the result that
	// VerifyEarly returns.
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
			Command:     t.Command,
			Args:        t.Args,
			Env:         childEnv(r.v.getenv, t.Env),
			Dir:         t.Cwd,
			StderrCap:   r.limits.StderrBytes,
			Grace:       r.limits.Grace,
			MemoryBytes: t.MemoryBytes,
			KillEscapee: r.v.killEscapee,
			Runs:        r.v.runs,
		})
		if err != nil {
			return nil, nil, spawnError(err, t.Command)
		}
		r.proc = p
		r.stdio = newStdioTransport(p, r.limits, r.rec, t.secrets())
		r.stdio.budget = r.budget()
		return r.stdio, func() { r.stdio.Close() }, nil
	case TransportHTTP:
		r.tally = &httpTally{onOverflow: r.cutShort, onStreamEnd: r.streamEnded}
		hc, err := r.httpClient()
		if err != nil {
			return nil, nil, newError(ClassProtocol, PhaseStarting, "invalid URL: "+err.Error(), err)
		}
		// No WithHTTPHeaders: hc adds the headers, to the server's origin
		// only (mcp-go's would follow a redirect anywhere).
		opts := []transport.StreamableHTTPCOption{
			transport.WithHTTPBasicClient(hc),
			transport.WithHTTPLogger(quiet),
		}
		if r.held {
			opts = append(opts, transport.WithContinuousListening())
		} else {
			// It sets hc.Timeout, which would cut a held stream.
			opts = append(opts, transport.WithHTTPTimeout(r.limits.ListTimeout))
		}
		tr, err := transport.NewStreamableHTTP(t.URL, opts...)
		if err != nil {
			return nil, nil, newError(ClassProtocol, PhaseStarting, "invalid URL: "+err.Error(), err)
		}
		return streamableTap{tr, r.rec, r.tally}, func() { tr.Close(); closeIdle(hc) }, nil
	case TransportSSE:
		r.tally = &httpTally{onOverflow: r.cutShort, onStreamEnd: r.streamEnded}
		hc, err := r.httpClient()
		if err != nil {
			return nil, nil, newError(ClassProtocol, PhaseStarting, "invalid URL: "+err.Error(), err)
		}
		tr, err := transport.NewSSE(t.URL,
			transport.WithHTTPClient(hc), // which adds the headers (see above)
			transport.WithSSELogger(quiet),
			transport.WithEndpointTimeout(r.limits.InitTimeout),
			transport.WithResponseTimeout(r.limits.ListTimeout))
		if err != nil {
			return nil, nil, newError(ClassProtocol, PhaseStarting, "invalid URL: "+err.Error(), err)
		}
		return sseTap{tr, r.rec}, func() { tr.Close(); closeIdle(hc) }, nil
	}
	return nil, nil, newError(ClassInternal, PhaseStarting, fmt.Sprintf("unknown transport %q", t.Transport), nil)
}

// quiet is the logger mcp-go's transports get. What they log (a retried
// stream, a body that did not parse, quoting what the server sent,
// unredacted) either reaches Switchboard as an error too, or is theirs
// to handle.
var quiet = slog.New(slog.DiscardHandler)

// budget returns the byte budget of what the server sends: in all for a
// verification, per WatchWindow for a watch.
func (r *verification) budget() *byteBudget {
	if !r.held {
		return newByteBudget(r.limits.TotalBytes, 0)
	}
	window := WatchWindow
	if r.v.watchWindow > 0 {
		window = r.v.watchWindow
	}
	return newByteBudget(r.limits.TotalBytes, window)
}

// httpClient returns the HTTP client of a remote server, under an
// OutboundPolicy of its own for the target's URL, headers and token
// source, which it wraps in a tokenRecorder (so the run's secrets hold
// the tokens handed out). A watch's caps each message as stdio does; a
// verification's bodies are bounded by its byte budget alone.
func (r *verification) httpClient() (*http.Client, error) {
	policy, err := NewOutboundPolicy(r.target.URL, r.target.Headers)
	if err != nil {
		return nil, err
	}
	policy.classOf, policy.resolver = r.v.classOf, r.v.resolver
	if r.target.Token != nil {
		rec := &tokenRecorder{src: r.target.Token}
		r.target.Token, policy.token = rec, rec
	}
	message := 0
	if r.held {
		message = r.limits.MessageBytes
	}
	return httpClient(policy, r.limits, r.budget(), message, r.tally, func() []string { return r.target.secrets() }), nil
}

// maxWarnings bounds the warnings of one verification; past it, the last
// says how many more there were. The last stopWarnings places are kept for
// what stopping the server finds (see VerifyEarly).
const (
	maxWarnings  = 50
	stopWarnings = 2
)

// capWarnings keeps the first n-1 of more than n warnings, and a last
// that says how many more there were.
func capWarnings(ws []string, n int) []string {
	if len(ws) <= n {
		return ws
	}
	return append(ws[:n-1:n-1], fmt.Sprintf("… and %d more warnings", len(ws)-(n-1)))
}

// listTools walks tools/list page by page, stopping at a repeated cursor
// or the page cap with a warning, and refusing more than MaxTools. A page
// that lists more entries than MaxTools leaves room for is refused before
// any of them is decoded, so the work is bounded by MaxTools a page, and
// entries that are skipped or repeat a tool are counted into one warning
// for each kind, however many there are.
func (r *verification) listTools(ctx context.Context, c *client.Client, res *Result) error {
	seen := map[string]bool{"": true}
	cursor := ""
	byName := map[string]int{} // index in res.Tools
	var odd oddEntries
	// The secrets as they are when quoted: a token handed out meanwhile
	// is one.
	defer func() { res.Warnings = append(res.Warnings, odd.warnings(r.target.secrets())...) }()
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
			TTLMs      *int64            `json:"ttlMs"`
			CacheScope string            `json:"cacheScope"`
		}
		if err := json.Unmarshal(r.rec.take(), &raw); err != nil {
			return fmt.Errorf("tools/list page %d is not a valid result: %w", page, err)
		}
		if ttl := listTTL(raw.TTLMs); ttl != nil && (res.ListTTL == nil || *ttl < *res.ListTTL) {
			res.ListTTL = ttl
		}
		if raw.CacheScope == "public" || raw.CacheScope == "private" {
			res.CacheScope = raw.CacheScope
		}
		if len(res.Tools)+len(raw.Tools) > r.limits.MaxTools {
			msg := fmt.Sprintf("server offers more than %d tools (page %d lists %d", r.limits.MaxTools, page, len(raw.Tools))
			if len(res.Tools) > 0 {
				msg += fmt.Sprintf(" after %d on earlier pages", len(res.Tools))
			}
			return errTooLarge{msg + ")"}
		}
		for _, rt := range raw.Tools {
			tool, err := decodeTool(rt, r.limits)
			if err != nil {
				odd.skipped(page, tool.Name, err)
				continue
			}
			if i, ok := byName[tool.Name]; ok {
				if mergeDuplicate(&res.Tools[i], tool) {
					odd.repeated(i, tool.Name)
				}
				continue
			}
			byName[tool.Name] = len(res.Tools)
			res.Tools = append(res.Tools, tool)
		}
		if raw.NextCursor == "" {
			return nil
		}
		if seen[raw.NextCursor] {
			res.Warnings = append(res.Warnings, fmt.Sprintf("tools/list repeated cursor %q on page %d; stopped the walk", sample([]byte(raw.NextCursor), r.target.secrets()), page))
			return nil
		}
		seen[raw.NextCursor] = true
		cursor = raw.NextCursor
	}
}

// oddEntries counts the tools/list entries of one verification that were
// skipped or repeated a tool, by kind, with the first of each kind as an
// example.
type oddEntries struct {
	notObject, noName, longName entryCount
	// repeats of a tool with an identical definition: entries, and the
	// tools they repeat (by index in Result.Tools)
	repeats   entryCount
	repeatsOf map[int]bool
}

// entryCount counts entries of one kind; the first is the example.
type entryCount struct {
	n      int
	page   int
	name   string
	detail string
}

func (c *entryCount) add(page int, name, detail string) {
	if c.n == 0 {
		c.page, c.name, c.detail = page, name, detail
	}
	c.n++
}

// skipped counts an entry decodeTool refused with err.
func (o *oddEntries) skipped(page int, name string, err error) {
	switch {
	case errors.Is(err, errNoName):
		o.noName.add(page, "", "")
	case errors.Is(err, errLongName):
		o.longName.add(page, name, "")
	default:
		o.notObject.add(page, "", strings.TrimPrefix(err.Error(), errNotTool.Error()+": "))
	}
}

// repeated counts an entry that repeats the tool at index i of
// Result.Tools, with the same definition.
func (o *oddEntries) repeated(i int, name string) {
	if o.repeatsOf == nil {
		o.repeatsOf = map[int]bool{}
	}
	o.repeatsOf[i] = true
	o.repeats.add(0, name, "")
}

// warnings returns one warning for each kind of entry counted, names
// redacted of the secrets before they are quoted.
func (o *oddEntries) warnings(secrets []string) []string {
	var ws []string
	if c := o.notObject; c.n > 0 {
		ws = append(ws, fmt.Sprintf("skipped %s of tools/list that %s not tool objects, e.g. on page %d: %s",
			count(c.n, "entry", "entries"), isAre(c.n), c.page, c.detail))
	}
	if c := o.noName; c.n > 0 {
		ws = append(ws, fmt.Sprintf("skipped %s without a name", count(c.n, "tool", "tools")))
	}
	if c := o.longName; c.n > 0 {
		ws = append(ws, fmt.Sprintf("skipped %s named with more than %d bytes, e.g. %q (%d bytes)",
			count(c.n, "tool", "tools"), maxNameBytes, sample([]byte(c.name), secrets), len(c.name)))
	}
	if c := o.repeats; c.n > 0 {
		if len(o.repeatsOf) == 1 {
			ws = append(ws, fmt.Sprintf("tool %q is listed more than once, with identical definitions (%s)",
				sample([]byte(c.name), secrets), count(c.n, "extra entry", "extra entries")))
		} else {
			ws = append(ws, fmt.Sprintf("%d tools are listed more than once, with identical definitions (%s), e.g. %q",
				len(o.repeatsOf), count(c.n, "extra entry", "extra entries"), sample([]byte(c.name), secrets)))
		}
	}
	return ws
}

// count returns "1 tool", "2 tools".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// isAre returns the verb for n things.
func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// maxNameBytes bounds a tool name Switchboard keeps at all (it becomes a
// store key); a longer one is skipped with a warning. Names over the
// spec's 128 characters but within this are kept, flagged invalid.
const maxNameBytes = 16 << 10

// toolName is the tool name charset of the MCP specification
// (2025-11-25): 1 to 128 ASCII letters, digits, '_', '-' and '.'.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Why decodeTool skips an entry.
var (
	errNotTool  = errors.New("not a tool object")
	errNoName   = errors.New("tool without a name")
	errLongName = errors.New("tool name too long to keep")
)

// decodeTool reads the fields Switchboard shows, computes the pin, and
// flags what cannot be offered to agents as sent (see Tool.State). It
// returns an error only for what cannot be kept at all: not an object
// (errNotTool), no name (errNoName), a name over maxNameBytes
// (errLongName, with the name, only, in the Tool returned).
func decodeTool(raw json.RawMessage, l Limits) (Tool, error) {
	var f struct {
		Name         string          `json:"name"`
		Title        string          `json:"title"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
		Annotations  json.RawMessage `json:"annotations"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case !errors.As(err, &typeErr):
			return Tool{}, fmt.Errorf("%w: %w", errNotTool, err)
		case typeErr.Field == "":
			return Tool{}, fmt.Errorf("%w: a JSON %s", errNotTool, typeErr.Value)
		}
		return Tool{}, fmt.Errorf("%w: its %s is a JSON %s", errNotTool, typeErr.Field, typeErr.Value)
	}
	switch {
	case f.Name == "":
		return Tool{}, errNoName
	case len(f.Name) > maxNameBytes:
		return Tool{Name: f.Name}, fmt.Errorf("%w: %d bytes (kept up to %d)", errLongName, len(f.Name), maxNameBytes)
	}
	t := Tool{Name: f.Name, Title: f.Title, Description: f.Description, InputSchema: f.InputSchema,
		OutputSchema: f.OutputSchema, Annotations: f.Annotations}
	flag := func(state, problem string) {
		if t.State != ToolOversized { // oversized wins: its parts are gone
			t.State = state
		}
		t.Problems = append(t.Problems, problem)
	}

	// A tool too big to keep is never offered, so its pin only has to
	// notice a change: the bytes received do, without canonicalising
	// megabytes.
	var canon []byte
	var err error = errTooLarge{"tool object over the limit"}
	if len(raw) <= l.ToolBytes {
		canon, err = jcs.Transform(raw)
	}
	sum := sha256.Sum256(canon)
	if err != nil {
		sum = sha256.Sum256(raw) // what was received
	}
	t.Pin = hex.EncodeToString(sum[:])
	t.Raw = raw
	switch {
	case !utf8.Valid(raw):
		flag(ToolInvalid, "holds invalid UTF-8 (shown as U+FFFD)")
		// Stored and shown repaired; the pin is of what was received.
		t.Raw = bytes.ToValidUTF8(raw, []byte("\uFFFD"))
		t.InputSchema = bytes.ToValidUTF8(t.InputSchema, []byte("\uFFFD"))
		t.OutputSchema = bytes.ToValidUTF8(t.OutputSchema, []byte("\uFFFD"))
		t.Annotations = bytes.ToValidUTF8(t.Annotations, []byte("\uFFFD"))
	case err != nil && len(raw) <= l.ToolBytes:
		flag(ToolInvalid, "is ambiguous: "+strings.ToLower(err.Error()[:1])+err.Error()[1:])
	}
	if !toolName.MatchString(t.Name) {
		flag(ToolInvalid, "its name is outside the MCP tool name charset (1 to 128 of A-Z a-z 0-9 _ - .)")
	}
	for _, problem := range shapeProblems(raw) {
		flag(ToolInvalid, problem)
	}
	if problem := headerProblem(t); problem != "" {
		flag(ToolInvalid, problem)
	}

	for _, s := range []struct {
		what string
		v    *json.RawMessage
	}{{"input schema", &t.InputSchema}, {"output schema", &t.OutputSchema}} {
		switch d := jsonDepth(*s.v); {
		case len(*s.v) > l.SchemaBytes:
			flag(ToolOversized, fmt.Sprintf("its %s is %d bytes (limit %d); not kept", s.what, len(*s.v), l.SchemaBytes))
			*s.v = nil
		case d > l.SchemaDepth:
			flag(ToolOversized, fmt.Sprintf("its %s nests %d levels (limit %d); not kept", s.what, d, l.SchemaDepth))
			*s.v = nil
		}
	}
	if n := len(t.Description); n > l.DescriptionBytes {
		t.Description = cutText(t.Description, l.DescriptionBytes)
		flag(ToolOversized, fmt.Sprintf("its description is %d bytes; the first %d are kept", n, len(t.Description)))
	}
	if n := len(t.Title); n > l.TitleBytes {
		t.Title = cutText(t.Title, l.TitleBytes)
		flag(ToolOversized, fmt.Sprintf("its title is %d bytes; the first %d are kept", n, len(t.Title)))
	}
	if n := len(t.Annotations); n > l.AnnotationsBytes {
		flag(ToolOversized, fmt.Sprintf("its annotations are %d bytes (limit %d); not kept", n, l.AnnotationsBytes))
		t.Annotations = nil
	}
	if len(raw) > l.ToolBytes {
		flag(ToolOversized, fmt.Sprintf("the tool object is %d bytes (limit %d)", len(raw), l.ToolBytes))
	}
	if t.State == ToolOversized {
		t.Raw = nil // what an agent would get is not what the server sent
	} else {
		t.Raw = append(json.RawMessage(nil), t.Raw...)
	}
	return t, nil
}

// shapeProblems checks a tool object against the shape MCP's Tool schema
// gives it, which clients check a whole tools/list against: one tool
// outside it can fail an agent's list of every server's tools.
// inputSchema is required and, like outputSchema, must be an object
// schema of type "object"; title and description are strings; annotations
// and _meta are objects.
func shapeProblems(raw json.RawMessage) []string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil // reported elsewhere
	}
	var out []string
	objectSchema := func(key string, required bool) {
		v, ok := fields[key]
		if !ok {
			if required {
				out = append(out, "it has no "+key+" (MCP requires one)")
			}
			return
		}
		var schema struct {
			Type json.RawMessage `json:"type"`
		}
		if kind(v) != '{' || json.Unmarshal(v, &schema) != nil || string(schema.Type) != `"object"` {
			out = append(out, "its "+key+` is not a JSON Schema object of type "object" (MCP requires one)`)
		}
	}
	objectSchema("inputSchema", true)
	objectSchema("outputSchema", false)
	for _, key := range []string{"title", "description"} {
		if v, ok := fields[key]; ok && kind(v) != '"' {
			out = append(out, "its "+key+" is not a string")
		}
	}
	if v, ok := fields["annotations"]; ok && kind(v) != '{' {
		out = append(out, "its annotations are not an object")
	}
	if v, ok := fields["_meta"]; ok && kind(v) != '{' {
		out = append(out, "its _meta is not an object")
	}
	return out
}

// kind is the first byte of a JSON value: '{', '[', '"', 'n', 't', 'f' or
// a digit or '-'.
func kind(v json.RawMessage) byte {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return 0
	}
	return v[0]
}

// jsonDepth returns how deeply objects and arrays nest in b, counting
// brackets (so deep input cannot exhaust the stack).
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		case '"':
			if end := stringEnd(b, i); end >= 0 {
				i = end
			} else {
				return deepest
			}
		}
	}
	return deepest
}

// mergeDuplicate handles a second tool under kept's name. Two different
// definitions under one name make the tool ambiguous: it is flagged
// invalid, and its pin covers every definition, so a policy set while it
// was ambiguous never carries over to one of them. An identical repeat
// changes nothing; mergeDuplicate reports it, for a warning.
func mergeDuplicate(kept *Tool, dup Tool) (identical bool) {
	if dup.Pin == kept.Pin {
		return true
	}
	const problem = "the server lists different definitions under this name"
	if !slices.Contains(kept.Problems, problem) {
		if kept.State != ToolOversized {
			kept.State = ToolInvalid
		}
		kept.Problems = append(kept.Problems, problem)
	}
	sum := sha256.Sum256([]byte(kept.Pin + dup.Pin))
	kept.Pin = hex.EncodeToString(sum[:])
	return false
}

// redact replaces every secret value in s.
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// longest returns the length of the longest secret.
func longest(secrets []string) int {
	n := 0
	for _, v := range secrets {
		n = max(n, len(v))
	}
	return n
}
