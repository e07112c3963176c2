package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// This file holds the stdio modes that misbehave at the level of the
// process or of the byte stream, below JSON-RPC.

// partialMessage starts a notification whose string never ends: what
// trickle and endless-line keep extending.
const partialMessage = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`

// untilEOF drains r in a goroutine and returns a channel that is closed
// when r reaches end of file or fails. The goroutine ends with it; when
// the process exits first it is simply abandoned.
func untilEOF(r io.Reader) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, r)
		close(done)
	}()
	return done
}

// trickle implements -mode trickle: it writes the start of a message, then
// one more byte every cfg.interval, and never a newline. It returns when
// stdin ends, ctx is cancelled or stdout fails.
func trickle(ctx context.Context, cfg config, stdin io.Reader, stdout io.Writer) error {
	eof := untilEOF(stdin)
	if _, err := io.WriteString(stdout, partialMessage); err != nil {
		return err
	}
	tick := time.NewTicker(max(cfg.interval, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-eof:
			return nil
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if _, err := io.WriteString(stdout, "a"); err != nil {
				return err
			}
		}
	}
}

// closeStdout implements -mode close-stdout: it closes stdout before
// anything was written and keeps running, ignoring stdin, until ctx is
// cancelled (SIGTERM).
func closeStdout(ctx context.Context, stdout io.Writer) error {
	c, ok := stdout.(io.Closer)
	if !ok {
		return errors.New("-mode close-stdout needs a stdout that can be closed")
	}
	if err := c.Close(); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// ignoreSIGTERM implements -mode ignore-sigterm: it ignores SIGTERM, reads
// and discards stdin without answering, and keeps running after stdin
// ends, so only SIGKILL (or SIGINT) ends it.
func ignoreSIGTERM(ctx context.Context, stdin io.Reader) error {
	signal.Ignore(syscall.SIGTERM)
	<-untilEOF(stdin)
	<-ctx.Done()
	return nil
}

// noRead implements -mode no-read: it never reads stdin, sends cfg.requests
// ping requests, whose answers pile up in the stdin pipe until a client
// that writes without a deadline blocks, and then waits for ctx.
func noRead(ctx context.Context, cfg config, stdout io.Writer) error {
	var buf bytes.Buffer
	for i := range cfg.requests {
		fmt.Fprintf(&buf, `{"jsonrpc":"2.0","id":"ping-%d","method":"ping"}`+"\n", i)
		if buf.Len() >= 64<<10 || i == cfg.requests-1 {
			if _, err := stdout.Write(buf.Bytes()); err != nil {
				return err
			}
			buf.Reset()
		}
	}
	<-ctx.Done()
	return nil
}

// endlessLine implements -mode endless-line: the start of a message, then
// 'a' without end, as fast as the reader takes it. It returns when stdout
// fails (the reader closed it).
func endlessLine(stdout io.Writer) error {
	if _, err := io.WriteString(stdout, partialMessage); err != nil {
		return err
	}
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	for {
		if _, err := stdout.Write(chunk); err != nil {
			return err
		}
	}
}

// beforeServing does what the modes that serve normally do first: print
// banner lines, send one huge line, flood stderr, or start children that
// outlive or escape the server.
func beforeServing(cfg config, stdin io.Reader, stdout, stderr io.Writer) error {
	switch cfg.mode {
	case modeBanner:
		for i := range cfg.bannerLines {
			line := fmt.Sprintf("\x1b[1;32m>> mcp-fixture\x1b[0m starting, banner line %d of %d\a", i+1, cfg.bannerLines)
			if cfg.secret != "" {
				line += " token=" + cfg.secret
			}
			if _, err := fmt.Fprintln(stdout, line); err != nil {
				return err
			}
		}
	case modeHugeLine:
		pad := max(cfg.lineBytes-len(partialMessage)-len(`"}}`+"\n"), 0)
		line := partialMessage + strings.Repeat("a", pad) + `"}}` + "\n"
		if _, err := io.WriteString(stdout, line); err != nil {
			return err
		}
	case modeFloodStderr:
		return flood(stderr, cfg.floodBytes)
	case modeAlloc:
		return allocate(cfg.allocBytes, stderr)
	case modeEscape:
		for _, line := range escapeAll(cfg.escape) {
			fmt.Fprintln(stderr, line)
			if strings.HasPrefix(line, "mcp-fixture: escape need:") && strings.Contains(line, ": refused ") {
				return &exitError{code: 1}
			}
		}
	case modeForkChild:
		files, err := stdioFiles(stdin, stdout, stderr)
		if err != nil {
			return err
		}
		child, err := startSelf(modeSleep, files, false)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "mcp-fixture: started child pid %d, which holds stdin, stdout and stderr\n", child.Pid)
		return child.Release()
	case modeSetsidChild:
		child, err := startSelf(modeSleep, [3]*os.File{}, true)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "mcp-fixture: started background process pid %d in a new session\n", child.Pid)
		return child.Release()
	case modeDaemonize:
		self, err := os.Executable()
		if err != nil {
			return err
		}
		// The detach helper reports the pid of the process it leaves
		// behind on stderr, then exits: the classic double fork.
		helper := exec.Command(self, "-mode", modeDetach)
		helper.Stderr = stderr
		return helper.Run()
	}
	return nil
}

// afterServing does what the modes that misbehave on the way out do once
// serving ended: setsid-on-exit starts a child in a new session, as a
// server might start a clean-up daemon when told to stop.
func afterServing(cfg config, stderr io.Writer) error {
	if cfg.mode != modeSetsidOnExit {
		return nil
	}
	child, err := startSelf(modeSleep, [3]*os.File{}, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "mcp-fixture: started background process pid %d in a new session on the way out\n", child.Pid)
	return child.Release()
}

// flood writes n bytes of log lines to w.
func flood(w io.Writer, n int64) error {
	line := "mcp-fixture: flooding stderr " + strings.Repeat("noise ", 10) + "\n"
	chunk := bytes.Repeat([]byte(line), (256<<10)/len(line))
	for n > 0 {
		b := chunk
		if int64(len(b)) > n {
			b = b[:n]
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		n -= int64(len(b))
	}
	return nil
}

// allocate implements -mode alloc: it reports its core and data limits on
// stderr ("limits core=0 data=67108864", -1 for unlimited), then
// allocates n bytes and touches every page, so that they count.
func allocate(n int64, stderr io.Writer) error {
	core, data := limits()
	fmt.Fprintf(stderr, "mcp-fixture: limits core=%d data=%d\n", core, data)
	if n > 0 {
		buf := make([]byte, n)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 1
		}
		fmt.Fprintf(stderr, "mcp-fixture: allocated %d bytes\n", len(buf))
	}
	return nil
}

// detach implements the helper -mode detach: it starts a sleeping copy of
// this program in a new session with its stdio on /dev/null, reports its
// pid on stderr and exits, leaving the copy orphaned.
func detach(stderr io.Writer) error {
	child, err := startSelf(modeSleep, [3]*os.File{}, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "mcp-fixture: started background process pid %d in a new session\n", child.Pid)
	return child.Release()
}

// stdioFiles returns the process's own stdin, stdout and stderr files,
// which a child must inherit to hold the same pipes.
func stdioFiles(stdin io.Reader, stdout, stderr io.Writer) ([3]*os.File, error) {
	in, ok1 := stdin.(*os.File)
	out, ok2 := stdout.(*os.File)
	errf, ok3 := stderr.(*os.File)
	if !ok1 || !ok2 || !ok3 {
		return [3]*os.File{}, errors.New("-mode " + modeForkChild + " needs the process's own stdin, stdout and stderr")
	}
	return [3]*os.File{in, out, errf}, nil
}

// startSelf starts this program again in the given mode, with the given
// stdio (nil entries are /dev/null), in a new session if setsid is set. It
// inherits the environment, so a FIXTURE_* variable applies to it too,
// while the -mode flag wins over FIXTURE_MODE.
func startSelf(mode string, stdio [3]*os.File, setsid bool) (*os.Process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-mode", mode)
	// Assigning a nil *os.File to an io.Reader would not be nil.
	if stdio[0] != nil {
		cmd.Stdin = stdio[0]
	}
	if stdio[1] != nil {
		cmd.Stdout = stdio[1]
	}
	if stdio[2] != nil {
		cmd.Stderr = stdio[2]
	}
	cmd.SysProcAttr = sessionAttr(setsid)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return cmd.Process, nil
}
