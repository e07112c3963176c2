package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
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
	h := slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: shortTime})
	return &terminal{log: slog.New(h), human: w}
}

// shortTime writes a text line's time as the local time of day: the
// terminal a person watches has the date already.
func shortTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 && a.Value.Kind() == slog.KindTime {
		return slog.String(slog.TimeKey, a.Value.Time().Format(time.TimeOnly))
	}
	return a
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
