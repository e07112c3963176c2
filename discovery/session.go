package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// PhaseCalling is the phase of a session that relays tool calls.
const PhaseCalling = "calling"

// ErrSessionClosed is the answer of a session that was closed or ended.
var ErrSessionClosed = errors.New("the upstream session has ended")

// PinMismatchError refuses a call to a tool whose definition, as the
// server lists it now, is not the one approved.
type PinMismatchError struct {
	Tool string
	Want string // the approved pin
	Live *Tool  // what the server lists now; nil if it lists no such tool
}

func (e *PinMismatchError) Error() string {
	if e.Live == nil {
		return fmt.Sprintf("the server no longer lists the tool %q", e.Tool)
	}
	return fmt.Sprintf("the server's definition of %q (pin %.12s…) is not the approved one (pin %.12s…)", e.Tool, e.Live.Pin, e.Want)
}

// Session is a held connection to a server for tool calls, started by
// Verifier.Open. It lists the server's tools when it connects, and again
// after the server says its list changed, so that every call is checked
// against the definition the server offers at that moment. It is safe for
// concurrent use.
type Session struct {
	run     *verification
	c       *client.Client
	end     context.CancelFunc // ends the session's own context
	done    chan struct{}      // closed when the session ended
	started time.Time

	protocol   string
	serverName string
	serverVer  string

	listMu sync.Mutex // one tools/list walk at a time (the recorder holds one)
	mu     sync.Mutex
	tools  map[string]Tool
	// noTools says the server did not declare the tools capability.
	noTools bool
	stale   bool  // the server said its list changed since it was read
	err     error // why the session ended
	closed  bool
	up      atomic.Bool // open is done
	wg      sync.WaitGroup

	calls    atomic.Uint64                 // progress tokens handed out
	progress map[string]func(CallProgress) // by progress token, under mu
	asks     relays                        // the calls whose agents it asks
	logs     map[uint64]func(CallLog)      // the calls in flight that take log messages, under mu
	// busy counts the requests in flight (calls, reads, gets,
	// completions), and lastEnd is when one last ended (Unix ns): what
	// the server sends that names no request is passed on only to the
	// one request in flight, and not just after another ended (see
	// logged, relays.relayFor).
	busy    atomic.Int32
	lastEnd atomic.Int64
	// updated are the subscriptions to the server's resources, by URI
	// (see subscriptions.go), under mu.
	updated map[string][]*subscription
	// subscribing serializes a 2025-era server's resources/subscribe and
	// resources/unsubscribe with the first and last subscriber they are
	// for: a subscribe sent after an unsubscribe must not reach the
	// server before it, and leave nobody subscribed upstream.
	subscribing sync.Mutex
	// A 2026-07-28 session's subscriptions/listen stream (see listen):
	// its context (the session's), what it listens for besides the
	// resources subscribed to, and what ends the stream running; under
	// mu.
	sctx         context.Context
	listenFilter mcp.SubscriptionFilter
	endListen    context.CancelFunc
	listenWant   chan mcp.SubscriptionFilter // the next filter (cap 1)
	listening    bool                        // the loop runs
}

// logQuiet is how long after a request on the session ended its log
// messages are not passed on: one the server writes about a request it
// just answered must not reach the next request's agent.
const logQuiet = 250 * time.Millisecond

// enter counts a request in flight until the returned function is called.
func (s *Session) enter() (leave func()) {
	s.busy.Add(1)
	return func() {
		s.lastEnd.Store(time.Now().UnixNano())
		s.busy.Add(-1)
	}
}

// alone reports whether one request is in flight, and none ended within
// quiet: what names no request is that one's.
func (s *Session) alone(quiet time.Duration) bool {
	return s.busy.Load() == 1 && time.Since(time.Unix(0, s.lastEnd.Load())) >= quiet
}

// Open connects to the server t describes as a verification does (the
// same sandbox, transports and limits; the byte budget is per
// WatchWindow, as a watch's), runs the handshake and lists the tools,
// all within initTimeout (the Verifier's if zero) for the handshake and
// the Verifier's ListTimeout for the list. ctx bounds only the opening;
// the session lasts until Close, or until the server goes away (see
// Done). A failure is an *Error, as a verification's.
func (v *Verifier) Open(ctx context.Context, t Target, initTimeout time.Duration) (*Session, error) {
	limits := v.limits
	if initTimeout > 0 {
		limits.InitTimeout = initTimeout
	}
	run := &verification{v: v, limits: limits, target: t, start: time.Now(), rec: &recorder{}, held: true}
	s, err := run.open(ctx)
	if err == nil {
		return s, nil
	}
	e, _, _ := run.failure(ctx, err)
	e = run.shown(e)
	if s != nil {
		s.shut(e)
	}
	return nil, e
}

func (r *verification) open(ctx context.Context) (*Session, error) {
	// The session's context: it outlives Open's, and ends with the
	// session (Close, or a body over the byte budget).
	sctx, end := context.WithCancel(context.WithoutCancel(ctx))
	r.cutShort = end
	s := &Session{run: r, end: end, done: make(chan struct{}), started: time.Now()}
	r.streamEnded = func() {
		if s.up.Load() { // one that ends during the handshake is mcp-go's to retry
			s.lost(newError(ClassNetwork, PhaseCalling, "the server's event stream ended (did it restart?)", nil))
		}
	}
	s.asks.alone = func() bool { return s.alone(0) }
	c, initRes, err := r.handshake(ctx, sctx, listeners{
		toolsChanged: func() {
			s.mu.Lock()
			s.stale = true
			s.mu.Unlock()
		},
		lost:     s.lost,
		progress: s.progressed,
		asks:     &s.asks,
		logged:   s.logged,
		updated:  s.resourceUpdated,
	})
	s.c = c
	if err != nil {
		return s, err
	}
	hello := r.greeting(initRes) // its warnings are the verification's to show
	s.protocol, s.serverName, s.serverVer = hello.ProtocolVersion, hello.ServerName, hello.ServerVersion
	s.sctx = sctx
	if filter, ok := listensForChanges(initRes, r.target, false); ok {
		s.mu.Lock()
		s.listenFilter = filter
		s.listenLocked()
		s.mu.Unlock()
	}
	if r.stdio != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			select {
			case <-r.stdio.readDone:
				s.lost(r.outputEnded())
			case <-sctx.Done():
			}
		}()
	}
	// A server without the tools capability has no tools/list to ask
	// (and may refuse it, as a modern mcp-go server does with a 404):
	// its session serves resources and prompts only.
	s.noTools = initRes.Capabilities.Tools == nil
	if err := s.list(ctx); err != nil {
		return s, err
	}
	if initRes.Capabilities.Logging != nil {
		// Everything: each agent's own level is applied as its messages
		// are relayed (see WithCallLog).
		//lint:ignore SA1019 relaying a server's log messages to the agents that ask for them
		_ = s.c.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}) // one that refuses sends what it sends
	}
	r.enter(PhaseCalling, 0)
	s.up.Store(true)
	return s, nil
}

// list reads the server's tools afresh.
func (s *Session) list(ctx context.Context) error {
	s.listMu.Lock()
	defer s.listMu.Unlock()
	s.mu.Lock()
	s.stale = false
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.run.limits.ListTimeout)
	defer cancel()
	var res Result
	if !s.noTools {
		if err := s.run.listTools(ctx, s.c, &res); err != nil {
			return err
		}
	}
	tools := make(map[string]Tool, len(res.Tools))
	for _, t := range res.Tools {
		tools[t.Name] = t
	}
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	return nil
}

// Tools returns the tools the server listed last, by name.
func (s *Session) Tools() map[string]Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

// ServerInfo is what the server said it is, and the protocol version
// negotiated.
func (s *Session) ServerInfo() (name, version, protocol string) {
	return s.serverName, s.serverVer, s.protocol
}

// Isolation says how the session's stdio server is isolated (see
// Result.Isolation); empty for a remote server.
func (s *Session) Isolation() string {
	if s.run.proc == nil {
		return ""
	}
	return s.run.proc.isolation
}

// Started is when the session was opened.
func (s *Session) Started() time.Time { return s.started }

// Done is closed when the session has ended: closed, or the server went
// away (Err says why).
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is why the session ended, or nil while it lasts.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Call calls a tool, after checking that the server lists it with the
// definition pin (re-reading the list first if the server said it
// changed): a tool listed otherwise, or no longer, is refused with a
// *PinMismatchError and never called. ctx bounds the call. A result whose
// JSON is over maxResult bytes (if positive) is refused with a too_large
// *Error. A failure of the session itself (the server went away, a
// timeout) is an *Error.
func (s *Session) Call(ctx context.Context, tool, pin string, args any, maxResult int) (*mcp.CallToolResult, error) {
	s.mu.Lock()
	ended, stale := s.err, s.stale
	s.mu.Unlock()
	if ended != nil {
		return nil, ended
	}
	s.run.tally.forget() // a challenge or a refused token now is this call's
	if stale {
		if err := s.list(ctx); err != nil {
			return nil, s.classify(ctx, err)
		}
	}
	live, ok := s.Tools()[tool]
	switch {
	case !ok:
		return nil, &PinMismatchError{Tool: tool, Want: pin}
	case live.Pin != pin:
		return nil, &PinMismatchError{Tool: tool, Want: pin, Live: &live}
	}
	if s.run.target.Asks.Any() {
		if t := s.run.target.Transport; !mcp.IsModernProtocol(s.protocol) && (t == TransportStdio || t == TransportSSE) {
			done, err := s.asks.one(ctx)
			if err != nil {
				return nil, s.classify(ctx, err)
			}
			defer done()
			defer func() {
				if ctx.Err() != nil {
					// The call ended before its answer: the server may still
					// work on it and ask, and its question would reach the
					// next call's agent. The session ends with it.
					s.lost(newError(ClassCancelled, PhaseCalling, "a call that relays the server's questions ended before its answer", ctx.Err()))
				}
			}()
		}
		if r := relayOf(ctx); r != nil {
			defer s.asks.add(r)()
		}
	}
	defer s.enter()() // after the wait for its turn: a call waiting is not in flight
	if fn := logOf(ctx); fn != nil {
		defer s.takeLogs(fn)()
	}
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}}
	if fn := progressOf(ctx); fn != nil {
		token := "sb-" + strconv.FormatUint(s.calls.Add(1), 10)
		s.mu.Lock()
		if s.progress == nil {
			s.progress = map[string]func(CallProgress){}
		}
		s.progress[token] = fn
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.progress, token)
			s.mu.Unlock()
		}()
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
	}
	if mcp.IsModernProtocol(s.protocol) && s.run.target.Transport == TransportHTTP {
		req.Header = paramHeaders(live, args)
	}
	call := s.c.CallTool
	if requiresTask(live.Raw) {
		call = s.callAsTask
	}
	res, err := call(ctx, req)
	return checked(res, s.classify(ctx, err), maxResult)
}

// ReadResource reads a resource, by its URI as the server knows it. What
// the server lists is checked when it is verified, not here: a resource's
// contents are the server's to change, as a tool's results are. ctx,
// maxResult and the errors are as for Call.
func (s *Session) ReadResource(ctx context.Context, uri string, maxResult int) (*mcp.ReadResourceResult, error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	s.run.tally.forget()
	defer s.enter()()
	res, err := s.c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if inputNotAnswered(err) {
		return nil, ErrInputRequired
	}
	return checked(res, s.classify(ctx, err), maxResult)
}

// ErrInputRequired is the answer to a read or a prompt whose server asked
// for input from its client (an input_required result) with no
// InputRelay in its context to answer it: a 2026-07-28 agent's get or
// read is relayed (see InputRelay), a 2025-era session's is answered by
// Switchboard off the session's stream, where nothing can be asked.
var ErrInputRequired = errors.New("it asked the client for input (input_required), which Switchboard relays to a client that declared what it asks for: a 2026-07-28 client in any request, a 2025-era session during tool calls")

// inputNotAnswered reports whether err is mcp-go's failure to answer a
// server's input_required itself: its client retries a read or a prompt
// with the answers of its own handlers, and a session declaring nothing
// has none (TestMCPGoFailsUnansweredInput holds mcp-go to it).
func inputNotAnswered(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "multi round-trip: ")
}

// GetPrompt gets a prompt with its arguments, by its name as the server
// knows it; as ReadResource.
func (s *Session) GetPrompt(ctx context.Context, name string, args map[string]string, maxResult int) (*mcp.GetPromptResult, error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	s.run.tally.forget()
	defer s.enter()()
	res, err := s.c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: name, Arguments: args}})
	if inputNotAnswered(err) {
		return nil, ErrInputRequired
	}
	return checked(res, s.classify(ctx, err), maxResult)
}

// Complete asks the server for completions of an argument of a prompt or
// resource template (ref, as the server knows it); as ReadResource.
func (s *Session) Complete(ctx context.Context, params mcp.CompleteParams, maxResult int) (*mcp.CompleteResult, error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	s.run.tally.forget()
	defer s.enter()()
	res, err := s.c.Complete(ctx, mcp.CompleteRequest{Params: params})
	return checked(res, s.classify(ctx, err), maxResult)
}

// checked is a request's result, or its error (already classified), or a
// too_large *Error if res's JSON is over maxResult bytes (when positive).
func checked[T any](res *T, err error, maxResult int) (*T, error) {
	if err != nil {
		return nil, err
	}
	if n, ok := textSize(res); ok && n <= maxResult {
		return res, nil // nothing to encode: it cannot be over
	}
	if maxResult > 0 {
		b, err := json.Marshal(res)
		if err != nil {
			return nil, newError(ClassProtocol, PhaseCalling, "the result cannot be encoded: "+err.Error(), err)
		}
		if len(b) > maxResult {
			return nil, newError(ClassTooLarge, PhaseCalling, fmt.Sprintf("the result is %d bytes (limit %d)", len(b), maxResult), nil)
		}
	}
	return res, nil
}

// textSize bounds the encoded size of a tool result made of plain text
// alone (and its _meta), without encoding the text: JSON writes a byte of
// text as six at most (\u00XX), and each item adds its few field names.
// ok is false for any other result, whose size only encoding it tells.
func textSize(v any) (n int, ok bool) {
	res, isCall := v.(*mcp.CallToolResult)
	if !isCall || res.StructuredContent != nil || len(res.RawStructuredContent) > 0 ||
		len(res.InputRequests) > 0 || res.RequestState != "" {
		return 0, false
	}
	n = 128 + len(res.ResultType)
	if res.Meta != nil { // small: a 2026-07-28 result's serverInfo
		token, ok1 := jsonBound(res.Meta.ProgressToken)
		fields, ok2 := jsonBound(res.Meta.AdditionalFields)
		if !ok1 || !ok2 {
			return 0, false
		}
		n += len(`{"progressToken":,}`) + token + fields
	}
	for _, c := range res.Content {
		t, isText := c.(mcp.TextContent)
		if !isText || t.Annotations != nil || t.Meta != nil {
			return 0, false
		}
		n += 64 + 6*len(t.Text)
	}
	return n, true
}

// jsonBound bounds the encoded size of a value as JSON decoding makes
// them (nil, bool, float64, string, []any, map[string]any), without
// encoding it; ok is false for any other kind of value.
func jsonBound(v any) (n int, ok bool) {
	switch v := v.(type) {
	case nil, bool:
		return len("false"), true
	case float64: // decimal from 1e-6 to 1e21, else with an exponent
		return len("-0.0000012345678901234567"), true
	case string:
		return 2 + 6*len(v), true
	case []any:
		n = 2
		for _, e := range v {
			m, ok := jsonBound(e)
			if !ok {
				return 0, false
			}
			n += m + 1
		}
		return n, true
	case map[string]any:
		n = 2
		for k, e := range v {
			m, ok := jsonBound(e)
			if !ok {
				return 0, false
			}
			n += 2 + 6*len(k) + 1 + m + 1
		}
		return n, true
	}
	return 0, false
}

// classify turns a failed request into an *Error (nil stays nil), preferring why the
// session ended if it did.
func (s *Session) classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ended := s.Err(); ended != nil {
		return ended
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return newError(ClassTimeout, PhaseCalling, "the tool did not answer before the call's deadline", err)
	}
	if cut := s.run.tally.tooLarge(); cut != nil {
		err = cut
	}
	if te := s.run.tally.signInAsked(); te != nil {
		// The TokenSource says the person must sign in (again): the
		// caller signs in and calls again.
		e := tokenRefused(te, PhaseCalling, s.run.tally.challenge(), err)
		e.Message = displayable(redact(e.Message, s.run.target.secrets()))
		return e
	}
	if c := s.run.tally.challenge(); c != nil {
		// Step-up: the call needs a token with more scopes (or a fresh
		// one); the caller signs in again and calls again.
		e := newError(ClassAuth, PhaseCalling, fmt.Sprintf("the server answered %d %s to the call: it wants a sign-in with the scopes %q", c.Status, c.Error, c.Scope), err)
		e.Auth = c
		return e
	}
	e := classify(err, PhaseCalling, ctx, false, 0)
	e.Message = displayable(redact(e.Message, s.run.target.secrets()))
	return e
}

// lost ends the session because the server went away.
func (s *Session) lost(err error) {
	if err == nil {
		err = ErrSessionClosed
	}
	if exited, code := s.run.exited(); exited {
		err = exitError(PhaseCalling, code, err)
	}
	var e *Error
	if errors.As(err, &e) {
		s.run.shown(e)
	}
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	go s.Close() // not on a goroutine Close waits for
}

// shut records err as the reason and closes the session.
func (s *Session) shut(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.Close()
}

// Close ends the session: it stops the server's process group (stdio) or
// closes the connection, and returns once every process and goroutine of
// the session is gone.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return nil
	}
	s.closed = true
	if s.err == nil {
		s.err = ErrSessionClosed
	}
	s.mu.Unlock()
	s.end()
	s.run.disconnect()
	s.wg.Wait()
	close(s.done)
	return nil
}

// MaxProgressMessage caps the message of a call's progress.
const MaxProgressMessage = 500

type progressKey struct{}

// WithCallProgress returns a context whose tool calls (Session.Call, and
// so Pool.Call) ask the server for progress notifications and pass each
// to fn, from the session's reading goroutine: fn must not block. Like
// net/http/httptrace, it rides on the context so that the layers between
// the caller and the session need not know.
func WithCallProgress(ctx context.Context, fn func(CallProgress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

func progressOf(ctx context.Context) func(CallProgress) {
	fn, _ := ctx.Value(progressKey{}).(func(CallProgress))
	return fn
}

// CallProgress is one notifications/progress of a call: the progress so
// far, the total if the server knows it (else 0), and its message (valid
// UTF-8, cut to MaxProgressMessage bytes).
type CallProgress struct {
	Progress, Total float64
	Message         string
}

// progressed passes a notifications/progress to the call whose token it
// names; one for no call in flight is dropped.
func (s *Session) progressed(n mcp.JSONRPCNotification) {
	f := n.Params.AdditionalFields
	token, _ := f["progressToken"].(string)
	s.mu.Lock()
	fn := s.progress[token]
	s.mu.Unlock()
	if fn == nil {
		return
	}
	p := CallProgress{}
	p.Progress, _ = f["progress"].(float64)
	p.Total, _ = f["total"].(float64)
	msg, _ := f["message"].(string)
	if len(msg) > MaxProgressMessage {
		msg = msg[:MaxProgressMessage]
	}
	p.Message = strings.ToValidUTF8(msg, "")
	fn(p)
}

// MaxLogData caps the JSON of a relayed log message's data: a larger one
// is relayed as a note of its size.
const MaxLogData = 16 << 10

type logKey struct{}

// WithCallLog returns a context whose tool calls (Session.Call, and so
// Pool.Call) pass the log messages (notifications/message) the server
// sends while the call runs to fn, from the session's reading goroutine:
// fn must not block. A message names no call, so it is passed on only
// while one call that takes them is in flight on the session; others are
// dropped, never shown to another call's agent.
func WithCallLog(ctx context.Context, fn func(CallLog)) context.Context {
	return context.WithValue(ctx, logKey{}, fn)
}

func logOf(ctx context.Context) func(CallLog) {
	fn, _ := ctx.Value(logKey{}).(func(CallLog))
	return fn
}

// CallLog is one log message of a server, as MCP has it: its level, its
// logger (valid UTF-8, cut to 256 bytes) and its data (JSON, at most
// MaxLogData bytes).
type CallLog struct {
	Level  mcp.LoggingLevel
	Logger string
	Data   json.RawMessage
}

// takeLogs has fn take the session's log messages while it is
// registered; the returned function ends that.
func (s *Session) takeLogs(fn func(CallLog)) (done func()) {
	id := s.calls.Add(1)
	s.mu.Lock()
	if s.logs == nil {
		s.logs = map[uint64]func(CallLog){}
	}
	s.logs[id] = fn
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.logs, id)
		s.mu.Unlock()
	}
}

// logged passes a notifications/message to the one call in flight that
// takes log messages, if it is the only request in flight and none other
// ended just before (see alone).
func (s *Session) logged(n mcp.JSONRPCNotification) {
	if !s.alone(logQuiet) {
		return
	}
	s.mu.Lock()
	var fn func(CallLog)
	if len(s.logs) == 1 {
		for _, f := range s.logs {
			fn = f
		}
	}
	s.mu.Unlock()
	if fn == nil {
		return
	}
	f := n.Params.AdditionalFields
	level, _ := f["level"].(string)
	if !slices.Contains(logLevels, mcp.LoggingLevel(level)) {
		return
	}
	logger, _ := f["logger"].(string)
	if len(logger) > 256 {
		logger = logger[:256]
	}
	data, err := json.Marshal(f["data"])
	if err != nil {
		return
	}
	if len(data) > MaxLogData {
		data, _ = json.Marshal(fmt.Sprintf("(a log message of %d bytes, over Switchboard's limit of %d)", len(data), MaxLogData))
	}
	fn(CallLog{Level: mcp.LoggingLevel(level), Logger: strings.ToValidUTF8(logger, ""), Data: data})
}

// logLevels are MCP's log levels.
var logLevels = []mcp.LoggingLevel{mcp.LoggingLevelDebug, mcp.LoggingLevelInfo, mcp.LoggingLevelNotice, mcp.LoggingLevelWarning,
	mcp.LoggingLevelError, mcp.LoggingLevelCritical, mcp.LoggingLevelAlert, mcp.LoggingLevelEmergency}
