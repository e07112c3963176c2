package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery/netpolicy"
	"github.com/switchboard-dev/switchboard/discovery/oauth"
)

// recorder keeps the raw result of the last tools/list response, so the
// pipeline stores tools exactly as the server sent them rather than as
// mcp-go's structs re-encode them.
type recorder struct {
	mu   sync.Mutex
	last json.RawMessage
}

func (r *recorder) record(result json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = append(json.RawMessage(nil), result...)
}

// listStub is the tools/list result mcp-go gets once the real one is
// recorded: the pipeline decodes that one, entry by entry, within its
// limits. mcp-go would decode every entry of a page again, keep them all,
// and fail the whole page for one entry that is not a tool object.
var listStub = json.RawMessage(`{"tools":[]}`)

// tap records resp's result if it answers tools/list or another list
// the pipeline decodes (see listStubs), and returns what mcp-go gets
// instead: resp with the list's stub as its result. The answer to a
// task's call is handed on as a tool result (see taskAnswer).
func (r *recorder) tap(req transport.JSONRPCRequest, resp *transport.JSONRPCResponse) *transport.JSONRPCResponse {
	if req.Method == string(mcp.MethodToolsCall) {
		return taskAnswer(req, resp)
	}
	list, ok := listStubs[req.Method]
	if resp == nil || resp.Error != nil || !ok {
		return resp
	}
	r.record(resp.Result)
	stub := *resp
	stub.Result = list
	return &stub
}

// take returns and forgets the last recorded result.
func (r *recorder) take() json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.last
	r.last = nil
	return last
}

// streamableTap is mcp-go's Streamable HTTP transport with tools/list
// results recorded. Embedding keeps every optional interface the client
// looks for (protocol version, request handler, legacy detection).
type streamableTap struct {
	*transport.StreamableHTTP
	rec   *recorder
	tally *httpTally
}

func (t streamableTap) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	return sendAnswering(ctx, t.send, nil, req, networkTCP)
}

func (t streamableTap) send(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.StreamableHTTP.SendRequest(ctx, req)
	if err == nil {
		resp = t.rec.tap(req, resp)
	}
	if errors.Is(err, transport.ErrLegacySSEServer) {
		// mcp-go turns any 4xx to initialize into this error, losing the
		// status (a 403 is about credentials, not a legacy server).
		if s := t.tally.status.Load(); s != 0 {
			err = fmt.Errorf("initialize answered with status %d (%w)", s, err)
		}
	}
	return resp, err
}

// RequiresLegacyProtocol is false, though a watch's transport has
// continuous listening on, for which mcp-go's answer (true) would keep
// the connection on a protocol version before 2026-07-28, where a server
// that speaks only the new one cannot follow. Without the override, a
// watch would also speak another protocol than the verification of the
// same server. The listening is for a connection that falls back to an
// older version; on a 2026-07-28 one, mcp-go opens no GET stream, and the
// watch opts in with subscriptions/listen instead.
func (t streamableTap) RequiresLegacyProtocol() bool { return false }

// sseTap is the same for mcp-go's legacy SSE transport.
type sseTap struct {
	*transport.SSE
	rec *recorder
}

func (t sseTap) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	return sendAnswering(ctx, t.send, nil, req, networkTCP)
}

func (t sseTap) send(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.SSE.SendRequest(ctx, req)
	if err == nil {
		resp = t.rec.tap(req, resp)
	}
	return resp, err
}

// httpTally is what the HTTP client of one verification saw, beyond what
// mcp-go's errors tell.
type httpTally struct {
	status atomic.Int32 // the last HTTP status >= 400
	// auth is the Bearer challenge of the last 401 or 403 (see
	// challenge).
	auth atomic.Pointer[oauth.Challenge]
	// signIn is the last refusal of the TokenSource saying the person
	// must sign in (a ClassAuth *Error): mcp-go wraps it, or, for a
	// stream it reopens, only logs it.
	signIn atomic.Pointer[Error]
	// cut is why a body was cut (the byte budget, or a message over the
	// cap), the first time one was.
	cut atomic.Pointer[errTooLarge]
	// onOverflow is called once, when a body is first cut: nothing that
	// waits for more from the server (an SSE endpoint event, say) should
	// wait for its deadline then.
	onOverflow func()
	// onStreamEnd, if set, is called when an event stream the server
	// opened for a GET (its messages to the client) ends, however: the
	// session's channel to the client is gone, though the client's
	// transport may quietly open another to a server that knows nothing
	// of the session (a restarted one).
	onStreamEnd func()
}

// cutShort records why a body was cut, and calls onOverflow the first
// time.
func (t *httpTally) cutShort(e errTooLarge) {
	if t.cut.CompareAndSwap(nil, &e) && t.onOverflow != nil {
		t.onOverflow()
	}
}

// challenge is the Bearer challenge of the last 401 (or 403
// insufficient_scope) the server answered, or nil.
func (t *httpTally) challenge() *oauth.Challenge {
	if t == nil {
		return nil
	}
	return t.auth.Load()
}

// signInAsked is the last refusal of the TokenSource that says the
// person must sign in, or nil.
func (t *httpTally) signInAsked() *Error {
	if t == nil {
		return nil
	}
	return t.signIn.Load()
}

// forget clears the challenge and the TokenSource's refusal: what comes
// next is a new request's (a session's call).
func (t *httpTally) forget() {
	if t != nil {
		t.auth.Store(nil)
		t.signIn.Store(nil)
	}
}

// tooLarge returns why a body was cut, or nil.
func (t *httpTally) tooLarge() error {
	if t == nil {
		return nil
	}
	if e := t.cut.Load(); e != nil {
		return *e
	}
	return nil
}

// httpClient returns the client remote transports use: every request
// is under policy (see netpolicy.Policy: where it may connect and redirect,
// and to which requests the configured headers go), all response bodies
// together are bounded by budget, and, if message is positive, each
// message in them by message bytes (see cappedBody); an HTML page where
// MCP was expected is refused with a sample of it, the secrets (as
// secrets returns them then) redacted. tally records what happened. It
// has no Timeout, which would cut a held event stream (mcp-go's
// WithHTTPTimeout sets one on it, for a verification).
func httpClient(policy *netpolicy.Policy, limits Limits, budget *byteBudget, message int, tally *httpTally, secrets func() []string) *http.Client {
	return &http.Client{
		Transport:     cappedTransport{policy.Transport(netpolicy.BaseTransport(limits.InitTimeout)), budget, message, tally, secrets},
		CheckRedirect: policy.CheckRedirect,
	}
}

// cappedTransport limits how many bytes all response bodies together may
// deliver (the client serves one verification or one watch), and how
// big one message in them may be.
type cappedTransport struct {
	base    http.RoundTripper
	budget  *byteBudget
	message int // 0: no cap of its own
	tally   *httpTally
	secrets func() []string // the values to redact, tokens handed out so far included
}

func (c cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		if e := signInRequired(err); e != nil {
			c.tally.signIn.Store(e) // only the TokenSource's refusals are of this class
		}
		return nil, err
	}
	if resp.StatusCode >= 400 {
		c.tally.status.Store(int32(resp.StatusCode))
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		if ch, ok := oauth.ParseChallenge(resp.StatusCode, resp.Header.Values("WWW-Authenticate")); ok && (resp.StatusCode == http.StatusUnauthorized || ch.Error == "insufficient_scope") {
			c.tally.auth.Store(&ch)
		}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	body := &cappedBody{rc: resp.Body, budget: c.budget, message: c.message, events: mt == "text/event-stream", tally: c.tally}
	if r.Method == http.MethodGet && resp.StatusCode == http.StatusOK && mt == "text/event-stream" && c.tally.onStreamEnd != nil {
		body.onEnd = c.tally.onStreamEnd
	}
	resp.Body = body
	// No MCP answer is HTML; a sign-in page of a proxy or gateway is, and
	// mcp-go would only name its content type, or wait for an SSE endpoint
	// event that never comes.
	if resp.StatusCode == http.StatusOK && mt == "text/html" {
		// Enough to see whole any secret that starts in the sample.
		secrets := c.secrets()
		head, _ := io.ReadAll(io.LimitReader(resp.Body, int64(sampleBytes+longest(secrets))))
		resp.Body.Close()
		return nil, newError(ClassProtocol, "", fmt.Sprintf("server answered with an HTML page instead of MCP (HTTP %d, %s): %q",
			resp.StatusCode, mt, sample(head, secrets)), nil)
	}
	return resp, nil
}

// cappedBody is a response body read within its client's byte budget.
// With a message cap, it also bounds each message: an event of an event
// stream (the bytes between two blank lines, with their SSE framing, for
// which messageSlack is allowed), or the whole of any other body. mcp-go
// reads an event whole into memory, however long, so a stream that is
// held for hours would otherwise let one endless event grow without
// bound, the budget's window after window.
type cappedBody struct {
	rc      io.ReadCloser
	budget  *byteBudget // shared by all bodies of the client
	message int
	events  bool // an event stream
	tally   *httpTally
	onEnd   func() // called once when the body ends (an event stream's)
	ended   sync.Once

	inMessage int  // bytes of the current message
	inLine    bool // the current line of the event stream has bytes
}

// messageSlack is what an event may hold beyond the message cap: its
// "data: " prefixes, "event:" and "id:" lines.
const messageSlack = 4 << 10

func (b *cappedBody) end() {
	if b.onEnd != nil {
		b.ended.Do(b.onEnd)
	}
}

func (b *cappedBody) Read(p []byte) (int, error) {
	room := b.budget.room()
	if room <= 0 {
		return 0, b.cut(b.budget.exceeded())
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.rc.Read(p)
	b.budget.use(n)
	if b.message > 0 && !b.within(p[:n]) {
		return 0, b.cut(errTooLarge{fmt.Sprintf("server sent a message larger than %d bytes", b.message)})
	}
	if err != nil {
		b.end()
	}
	return n, err
}

// within counts p into the current message, and reports whether every
// message so far is within the cap.
func (b *cappedBody) within(p []byte) bool {
	limit := b.message
	if !b.events {
		b.inMessage += len(p)
		return b.inMessage <= limit
	}
	limit += messageSlack
	for _, c := range p {
		switch c {
		case '\n':
			if !b.inLine { // a blank line ends the event
				b.inMessage = 0
			}
			b.inLine = false
		case '\r':
		default:
			b.inLine = true
			b.inMessage++
		}
	}
	return b.inMessage <= limit
}

// cut reports a body cut at a limit, and ends it.
func (b *cappedBody) cut(e errTooLarge) error {
	b.tally.cutShort(e)
	b.end()
	return e
}

func (b *cappedBody) Close() error {
	b.end()
	return b.rc.Close()
}

// CloseIdleConnections closes the connections the transport keeps.
func (c cappedTransport) CloseIdleConnections() {
	if ci, ok := c.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// closeIdle releases the connections a client kept open.
func closeIdle(c *http.Client) { c.CloseIdleConnections() }
