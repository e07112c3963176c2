package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// crashExitCode is the default -exit-code.
const crashExitCode = 3

// exitError asks main to exit with a specific status. A nil err means that
// everything worth saying has already been written to stderr.
type exitError struct {
	code int
	err  error
}

// Error describes the error, falling back to the exit status.
func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

// Unwrap returns the underlying error, if any.
func (e *exitError) Unwrap() error { return e.err }

// simulateCrash implements -mode crash: it writes recognizable lines to
// stderr, one of them with the -secret credential (as servers that log
// their connection string do), and returns an error that makes the process
// exit with -exit-code, before a single protocol message has been read or
// written.
func simulateCrash(cfg config, stderr io.Writer) error {
	fmt.Fprintln(stderr, "mcp-fixture: simulated crash: database unreachable")
	if cfg.secret != "" {
		fmt.Fprintf(stderr, "mcp-fixture: connection string postgres://app:%s@db/app refused\n", cfg.secret)
	}
	fmt.Fprintf(stderr, "mcp-fixture: exiting with status %d (-mode crash)\n", cfg.exitCode)
	return &exitError{code: cfg.exitCode}
}

// sleepContext waits for d or until ctx is cancelled, whichever comes first,
// and reports whether the full duration elapsed.
func sleepContext(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// hangStdio implements -mode hang-init for the stdio transport. It reads and
// discards stdin without ever writing to stdout, and returns when stdin
// reaches end of file or ctx is cancelled.
func hangStdio(ctx context.Context, stdin io.Reader) error {
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, stdin)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// The copying goroutine stays blocked in Read; the process is
		// about to exit anyway.
		return nil
	}
}

// hangHandler implements -mode hang-init for the http and sse transports.
// It reads the request body and then blocks until the request's context
// ends, which happens when the client gives up or the server shuts down.
// Because it never answers, it does not apply mcp-go's localhost Host-header
// check either: a request with a foreign Host header hangs like any other.
func hangHandler() http.Handler {
	return http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	})
}

// bumpRunCounter implements the run counter of -mode change-on-second-run.
// It reads the counter stored in path (a missing file counts as 0), stores
// the counter plus one, and returns the new value, which is 1 on the first
// run. The file is replaced atomically so a crash never leaves it half
// written, and runs that start together take turns (a lock directory
// beside it): a verification starts its server twice at once (see
// discovery/features.go), and each run must get a number of its own.
func bumpRunCounter(path string) (int, error) {
	unlock, err := lockDir(path + ".lock")
	if err != nil {
		return 0, err
	}
	defer unlock()
	previous := 0
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return 0, fmt.Errorf("read state file: %w", err)
	default:
		text := strings.TrimSpace(string(data))
		if text != "" {
			previous, err = strconv.Atoi(text)
			if err != nil || previous < 0 {
				return 0, fmt.Errorf("state file %s does not hold a run counter: %q", path, text)
			}
		}
	}
	run := previous + 1

	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return 0, fmt.Errorf("write state file: %w", err)
	}
	defer os.Remove(tmp.Name()) // Fails harmlessly once the rename succeeded.
	if _, err := fmt.Fprintf(tmp, "%d\n", run); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("write state file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("write state file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, fmt.Errorf("write state file: %w", err)
	}
	return run, nil
}

// changedTools returns the tool set that -mode change-on-second-run serves
// on the given run. Run 1 serves the normal generated set unchanged. From
// run 2 on, three things differ so that a client comparing the two lists
// sees one of each kind of change:
//
//   - tool_000 gets a different description (suffix " (changed)"),
//   - the last generated tool is removed, and
//   - a new tool named extra_tool is added.
//
// With -tools 1 the only generated tool is both the first and the last, so
// it is removed and only extra_tool remains.
func changedTools(tools []mcp.Tool, run, unchanged int) []mcp.Tool {
	if run <= unchanged {
		return tools
	}
	out := make([]mcp.Tool, 0, len(tools)+1)
	out = append(out, tools...)
	if len(out) > 0 {
		out[0].Description += " (changed)"
		out = out[:len(out)-1]
	}
	return append(out, extraTool())
}

// lockDir takes the lock that the directory path stands for, waiting up
// to 10 s for another run to give it back, and returns what gives it
// back. A directory, not flock: the fixture builds for Windows too.
func lockDir(path string) (unlock func(), err error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Mkdir(path, 0o700)
		if err == nil {
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) || time.Now().After(deadline) {
			return nil, fmt.Errorf("lock the state file: %w", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
