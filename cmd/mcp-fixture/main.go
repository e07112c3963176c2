// Command mcp-fixture is a configurable MCP server for tests, demos and
// benchmarks.
//
// It serves a deterministic set of generated tools (tool_000, tool_001, ...)
// over stdio, Streamable HTTP or the legacy HTTP+SSE transport, and can be
// told to misbehave with -mode: hang before answering initialize, crash at
// start-up, change its tool list between runs, or act out any of the
// hostile and broken servers catalogued in hostile-servers.md (trickled
// bytes, closed stdout, escaping children, floods, endless lines, wrong
// ids, HTML instead of JSON, ...); -help lists the modes with their case
// numbers. With -tools-file it serves the tools (and version) written in
// a JSON file instead, re-reading it while serving so that a test can
// change a description, remove or restore a tool, or bump the version of
// a running server; a change of the tools sends
// notifications/tools/list_changed (see toolsfile.go). Every flag can
// also be set through an environment variable named FIXTURE_<FLAG>, for
// example FIXTURE_PAGE_SIZE for -page-size; a flag given on the command
// line wins over its variable.
//
// With -oauth-issuer (http transport, normal mode) the fixture is an OAuth
// 2.1 resource server: /mcp wants a JWT access token from that issuer and
// answers 401 or 403 with the WWW-Authenticate challenge of the MCP
// authorization specification, and the protected resource metadata
// (RFC 9728) is served under /.well-known/oauth-protected-resource (see
// oauth.go; e2e/oidc/provider.mjs is an issuer to pair it with).
//
// For the http and sse transports the server prints exactly one line to
// stdout, "listening <URL>", where URL is the endpoint to connect to. For the
// stdio transport stdout carries nothing but protocol messages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode reports err on stderr and returns the matching exit status: 0 for
// success and -help, 2 for bad flags, the requested status for an exitError
// and 1 for anything else.
func exitCode(err error, stderr io.Writer) int {
	var usageErr *usageError
	var exitErr *exitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usageErr):
		fmt.Fprintf(stderr, "mcp-fixture: %v\nRun 'mcp-fixture -help' for usage.\n", err)
		return 2
	case errors.As(err, &exitErr):
		if exitErr.err != nil {
			fmt.Fprintf(stderr, "mcp-fixture: %v\n", exitErr.err)
		}
		return exitErr.code
	default:
		fmt.Fprintf(stderr, "mcp-fixture: %v\n", err)
		return 1
	}
}

// run is the whole program behind main. It parses args (falling back to
// getenv for unset flags), then serves until ctx is cancelled, stdin is
// closed (stdio) or a fatal error occurs.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}

	tools := generateTools(cfg.tools)
	var live *liveTools
	var fileContent []byte // the -tools-file as read at start
	if cfg.toolsFile != "" {
		data, version, fileTools, err := readToolsFile(cfg.toolsFile)
		if err != nil {
			return &usageError{err}
		}
		live = &liveTools{path: cfg.toolsFile, ver: version}
		fileContent, tools = data, fileTools
	}
	if cfg.mode == modeChangeOnSecondRun {
		runNumber, err := bumpRunCounter(cfg.stateFile)
		if err != nil {
			return err
		}
		tools = changedTools(tools, runNumber, cfg.unchangedRuns)
	}

	if !sleepContext(ctx, cfg.startupDelay) {
		return nil
	}

	switch cfg.mode {
	case modeCrash:
		return simulateCrash(cfg, stderr)
	case modeSleep:
		<-ctx.Done()
		return nil
	case modeDetach:
		return detach(stderr)
	}

	mcpServer := newMCPServer(cfg, tools, live)
	if live != nil {
		// The watcher ends with the server: when serving returns (or ctx
		// is cancelled), the deferred call stops it and waits for it.
		watchCtx, stopWatch := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			live.watch(watchCtx, mcpServer, fileContent, stderr)
		}()
		defer func() { stopWatch(); <-watched }()
	}
	switch cfg.transport {
	case transportStdio:
		return serveStdio(ctx, cfg, mcpServer, tools, stdin, stdout, stderr)
	default:
		return serveHTTP(ctx, cfg, mcpServer, stdout, stderr)
	}
}
