package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
)

// terminal is where serve reports while it runs: the log (a line a
// verification, a routed call, a problem), and the warnings a person
// must not miss, which in text format stand apart as a short block
// saying what to do, and in JSON format are log records like the rest.
type terminal struct {
	log   *slog.Logger
	human io.Writer // where warning blocks go; nil in JSON format
}

// newTerminal writes to w in format "text" or "json".
func newTerminal(format string, w io.Writer) *terminal {
	if format == "json" {
		return &terminal{log: slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	}
	return &terminal{log: slog.New(&humanHandler{mu: &sync.Mutex{}, w: w}), human: w}
}

// humanHandler writes each record as one line a person reads: the time of
// day (the terminal has the date), then a sentence for a verification and
// for a routed call, or the message and its key=value pairs for anything
// else (its level first unless INFO). -log-format json keeps every record
// structured for programs.
type humanHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	attrs []slog.Attr
}

func (h *humanHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *humanHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &humanHandler{mu: h.mu, w: h.w, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

// WithGroup keeps the handler: the lines are flat, and nothing here logs
// in groups.
func (h *humanHandler) WithGroup(string) slog.Handler { return h }

func (h *humanHandler) Handle(_ context.Context, r slog.Record) error {
	a := map[string]string{}
	var keys []string
	add := func(at slog.Attr) bool {
		if _, seen := a[at.Key]; !seen {
			keys = append(keys, at.Key)
		}
		a[at.Key] = at.Value.Resolve().String()
		return true
	}
	for _, at := range h.attrs {
		add(at)
	}
	r.Attrs(add)
	has := func(ks ...string) bool {
		for _, k := range ks {
			if _, ok := a[k]; !ok {
				return false
			}
		}
		return true
	}
	var b strings.Builder
	b.WriteString(r.Time.Format(time.TimeOnly) + " ")
	switch {
	case r.Message == "verified" && has("server", "tools", "duration", "trigger"):
		tools := "tools"
		if a["tools"] == "1" {
			tools = "tool"
		}
		fmt.Fprintf(&b, "%s: verified, %s %s, in %s (%s)", a["server"], a["tools"], tools, a["duration"], a["trigger"])
	case r.Message == "verification did not succeed" && has("server", "outcome", "class", "phase", "duration", "trigger", "err"):
		fmt.Fprintf(&b, "%s: verification %s (%s in %s) after %s (%s): %s", a["server"], a["outcome"], a["class"], a["phase"], a["duration"], a["trigger"], a["err"])
	case r.Message == "routed call" && has("agent", "tool", "decision", "by", "outcome", "duration"):
		verb := map[string]string{"resources/read": "read", "prompts/get": "got the prompt"}[a["method"]]
		fmt.Fprintf(&b, "%s %s %s: %s by %s, %s, %s", a["agent"], cmp.Or(verb, "called"), a["tool"], a["decision"], a["by"], a["outcome"], a["duration"])
		if why := a["reason"] + a["err"]; why != "" {
			b.WriteString(": " + why)
		}
	default:
		if r.Level != slog.LevelInfo {
			b.WriteString(r.Level.String() + " ")
		}
		b.WriteString(r.Message)
		for _, k := range keys {
			v := a[k]
			if v == "" || strings.ContainsAny(v, " \t\n\"=") {
				v = strconv.Quote(v)
			}
			b.WriteString(" " + k + "=" + v)
		}
	}
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// warn says what is wrong (title), about what (subject), and the lines
// that say what it means and what to do.
func (t *terminal) warn(title, subject string, lines ...string) {
	if t.human == nil {
		t.log.Warn(strings.ToLower(title), "subject", subject, "detail", strings.Join(lines, " "))
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nWARNING: %s (%s)\n", title, subject)
	for _, l := range lines {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	b.WriteString("\n")
	io.WriteString(t.human, b.String())
}
