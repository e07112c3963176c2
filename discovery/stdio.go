package discovery

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// stdioTransport speaks newline-delimited JSON-RPC to a process we started.
// Unlike mcp-go's stdio transport it reads with a per-message and a total
// byte cap, owns the process group, and hands tools/list results to a
// recorder verbatim. It implements transport.BidirectionalInterface.
type stdioTransport struct {
	proc   *process
	limits Limits
	rec    *recorder

	writeMu sync.Mutex

	mu        sync.Mutex
	pending   map[string]chan *transport.JSONRPCResponse
	abandoned map[string]bool // requests we stopped waiting for
	onNotify  func(mcp.JSONRPCNotification)
	onRequest transport.RequestHandler
	warnings  []string

	readDone chan struct{} // closed when the read loop ends
	readErr  error         // why it ended; set before readDone closes
	started  sync.Once
	closed   sync.Once
}

var _ transport.BidirectionalInterface = (*stdioTransport)(nil)

func newStdioTransport(p *process, limits Limits, rec *recorder) *stdioTransport {
	return &stdioTransport{
		proc:      p,
		limits:    limits,
		rec:       rec,
		pending:   map[string]chan *transport.JSONRPCResponse{},
		abandoned: map[string]bool{},
		readDone:  make(chan struct{}),
	}
}

// Start begins reading the process's stdout. The process itself was
// started by the pipeline so that spawn errors are classified there.
func (t *stdioTransport) Start(context.Context) error {
	t.started.Do(func() { go t.readLoop() })
	return nil
}

// maxBannerLines is how many non-JSON lines on stdout are tolerated (with
// a warning) before the server is declared not to speak MCP.
const maxBannerLines = 20

// readLoop reads messages until stdout closes or a limit is hit. It exits
// when the process's stdout is closed, which stop guarantees.
func (t *stdioTransport) readLoop() {
	defer close(t.readDone)
	r := bufio.NewReaderSize(t.proc.stdout, 64*1024)
	var total int64
	banners := 0
	for {
		line, err := readLine(r, t.limits.MessageBytes)
		total += int64(len(line)) + 1
		if err != nil {
			t.readErr = err
			if errors.Is(err, io.EOF) {
				t.readErr = errStdoutClosed
			}
			return
		}
		if total > t.limits.TotalBytes {
			t.readErr = errTooLarge{fmt.Sprintf("server sent more than %d bytes in one verification", t.limits.TotalBytes)}
			return
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' {
			banners++
			if banners > maxBannerLines {
				t.readErr = fmt.Errorf("server printed more than %d lines that are not JSON-RPC on stdout, e.g. %q", maxBannerLines, sample(line))
				return
			}
			t.warn(fmt.Sprintf("ignored a line on stdout that is not JSON-RPC: %q", sample(line)))
			continue
		}
		t.dispatch(line)
	}
}

// readLine reads one line of at most max bytes (without the newline).
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			return nil, errTooLarge{fmt.Sprintf("server sent a message larger than %d bytes", max)}
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

func sample(b []byte) string {
	if len(b) > 120 {
		b = b[:120]
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}

// message is any JSON-RPC message from the server.
type message struct {
	ID     *mcp.RequestId           `json:"id"`
	Method string                   `json:"method"`
	Params json.RawMessage          `json:"params"`
	Result json.RawMessage          `json:"result"`
	Error  *mcp.JSONRPCErrorDetails `json:"error"`
}

func (t *stdioTransport) dispatch(line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		t.warn(fmt.Sprintf("ignored a message that is not valid JSON-RPC: %q", sample(line)))
		return
	}
	switch {
	case m.Method != "" && m.ID != nil:
		go t.answer(m)
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
		t.mu.Lock()
		key := m.ID.String()
		ch, ok := t.pending[key]
		delete(t.pending, key)
		late := t.abandoned[key]
		delete(t.abandoned, key)
		t.mu.Unlock()
		if late {
			return // e.g. the server/discover probe that timed out
		}
		if !ok {
			t.warn(fmt.Sprintf("ignored a response to unknown request id %s", m.ID.String()))
			return
		}
		ch <- &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: *m.ID, Result: m.Result, Error: m.Error}
	}
}

// answer replies to a request the server sent us (sampling, roots,
// elicitation, ping) through the client's handler, or with an error.
func (t *stdioTransport) answer(m message) {
	t.mu.Lock()
	h := t.onRequest
	t.mu.Unlock()
	var resp *transport.JSONRPCResponse
	if h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, _ = h(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: *m.ID, Method: m.Method, Params: m.Params})
		cancel()
	}
	if resp == nil {
		resp = &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: *m.ID,
			Error: &mcp.JSONRPCErrorDetails{Code: mcp.METHOD_NOT_FOUND, Message: "not supported during discovery"}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = t.write(ctx, resp)
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

// write sends one message, bounded by ctx's deadline (or five seconds),
// so a server that never reads stdin cannot block us.
func (t *stdioTransport) write(ctx context.Context, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	t.proc.stdin.SetWriteDeadline(deadline)
	if _, err := t.proc.stdin.Write(data); err != nil {
		return fmt.Errorf("write to server stdin: %w", err)
	}
	return nil
}

// SendRequest writes the request and waits for its response, the end of
// ctx, or the end of the server's stdout.
func (t *stdioTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	ch := make(chan *transport.JSONRPCResponse, 1)
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
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	got := func(resp *transport.JSONRPCResponse) (*transport.JSONRPCResponse, error) {
		if req.Method == string(mcp.MethodToolsList) && resp.Error == nil {
			t.rec.record(resp.Result)
		}
		return resp, nil
	}
	select {
	case resp := <-ch:
		return got(resp)
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
		case resp := <-ch:
			return got(resp)
		default:
		}
		return nil, t.readErr
	}
}

// SendNotification writes a notification.
func (t *stdioTransport) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	return t.write(ctx, n)
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

// Close stops the process group and waits for the read loop to end.
func (t *stdioTransport) Close() error {
	t.closed.Do(func() {
		t.proc.stop(t.limits.Grace)
		t.started.Do(func() { close(t.readDone) }) // never started: nothing to wait for
		<-t.readDone
	})
	return nil
}

// GetSessionId returns "": stdio has no session id.
func (t *stdioTransport) GetSessionId() string { return "" }
