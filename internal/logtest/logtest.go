// Package logtest is a slog.Handler for tests that keeps every record,
// so that a test can fail on a logged error, or on a secret in any line.
package logtest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// Recorder keeps every record it handles, as a line: the message and its
// attributes. Its zero value is ready to use; it is safe for concurrent
// use.
type Recorder struct {
	mu    sync.Mutex
	lines []line
}

type line struct {
	level slog.Level
	text  string
}

func (l *Recorder) Enabled(context.Context, slog.Level) bool { return true }

func (l *Recorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, line{r.Level, b.String()})
	l.mu.Unlock()
	return nil
}

func (l *Recorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *Recorder) WithGroup(string) slog.Handler      { return l }

// ForgetErrors forgets the errors logged so far (a test that provoked
// them on purpose); other lines stay.
func (l *Recorder) ForgetErrors() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = slices.DeleteFunc(l.lines, func(ln line) bool { return ln.level >= slog.LevelError })
}

// Errors returns the lines logged at error or above.
func (l *Recorder) Errors() []string { return l.Texts(slog.LevelError) }

// Texts returns the lines logged at min or above.
func (l *Recorder) Texts(min slog.Level) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ln := range l.lines {
		if ln.level >= min {
			out = append(out, ln.text)
		}
	}
	return out
}
