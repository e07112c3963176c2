package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// `switchboard mcp` is an MCP server on stdio that relays every message
// to the running dashboard's /mcp endpoint and back, for the clients
// that only start stdio servers (Claude Desktop and others). It speaks no
// MCP of its own: whatever /mcp speaks (both eras, questions to the
// person, list_changed, subscriptions/listen) passes through, so the
// client's session is the endpoint's. It adds what HTTP needs: the
// bearer token, the session id, the protocol version header, and for a
// 2026-07-28 request the standard and Mcp-Param headers, which it
// computes from the request (and, for a tool's parameters, from the
// tool's input schema in the tools lists it relayed).

// mcpTokenPath is where `switchboard serve` keeps the MCP token for
// `switchboard mcp`, beside the database (whose lock the dashboard
// holds), readable by its user only.
func mcpTokenPath(dbPath string) string { return dbPath + ".mcp-token" }

// keepMCPToken writes the token to path (0600), replacing it whole.
func keepMCPToken(path, token string) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(token + "\n")
	if cerr := f.Chmod(0o600); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

const mcpUsage = `usage: switchboard mcp [-addr HOST:PORT | -url URL] [-db PATH]

Serves MCP on stdin/stdout, relaying to the running dashboard's /mcp
endpoint: for clients that start stdio servers only. The token is
SWITCHBOARD_MCP_TOKEN, or else the one the dashboard keeps beside its
database (readable by the user who runs it).
`

// maxBridgeMessage bounds one message from the client, as /mcp bounds a
// request body.
const maxBridgeMessage = 4 << 20

func mcpCmd(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, mcpUsage); fs.PrintDefaults() }
	addr := cmpOr(getenv("SWITCHBOARD_ADDR"), "127.0.0.1:"+strconv.Itoa(DefaultPort))
	fs.StringVar(&addr, "addr", addr, "the dashboard's address, as given to serve (env SWITCHBOARD_ADDR)")
	endpoint := fs.String("url", "", "the MCP endpoint's URL, if not http://ADDR/mcp (behind a proxy)")
	dbPath := fs.String("db", cmpOr(getenv("SWITCHBOARD_DB"), defaultDBPath(runtime.GOOS, getenv)), "the dashboard's database, beside which it keeps the MCP token (env SWITCHBOARD_DB)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &exitError{code: 0}
		}
		return &exitError{code: 2}
	}
	if fs.NArg() > 0 {
		return usageError("mcp takes no arguments, got %q", fs.Args())
	}
	url := *endpoint
	if url == "" {
		url = "http://" + addr + "/mcp"
	}
	b := &bridge{url: url, token: getenv("SWITCHBOARD_MCP_TOKEN"), hc: &http.Client{}, out: stdout, log: stderr, tools: map[string]*mcp.Tool{}}
	if b.token == "" {
		b.tokenFile = mcpTokenPath(*dbPath)
		if !b.reloadToken() {
			return fmt.Errorf("mcp: no MCP token: set SWITCHBOARD_MCP_TOKEN (the Agents page shows it), or run as the user who runs switchboard serve (%s cannot be read)", b.tokenFile)
		}
	}
	return b.run(ctx, stdin)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// bridge relays one stdio client to /mcp.
type bridge struct {
	url string
	hc  *http.Client
	log io.Writer
	// tokenFile, if set, is where the token was read: read again when the
	// endpoint refuses it (rotated).
	tokenFile string

	outMu sync.Mutex
	out   io.Writer

	// ctx ends with the bridge; wg holds what runs until then.
	ctx context.Context
	wg  sync.WaitGroup

	mu      sync.Mutex
	token   string
	session string // Mcp-Session-Id, once initialized (2025-11-25 and earlier)
	// initialize and initialized are the client's own, kept to start a
	// session again when the endpoint forgot it (restarted, or idle).
	initialize, initialized []byte
	listening               bool                 // the session's stream is relayed (see listen)
	restartMu               sync.Mutex           // one restart at a time
	version                 string               // the protocol version negotiated by initialize
	tools                   map[string]*mcp.Tool // from the tools lists relayed, for Mcp-Param headers
}

// message is what the bridge reads of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

func (m message) isRequest() bool { return m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" }

// run relays until stdin ends or ctx does, then ends the session.
func (b *bridge) run(ctx context.Context, stdin io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	b.ctx = ctx
	defer func() {
		cancel()
		b.wg.Wait()
		b.endSession()
	}()
	in := bufio.NewReaderSize(stdin, 64<<10)
	for {
		line, err := readMessage(in)
		if len(bytes.TrimSpace(line)) > 0 {
			var m message
			switch {
			case errors.Is(err, errTooLong):
				// The client waits for an answer: say why it gets none.
				fmt.Fprintf(b.log, "switchboard mcp: a message over %d bytes was dropped\n", maxBridgeMessage)
				b.write(rpcErrorJSON(leadingID(line), mcp.INVALID_REQUEST, fmt.Sprintf("switchboard mcp: a message over %d MiB is refused", maxBridgeMessage>>20)))
			case json.Unmarshal(line, &m) != nil:
				b.write(rpcErrorJSON(nil, mcp.PARSE_ERROR, "switchboard mcp: a message that is not JSON-RPC"))
			case m.Method == string(mcp.MethodInitialize) && m.isRequest():
				b.mu.Lock()
				b.initialize = slices.Clone(line)
				b.mu.Unlock()
				b.wg.Go(func() { b.request(ctx, line, m) })
			case m.Method == string(mcp.MethodNotificationInitialized):
				b.mu.Lock()
				b.initialized = slices.Clone(line)
				b.mu.Unlock()
				b.post(ctx, line, m)
			case m.isRequest():
				// Each request is answered on its own: a call may wait for a
				// person, a subscriptions/listen stream lasts.
				b.wg.Go(func() { b.request(ctx, line, m) })
			default:
				// Notifications and answers to the endpoint's questions, in
				// order.
				b.post(ctx, line, m)
			}
		}
		if err != nil && !errors.Is(err, errTooLong) {
			return nil // stdin ended: the client is gone
		}
	}
}

var errTooLong = errors.New("message too long")

// leadingID is the id of an over-long message, if it comes early in it.
var leadingIDRe = regexp.MustCompile(`^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,20})`)

func leadingID(line []byte) json.RawMessage {
	if m := leadingIDRe.FindSubmatch(line); m != nil {
		return json.RawMessage(m[1])
	}
	return nil
}

// readMessage reads one line, at most maxBridgeMessage bytes of it.
func readMessage(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > maxBridgeMessage {
			head := append(line, chunk[:min(len(chunk), 512)]...)
			for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of the line
				_, err = r.ReadSlice('\n')
			}
			return head[:min(len(head), 512)], errTooLong
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// write writes one message to the client, on a line of its own.
func (b *bridge) write(msg []byte) {
	var buf bytes.Buffer
	if json.Compact(&buf, msg) != nil {
		return
	}
	buf.WriteByte('\n')
	b.outMu.Lock()
	defer b.outMu.Unlock()
	b.out.Write(buf.Bytes())
}

func rpcErrorJSON(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	return out
}

// request relays a request and its answer (and whatever the endpoint
// sends on the way: progress, questions to the person).
func (b *bridge) request(ctx context.Context, body []byte, m message) {
	resp, err := b.exchange(ctx, http.MethodPost, body, m)
	if err != nil {
		if ctx.Err() == nil {
			b.write(rpcErrorJSON(m.ID, mcp.INTERNAL_ERROR, err.Error()))
		}
		return
	}
	defer resp.Body.Close()
	answered := false
	err = b.relay(resp, func(msg []byte) {
		var r message
		if json.Unmarshal(msg, &r) == nil && bytes.Equal(r.ID, m.ID) && r.Method == "" {
			answered = true
			b.learn(resp, m, r)
		}
		b.write(msg)
	})
	if !answered && ctx.Err() == nil {
		if err == nil {
			err = fmt.Errorf("switchboard answered HTTP %d without an answer", resp.StatusCode)
		}
		b.write(rpcErrorJSON(m.ID, mcp.INTERNAL_ERROR, "switchboard mcp: "+err.Error()))
	}
}

// post relays a notification or an answer; the endpoint accepts it with
// no answer to relay, or says why not.
func (b *bridge) post(ctx context.Context, body []byte, m message) {
	resp, err := b.exchange(ctx, http.MethodPost, body, m)
	if err != nil {
		fmt.Fprintln(b.log, "switchboard mcp:", err)
		return
	}
	defer resp.Body.Close()
	if err := b.relay(resp, b.write); err != nil {
		fmt.Fprintln(b.log, "switchboard mcp:", err)
	}
}

// learn keeps what later requests need from an answer: the session and
// version initialize gave, and the tools a list gave.
func (b *bridge) learn(resp *http.Response, req, answer message) {
	switch req.Method {
	case string(mcp.MethodInitialize):
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(answer.Result, &res)
		b.mu.Lock()
		b.session, b.version = resp.Header.Get("Mcp-Session-Id"), res.ProtocolVersion
		listen := b.session != "" && !b.listening
		b.listening = b.listening || listen
		b.mu.Unlock()
		if listen { // one stream, whichever session is current
			b.wg.Go(b.listen)
		}
	case string(mcp.MethodToolsList):
		var res struct {
			Tools []json.RawMessage `json:"tools"`
		}
		json.Unmarshal(answer.Result, &res)
		b.mu.Lock()
		for _, raw := range res.Tools {
			var t mcp.Tool
			if json.Unmarshal(raw, &t) == nil {
				b.tools[t.Name] = &t
			}
		}
		b.mu.Unlock()
	}
}

// send makes one HTTP request to the endpoint with the headers it needs.
func (b *bridge) send(ctx context.Context, method string, body []byte, m message) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, b.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	session, version, token := b.session, b.version, b.token
	b.mu.Unlock()
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	var params struct {
		Meta *mcp.Meta `json:"_meta"`
		Name string    `json:"name"`
	}
	json.Unmarshal(m.Params, &params)
	if modern := params.Meta.ProtocolVersion(); mcp.IsModernProtocol(modern) {
		req.Header.Set(mcp.HeaderProtocolVersion, modern)
		for k, v := range mcp.StandardHeaders(modern, mcp.MCPMethod(m.Method), m.Params) {
			req.Header.Set(k, v)
		}
		if m.Method == string(mcp.MethodToolsCall) {
			b.mu.Lock()
			tool := b.tools[params.Name]
			b.mu.Unlock()
			if tool != nil {
				for k, v := range mcp.GenerateParamHeaders(tool, m.Params) {
					req.Header.Set(k, v)
				}
			}
		}
	} else {
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		if version != "" {
			req.Header.Set(mcp.HeaderProtocolVersion, version)
		}
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("Switchboard is not reachable at %s (is switchboard serve running?): %w", b.url, err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		return nil, errTokenRefused
	}
	return resp, nil
}

var errTokenRefused = errors.New("Switchboard refused the MCP token: set SWITCHBOARD_MCP_TOKEN to the token on its Agents page (it changes when rotated)")

// exchange is send, once more after what the bridge can mend by itself:
// a token rotated since it was read from the file, and a session the
// endpoint no longer knows (it restarted, or ended the session after an
// idle hour), which the bridge starts again with the client's own
// initialize, unseen by the client.
func (b *bridge) exchange(ctx context.Context, method string, body []byte, m message) (*http.Response, error) {
	b.mu.Lock()
	hadSession := b.session
	b.mu.Unlock()
	resp, err := b.send(ctx, method, body, m)
	switch {
	case errors.Is(err, errTokenRefused) && b.reloadToken():
	case err == nil && resp.StatusCode == http.StatusNotFound && hadSession != "" && m.Method != string(mcp.MethodInitialize):
		resp.Body.Close()
		if rerr := b.restart(ctx, hadSession); rerr != nil {
			return nil, fmt.Errorf("the session with Switchboard ended and could not be started again: %w", rerr)
		}
	default:
		return resp, err
	}
	return b.send(ctx, method, body, m)
}

// reloadToken reads the token file again; it reports whether it holds a
// token other than the one in use.
func (b *bridge) reloadToken() bool {
	if b.tokenFile == "" {
		return false
	}
	data, err := os.ReadFile(b.tokenFile)
	tok := strings.TrimSpace(string(data))
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil || tok == "" || tok == b.token {
		return false
	}
	b.token = tok
	return true
}

// restart starts a new session in place of gone, unless another request
// did already.
func (b *bridge) restart(ctx context.Context, gone string) error {
	b.restartMu.Lock()
	defer b.restartMu.Unlock()
	b.mu.Lock()
	if b.session != gone {
		b.mu.Unlock()
		return nil // started again meanwhile
	}
	b.session = ""
	init, initialized := b.initialize, b.initialized
	b.mu.Unlock()
	if init == nil {
		return errors.New("the client never initialized")
	}
	var m message
	json.Unmarshal(init, &m)
	resp, err := b.send(ctx, http.MethodPost, init, m)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var answer message
	if err := b.relay(resp, func(msg []byte) {
		var r message
		if json.Unmarshal(msg, &r) == nil && bytes.Equal(r.ID, m.ID) && r.Method == "" {
			answer = r
		}
	}); err != nil {
		return err
	}
	if answer.Result == nil {
		return fmt.Errorf("initialize answered HTTP %d without a result", resp.StatusCode)
	}
	b.mu.Lock()
	b.session = resp.Header.Get("Mcp-Session-Id")
	b.mu.Unlock()
	if initialized != nil {
		if r, err := b.send(ctx, http.MethodPost, initialized, message{Method: string(mcp.MethodNotificationInitialized)}); err == nil {
			r.Body.Close()
		}
	}
	fmt.Fprintln(b.log, "switchboard mcp: the session with Switchboard was started again")
	return nil
}

// relay hands each JSON-RPC message of an answer to fn: a JSON body, or
// the events of a stream, until it ends.
func (b *bridge) relay(resp *http.Response, fn func([]byte)) error {
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return nil
	case media == "text/event-stream":
		return readEvents(resp.Body, fn)
	case media == "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(body)) > 0 {
			fn(body)
		}
		if resp.StatusCode >= 300 {
			return fmt.Errorf("switchboard answered HTTP %d", resp.StatusCode)
		}
		return nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return fmt.Errorf("switchboard answered HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
}

// readEvents hands the data of each server-sent event to fn.
func readEvents(r io.Reader, fn func([]byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				fn(data)
				data = nil
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
	}
	return sc.Err()
}

// listen relays what the endpoint sends outside any request (list
// changes, questions to the person) on the session's stream, opened
// again after a drop, until the bridge ends.
func (b *bridge) listen() {
	for delay := 100 * time.Millisecond; ; delay = min(delay*2, 5*time.Second) {
		resp, err := b.exchange(b.ctx, http.MethodGet, nil, message{})
		if err == nil {
			if resp.StatusCode == http.StatusMethodNotAllowed { // no such stream here
				resp.Body.Close()
				return
			}
			start := time.Now()
			b.relay(resp, b.write)
			resp.Body.Close()
			if time.Since(start) > 10*time.Second {
				delay = 100 * time.Millisecond // it was up: not a failing server
			}
		}
		select {
		case <-b.ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// endSession ends the session at the endpoint, as a client does when it
// is done.
func (b *bridge) endSession() {
	b.mu.Lock()
	session := b.session
	b.session = ""
	b.mu.Unlock()
	if session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, b.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Mcp-Session-Id", session)
	if resp, err := b.hc.Do(req); err == nil {
		resp.Body.Close()
	}
}
