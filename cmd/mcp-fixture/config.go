package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Transport names accepted by the -transport flag.
const (
	transportStdio = "stdio"
	transportHTTP  = "http"
	transportSSE   = "sse"
)

// Mode names accepted by the -mode flag.
const (
	modeNormal            = "normal"
	modeHangInit          = "hang-init"
	modeCrash             = "crash"
	modeChangeOnSecondRun = "change-on-second-run"
)

// envPrefix is prepended to the upper-snake-case flag name to form the name
// of the environment variable that provides a flag's fallback value.
const envPrefix = "FIXTURE_"

// config holds every setting of the fixture server. The zero value is not
// useful; start from defaultConfig.
type config struct {
	// transport is one of stdio, http or sse.
	transport string
	// addr is the TCP address the http and sse transports listen on.
	addr string
	// tools is the number of generated tools.
	tools int
	// pageSize is the number of tools per tools/list page; 0 disables
	// pagination.
	pageSize int
	// name is reported as serverInfo.name.
	name string
	// version is reported as serverInfo.version.
	version string
	// startupDelay is how long the process sleeps before serving anything.
	startupDelay time.Duration
	// mode selects the behaviour of the server, see modes.go.
	mode string
	// stateFile is where change-on-second-run keeps its run counter.
	stateFile string
}

// defaultConfig returns the configuration used when no flag or environment
// variable overrides a setting.
func defaultConfig() config {
	return config{
		transport: transportStdio,
		addr:      "127.0.0.1:0",
		tools:     25,
		pageSize:  10,
		name:      "mcp-fixture",
		version:   "1.0.0",
		mode:      modeNormal,
	}
}

// usageError reports a problem with the command line or with a FIXTURE_*
// environment variable. It makes the process exit with status 2.
type usageError struct {
	err error
}

// Error returns the message of the underlying error.
func (e *usageError) Error() string { return e.err.Error() }

// Unwrap returns the underlying error.
func (e *usageError) Unwrap() error { return e.err }

// envName returns the environment variable that backs the flag with the
// given name, for example FIXTURE_PAGE_SIZE for page-size.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseConfig builds the configuration from defaults, then environment
// variables, then command-line flags, so a flag always wins over its
// environment variable. A -h or -help flag prints the usage to stderr and
// returns flag.ErrHelp.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	cfg := defaultConfig()

	fs := flag.NewFlagSet("mcp-fixture", flag.ContinueOnError)
	fs.StringVar(&cfg.transport, "transport", cfg.transport, "transport to serve: stdio, http (Streamable HTTP) or sse (legacy HTTP+SSE)")
	fs.StringVar(&cfg.addr, "addr", cfg.addr, "listen address for the http and sse transports")
	fs.IntVar(&cfg.tools, "tools", cfg.tools, "number of generated tools")
	fs.IntVar(&cfg.pageSize, "page-size", cfg.pageSize, "tools per tools/list page (0 = all tools in one page)")
	fs.StringVar(&cfg.name, "name", cfg.name, "server name reported in serverInfo")
	fs.StringVar(&cfg.version, "version", cfg.version, "server version reported in serverInfo")
	fs.DurationVar(&cfg.startupDelay, "startup-delay", cfg.startupDelay, "sleep this long before serving anything")
	fs.StringVar(&cfg.mode, "mode", cfg.mode, "behaviour: normal, hang-init, crash or change-on-second-run")
	fs.StringVar(&cfg.stateFile, "state-file", cfg.stateFile, "run counter file, required by -mode change-on-second-run")

	fs.VisitAll(func(f *flag.Flag) {
		f.Usage += fmt.Sprintf(" (env %s)", envName(f.Name))
	})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: mcp-fixture [flags]\n\nA configurable MCP server for tests, demos and benchmarks.\n\nFlags:\n")
		fs.PrintDefaults()
	}

	// Environment variables are applied first so that flags parsed
	// afterwards override them.
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		name := envName(f.Name)
		value := getenv(name)
		if value == "" || envErr != nil {
			return
		}
		if err := fs.Set(f.Name, value); err != nil {
			envErr = &usageError{fmt.Errorf("invalid value %q for %s: %v", value, name, err)}
		}
	})
	if envErr != nil {
		return cfg, envErr
	}

	// The flag package would print its own copy of every parse error; keep
	// it quiet and let the caller report the returned error instead.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
			return cfg, err
		}
		return cfg, &usageError{err}
	}
	if fs.NArg() > 0 {
		return cfg, &usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if err := cfg.validate(); err != nil {
		return cfg, &usageError{err}
	}
	return cfg, nil
}

// validate checks the values that the flag package cannot check by itself.
func (c config) validate() error {
	switch c.transport {
	case transportStdio, transportHTTP, transportSSE:
	default:
		return fmt.Errorf("invalid -transport %q: want stdio, http or sse", c.transport)
	}
	switch c.mode {
	case modeNormal, modeHangInit, modeCrash, modeChangeOnSecondRun:
	default:
		return fmt.Errorf("invalid -mode %q: want normal, hang-init, crash or change-on-second-run", c.mode)
	}
	if c.mode == modeChangeOnSecondRun && c.stateFile == "" {
		return errors.New("-mode change-on-second-run requires -state-file")
	}
	if c.tools < 0 {
		return fmt.Errorf("invalid -tools %d: must not be negative", c.tools)
	}
	if c.pageSize < 0 {
		return fmt.Errorf("invalid -page-size %d: must not be negative", c.pageSize)
	}
	if c.startupDelay < 0 {
		return fmt.Errorf("invalid -startup-delay %s: must not be negative", c.startupDelay)
	}
	if c.transport != transportStdio && c.addr == "" {
		return errors.New("-addr must not be empty for the http and sse transports")
	}
	return nil
}
