package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/discovery/sandbox"
)

// verifyOutput is what `switchboard verify --json` prints.
type verifyOutput struct {
	OK              bool              `json:"ok"`
	Transport       string            `json:"transport"`
	Target          string            `json:"target"`
	ProtocolVersion string            `json:"protocol_version,omitempty"`
	Server          *serverInfo       `json:"server,omitempty"`
	Tools           []json.RawMessage `json:"tools"`
	Pages           int               `json:"pages,omitempty"`
	Timings         []timing          `json:"timings"`
	TotalMS         float64           `json:"total_ms"`
	Warnings        []string          `json:"warnings,omitempty"`
	// Isolation is what the run's walls and containment were.
	Isolation string       `json:"isolation,omitempty"`
	Error     *verifyError `json:"error,omitempty"`
}

type serverInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type timing struct {
	Phase string  `json:"phase"`
	MS    float64 `json:"ms"`
}

type verifyError struct {
	Class      string `json:"class"`
	Phase      string `json:"phase,omitempty"`
	Message    string `json:"message"`
	Suggestion string `json:"suggestion,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
	ExitCode   *int   `json:"exit_code,omitempty"`
}

// verifyCmd runs one verification without the store and prints the result.
// It exits 0 on success, 1 on a failed verification, 2 on bad usage.
func verifyCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs, asJSON, tf := targetCommand("verify", "usage: switchboard verify [--json] [--env K=V]... -- CMD ARGS...\n"+
		"       switchboard verify [--json] [--transport sse] [--header 'K: V']... URL\n", stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2}
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return usageError("verify needs a command (after --) or a URL")
	}
	t, limits, err := tf.target(rest)
	if err != nil {
		return err
	}
	v := walled(discovery.NewVerifier(limits, getenv), getenv)
	start := time.Now()
	var res *discovery.Result
	err = tf.oauth.signingIn(ctx, v, &t, stderr, func() (err error) {
		res, err = v.Verify(ctx, t, 0, nil)
		return err
	})
	out := verifyOutput{OK: err == nil, Transport: t.Transport, Target: t.URL, Tools: []json.RawMessage{}, Timings: []timing{}}
	if t.Transport == discovery.TransportStdio {
		out.Target = strings.Join(rest, " ")
	}
	if res != nil {
		out.ProtocolVersion = res.ProtocolVersion
		out.Server = &serverInfo{Name: res.ServerName, Version: res.ServerVersion}
		out.Pages = res.Pages
		out.Warnings = res.Warnings
		out.Isolation = res.Isolation
		for _, tool := range res.Tools {
			out.Tools = append(out.Tools, tool.Raw)
		}
		for _, tm := range res.Timings {
			out.Timings = append(out.Timings, timing{Phase: tm.Phase, MS: float64(tm.Duration.Microseconds()) / 1000})
		}
	}
	out.TotalMS = float64(time.Since(start).Microseconds()) / 1000
	var verr *discovery.Error
	if errors.As(err, &verr) {
		out.Error = errorJSON(verr)
	} else if err != nil {
		// Not the server's answer: a sign-in that failed, say.
		out.Error = &verifyError{Class: "sign_in", Message: err.Error()}
	}

	if *asJSON {
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else {
		printVerify(stdout, out, res)
	}
	if err != nil {
		if verr != nil {
			return &exitError{code: 1, msg: fmt.Sprintf("verification failed: %s in %s: %s", verr.Class, verr.Phase, verr.Message)}
		}
		return &exitError{code: 1, msg: "verification failed: " + err.Error()}
	}
	return nil
}

// errorJSON is a verification's *discovery.Error as the --json output
// shows it.
func errorJSON(e *discovery.Error) *verifyError {
	out := &verifyError{Class: e.Class, Phase: e.Phase, Message: e.Message, Suggestion: e.Suggestion, StderrTail: e.StderrTail}
	if e.ExitCode >= 0 {
		code := e.ExitCode
		out.ExitCode = &code
	}
	return out
}

// writeJSON writes v as one line of JSON to w: indented for a person at
// a terminal, compact for a program (or jq), without the cost of
// indenting (≈ 1–2 ms for 25 tools).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	if isTerminal(w) {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// targetCommand is the flag set of a command that reaches one server
// (verify, call): --json and the targetFlags, usage and errors to stderr.
func targetCommand(name, usage string, stderr io.Writer) (*flag.FlagSet, *bool, *targetFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	tf := addTargetFlags(fs)
	tf.oauth = addOAuthFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs, asJSON, tf
}

// targetFlags are the flags that say how to reach a server, shared by
// verify and call.
type targetFlags struct {
	oauth     *oauthFlags
	transport *string
	timeout   *time.Duration
	limits    discovery.Limits
	env       map[string]string
	headers   map[string]string
	// The walls of a stdio server: its command's default profile, with
	// these changes; off runs it with the person's whole power.
	walls         *string
	network       *string
	allow, writes []string
	weaker        *bool
}

func addTargetFlags(fs *flag.FlagSet) *targetFlags {
	tf := &targetFlags{env: map[string]string{}, headers: map[string]string{}}
	tf.transport = fs.String("transport", "", "for a URL: http (Streamable HTTP, default) or sse")
	tf.timeout = fs.Duration("timeout", 30*time.Second, "deadline for start + initialize, and again for listing tools (-limit init and list win)")
	limitFlag(fs, &tf.limits, "")
	fs.Func("env", "NAME=VALUE for a stdio server's environment, repeatable", func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return fmt.Errorf("want NAME=VALUE, got %q", v)
		}
		tf.env[k] = val
		return nil
	})
	tf.walls = fs.String("walls", "on", "a stdio server's walls: on (its command's default profile, as the dashboard gives it) or off (it runs with your whole power)")
	tf.network = fs.String("network", "", "a walled stdio server's network: none, allow (the --allow hosts) or any (default: its command's profile)")
	fs.Func("allow", "a host[:port] or *.domain a walled stdio server may reach through the egress proxy, repeatable", func(v string) error {
		tf.allow = append(tf.allow, v)
		return nil
	})
	fs.Func("write", "a path a walled stdio server may write, repeatable", func(v string) error {
		tf.writes = append(tf.writes, v)
		return nil
	})
	tf.weaker = fs.Bool("weaker", false, "run a stdio server with the walls this machine can build when it cannot build them all")
	fs.Func("header", "Name: value for a remote server, repeatable", func(v string) error {
		k, val, ok := strings.Cut(v, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("want Name: value, got %q", v)
		}
		tf.headers[strings.TrimSpace(k)] = strings.TrimSpace(val)
		return nil
	})
	return tf
}

// target is the server rest names (one URL, or a command and its
// arguments), with the limits the flags set.
func (tf *targetFlags) target(rest []string) (discovery.Target, discovery.Limits, error) {
	t := discovery.Target{Transport: discovery.TransportStdio, Command: rest[0], Args: rest[1:], Env: tf.env}
	if len(rest) == 1 && (strings.HasPrefix(rest[0], "http://") || strings.HasPrefix(rest[0], "https://")) {
		t = discovery.Target{Transport: discovery.TransportHTTP, URL: rest[0], Headers: tf.headers}
		if *tf.transport == "sse" {
			t.Transport = discovery.TransportSSE
		} else if *tf.transport != "" && *tf.transport != "http" {
			return t, tf.limits, usageError("--transport must be http or sse, got %q", *tf.transport)
		}
	}
	if t.Transport == discovery.TransportStdio {
		p, err := tf.profile(t.Command)
		if err != nil {
			return t, tf.limits, err
		}
		t.Sandbox = p
	}
	limits := tf.limits
	if limits.InitTimeout == 0 {
		limits.InitTimeout = *tf.timeout
	}
	if limits.ListTimeout == 0 {
		limits.ListTimeout = *tf.timeout
	}
	return t, limits, nil
}

// profile is the permission profile the flags give a stdio server of
// command: nil with --walls off.
func (tf *targetFlags) profile(command string) (*sandbox.Profile, error) {
	switch *tf.walls {
	case "off":
		return nil, nil
	case "on", "":
	default:
		return nil, usageError("--walls must be on or off, got %q", *tf.walls)
	}
	p := sandbox.ForCommand(command)
	p.Write = append(p.Write, tf.writes...)
	p.Allow = append(p.Allow, tf.allow...)
	if len(tf.allow) > 0 && p.Network == sandbox.NetworkNone {
		p.Network = sandbox.NetworkAllow
	}
	if *tf.network != "" {
		p.Network = *tf.network
	}
	p.Weaker = *tf.weaker
	n, err := p.Normalize()
	if fe := (*sandbox.FieldError)(nil); errors.As(err, &fe) {
		return nil, usageError("--%s: %s", fe.Field, fe.Message) // network, allow or write: the flags' names
	} else if err != nil {
		return nil, usageError("%v", err)
	}
	return &n, nil
}

// walled gives v the walls' knowledge of Switchboard (its database,
// whose files no server reads), as the dashboard's Verifier has.
func walled(v *discovery.Verifier, getenv func(string) string) *discovery.Verifier {
	db := cmpOr(getenv("SWITCHBOARD_DB"), defaultDBPath(runtime.GOOS, getenv))
	return v.Walled(sandbox.Config{Database: db})
}

func printVerify(w io.Writer, out verifyOutput, res *discovery.Result) {
	if out.Error != nil {
		fmt.Fprintf(w, "FAILED %s in %s: %s\n", out.Error.Class, out.Error.Phase, out.Error.Message)
		if out.Error.Suggestion != "" {
			fmt.Fprintf(w, "  %s\n", out.Error.Suggestion)
		}
		if out.Error.StderrTail != "" {
			fmt.Fprintf(w, "  stderr:\n%s\n", indent(out.Error.StderrTail))
		}
		return
	}
	fmt.Fprintf(w, "OK %s %s, protocol %s, %d tools in %.0f ms\n", out.Server.Name, out.Server.Version, out.ProtocolVersion, len(res.Tools), out.TotalMS)
	if out.Isolation != "" {
		fmt.Fprintf(w, "  walls: %s\n", out.Isolation)
	}
	for _, tm := range out.Timings {
		fmt.Fprintf(w, "  %-13s %8.1f ms\n", tm.Phase, tm.MS)
	}
	for _, tool := range res.Tools {
		fmt.Fprintf(w, "  - %s\n", tool.Name)
	}
	for _, warn := range out.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
