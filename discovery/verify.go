// Package discovery talks to upstream MCP servers: it starts stdio
// servers in their own process group, connects to remote ones, runs the
// initialize handshake and walks tools/list, all under deadlines and byte
// limits, and runs verifications as background jobs.
package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/switchboard-dev/switchboard/discovery/netpolicy"
	"github.com/switchboard-dev/switchboard/discovery/oauth"
	"github.com/switchboard-dev/switchboard/discovery/sandbox"
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
	// netpolicy.Policy). A *Error of class ClassAuth it returns ends the
	// verification, watch or call as ClassAuth, with its message. The
	// tokens it hands out are redacted from errors, warnings and stderr
	// like header values.
	Token TokenSource
	// OAuthScopes are the scopes a person configured for the server's
	// sign-in (see oauth.Scopes.Configured): the sign-in a failed
	// verification finds (Error.SignIn) asks for them.
	OAuthScopes []string
	// MemoryBytes caps a stdio server's memory (RLIMIT_DATA, and its
	// cgroup where there is one); 0 is the sandbox's default (1 GiB), or
	// no cap without a profile.
	MemoryBytes int64
	// Sandbox is a stdio server's permission profile: the walls it runs
	// in (see package sandbox). Nil runs it without walls, with its
	// limits alone; the run's isolation says so.
	Sandbox *sandbox.Profile
	// Asks are what a held session (Verifier.Open, the Pool) declares the
	// server may ask of the agents whose calls it serves (see Asks and
	// WithCallRelay); verifications and watches ask nothing.
	Asks Asks
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
	// Resources, ResourceTemplates and Prompts are listed when the
	// server declares the capability (see listExtras).
	Resources         []Resource
	ResourceTemplates []ResourceTemplate
	Prompts           []Prompt
	// Unlisted names the lists declared whose walk failed (a warning
	// says why): their entries above are nil, and what was known of
	// them before still holds.
	Unlisted   []string
	Pages      int
	Timings    []Timing
	Warnings   []string
	StderrTail string
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
	// walls is what the sandbox knows of Switchboard (see Walled).
	walls sandbox.Config
	// classOf and resolver, if set, replace how remote addresses are
	// classed and host names resolved (tests; see netpolicy.Policy).
	classOf  func(netip.AddrPort) netpolicy.Class
	resolver *net.Resolver
	// needs remembers what the tools a server lists only to clients that
	// answer need (see features.go).
	needs *needsCache
}

// NewVerifier returns a Verifier. getenv is read for the variables in
// AllowedEnv only; nil means os.Getenv.
func NewVerifier(limits Limits, getenv func(string) string) *Verifier {
	if getenv == nil {
		getenv = os.Getenv
	}
	return &Verifier{limits: limits.withDefaults(), getenv: getenv, needs: &needsCache{}}
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
	for _, a := range run.askRuns { // ended: do waited for them
		killed, left = append(killed, a.killed...), append(left, a.left...)
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
		e = run.shown(e)
		if e.Refused = run.refused(e.StderrTail); e.Refused != nil && e.Class != ClassSandbox {
			// Most likely why it failed: say so first.
			e.Suggestion = "Its walls refused what is listed below: if the server needs it, allow it (hosts: Allow and verify again; paths: its profile's reads or writes). " + e.Suggestion
		}
		return nil, e
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
	// askOnly marks a listing of the tools a client declaring its
	// target's Asks is offered (see features.go): it lists tools only.
	// askRuns are such listings a verification started; it ends only
	// once each has stopped its server.
	askOnly bool
	askRuns []*askRun

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
func (r *verification) signInPlan(ctx context.Context, challenge oauth.Challenge) (*oauth.Plan, string) {
	ctx, cancel := context.WithTimeout(ctx, signInDiscoveryTimeout)
	defer cancel()
	plan, err := r.v.DiscoverAuth(ctx, r.target.URL, challenge, oauth.Scopes{Configured: r.target.OAuthScopes})
	if err == nil {
		return plan, ""
	}
	msg := err.Error()
	var oe *oauth.Error
	if errors.As(err, &oe) {
		msg = oe.Message
	}
	return nil, displayable(redact(msg, r.target.secrets()))
}

// tokenRefused is the ClassAuth error of a run that ended because its
// TokenSource refused with te: te's message (and suggestion, if it has
// one), and the server's last challenge if it gave one, else a zero one
// (the sign-in is then found from the well-known locations).
func tokenRefused(te *Error, phase string, c *oauth.Challenge, cause error) *Error {
	e := newError(ClassAuth, phase, te.Message, cause)
	if te.Suggestion != "" {
		e.Suggestion = te.Suggestion
	}
	e.Auth = c
	if e.Auth == nil {
		e.Auth = &oauth.Challenge{}
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
	var on listeners
	if r.askOnly {
		// Declares its features, answering nothing it is asked: no
		// agent's call is in flight.
		on.asks = &relays{}
	}
	defer func() {
		if err != nil {
			cutShort() // the outcome of its listings with features is not needed
		}
		for _, run := range r.askRuns {
			<-run.ended
		}
	}()
	c, initRes, err := r.handshake(ctx, ctx, on)
	defer func() {
		if err != nil {
			r.exited() // before disconnect stops the child
		}
		r.disconnect()
	}()
	if err != nil {
		return nil, err
	}
	// The listing with every feature declared starts once the server has
	// shown it starts and answers (one that does not is not started a
	// second time), and runs beside the rest of this one.
	var every *askRun
	// Not over HTTP+SSE: mcp-go's client answers no request of the
	// server's there, so a session to such a server declares nothing
	// (see Pool.Use), and a tool listed only to one that does could
	// never be called.
	if !r.askOnly && !r.held && !r.target.Asks.Any() && r.target.Transport != TransportSSE {
		every = r.listAsking(ctx, everyFeature)
		r.askRuns = append(r.askRuns, every)
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
	if r.askOnly {
		r.early(res)
		return res, nil
	}
	if err := r.listExtras(ctx, c, initRes.Capabilities, res); err != nil {
		return nil, err
	}
	if every != nil {
		r.enter(PhaseAskTools, 0)
		r.addAskTools(ctx, res, <-every.listed)
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
			Sandbox:     t.Sandbox,
			Walls:       r.v.walls,
		})
		if err != nil {
			return nil, nil, spawnError(err, t.Command)
		}
		r.proc = p
		r.stdio = newStdioTransport(p, r.limits, r.rec, t.secrets())
		r.stdio.relays = r.held && t.Asks.Any()
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
			//lint:ignore SA1019 a held session of 2025-11-25 or earlier listens on the GET stream; a modern one uses subscriptions/listen (protocol.go)
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
// netpolicy.Policy of its own for the target's URL, headers and token
// source, which it wraps in a tokenRecorder (so the run's secrets hold
// the tokens handed out). A watch's caps each message as stdio does; a
// verification's bodies are bounded by its byte budget alone.
func (r *verification) httpClient() (*http.Client, error) {
	policy, err := netpolicy.New(r.target.URL, r.target.Headers)
	if err != nil {
		return nil, err
	}
	policy.ClassOf, policy.Resolver = r.v.classOf, r.v.resolver
	if r.target.Token != nil {
		rec := &tokenRecorder{src: r.target.Token}
		r.target.Token, policy.Token = rec, rec
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
