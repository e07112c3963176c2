package discovery

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// stdioTransport speaks newline-delimited JSON-RPC to a process we started.
// Unlike mcp-go's stdio transport it reads with a per-message and a total
// byte cap, owns the process group, and hands tools/list results to a
// recorder verbatim. It implements transport.BidirectionalInterface.
type stdioTransport struct {
	// relays says the session relays the server's requests to calling
	// agents (Target.Asks): their answers may take a person's time.
	relays  bool
	proc    *process
	limits  Limits
	rec     *recorder
	secrets []string // redacted from what the transport quotes
	// budget bounds all that is read: Limits.TotalBytes in all unless
	// replaced before Start (a watch's is per WatchWindow).
	budget *byteBudget

	// wsem is the right to write to stdin (a channel, so that waiting for
	// it can end with a deadline). A write holds it until its bytes are in
	// the pipe, which takes forever for a server that does not read.
	wsem chan struct{}
	// broken is set, by a write that holds wsem, when a message was cut
	// off part way (its deadline passed with some of it written): what
	// the server reads next would continue that message, so nothing more
	// is written. Read and written only while holding wsem.
	broken bool

	// life ends when Close starts: it stops the answerer, and whatever
	// waits to write.
	life     context.Context
	endLife  context.CancelFunc
	requests chan message // from the server, waiting for the answerer

	mu        sync.Mutex
	pending   map[string]chan reply
	abandoned map[string]bool // requests we stopped waiting for
	onNotify  func(mcp.JSONRPCNotification)
	onRequest transport.RequestHandler
	warnings  []string

	readDone   chan struct{} // closed when the read loop ends
	readErr    error         // why it ended; set before readDone closes
	answerDone chan struct{} // closed when the answerer ends
	started    sync.Once
	closed     sync.Once
}

// reply is what a pending request gets: the server's response, or why
// there will be none.
type reply struct {
	resp *transport.JSONRPCResponse
	err  error
}

// maxQueuedRequests bounds the requests from the server waiting for an
// answer. When they pile up (a server that sends requests faster than it
// reads the answers), reading stops until the answerer catches up, so
// neither goroutines nor memory grow with what the server sends.
const maxQueuedRequests = 16

// answerTimeout bounds the answer to one request from the server, and the
// writing of any answer.
const answerTimeout = 5 * time.Second

// relayedAnswerTimeout bounds the answer to a request the session relays
// to a calling agent (see Asks): a person may be asked first, so it is
// the relay (the call's end, the ask timeout) that ends it, well before
// this.
const relayedAnswerTimeout = 10 * time.Minute

var _ transport.BidirectionalInterface = (*stdioTransport)(nil)

func newStdioTransport(p *process, limits Limits, rec *recorder, secrets []string) *stdioTransport {
	life, endLife := context.WithCancel(context.Background())
	return &stdioTransport{
		proc:       p,
		limits:     limits,
		rec:        rec,
		secrets:    secrets,
		budget:     newByteBudget(limits.TotalBytes, 0),
		wsem:       make(chan struct{}, 1),
		life:       life,
		endLife:    endLife,
		requests:   make(chan message, maxQueuedRequests),
		pending:    map[string]chan reply{},
		abandoned:  map[string]bool{},
		readDone:   make(chan struct{}),
		answerDone: make(chan struct{}),
	}
}

// Start begins reading the process's stdout and answering its requests.
// The process itself was started by the pipeline so that spawn errors are
// classified there.
func (t *stdioTransport) Start(context.Context) error {
	t.started.Do(func() {
		go t.readLoop()
		go t.answerLoop()
	})
	return nil
}

// maxBannerLines is how many non-JSON lines on stdout are tolerated (with
// a warning) before the server is declared not to speak MCP.
const maxBannerLines = 20

// readLoop reads messages until stdout closes, a limit is hit or Close
// starts. It exits when the process's stdout is closed, which stop
// guarantees, at the latest.
func (t *stdioTransport) readLoop() {
	defer close(t.readDone)
	r := bufio.NewReaderSize(t.proc.stdout, 64*1024)
	banners := 0
	for {
		line, err := readLine(r, t.limits.MessageBytes)
		if err != nil {
			t.readErr = err
			if errors.Is(err, io.EOF) {
				t.readErr = errStdoutClosed
			}
			return
		}
		if !t.budget.use(len(line) + 1) {
			t.readErr = t.budget.exceeded()
			return
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' {
			banners++
			if banners > maxBannerLines {
				t.readErr = fmt.Errorf("server printed more than %d lines that are not JSON-RPC on stdout, e.g. %q", maxBannerLines, sample(line, t.secrets))
				return
			}
			t.warn(fmt.Sprintf("ignored a line on stdout that is not JSON-RPC: %q", sample(line, t.secrets)))
			continue
		}
		if !t.dispatch(line) {
			t.readErr = errTransportClosed
			return
		}
	}
}

// readLine reads one line of at most limit bytes (without the newline),
// also when it is the last one and has none. A long line grows by
// doubling, up to limit+1 bytes, so what reading it allocates stays near
// twice the limit, whatever the server sends.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		need := len(line) + len(chunk)
		content := need
		if err == nil {
			content-- // the newline
		}
		if content > limit {
			return nil, errTooLarge{fmt.Sprintf("server sent a message larger than %d bytes", limit)}
		}
		if need > cap(line) {
			grown := make([]byte, len(line), min(max(2*cap(line), need), limit+1))
			copy(grown, line)
			line = grown
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

// sampleBytes is how much of what a server sent a message quotes.
const sampleBytes = 120

// sample returns the start of b, at most sampleBytes of it, to quote in a
// message. The secrets are redacted from all of b first: redacting only
// the sample would leave the part of a secret that the end of the sample
// cuts off, and redacting after quoting would miss a secret that quoting
// escapes (one with a quote, a backslash, a control character). The cut
// falls on a rune boundary; invalid UTF-8 becomes U+FFFD.
func sample(b []byte, secrets []string) string {
	s := redact(string(b), secrets)
	return strings.ToValidUTF8(cutText(s, sampleBytes), "\uFFFD")
}

// quote is %q of s with the secrets redacted first (see sample).
func quote(s string, secrets []string) string {
	return strconv.Quote(redact(s, secrets))
}

// cutText returns s cut to at most n bytes, before a rune that would be
// cut in two.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - 1 // where the last rune before n starts
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	if !utf8.FullRuneInString(s[i:n]) {
		n = i
	}
	return s[:n]
}

// message is any JSON-RPC message from the server.
type message struct {
	ID     *mcp.RequestId           `json:"id"`
	Method string                   `json:"method"`
	Params json.RawMessage          `json:"params"`
	Result json.RawMessage          `json:"result"`
	Error  *mcp.JSONRPCErrorDetails `json:"error"`
}

// dispatch hands one message to whoever waits for it. It returns false
// only when Close started while a request from the server waited for a
// place in the answerer's queue.
func (t *stdioTransport) dispatch(line []byte) bool {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		// A response too deep or too odd for encoding/json still names
		// the request it answers: fail that request now rather than let
		// it wait for its deadline.
		if id, ok := responseID(line); ok && t.deliver(id, reply{err: fmt.Errorf("the server's answer is not valid JSON: %w", err)}) {
			return true
		}
		t.warn(fmt.Sprintf("ignored a message that is not valid JSON-RPC: %q", sample(line, t.secrets)))
		return true
	}
	switch {
	case m.Method != "" && m.ID != nil:
		select {
		case t.requests <- m:
		case <-t.life.Done():
			return false
		}
	case m.Method != "":
		t.mu.Lock()
		h := t.onNotify
		t.mu.Unlock()
		if h != nil {
			var n mcp.JSONRPCNotification
			if json.Unmarshal(line, &n) == nil {
				h(n)
			}
		}
	case m.ID != nil:
		resp := &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: *m.ID, Result: m.Result, Error: m.Error}
		if !t.deliver(*m.ID, reply{resp: resp}) {
			t.warn("ignored a response to unknown request id " + quote(m.ID.String(), t.secrets))
		}
	}
	return true
}

// responseID finds the top-level "id" of a JSON-RPC message without
// decoding anything else. It counts brackets instead of recursing, so it
// also reads messages that encoding/json refuses, e.g. for nesting deeper
// than it allows, wherever in the object the id stands.
func responseID(line []byte) (mcp.RequestId, bool) {
	depth := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			end := stringEnd(line, i)
			if end < 0 {
				return mcp.RequestId{}, false
			}
			rest := bytes.TrimLeft(line[end+1:], " \t\r\n")
			if depth == 1 && string(line[i:end+1]) == `"id"` && len(rest) > 0 && rest[0] == ':' {
				var raw json.RawMessage
				var id mcp.RequestId
				if json.NewDecoder(bytes.NewReader(rest[1:])).Decode(&raw) != nil || json.Unmarshal(raw, &id) != nil || id.IsNil() {
					return mcp.RequestId{}, false
				}
				return id, true
			}
			i = end
		}
	}
	return mcp.RequestId{}, false
}

// stringEnd returns the index of the quote that ends the JSON string
// starting at b[start], or -1.
func stringEnd(b []byte, start int) int {
	for j := start + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}

// deliver gives r to the request with the id. It reports false if no
// request with that id was ever waiting; a request that stopped waiting
// (e.g. the server/discover probe that timed out) takes it silently.
func (t *stdioTransport) deliver(id mcp.RequestId, r reply) bool {
	t.mu.Lock()
	key := id.String()
	ch, ok := t.pending[key]
	delete(t.pending, key)
	late := t.abandoned[key]
	delete(t.abandoned, key)
	t.mu.Unlock()
	if ok {
		ch <- r
	}
	return ok || late
}

// answerLoop answers the server's requests one at a time, in order, until
// Close starts.
func (t *stdioTransport) answerLoop() {
	defer close(t.answerDone)
	for {
		select {
		case m := <-t.requests:
			t.answer(m)
		case <-t.life.Done():
			return
		}
	}
}

// answer replies to a request the server sent us (sampling, roots,
// elicitation, ping) through the client's handler, or with an error.
func (t *stdioTransport) answer(m message) {
	t.mu.Lock()
	h := t.onRequest
	t.mu.Unlock()
	limit := answerTimeout
	if t.relays {
		limit = relayedAnswerTimeout
	}
	ctx, cancel := context.WithTimeout(t.life, limit)
	defer cancel()
	var resp *transport.JSONRPCResponse
	var err error
	if h != nil {
		resp, err = h(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: *m.ID, Method: m.Method, Params: m.Params})
	}
	switch {
	case resp != nil:
	case err != nil && t.relays:
		// A relay's refusal (a policy, no agent to ask, the agent's own
		// error) reaches the server as what it is.
		resp = &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: *m.ID,
			Error: &mcp.JSONRPCErrorDetails{Code: mcp.INTERNAL_ERROR, Message: cutText(err.Error(), 500)}}
	default:
		resp = &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: *m.ID,
			// The same transport holds a routed call's session: say what is
			// not supported, not when (issue 34).
			Error: &mcp.JSONRPCErrorDetails{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf("%.64s is not supported: Switchboard does not answer a server's requests to its client", m.Method)}}
	}
	// The answer is written with a deadline of its own: one that took
	// its whole time still reaches the server.
	wctx, wcancel := context.WithTimeout(t.life, answerTimeout)
	defer wcancel()
	_ = t.write(wctx, resp)
}

func (t *stdioTransport) warn(w string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.warnings) < 10 {
		t.warnings = append(t.warnings, w)
	}
}

// Warnings returns what the transport tolerated but wants a person to see.
func (t *stdioTransport) Warnings() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.warnings...)
}

// write sends one message, bounded by ctx's deadline (or answerTimeout),
// so a server that never reads stdin cannot block us: once the pipe is
// full, the write in progress and every write waiting behind it end at
// their deadlines with errStdinBlocked.
func (t *stdioTransport) write(ctx context.Context, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(answerTimeout)
	}
	if t.life.Err() != nil {
		return errTransportClosed
	}
	select {
	case t.wsem <- struct{}{}: // free, as it mostly is: no timer
	default:
		if err := t.waitWrite(ctx, deadline); err != nil {
			return err
		}
	}
	defer func() { <-t.wsem }()
	if t.broken {
		return errStdinBlocked
	}
	t.proc.stdin.SetWriteDeadline(deadline)
	// A cancelled verification must not wait for the deadline of a
	// write the server does not take: moving the deadline to the past
	// ends the write at once. The next write sets its own deadline, so it
	// must not start before that has happened.
	moved := make(chan struct{})
	stopMove := context.AfterFunc(ctx, func() {
		t.proc.stdin.SetWriteDeadline(time.Unix(1, 0))
		close(moved)
	})
	n, err := t.proc.stdin.Write(data)
	if !stopMove() {
		<-moved
	}
	if err != nil && n > 0 {
		t.broken = true
	}
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return blockedOr(ctx.Err())
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errStdinBlocked
	}
	return fmt.Errorf("write to server stdin: %w", err)
}

// waitWrite waits for the turn to write (t.wsem) until deadline.
func (t *stdioTransport) waitWrite(ctx context.Context, deadline time.Time) error {
	wait := time.NewTimer(time.Until(deadline))
	defer wait.Stop()
	select {
	case t.wsem <- struct{}{}:
		return nil
	case <-wait.C:
		return errStdinBlocked
	case <-ctx.Done():
		return blockedOr(ctx.Err())
	case <-t.life.Done():
		return errTransportClosed
	}
}

// blockedOr reports a write that waited until its context's deadline as
// blocked by the server; a cancelled one stays cancelled.
func blockedOr(ctxErr error) error {
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		return errStdinBlocked
	}
	return ctxErr
}

// SendRequest writes the request and waits for its response, the end of
// ctx, or the end of the server's stdout.
func (t *stdioTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	return sendAnswering(ctx, t.send, t.cancelRetry, req, networkPipe)
}

func (t *stdioTransport) send(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	ch := make(chan reply, 1)
	key := req.ID.String()
	t.mu.Lock()
	t.pending[key] = ch
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.pending, key)
		t.mu.Unlock()
	}()
	if err := t.write(ctx, req); err != nil {
		return nil, err
	}
	got := func(r reply) (*transport.JSONRPCResponse, error) {
		if r.err != nil {
			return nil, r.err
		}
		return t.rec.tap(req, r.resp), nil
	}
	select {
	case r := <-ch:
		return got(r)
	case <-ctx.Done():
		t.mu.Lock()
		if len(t.abandoned) < 100 {
			t.abandoned[key] = true
		}
		t.mu.Unlock()
		return nil, ctx.Err()
	case <-t.readDone:
		// A response may have raced with the end of stdout.
		select {
		case r := <-ch:
			return got(r)
		default:
		}
		return nil, t.readErr
	}
}

// SendNotification writes a notification.
func (t *stdioTransport) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	return t.write(ctx, n)
}

// cancelRetry tells the server that the request id, sent again with the
// answers to its questions (see sendAnswering), is cancelled.
func (t *stdioTransport) cancelRetry(id mcp.RequestId) {
	ctx, cancel := context.WithTimeout(context.Background(), taskCancelTimeout)
	defer cancel()
	_ = t.SendNotification(ctx, mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationCancelled), Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": "the call ended"}}}})
}

// SetNotificationHandler sets the handler for server notifications.
func (t *stdioTransport) SetNotificationHandler(h func(mcp.JSONRPCNotification)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onNotify = h
}

// SetRequestHandler sets the handler for requests the server sends us.
func (t *stdioTransport) SetRequestHandler(h transport.RequestHandler) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onRequest = h
}

// Close stops the process group and waits for the read loop and the
// answerer to end.
func (t *stdioTransport) Close() error {
	t.closed.Do(func() {
		t.endLife()
		t.proc.stop(t.limits.Grace)
		t.started.Do(func() { // never started: nothing to wait for
			close(t.readDone)
			close(t.answerDone)
		})
		<-t.readDone
		<-t.answerDone
	})
	return nil
}

// GetSessionId returns "": stdio has no session id.
func (t *stdioTransport) GetSessionId() string { return "" }
