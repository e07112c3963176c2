package discovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery/netpolicy"
	"github.com/switchboard-dev/switchboard/discovery/oauth"
)

// Error classes. Each has one suggestion a person can act on.
const (
	ClassNotFound   = "not_found"
	ClassPermission = "permission"
	ClassExited     = "exited"
	ClassTimeout    = "timeout"
	ClassProtocol   = "protocol"
	ClassTooLarge   = "too_large"
	ClassHTTPStatus = "http_status"
	ClassNetwork    = "network"
	// ClassAuth: the server wants a signed-in client (a 401, or a 403
	// insufficient_scope, with a Bearer challenge), or the target's
	// TokenSource says the person must sign in (again); Error.Auth says
	// what the server asked for. Not a failure of the server: sign in
	// (see Error.SignIn, Verifier.DiscoverAuth).
	ClassAuth      = "auth_required"
	ClassCancelled = "cancelled"
	ClassInternal  = "internal"
	// ClassSandbox: the server's walls could not be built as its profile
	// asks (this machine lacks what they need, or the profile does not
	// check out); nothing ran.
	ClassSandbox = "sandbox"
)

// Error is why a verification failed. Message and StderrTail are redacted:
// they never contain the values of the server's env or headers.
type Error struct {
	Class      string
	Phase      string
	Message    string
	Suggestion string
	StderrTail string
	ExitCode   int // -1 unless Class is ClassExited
	// Auth is the server's challenge (Class ClassAuth only, and never
	// nil then). When the TokenSource asked for the sign-in and the
	// server said nothing, it is a zero challenge (Status 0): the sign-in
	// is found from the server's well-known metadata locations.
	Auth *oauth.Challenge
	// SignIn is where to sign in, found when a verification of a remote
	// server ends with ClassAuth (Verify and VerifyEarly only, not a
	// watch or a session): the DiscoverAuth of the challenge, with the
	// target's OAuthScopes. It is nil if that discovery failed, and
	// SignInProblem then says why (displayable, redacted), e.g. that the
	// protected resource metadata names another resource.
	SignIn        *oauth.Plan
	SignInProblem string
	// HTTPStatus is the status of a ClassHTTPStatus answer (0 if unknown).
	HTTPStatus int
	// Refused is what the server's walls refused it during the run (a
	// stdio server with a profile; nil if nothing was): learn mode.
	Refused *Refused
	// guessed is set for an error no case of classify recognised: it is
	// ClassProtocol for want of better, and not known to last.
	guessed bool
	err     error
}

// Lasting reports whether the failure will not pass by itself: the
// server cannot start or run as configured (a missing command, a crash at
// start, a refusal of its URL or credentials, something that is not MCP,
// a sign-in to make) until a person changes something. Timeouts, network
// failures, busy servers (HTTP 429 and 5xx), cancellations and
// Switchboard's own failures may pass on the next try.
func (e *Error) Lasting() bool {
	switch e.Class {
	case ClassNotFound, ClassPermission, ClassExited, ClassTooLarge, ClassAuth, ClassSandbox:
		return true
	case ClassProtocol:
		return !e.guessed
	case ClassHTTPStatus:
		return e.HTTPStatus != http.StatusTooManyRequests && e.HTTPStatus < 500
	}
	return false
}

func (e *Error) Error() string {
	if e.Phase != "" {
		return fmt.Sprintf("%s in %s: %s", e.Class, e.Phase, e.Message)
	}
	return e.Class + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.err }

// suggestions holds the one-line advice shown with each class.
var suggestions = map[string]string{
	ClassNotFound:   "Install the command or fix its path (it is looked up in the server's PATH).",
	ClassPermission: "Make the command executable (chmod +x) and check that it is not a directory.",
	ClassExited:     "The server exited on its own; read its stderr below and fix what it complains about.",
	ClassTimeout:    "The server did not answer in time; check that it speaks MCP on this transport, or raise the timeout (first npx runs can be slow).",
	ClassProtocol:   "The server did not speak MCP as expected; check the command or URL points at an MCP server.",
	ClassTooLarge:   "The server sent more data than the limits allow; raise the limit only if you trust it.",
	ClassHTTPStatus: "The server refused the request; check the URL and the credentials in the headers.",
	ClassNetwork:    "The server could not be reached; check the URL, that it is running, and your network.",
	ClassAuth:       "The server asks you to sign in: Sign in on its page (or run switchboard verify/call, which sign in too).",
	ClassCancelled:  "The verification was cancelled; Verify again when ready.",
	ClassInternal:   "Something went wrong inside Switchboard; the log has details.",
	ClassSandbox:    "The server's walls could not be built as its profile asks: change the profile, or choose to run it with the walls this machine has.",
}

// Suggestion returns the advice for an error class.
func Suggestion(class string) string { return suggestions[class] }

func newError(class, phase, msg string, cause error) *Error {
	return &Error{Class: class, Phase: phase, Message: msg, Suggestion: suggestions[class], ExitCode: -1, err: cause}
}

// errTooLarge is returned by bounded readers when a limit is exceeded.
type errTooLarge struct{ what string }

func (e errTooLarge) Error() string { return e.what }

var errStdoutClosed = errors.New("server closed stdout before answering")

// errStdinBlocked is returned when a message could not be written to the
// server's stdin before its deadline: the pipe is full because the server
// does not read.
var errStdinBlocked = errors.New("the server stopped reading its stdin: a message to it could not be written before the deadline")

// errTransportClosed is returned to whatever still used a stdio
// transport after Close started.
var errTransportClosed = errors.New("discovery: transport closed")

// statusRe finds the HTTP status in mcp-go's errors: "request failed with
// status 403: ..." (Streamable HTTP, SSE POST) and "unexpected status code:
// 403" (SSE stream).
var statusRe = regexp.MustCompile(`status(?: code)?:? (\d{3})`)

// refusal is the *Error of a request the outgoing-request policy refused
// (class network for a connection, protocol for a redirect), nil if err
// is none.
func refusal(err error, phase string) *Error {
	var r *netpolicy.RefusedError
	if !errors.As(err, &r) {
		return nil
	}
	class := ClassNetwork
	if r.Kind == "protocol" {
		class = ClassProtocol
	}
	return newError(class, phase, r.Message, err)
}

// classify turns an error from a phase into an *Error. exited reports
// whether the stdio child has already exited (with its code).
func classify(err error, phase string, jobCtx context.Context, exited bool, code int) *Error {
	var e *Error
	if errors.As(err, &e) {
		if e.Phase == "" {
			e.Phase = phase
		}
		return e
	}
	if e := refusal(err, phase); e != nil {
		return e
	}
	var tooLarge errTooLarge
	var unsupported mcp.UnsupportedProtocolVersionError
	var netErr net.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case jobCtx.Err() != nil && errors.Is(jobCtx.Err(), context.Canceled):
		return newError(ClassCancelled, phase, "cancelled while "+phase, err)
	case errors.As(err, &tooLarge):
		return newError(ClassTooLarge, phase, tooLarge.what, err)
	case exited:
		return exitError(phase, code, err)
	case errors.Is(err, errStdinBlocked):
		return newError(ClassTimeout, phase, errStdinBlocked.Error()+" ("+phase+")", err)
	case errors.Is(err, context.DeadlineExceeded):
		return newError(ClassTimeout, phase, "no answer before the "+phase+" deadline", err)
	case strings.HasPrefix(err.Error(), "timeout waiting for endpoint"):
		// mcp-go's SSE transport waits for the endpoint event until the
		// init deadline on a timer of its own, which can fire just
		// before the deadline's context does; it wraps nothing.
		return newError(ClassTimeout, phase, "the SSE server sent no endpoint event before the "+phase+" deadline", err)
	case errors.Is(err, errStdoutClosed):
		return newError(ClassExited, phase, errStdoutClosed.Error()+" (the process kept running)", err)
	case errors.As(err, &unsupported):
		return newError(ClassProtocol, phase, fmt.Sprintf("server speaks protocol version %q, supported: %s",
			unsupported.Version, strings.Join(mcp.ValidProtocolVersions, ", ")), err)
	case errors.Is(err, transport.ErrUnauthorized), errors.Is(err, transport.ErrAuthorizationRequired),
		errors.Is(err, transport.ErrOAuthAuthorizationRequired):
		e := newError(ClassHTTPStatus, phase, "server answered 401 Unauthorized: check credentials", err)
		e.HTTPStatus = http.StatusUnauthorized
		return e
	case errors.As(err, &dnsErr), errors.As(err, &opErr), errors.Is(err, syscall.ECONNREFUSED):
		return newError(ClassNetwork, phase, rootMessage(err), err)
	case errors.As(err, &netErr) && netErr.Timeout():
		return newError(ClassTimeout, phase, "no answer before the "+phase+" deadline", err)
	}
	if m := statusRe.FindStringSubmatch(err.Error()); m != nil {
		code, _ := strconv.Atoi(m[1])
		msg := "server answered HTTP " + m[1]
		if code == 401 || code == 403 {
			msg += ": check credentials"
		}
		e := newError(ClassHTTPStatus, phase, msg, err)
		e.HTTPStatus = code
		e.Suggestion = statusSuggestion(code, e.Suggestion)
		return e
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		// A remote server that dropped the connection (a stdio server
		// that did is ClassExited above): it may be back on the next try.
		return newError(ClassNetwork, phase, "the connection closed before the answer: "+rootMessage(err), err)
	}
	e = newError(ClassProtocol, phase, rootMessage(err), err)
	e.guessed = true
	return e
}

// statusSuggestion is the advice for a refusal with an HTTP status: what
// that status says of the URL or the credentials, not both at once.
func statusSuggestion(code int, general string) string {
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return "The server wants credentials: check the Authorization (or API key) header, or sign in if it offers OAuth."
	case code == http.StatusNotFound:
		return "Nothing answers MCP at this URL: check its path (Streamable HTTP servers often serve /mcp; a legacy SSE server, /sse with the transport set to SSE)."
	case code == http.StatusMethodNotAllowed || code == http.StatusNotAcceptable || code == http.StatusUnsupportedMediaType:
		return "The URL answers, but not to Streamable HTTP's POST: if it is a legacy SSE server (often /sse), set the transport to SSE."
	case code == http.StatusTooManyRequests || code >= 500:
		return "The server is busy or failing on its side; try again later."
	}
	return general
}

// spawnError classifies a failure to start a process.
func spawnError(err error, command string) *Error {
	var we *wallError
	switch {
	case errors.As(err, &we):
		return newError(ClassSandbox, PhaseStarting, rootMessage(err), err)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOENT), isNotFound(err):
		return newError(ClassNotFound, PhaseStarting, rootMessage(err), err)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EISDIR):
		return newError(ClassPermission, PhaseStarting, rootMessage(err), err)
	}
	return newError(ClassInternal, PhaseStarting, "could not start "+command+": "+rootMessage(err), err)
}

func exitError(phase string, code int, err error) *Error {
	msg := fmt.Sprintf("server exited with code %d during %s", code, phase)
	if code < 0 {
		msg = "server was killed by a signal during " + phase
	}
	e := newError(ClassExited, phase, msg, err)
	e.ExitCode = code
	return e
}

// maxMessageBytes bounds an error message, most of which may come from
// the server.
const maxMessageBytes = 2048

// displayable makes text that may come from a server safe to show and
// store as one line: control and format characters (ANSI escapes, line
// breaks, bidi overrides, zero-width and tag characters) and invalid
// UTF-8 become visible escapes, and text beyond maxMessageBytes is cut
// with a note saying how much.
func displayable(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if b.Len() >= maxMessageBytes {
			fmt.Fprintf(&b, "… (%d more bytes)", len(s)-i)
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsGraphic(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// rootMessage strips mcp-go's "transport error:" wrappers for display.
func rootMessage(err error) string {
	msg := err.Error()
	for _, p := range []string{"transport error: ", "failed to send request: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return msg
}

// NewError returns an *Error of the class with its suggestion.
func NewError(class, phase, msg string) *Error { return newError(class, phase, msg, nil) }
