package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
)

// Transport names accepted by the -transport flag.
const (
	transportStdio = "stdio"
	transportHTTP  = "http"
	transportSSE   = "sse"
)

// Mode names accepted by the -mode flag. Besides the well-behaved normal
// mode, each one is a server from the catalogue of hostile and broken
// servers (docs: hostile-servers.md, numbers in modeInfo.help), built so
// that a client's handling of it can be tested.
const (
	modeNormal            = "normal"
	modeHangInit          = "hang-init"
	modeCrash             = "crash"
	modeChangeOnSecondRun = "change-on-second-run"
	modeTryIt             = "try-it"
	modeAsks              = "asks"

	// Process and lifecycle.
	modeTrickle         = "trickle"
	modeProgressForever = "progress-forever"
	modeCloseStdout     = "close-stdout"
	modeExitAfterInit   = "exit-after-init"
	modeForkChild       = "fork-child"
	modeSetsidChild     = "setsid-child"
	modeSetsidOnExit    = "setsid-on-exit"
	modeDaemonize       = "daemonize"
	modeIgnoreSIGTERM   = "ignore-sigterm"
	modeFloodStderr     = "flood-stderr"
	modeNoRead          = "no-read"
	modeSleep           = "sleep"
	modeAlloc           = "alloc"
	modeDetach          = "detach"
	modeEscape          = "escape"

	// Framing and protocol.
	modeBanner         = "banner"
	modeHugeLine       = "huge-line"
	modeEndlessLine    = "endless-line"
	modeNotifyFlood    = "notify-flood"
	modeInvalidUTF8    = "invalid-utf8"
	modeDeepJSON       = "deep-json"
	modeDuplicateKeys  = "duplicate-keys"
	modeWrongIDs       = "wrong-ids"
	modeClientRequests = "client-requests"
	modeBadVersion     = "bad-version"
	modeNoTools        = "no-tools"
	modeListError      = "list-error"
	modeLegacySilent   = "legacy-silent"

	// Tool data.
	modeEndlessCursor  = "endless-cursor"
	modeRepeatCursor   = "repeat-cursor"
	modeHugeSchema     = "huge-schema"
	modeDeepSchema     = "deep-schema"
	modeSchemaRefs     = "schema-refs"
	modeInjection      = "injection"
	modeDuplicateNames = "duplicate-names"
	modeHostileNames   = "hostile-names"
	modeManyTinyTools  = "many-tiny-tools"
	modeXSS            = "xss"
	// modeHostileResources: see hostile_resources.go.
	modeHostileResources = "hostile-resources"

	// Remote.
	modeHTTPStatus    = "http-status"
	modeHTML          = "html"
	modeRedirect      = "redirect"
	modeSSENoEndpoint = "sse-no-endpoint"
	modeEndlessBody   = "endless-body"
)

// modeInfo describes a mode for validation and -help.
type modeInfo struct {
	// transports lists the transports the mode is implemented for.
	transports []string
	// help is one line for -help; hostile modes start with their number
	// in hostile-servers.md.
	help string
}

var (
	anyTransport = []string{transportStdio, transportHTTP, transportSSE}
	stdioOnly    = []string{transportStdio}
	remoteOnly   = []string{transportHTTP, transportSSE}
)

// modes lists every mode. It is never modified.
var modes = map[string]modeInfo{
	modeNormal:            {anyTransport, "serve the generated tools"},
	modeHangInit:          {anyTransport, "#3 read requests, never answer"},
	modeCrash:             {anyTransport, "#2 write to stderr (and -secret), exit with -exit-code before reading"},
	modeChangeOnSecondRun: {anyTransport, "#34 change the tool list from the second run on (needs -state-file)"},
	modeAsks:              {anyTransport, "serve the generated tools and ask_model, ask_person, ask_url and list_roots, which ask the client during the call; see asks_tools.go"},
	modeTryIt:             {anyTransport, "serve the generated tools and plan_trip (arrays of objects), media (an image, a sound), hostile_media and slow_steps (progress); see tryit_tools.go"},

	modeTrickle:         {stdioOnly, "#4 write one byte per -interval, never completing a line"},
	modeProgressForever: {stdioOnly, "#5 answer initialize with progress notifications every -interval, never the result"},
	modeCloseStdout:     {stdioOnly, "#6 close stdout at once, keep running until SIGTERM"},
	modeExitAfterInit:   {stdioOnly, "#7 answer initialize, exit with -exit-code once the client says initialized"},
	modeForkChild:       {stdioOnly, "#8 start a child that holds stdin, stdout and stderr until killed, then serve"},
	modeSetsidChild:     {stdioOnly, "#9 start a child in a new session (setsid), then serve"},
	modeSetsidOnExit:    {stdioOnly, "#9 serve; once stdin ends, start a child in a new session (setsid) on the way out"},
	modeDaemonize:       {stdioOnly, "#9 start a child in a new session through a parent that exits (double fork), then serve"},
	modeIgnoreSIGTERM:   {stdioOnly, "#10 ignore SIGTERM and the end of stdin, never answer"},
	modeFloodStderr:     {stdioOnly, "#11 write -flood-bytes to stderr, then serve"},
	modeNoRead:          {stdioOnly, "#12 never read stdin; send -requests ping requests, whose answers fill the pipe"},
	modeAlloc:           {stdioOnly, "report the core and data limits on stderr, allocate -alloc-bytes, then serve"},
	modeSleep:           {anyTransport, "helper of fork-child and setsid-child: do nothing until killed"},
	modeDetach:          {anyTransport, "helper of daemonize: start a sleep child in a new session and exit"},
	modeEscape:          {stdioOnly, "#47–#55 try each -escape attempt (files, the parent's /proc, TCP, UDP, HTTP, processes, memory) and report on stderr, then serve; the escape tool tries them again in a call"},

	modeBanner:         {stdioOnly, "#14 print -banner-lines lines of ANSI-coloured text (and -secret) on stdout, then serve"},
	modeHugeLine:       {stdioOnly, "#15 send one notification line of -line-bytes bytes, then serve"},
	modeEndlessLine:    {stdioOnly, "#15 send one line that never ends"},
	modeNotifyFlood:    {stdioOnly, "#16 send valid notifications as fast as they are read, never answer"},
	modeInvalidUTF8:    {stdioOnly, "#17 list a tool whose description holds invalid UTF-8"},
	modeDeepJSON:       {stdioOnly, "#18 list a tool whose schema nests arrays 100 000 deep"},
	modeDuplicateKeys:  {stdioOnly, "#19 list a tool object with a duplicate key"},
	modeWrongIDs:       {stdioOnly, "#20 answer every request with wrong ids (results and errors), never the right one"},
	modeClientRequests: {stdioOnly, "#21 send sampling, elicitation, roots and ping requests before answering; fail unless refused"},
	modeBadVersion:     {stdioOnly, "#22 answer initialize with protocol version 1999-01-01"},
	modeNoTools:        {anyTransport, "#23 declare no tools capability"},
	modeListError:      {stdioOnly, "#24 answer tools/list with a JSON-RPC error holding control characters, markup and -secret"},
	modeLegacySilent:   {stdioOnly, "#25 speak 2025-06-18 and ignore unknown methods (the server/discover probe) without a word"},

	modeEndlessCursor:    {stdioOnly, "#26 list one new tool per page with a new cursor, for ever"},
	modeRepeatCursor:     {stdioOnly, "#26 list one tool per page and the same cursor every time"},
	modeHugeSchema:       {stdioOnly, "#27 list a tool whose input schema is -schema-bytes long"},
	modeDeepSchema:       {stdioOnly, "#28 list a tool whose input schema nests -depth levels of properties"},
	modeSchemaRefs:       {stdioOnly, "#29 #30 list a tool whose schema $refs -ref-url, and one with a $ref cycle"},
	modeInjection:        {stdioOnly, "#31 list a tool whose description hides instructions, padded to -description-bytes"},
	modeDuplicateNames:   {stdioOnly, "#32 list two different tools under one name"},
	modeHostileNames:     {stdioOnly, "#33 list tools named with markup, quotes, a newline, ../, 10 000 characters, nothing, a look-alike"},
	modeManyTinyTools:    {stdioOnly, "#26 #32 #33 list -entries tiny entries on one page: nameless, not objects, repeats of 100 names, different definitions of one"},
	modeHostileResources: {stdioOnly, "#26 #31 for resources and prompts: declare both; resources/list pages for ever with new cursors, resources/templates/list answers an error, prompts/list lists a prompt with a 1 MiB injected description"},
	modeXSS:              {stdioOnly, "markup, invisible characters and icon URLs in every field a dashboard shows (server name, instructions, tools)"},

	modeHTTPStatus:    {remoteOnly, "#36 answer every request with HTTP -status"},
	modeHTML:          {remoteOnly, "#37 answer every request with an HTML sign-in page (200)"},
	modeRedirect:      {remoteOnly, "#38 redirect every request to -redirect-to"},
	modeSSENoEndpoint: {[]string{transportSSE}, "#39 open the event stream, send keep-alives every -interval, never the endpoint event"},
	modeEndlessBody:   {remoteOnly, "#40 answer with a body that never ends, one byte per -interval (0: as fast as possible)"},
}

// modeNames returns the mode names in order.
func modeNames() []string {
	names := make([]string, 0, len(modes))
	for name := range modes {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// envPrefix is prepended to the upper-snake-case flag name to form the name
// of the environment variable that provides a flag's fallback value.
const envPrefix = "FIXTURE_"

// config holds every setting of the fixture server. The zero value is not
// useful; start from defaultConfig.
type config struct {
	// transport is one of stdio, http or sse.
	transport string
	// legacy serves the MCP revisions before 2026-07-28 only (stdio and
	// http): a server that asks its client with requests of its own.
	legacy bool
	// app serves an MCP App (see app.go).
	app bool
	// traceEcho serves the tool trace_context, which answers the trace
	// context its call's _meta carried (tests of Switchboard's traces).
	traceEcho bool
	// gated lists -mode asks's asking tools only to a client that
	// declares what each asks (see gatedTools), as server-everything
	// does.
	gated bool
	// variant defines -mode asks's log_steps otherwise to a client that
	// declares sampling (see variantTools).
	variant bool
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
	// unchangedRuns is how many runs change-on-second-run serves the
	// tools unchanged before it changes them.
	unchangedRuns int
	// stateFile is where change-on-second-run keeps its run counter.
	stateFile string
	// listed serves the conformance suite's resources and prompts too;
	// see listed.go.
	listed bool
	// conformance serves the conformance suite's test tools too; see
	// conformance_tools.go.
	conformance bool
	// toolsFile, if set, holds the tools to serve (and the version to
	// report), re-read while serving; see toolsfile.go.
	toolsFile string
	// interval paces trickle, progress-forever, sse-no-endpoint and
	// endless-body.
	interval time.Duration
	// exitCode is the exit status of crash and exit-after-init.
	exitCode int
	// secret stands for a credential the server was given: crash, banner
	// and list-error print it, so that a client's redaction can be tested.
	secret string
	// bannerLines is how many lines banner prints.
	bannerLines int
	// lineBytes is the length of huge-line's line.
	lineBytes int
	// floodBytes is how much flood-stderr writes.
	floodBytes int64
	// requests is how many ping requests no-read sends.
	requests int
	// status is the HTTP status of http-status.
	status int
	// redirectTo is where redirect sends every request.
	redirectTo string
	// schemaBytes is the size of huge-schema's schema.
	schemaBytes int
	// depth is how deep deep-schema's schema nests.
	depth int
	// refURL is what schema-refs' schema refers to.
	refURL string
	// allocBytes is how much alloc allocates.
	allocBytes int64
	// escape lists modeEscape's attempts (see escape.go).
	escape string
	// descriptionBytes pads injection's description to at least this
	// length.
	descriptionBytes int
	// entries is how many entries many-tiny-tools lists.
	entries int
	// oauthIssuer, if set, protects the http transport's endpoint with
	// bearer tokens from this authorization server; see oauth.go.
	oauthIssuer string
	// oauthScopes are the scopes hinted in 401 answers and listed in the
	// protected resource metadata, space-separated.
	oauthScopes string
	// oauthRequiredScope, if set, is a scope every token must carry;
	// tokens without it are answered 403 insufficient_scope.
	oauthRequiredScope string
}

// defaultConfig returns the configuration used when no flag or environment
// variable overrides a setting.
func defaultConfig() config {
	return config{
		transport:     transportStdio,
		addr:          "127.0.0.1:0",
		tools:         25,
		pageSize:      10,
		name:          "mcp-fixture",
		version:       "1.0.0",
		mode:          modeNormal,
		unchangedRuns: 1,
		interval:      time.Second,
		exitCode:      crashExitCode,
		bannerLines:   3,
		lineBytes:     10 << 20,
		floodBytes:    1 << 30,
		requests:      5000,
		status:        http.StatusUnauthorized,
		redirectTo:    "http://169.254.169.254/latest/meta-data/",
		schemaBytes:   10 << 20,
		depth:         1000,
		refURL:        "http://169.254.169.254/latest/schema.json",
		entries:       200_000,
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
	fs.StringVar(&cfg.mode, "mode", cfg.mode, "behaviour, one of the modes listed below")
	fs.IntVar(&cfg.unchangedRuns, "unchanged-runs", cfg.unchangedRuns, "with -mode change-on-second-run: how many runs serve the tools unchanged (a verification runs its server twice: 2 changes them from the next verification or call on)")
	fs.StringVar(&cfg.stateFile, "state-file", cfg.stateFile, "run counter file, required by -mode change-on-second-run")
	fs.BoolVar(&cfg.listed, "listed", cfg.listed, "also declare resources and prompts and serve those the MCP conformance suite reads: resources test://static-text and test://static-binary, the template test://template/{id}/data, prompts test_simple_prompt, test_prompt_with_arguments (arg1, arg2), test_prompt_with_embedded_resource (resourceUri) and test_prompt_with_image (normal and try-it modes)")
	fs.BoolVar(&cfg.conformance, "conformance", cfg.conformance, "also serve the tools the MCP conformance suite calls by name (test_simple_text, test_image_content, test_audio_content, test_embedded_resource, test_multiple_content_types, test_error_handling, test_tool_with_logging, test_tool_with_progress, test_logging_tool, test_sampling, test_elicitation, test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums, test_streaming_elicitation, test_input_required_result_*) and the prompt test_input_required_result_prompt, answering as its reference server does; declares logging and prompts. With -tools-file, any change of the file replaces them with its tools (normal and try-it modes)")
	fs.StringVar(&cfg.toolsFile, "tools-file", cfg.toolsFile, `serve exactly the tools in this JSON file, {"version": "1.2.3", "tools": [MCP tool objects]}, instead of -tools generated ones, and report its version (if set) instead of -version; calls answer "NAME ARGUMENTS-JSON". The file is re-read every 50 ms while serving: new tools replace the served ones and send notifications/tools/list_changed, a new version is reported by later initialize and discover answers, and a file that turns bad leaves the last good one served (normal mode only)`)
	fs.DurationVar(&cfg.interval, "interval", cfg.interval, "pause between the bytes or messages of trickle, progress-forever, sse-no-endpoint and endless-body")
	fs.IntVar(&cfg.exitCode, "exit-code", cfg.exitCode, "exit status of -mode crash and exit-after-init")
	fs.StringVar(&cfg.secret, "secret", cfg.secret, "a credential that crash, banner and list-error leak into their output")
	fs.IntVar(&cfg.bannerLines, "banner-lines", cfg.bannerLines, "lines printed by -mode banner")
	fs.IntVar(&cfg.lineBytes, "line-bytes", cfg.lineBytes, "length of the line sent by -mode huge-line")
	fs.Int64Var(&cfg.floodBytes, "flood-bytes", cfg.floodBytes, "bytes written to stderr by -mode flood-stderr")
	fs.IntVar(&cfg.requests, "requests", cfg.requests, "ping requests sent by -mode no-read")
	fs.IntVar(&cfg.status, "status", cfg.status, "HTTP status of -mode http-status")
	fs.StringVar(&cfg.redirectTo, "redirect-to", cfg.redirectTo, "target of -mode redirect")
	fs.IntVar(&cfg.schemaBytes, "schema-bytes", cfg.schemaBytes, "size of the schema listed by -mode huge-schema")
	fs.IntVar(&cfg.depth, "depth", cfg.depth, "nesting of the schema listed by -mode deep-schema")
	fs.StringVar(&cfg.refURL, "ref-url", cfg.refURL, "URL the schema of -mode schema-refs refers to")
	fs.Int64Var(&cfg.allocBytes, "alloc-bytes", cfg.allocBytes, "bytes allocated by -mode alloc")
	fs.StringVar(&cfg.escape, "escape", cfg.escape, "attempts of -mode escape, comma-separated kind=arg (see escape.go)")
	fs.IntVar(&cfg.descriptionBytes, "description-bytes", cfg.descriptionBytes, "minimum length of the description listed by -mode injection")
	fs.IntVar(&cfg.entries, "entries", cfg.entries, "entries listed by -mode many-tiny-tools, besides the generated tools")
	fs.BoolVar(&cfg.traceEcho, "trace-echo", cfg.traceEcho, "serve the tool trace_context too, which answers the traceparent its call's _meta carried (empty if none)")
	fs.BoolVar(&cfg.app, "app", cfg.app, "serve an MCP App too: the resource "+appURI+" and the tool show_clock whose _meta.ui.resourceUri points at it")
	fs.BoolVar(&cfg.variant, "variant", cfg.variant, "with -mode asks: describe log_steps otherwise to a client that declares sampling (a tool defined differently to a client that answers what a server asks)")
	fs.BoolVar(&cfg.gated, "gated", cfg.gated, "with -mode asks: list each asking tool only to a client that declares what it asks (sampling, elicitation form or URL, roots), and sample_roots only to one that declares sampling and roots")
	fs.BoolVar(&cfg.legacy, "legacy", cfg.legacy, "serve only the MCP revisions before 2026-07-28 (stdio, http): no server/discover, and what -mode asks asks comes as requests of the server's own")
	fs.StringVar(&cfg.oauthIssuer, "oauth-issuer", cfg.oauthIssuer, "protect /mcp (-transport http, -mode normal) with JWT access tokens from this OAuth authorization server: 401 with WWW-Authenticate resource_metadata without a valid token (iss, aud = the /mcp URL, exp, signature by the issuer's JWKS), protected resource metadata (RFC 9728) at /.well-known/oauth-protected-resource[/mcp]")
	fs.StringVar(&cfg.oauthScopes, "oauth-scopes", cfg.oauthScopes, `scopes, space-separated, hinted as scope="..." in 401 answers and listed in the protected resource metadata (needs -oauth-issuer)`)
	fs.StringVar(&cfg.oauthRequiredScope, "oauth-required-scope", cfg.oauthRequiredScope, `a scope every token must carry; a token without it is answered 403 error="insufficient_scope" with scope="<-oauth-scopes and this one>" (needs -oauth-issuer)`)

	fs.VisitAll(func(f *flag.Flag) {
		f.Usage += fmt.Sprintf(" (env %s)", envName(f.Name))
	})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: mcp-fixture [flags]\n\nA configurable MCP server for tests, demos and benchmarks.\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nModes (#N: the case in hostile-servers.md):\n")
		for _, name := range modeNames() {
			m := modes[name]
			fmt.Fprintf(fs.Output(), "  %-21s %s [%s]\n", name, m.help, strings.Join(m.transports, ", "))
		}
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
	// -mode escape takes folders as a filesystem server does, for the
	// walls to grant them (and its attempts to name paths in them).
	if fs.NArg() > 0 && cfg.mode != modeEscape {
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
	m, ok := modes[c.mode]
	if !ok {
		return fmt.Errorf("invalid -mode %q: want one of %s", c.mode, strings.Join(modeNames(), ", "))
	}
	if !slices.Contains(m.transports, c.transport) {
		return fmt.Errorf("-mode %s is not implemented for -transport %s (only %s)", c.mode, c.transport, strings.Join(m.transports, ", "))
	}
	if c.mode == modeChangeOnSecondRun && c.stateFile == "" {
		return errors.New("-mode change-on-second-run requires -state-file")
	}
	if c.listed && c.mode != modeNormal && c.mode != modeTryIt {
		return errors.New("-listed works in -mode normal and try-it only")
	}
	if c.conformance && c.mode != modeNormal && c.mode != modeTryIt {
		return errors.New("-conformance works in -mode normal and try-it only")
	}
	if c.toolsFile != "" && c.mode != modeNormal {
		return errors.New("-tools-file works in -mode normal only")
	}
	if c.tools < 0 {
		return fmt.Errorf("invalid -tools %d: must not be negative", c.tools)
	}
	if c.pageSize < 0 {
		return fmt.Errorf("invalid -page-size %d: must not be negative", c.pageSize)
	}
	if c.interval < 0 || c.bannerLines < 0 || c.lineBytes < 0 || c.floodBytes < 0 || c.requests < 0 ||
		c.schemaBytes < 0 || c.depth < 0 || c.descriptionBytes < 0 || c.allocBytes < 0 || c.entries < 0 {
		return errors.New("-interval, -banner-lines, -line-bytes, -flood-bytes, -requests, -schema-bytes, -depth, -description-bytes, -alloc-bytes and -entries must not be negative")
	}
	if c.mode == modeHTTPStatus && (c.status < 400 || c.status > 599) {
		return fmt.Errorf("invalid -status %d: want an error status (400-599)", c.status)
	}
	if c.startupDelay < 0 {
		return fmt.Errorf("invalid -startup-delay %s: must not be negative", c.startupDelay)
	}
	if c.transport != transportStdio && c.addr == "" {
		return errors.New("-addr must not be empty for the http and sse transports")
	}
	return c.validateOAuth()
}

// validateOAuth checks the -oauth-* flags.
func (c config) validateOAuth() error {
	if c.oauthIssuer == "" {
		if c.oauthScopes != "" || c.oauthRequiredScope != "" {
			return errors.New("-oauth-scopes and -oauth-required-scope need -oauth-issuer")
		}
		return nil
	}
	if c.transport != transportHTTP || c.mode != modeNormal {
		return errors.New("-oauth-issuer works with -transport http and -mode normal only")
	}
	if strings.ContainsAny(c.oauthRequiredScope, " \t\n\"\\") {
		return fmt.Errorf("invalid -oauth-required-scope %q: want one scope", c.oauthRequiredScope)
	}
	if strings.ContainsAny(c.oauthScopes, "\"\\") {
		return fmt.Errorf("invalid -oauth-scopes %q: scopes hold no quotes or backslashes", c.oauthScopes)
	}
	return validIssuer(c.oauthIssuer)
}
