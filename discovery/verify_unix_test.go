//go:build unix

// These run servers written in sh or wrapped in it, and spawn errors that
// follow from Unix file modes.

package discovery

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func TestVerifyStderrTailCapped(t *testing.T) {
	// 200 lines of 100 bytes on stderr, then a last line and exit 1: the
	// tail keeps the end, within StderrBytes, from a line boundary.
	target, _ := shTarget(t, `i=0; while [ $i -lt 200 ]; do printf '%099d\n' $i >&2; i=$((i+1)); done; echo "the last words" >&2; exit 1`)
	_, e, _ := verify(t, Limits{StderrBytes: 1024}, target, nil)
	wantClass(t, e, ClassExited, "")
	if len(e.StderrTail) > 1024 || !strings.HasSuffix(e.StderrTail, "the last words\n") || !strings.HasPrefix(e.StderrTail, "0000") {
		t.Errorf("StderrTail (%d bytes) = %q", len(e.StderrTail), e.StderrTail)
	}
}

func TestVerifyExitDuringHandshake(t *testing.T) {
	// A server that reads the first request, then exits with a status:
	// the exit code wins over "closed stdout".
	target, _ := shTarget(t, `read line; echo "fatal: config missing" >&2; exit 7`)
	_, e, _ := verify(t, Limits{}, target, nil)
	wantClass(t, e, ClassExited, PhaseInitializing)
	if e.ExitCode != 7 || !strings.Contains(e.StderrTail, "fatal: config missing") {
		t.Errorf("ExitCode %d, StderrTail %q", e.ExitCode, e.StderrTail)
	}
}

func TestVerifySpawnErrors(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.sh")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		target Target
		class  string
	}{
		{"missing command", Target{Transport: TransportStdio, Command: "switchboard-no-such-command-xyz"}, ClassNotFound},
		{"missing path", Target{Transport: TransportStdio, Command: filepath.Join(dir, "nope")}, ClassNotFound},
		{"not executable", Target{Transport: TransportStdio, Command: plain}, ClassPermission},
		{"directory", Target{Transport: TransportStdio, Command: dir}, ClassPermission},
		{"missing cwd", Target{Transport: TransportStdio, Command: fixture, Cwd: filepath.Join(dir, "no-such-dir")}, ClassNotFound},
		{"cwd is a file", Target{Transport: TransportStdio, Command: fixture, Cwd: plain}, ClassNotFound},
		{"command missing from the server's PATH", Target{Transport: TransportStdio, Command: "sh", Env: map[string]string{"PATH": dir}}, ClassNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Run as is: a wrapper would turn these into sh's errors.
			_, e, d := verifyRaw(t, Limits{}, c.target, nil)
			wantClass(t, e, c.class, PhaseStarting)
			if !e.Lasting() {
				t.Errorf("a server that cannot start is not a lasting failure")
			}
			if d > time.Second {
				t.Errorf("took %v, want < 1s", d)
			}
			assertNoChildren(t)
		})
	}
}

func TestVerifyRedactsSecrets(t *testing.T) {
	const secret = "s3cr3t-value-xyz"
	noSecret := func(t *testing.T, e *Error) {
		t.Helper()
		for what, s := range map[string]string{"Message": e.Message, "StderrTail": e.StderrTail, "Error()": e.Error(), "Suggestion": e.Suggestion} {
			if strings.Contains(s, secret) {
				t.Errorf("%s contains the secret: %q", what, s)
			}
		}
	}
	t.Run("stderr", func(t *testing.T) {
		target, _ := shTarget(t, `echo "connecting with key $API_KEY" >&2; echo "key=$API_KEY failed" >&2; exit 1`)
		target.Env = map[string]string{"API_KEY": secret}
		_, e, _ := verify(t, Limits{}, target, nil)
		wantClass(t, e, ClassExited, "")
		if e.ExitCode != 1 {
			t.Errorf("ExitCode = %d", e.ExitCode)
		}
		if !strings.Contains(e.StderrTail, "connecting with key [redacted]") || !strings.Contains(e.StderrTail, "key=[redacted] failed") {
			t.Errorf("StderrTail = %q, want the lines with [redacted]", e.StderrTail)
		}
		noSecret(t, e)
	})
	t.Run("message", func(t *testing.T) {
		// The secret printed on stdout ends up in the protocol error's
		// message, which must be redacted too.
		target, _ := shTarget(t, `i=0; while [ $i -lt 30 ]; do echo "using token $API_KEY"; i=$((i+1)); done; exec cat >/dev/null`)
		target.Env = map[string]string{"API_KEY": secret}
		_, e, _ := verify(t, Limits{Grace: 200 * time.Millisecond}, target, nil)
		wantClass(t, e, ClassProtocol, "")
		if !strings.Contains(e.Message, "[redacted]") {
			t.Errorf("Message = %q, want [redacted]", e.Message)
		}
		noSecret(t, e)
	})
	t.Run("success warnings", func(t *testing.T) {
		// A server that prints a banner with its key on stdout and then
		// works: the warning about the banner must not show the key.
		target, _ := shTarget(t, `echo "started with token $API_KEY"; echo "token $API_KEY" >&2; exec "$@"`, fixture, "-tools", "2")
		target.Env = map[string]string{"API_KEY": secret}
		res, e, _ := verify(t, Limits{}, target, nil)
		if e != nil {
			t.Fatal(e)
		}
		if len(res.Warnings) == 0 {
			t.Fatal("no warning about the banner line")
		}
		for _, w := range res.Warnings {
			if strings.Contains(w, secret) {
				t.Errorf("warning contains the secret: %q", w)
			}
		}
		if strings.Contains(res.StderrTail, secret) || !strings.Contains(res.StderrTail, "[redacted]") {
			t.Errorf("StderrTail = %q", res.StderrTail)
		}
	})
	t.Run("cut by the sample", func(t *testing.T) {
		// 21 lines of garbage on stdout, one more than a server may print:
		// the error quotes the first 120 bytes of the last, and one secret
		// starts 12 bytes before that end. The other holds a quote, a
		// backslash and a letter outside ASCII, which quoting escapes.
		target, _ := shTarget(t, `pad=$(printf '%086d' 0)
i=0; while [ $i -lt 21 ]; do printf 'q=%s %s%s tail\n' "$QUOTE_KEY" "$pad" "$API_KEY"; i=$((i+1)); done
printf 'on stderr: %s%s' "$API_KEY" "$QUOTE_KEY" >&2
exec cat >/dev/null`)
		target.Env = map[string]string{"API_KEY": boundarySecret, "QUOTE_KEY": quoteSecret}
		_, e, _ := verify(t, Limits{Grace: 200 * time.Millisecond}, target, nil)
		wantClass(t, e, ClassProtocol, PhaseInitializing)
		// The sample is of the 21st line as sent, the secrets redacted.
		if want := `"q=[redacted] ` + strings.Repeat("0", 86); !strings.Contains(e.Message, want) {
			t.Errorf("Message = %q, want the sample %s…", e.Message, want)
		}
		noSecretPart(t, "Message", e.Message, boundarySecret, quoteSecret)
		noSecretPart(t, "Error()", e.Error(), boundarySecret, quoteSecret)
		noSecretPart(t, "StderrTail", e.StderrTail, boundarySecret, quoteSecret)
		if e.StderrTail != "on stderr: [redacted][redacted]" {
			t.Errorf("StderrTail = %q", e.StderrTail)
		}
	})
	t.Run("quoted in warnings", func(t *testing.T) {
		// A name too long to keep and a cursor repeated, both quoted in a
		// warning: a secret cut by the sample, or escaped by quoting. The
		// repeat is found on page 2, which lists the long name again.
		cursor := strings.Repeat("A", 108) + boundarySecretB64 // valid base64, as mcp-go wants its cursors
		s := newToolServer(3, listHook(func(r *mcp.ListToolsResult) {
			r.Tools[0].Name = quoteSecret + strings.Repeat("n", maxNameBytes)
			r.NextCursor = mcp.Cursor(cursor)
		}))
		target := Target{Transport: TransportHTTP, URL: serveStreamable(t, s),
			Headers: map[string]string{"X-Key": quoteSecret, "X-Other": boundarySecretB64}}
		res, e, _ := verify(t, Limits{}, target, nil)
		if e != nil {
			t.Fatal(e)
		}
		for _, want := range []string{`skipped 2 tools named with more than 16384 bytes, e.g. "[redacted]nnn`, `tools/list repeated cursor "` + strings.Repeat("A", 108) + `[redacted]" on page 2`} {
			if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
				t.Errorf("no warning has %q: %q", want, res.Warnings)
			}
		}
		for _, w := range res.Warnings {
			noSecretPart(t, "warning", w, boundarySecretB64, quoteSecret)
		}
	})
	t.Run("header", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Echo the credential back, as some servers do in errors.
			http.Error(w, "bad token "+r.Header.Get("Authorization"), http.StatusForbidden)
		}))
		defer ts.Close()
		_, e, _ := verify(t, Limits{InitTimeout: 2 * time.Second}, Target{Transport: TransportHTTP, URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer " + secret}}, nil)
		wantClass(t, e, ClassHTTPStatus, "")
		noSecret(t, e)
	})
}

// Secrets for the tests of redaction at the edge of what is quoted.
const (
	boundarySecret    = "bndry-secret-0123456789"
	boundarySecretB64 = "Bndry5ecret0123456789xyz" // base64 letters only
	quoteSecret       = `q"uote\secrét-9876`
)

// noSecretPart checks that text holds no part of 8 or more bytes at the
// start or the end of any of the secrets, as they are or as quoting
// (%q, or to ASCII) escapes them.
func noSecretPart(t *testing.T, what, text string, secrets ...string) {
	t.Helper()
	for _, secret := range secrets {
		q, qa := strconv.Quote(secret), strconv.QuoteToASCII(secret)
		for _, form := range []string{secret, q[1 : len(q)-1], qa[1 : len(qa)-1]} {
			for n := 8; n <= len(form); n++ {
				if part := form[:n]; strings.Contains(text, part) {
					t.Errorf("%s %q holds %q, the start of a secret", what, text, part)
					return
				}
				if part := form[len(form)-n:]; strings.Contains(text, part) {
					t.Errorf("%s %q holds %q, the end of a secret", what, text, part)
					return
				}
			}
		}
	}
}

func TestVerifyByteLimits(t *testing.T) {
	t.Run("message", func(t *testing.T) {
		// One line of 70 000 bytes, more than the 64 KiB limit; the
		// server stays alive, so the limit and not the exit is reported.
		target, _ := shTarget(t, `printf '{"jsonrpc":"2.0","method":"x","params":{"pad":"'; head -c 70000 /dev/zero | tr '\0' a; echo '"}}'; exec cat >/dev/null`)
		_, e, d := verify(t, Limits{MessageBytes: 64 << 10, InitTimeout: 5 * time.Second}, target, nil)
		wantClass(t, e, ClassTooLarge, "")
		if !strings.Contains(e.Message, "65536") {
			t.Errorf("Message = %q", e.Message)
		}
		if d > 3*time.Second {
			t.Errorf("took %v", d)
		}
	})
	t.Run("total stdio", func(t *testing.T) {
		_, e, _ := verify(t, Limits{TotalBytes: 4 << 10}, Target{Transport: TransportStdio, Command: fixture, Args: []string{"-tools", "25"}}, nil)
		wantClass(t, e, ClassTooLarge, PhaseListing)
	})
	t.Run("total http across pages", func(t *testing.T) {
		// Every page is small; together they exceed the budget of one
		// verification.
		s := newToolServer(40, server.WithPaginationLimit(4))
		u := serveStreamable(t, s)
		res, e, _ := verify(t, Limits{}, Target{Transport: TransportHTTP, URL: u}, nil)
		if e != nil || res.Pages != 11 {
			t.Fatalf("without a tight limit: %v, %+v", e, res)
		}
		_, e, _ = verify(t, Limits{TotalBytes: 4 << 10}, Target{Transport: TransportHTTP, URL: u}, nil)
		wantClass(t, e, ClassTooLarge, "")
	})
	t.Run("total http", func(t *testing.T) {
		u := startRemoteFixture(t, TransportHTTP, "-tools", "25", "-page-size", "0")
		_, e, _ := verify(t, Limits{TotalBytes: 4 << 10}, Target{Transport: TransportHTTP, URL: u}, nil)
		wantClass(t, e, ClassTooLarge, PhaseListing)
	})
}

func TestVerifyBannerLines(t *testing.T) {
	// A few non-JSON lines on stdout are tolerated with a warning.
	target, _ := shTarget(t, `echo "Server starting..."; exec "$@"`, fixture, "-tools", "2")
	res, e, _ := verify(t, Limits{}, target, nil)
	if e != nil {
		t.Fatal(e)
	}
	if len(res.Tools) != 2 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "Server starting...") {
		t.Errorf("tools %d warnings %q", len(res.Tools), res.Warnings)
	}
}

// shServer is a legacy (2025-06-18) MCP server written in sh: it answers
// initialize and tools/list from canned JSON. Env: ANSWER_UNKNOWN=1 answers
// other requests (the server/discover probe) with "method not found"
// instead of ignoring them; EXIT_AFTER_LIST=1 exits right after answering
// tools/list; LIST_ERROR=1 answers tools/list with a JSON-RPC error. Its
// first argument, if any, is the protocol version (not in env, whose
// values are redacted).
const shServer = `
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/^{"jsonrpc":"2.0","id":\([0-9]*\),.*/\1/p')
  case "$line" in
  *'"method":"initialize"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"%s","capabilities":{"tools":{}},"serverInfo":{"name":"sh-server","version":"0.1"}}}\n' "$id" "${1:-2025-06-18}" ;;
  *'"method":"tools/list"'*)
    if [ "$LIST_ERROR" = 1 ]; then
      printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"backend down"}}\n' "$id"
    else
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"only","description":"The only tool.","inputSchema":{"type":"object"}}]}}\n' "$id"
    fi
    [ "$EXIT_AFTER_LIST" = 1 ] && exit 0 ;;
  *'"id":'*)
    [ "$ANSWER_UNKNOWN" = 1 ] && printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}\n' "$id" ;;
  esac
done
`

func shServerTarget(env map[string]string, args ...string) Target {
	return Target{Transport: TransportStdio, Command: "sh", Args: append([]string{"-c", shServer, "sh-server"}, args...), Env: env}
}

func TestVerifyLegacyStdioServer(t *testing.T) {
	checkLegacy := func(t *testing.T, res *Result) {
		t.Helper()
		if res.ProtocolVersion != "2025-06-18" || res.ServerName != "sh-server" || len(res.Tools) != 1 || res.Tools[0].Name != "only" || res.Pages != 1 {
			t.Errorf("result %+v", res)
		}
	}
	t.Run("ignores server/discover", func(t *testing.T) {
		// The probe costs DiscoverTimeout, not mcp-go's 5 s default.
		res, e, d := verify(t, Limits{DiscoverTimeout: 200 * time.Millisecond}, shServerTarget(nil), nil)
		if e != nil {
			t.Fatal(e)
		}
		checkLegacy(t, res)
		if d < 200*time.Millisecond || d > 2*time.Second {
			t.Errorf("took %v, want about the 200ms discover timeout", d)
		}
	})
	t.Run("answers server/discover with an error", func(t *testing.T) {
		res, e, _ := verify(t, Limits{}, shServerTarget(map[string]string{"ANSWER_UNKNOWN": "1"}), nil)
		if e != nil {
			t.Fatal(e)
		}
		checkLegacy(t, res)
	})
	t.Run("exits after answering", func(t *testing.T) {
		for range 5 {
			res, e, _ := verify(t, Limits{}, shServerTarget(map[string]string{"ANSWER_UNKNOWN": "1", "EXIT_AFTER_LIST": "1"}), nil)
			if e != nil {
				t.Fatal(e)
			}
			checkLegacy(t, res)
		}
	})
	t.Run("unsupported protocol version", func(t *testing.T) {
		_, e, _ := verify(t, Limits{}, shServerTarget(map[string]string{"ANSWER_UNKNOWN": "1"}, "1999-01-01"), nil)
		wantClass(t, e, ClassProtocol, PhaseInitializing)
		if !strings.Contains(e.Message, "1999-01-01") || !strings.Contains(e.Message, "supported") {
			t.Errorf("Message = %q", e.Message)
		}
	})
	t.Run("tools/list error", func(t *testing.T) {
		_, e, _ := verify(t, Limits{}, shServerTarget(map[string]string{"ANSWER_UNKNOWN": "1", "LIST_ERROR": "1"}), nil)
		wantClass(t, e, ClassProtocol, PhaseListing)
		if !strings.Contains(e.Message, "backend down") {
			t.Errorf("Message = %q", e.Message)
		}
	})
}
