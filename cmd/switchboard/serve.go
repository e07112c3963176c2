package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/cluster"
	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/discovery/sandbox"
	"github.com/switchboard-dev/switchboard/internal/grants"
	"github.com/switchboard-dev/switchboard/internal/registry"
	"github.com/switchboard-dev/switchboard/internal/secretkey"
	"github.com/switchboard-dev/switchboard/internal/tracing"
	"github.com/switchboard-dev/switchboard/internal/verify"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/etcd"
	"github.com/switchboard-dev/switchboard/store/snapshot"
	"github.com/switchboard-dev/switchboard/web"
)

// DefaultPort is Switchboard's fixed default port.
const DefaultPort = 7420

// serveConfig is the configuration of `switchboard serve`, from flags
// with environment fallbacks.
type serveConfig struct {
	// OIDC signs people in with an identity provider (nil: none);
	// NoSharedToken turns the shared API token off.
	OIDC          *web.OIDCConfig
	NoSharedToken bool
	MetricsAllow  []netip.Prefix // read /metrics without a token
	OTLPEndpoint  string         // where traces go (see internal/tracing); off if empty
	// Registries are the MCP Registries browsed and added from ("none":
	// no registry); RegistryEvery how often their copies are pulled.
	Registries         []string
	RegistryEvery      time.Duration
	Addr               string
	DBPath             string
	Token              string
	Concurrency        int
	AllowedHosts       []string
	DangerouslyBindAll bool
	Limits             discovery.Limits // zero fields: the defaults
	// TTL is how long a verification counts as fresh, for servers that
	// set none.
	TTL time.Duration
	// VerifyOnStart verifies, at start-up, servers a crash interrupted
	// and enabled ones never verified (whose command was confirmed).
	VerifyOnStart bool
	// MCP configures the MCP endpoint for agents.
	MCP web.MCPConfig
	// OAuthClientMetadataURL is where Switchboard's OAuth Client ID
	// Metadata Document is published, if it is (see web.Config).
	OAuthClientMetadataURL string
	// LogFormat is "text" (lines for a person) or "json" (a JSON object
	// a line, for programs).
	LogFormat string
	// Store says where the catalog lives (the -db file by default).
	Store storeConfig
	// Key says where the key that seals the store's secrets is.
	Key keyConfig
}

// defaultDBPath is where the database lives by default, by each
// system's convention for an application's own data: on Linux
// $XDG_DATA_HOME/switchboard (or ~/.local/share/switchboard), on macOS
// ~/Library/Application Support/Switchboard, on Windows
// %LOCALAPPDATA%\Switchboard.
func defaultDBPath(goos string, getenv func(string) string) string {
	switch goos {
	case "darwin":
		return filepath.Join(getenv("HOME"), "Library", "Application Support", "Switchboard", "switchboard.db")
	case "windows":
		base := getenv("LOCALAPPDATA")
		if base == "" {
			base = filepath.Join(getenv("USERPROFILE"), "AppData", "Local")
		}
		return filepath.Join(base, "Switchboard", "switchboard.db")
	}
	base := getenv("XDG_DATA_HOME")
	if base == "" {
		base = filepath.Join(getenv("HOME"), ".local", "share")
	}
	return filepath.Join(base, "switchboard", "switchboard.db")
}

func parseServeFlags(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	cfg := serveConfig{
		Addr:          "127.0.0.1:" + strconv.Itoa(DefaultPort),
		DBPath:        defaultDBPath(runtime.GOOS, getenv),
		Token:         getenv("SWITCHBOARD_TOKEN"),
		Concurrency:   2,
		TTL:           verify.DefaultTTL,
		VerifyOnStart: true,
		LogFormat:     cmpOr(getenv("SWITCHBOARD_LOG_FORMAT"), "text"),
		MCP: web.MCPConfig{AskTimeout: web.DefaultAskTimeout, CallTimeout: web.DefaultCallTimeout,
			Pool: discovery.PoolConfig{Idle: discovery.DefaultIdle, MaxRunning: discovery.DefaultMaxRunning, MaxResult: discovery.DefaultMaxResult}},
	}
	if v := getenv("SWITCHBOARD_ADDR"); v != "" {
		cfg.Addr = v
	}
	if v := getenv("SWITCHBOARD_OAUTH_CLIENT_METADATA_URL"); v != "" {
		cfg.OAuthClientMetadataURL = v
	}
	if v := getenv("SWITCHBOARD_DB"); v != "" {
		cfg.DBPath = v
	}
	if v := getenv("SWITCHBOARD_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return cfg, usageError("SWITCHBOARD_CONCURRENCY=%q is not a number", v)
		}
		cfg.Concurrency = n
	}
	cfg.MCP.Token = getenv("SWITCHBOARD_MCP_TOKEN")
	for name, d := range map[string]*time.Duration{
		"SWITCHBOARD_TTL": &cfg.TTL, "SWITCHBOARD_ASK_TIMEOUT": &cfg.MCP.AskTimeout,
		"SWITCHBOARD_CALL_TIMEOUT": &cfg.MCP.CallTimeout, "SWITCHBOARD_UPSTREAM_IDLE": &cfg.MCP.Pool.Idle,
	} {
		if v := getenv(name); v != "" {
			var err error
			if *d, err = time.ParseDuration(v); err != nil {
				return cfg, usageError("%s=%q is not a duration (e.g. 5m)", name, v)
			}
		}
	}
	if v := getenv("SWITCHBOARD_UPSTREAM_MAX"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return cfg, usageError("SWITCHBOARD_UPSTREAM_MAX=%q is not a number", v)
		}
		cfg.MCP.Pool.MaxRunning = n
	}
	if v := getenv("SWITCHBOARD_VERIFY_ON_START"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return cfg, usageError("SWITCHBOARD_VERIFY_ON_START=%q is not true or false", v)
		}
		cfg.VerifyOnStart = b
	}
	if v := getenv("SWITCHBOARD_ALLOWED_HOSTS"); v != "" {
		cfg.AllowedHosts = strings.Split(v, ",")
	}
	if v := getenv("SWITCHBOARD_LIMITS"); v != "" {
		for _, kv := range strings.Split(v, ",") {
			if err := setLimit(&cfg.Limits, kv); err != nil {
				return cfg, usageError("SWITCHBOARD_LIMITS: %v", err)
			}
		}
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address (env SWITCHBOARD_ADDR)")
	fs.StringVar(&cfg.DBPath, "db", cfg.DBPath, "database file (env SWITCHBOARD_DB); with -store etcd://…, where this replica keeps its own files beside it")
	storeFlags(fs, &cfg.Store, getenv)
	keyFlags(fs, &cfg.Key, getenv)
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "verifications running at once (env SWITCHBOARD_CONCURRENCY)")
	fs.Func("allowed-host", "extra Host header name to accept, repeatable (env SWITCHBOARD_ALLOWED_HOSTS, comma-separated)", func(v string) error {
		cfg.AllowedHosts = append(cfg.AllowedHosts, v)
		return nil
	})
	limitFlag(fs, &cfg.Limits, " (env SWITCHBOARD_LIMITS, comma-separated)")
	fs.DurationVar(&cfg.TTL, "ttl", cfg.TTL, "how long verified tools count as fresh, for servers that set no TTL (env SWITCHBOARD_TTL)")
	fs.BoolVar(&cfg.VerifyOnStart, "verify-on-start", cfg.VerifyOnStart, "at start-up, verify servers a crash interrupted and enabled ones never verified, if their command was confirmed (env SWITCHBOARD_VERIFY_ON_START)")
	// A secret is never a flag's value: every process of the machine reads
	// a command line (ps, /proc/<pid>/cmdline), a walled server's too.
	secretFlag := fs.String("mcp-token", "", "refused: a command line is readable by every process; use -mcp-token-file or SWITCHBOARD_MCP_TOKEN")
	tokenFile := fs.String("mcp-token-file", "", "a file (readable by you only) holding the bearer token of the MCP endpoint /mcp; if neither it nor SWITCHBOARD_MCP_TOKEN is set, one is made and kept beside the database")
	fs.DurationVar(&cfg.MCP.AskTimeout, "ask-timeout", cfg.MCP.AskTimeout, "how long a call to an ask tool waits for a person before it is denied (env SWITCHBOARD_ASK_TIMEOUT)")
	fs.DurationVar(&cfg.MCP.CallTimeout, "call-timeout", cfg.MCP.CallTimeout, "deadline of a routed tool call, the server's start included (env SWITCHBOARD_CALL_TIMEOUT)")
	fs.DurationVar(&cfg.MCP.Pool.Idle, "upstream-idle", cfg.MCP.Pool.Idle, "a server started for calls stops after this long without one (env SWITCHBOARD_UPSTREAM_IDLE)")
	fs.IntVar(&cfg.MCP.Pool.MaxRunning, "upstream-max", cfg.MCP.Pool.MaxRunning, "servers running for calls at once (env SWITCHBOARD_UPSTREAM_MAX)")
	fs.IntVar(&cfg.MCP.Pool.MaxResult, "max-result", cfg.MCP.Pool.MaxResult, "largest tool result relayed to an agent, in bytes")
	fs.StringVar(&cfg.OAuthClientMetadataURL, "oauth-client-metadata-url", cfg.OAuthClientMetadataURL, "https URL where you publish Switchboard's OAuth Client ID Metadata Document (its redirect_uris: this dashboard's /oauth/callback), used as client_id by authorization servers that support those; empty: clients are registered dynamically (env SWITCHBOARD_OAUTH_CLIENT_METADATA_URL)")
	fs.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "the log on stderr: text (a line a verification, a routed call, a problem) or json (the same, a JSON object a line) (env SWITCHBOARD_LOG_FORMAT)")
	// People: the company's identity provider, the first admin, the
	// shared token (see web/oidc.go and web/access.go).
	var oidc web.OIDCConfig
	fs.StringVar(&oidc.Issuer, "oidc-issuer", getenv("SWITCHBOARD_OIDC_ISSUER"), "sign people in with this OpenID Connect provider (its issuer URL; env SWITCHBOARD_OIDC_ISSUER)")
	fs.StringVar(&oidc.ClientID, "oidc-client-id", getenv("SWITCHBOARD_OIDC_CLIENT_ID"), "Switchboard's client id at the provider (env SWITCHBOARD_OIDC_CLIENT_ID); its secret, if it has one, comes from SWITCHBOARD_OIDC_CLIENT_SECRET or -oidc-client-secret-file")
	oidcSecretFile := fs.String("oidc-client-secret-file", "", "a file (readable by you only) holding the client secret")
	fs.StringVar(&oidc.RedirectURL, "oidc-redirect-url", getenv("SWITCHBOARD_OIDC_REDIRECT_URL"), "the callback as registered at the provider (default: http://HOST/login/oidc/callback of each request)")
	oidcDomains := fs.String("oidc-allowed-domains", getenv("SWITCHBOARD_OIDC_ALLOWED_DOMAINS"), "comma-separated email domains whose people may join as viewers when they first sign in")
	oidcGroups := fs.String("oidc-allowed-groups", getenv("SWITCHBOARD_OIDC_ALLOWED_GROUPS"), "comma-separated groups (the groups claim) whose people may join as viewers")
	fs.StringVar(&oidc.Admin, "admin", getenv("SWITCHBOARD_ADMIN"), "this email is admin whenever it signs in with the provider (env SWITCHBOARD_ADMIN)")
	fs.Func("metrics-allow", "an address or CIDR that reads /metrics without a token (a Prometheus scraper's), repeatable (env SWITCHBOARD_METRICS_ALLOW, comma-separated); anyone else needs an admin's token", func(v string) error {
		p, err := parsePrefix(v)
		if err == nil {
			cfg.MetricsAllow = append(cfg.MetricsAllow, p)
		}
		return err
	})
	for _, v := range splitList(getenv("SWITCHBOARD_METRICS_ALLOW")) {
		p, err := parsePrefix(v)
		if err != nil {
			return cfg, usageError("SWITCHBOARD_METRICS_ALLOW: %v", err)
		}
		cfg.MetricsAllow = append(cfg.MetricsAllow, p)
	}
	fs.Func("registry", "an MCP Registry to browse and add servers from (API v0.1), repeatable (env SWITCHBOARD_REGISTRY, comma-separated; default the official "+registry.Official+"; none: no registry)", func(v string) error {
		cfg.Registries = append(cfg.Registries, v)
		return nil
	})
	fs.DurationVar(&cfg.RegistryEvery, "registry-every", registry.DefaultEvery, "how often each registry's copy is brought up to date")
	fs.StringVar(&cfg.OTLPEndpoint, "otlp-endpoint", getenv("SWITCHBOARD_OTLP_ENDPOINT"), "send OpenTelemetry traces of verifications and routed calls to this OTLP/HTTP collector (http://collector:4318; env SWITCHBOARD_OTLP_ENDPOINT, or the standard OTEL_EXPORTER_OTLP_ENDPOINT); off unless set")
	fs.BoolVar(&cfg.NoSharedToken, "no-shared-token", getenv("SWITCHBOARD_NO_SHARED_TOKEN") == "1", "turn the shared API token off: only people get in (a personal token, or the provider)")
	fs.BoolVar(&cfg.DangerouslyBindAll, "dangerously-bind-all", false, "allow listening on all interfaces (anyone who can reach the port can try to start commands)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, &exitError{code: 0}
		}
		return cfg, &exitError{code: 2}
	}
	if fs.NArg() > 0 {
		return cfg, usageError("serve takes no arguments, got %q", fs.Args())
	}
	if *secretFlag != "" {
		return cfg, usageError("-mcp-token is refused: every process of this machine reads a command line; put the token in a file readable by you only and give -mcp-token-file, or set SWITCHBOARD_MCP_TOKEN")
	}
	if oidc.Issuer != "" || oidc.ClientID != "" {
		if oidc.Issuer == "" || oidc.ClientID == "" {
			return cfg, usageError("-oidc-issuer and -oidc-client-id go together")
		}
		if u, err := url.Parse(oidc.Issuer); err != nil || u.Scheme != "https" && u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost" || u.Host == "" {
			return cfg, usageError("-oidc-issuer must be an https URL (http only on loopback), got %q", oidc.Issuer)
		}
		oidc.ClientSecret = getenv("SWITCHBOARD_OIDC_CLIENT_SECRET")
		if *oidcSecretFile != "" {
			sec, err := readSecretFile(*oidcSecretFile)
			if err != nil {
				return cfg, usageError("-oidc-client-secret-file: %v", err)
			}
			oidc.ClientSecret = sec
		}
		oidc.AllowedDomains, oidc.AllowedGroups = splitList(*oidcDomains), splitList(*oidcGroups)
		cfg.OIDC = &oidc
	}
	if *tokenFile != "" {
		tok, err := readSecretFile(*tokenFile)
		if err != nil {
			return cfg, usageError("-mcp-token-file: %v", err)
		}
		cfg.MCP.Token = tok
	}
	if cfg.LogFormat != "text" && cfg.LogFormat != "json" {
		return cfg, usageError("-log-format must be text or json, got %q", cfg.LogFormat)
	}
	if cfg.Concurrency < 1 || cfg.Concurrency > 64 {
		return cfg, usageError("-concurrency must be between 1 and 64, got %d", cfg.Concurrency)
	}
	if len(cfg.Registries) == 0 {
		cfg.Registries = splitList(getenv("SWITCHBOARD_REGISTRY"))
	}
	if len(cfg.Registries) == 0 {
		cfg.Registries = []string{registry.Official}
	}
	for _, r := range cfg.Registries {
		if r == "none" {
			if len(cfg.Registries) > 1 {
				return cfg, usageError("-registry none names no registry, and cannot go with others")
			}
			cfg.Registries = nil
			break
		}
		if u, err := url.Parse(r); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
			return cfg, usageError("-registry %q: want a registry's URL, such as %s", r, registry.Official)
		}
	}
	if cfg.RegistryEvery < time.Minute {
		return cfg, usageError("-registry-every must be at least 1m, got %s", cfg.RegistryEvery)
	}
	if cfg.OTLPEndpoint != "" {
		if err := tracing.CheckEndpoint(cfg.OTLPEndpoint); err != nil {
			return cfg, usageError("-otlp-endpoint: %v", err)
		}
	}
	if cfg.TTL < 10*time.Second || cfg.TTL > 7*24*time.Hour {
		return cfg, usageError("-ttl must be between 10s and 168h, got %s", cfg.TTL)
	}
	for _, d := range []struct {
		name     string
		v        time.Duration
		min, max time.Duration
	}{
		{"-ask-timeout", cfg.MCP.AskTimeout, time.Second, time.Hour},
		{"-call-timeout", cfg.MCP.CallTimeout, time.Second, time.Hour},
		{"-upstream-idle", cfg.MCP.Pool.Idle, time.Second, 24 * time.Hour},
	} {
		if d.v < d.min || d.v > d.max {
			return cfg, usageError("%s must be between %s and %s, got %s", d.name, d.min, d.max, d.v)
		}
	}
	if cfg.MCP.Pool.MaxRunning < 1 || cfg.MCP.Pool.MaxRunning > 256 {
		return cfg, usageError("-upstream-max must be between 1 and 256, got %d", cfg.MCP.Pool.MaxRunning)
	}
	if cfg.MCP.Pool.MaxResult < 1024 || cfg.MCP.Pool.MaxResult > 64<<20 {
		return cfg, usageError("-max-result must be between 1024 and %d bytes, got %d", 64<<20, cfg.MCP.Pool.MaxResult)
	}
	if cfg.MCP.Token != "" && len(cfg.MCP.Token) < 16 {
		return cfg, usageError("the MCP token must be at least 16 characters")
	}
	if u := cfg.OAuthClientMetadataURL; u != "" {
		if p, err := url.Parse(u); err != nil || p.Scheme != "https" || p.Host == "" || p.Path == "" || p.Path == "/" || p.Fragment != "" {
			return cfg, usageError("-oauth-client-metadata-url must be an https URL with a path (a Client ID Metadata Document), got %q", u)
		}
	}
	if err := checkBind(cfg.Addr, cfg.DangerouslyBindAll); err != nil {
		return cfg, err
	}
	if cfg.Store.isETCD() {
		if _, err := cfg.Store.etcdOptions(nil); err != nil {
			return cfg, err
		}
		if t := cfg.Store.LeaseTTL; t < 2 || t > 300 {
			return cfg, usageError("-lease-ttl must be between 2 and 300 seconds, got %d", t)
		}
		if cfg.Token == "" {
			return cfg, usageError("replicas on etcd share one API token: set SWITCHBOARD_TOKEN, the same on every replica")
		}
	}
	return cfg, nil
}

// limitFlag adds the repeatable -limit NAME=VALUE flag, which sets one of
// the verification limits.
func limitFlag(fs *flag.FlagSet, l *discovery.Limits, envNote string) {
	fs.Func("limit", "NAME=VALUE sets a verification limit, repeatable"+envNote+"; the names:\n"+discovery.LimitNames(), func(v string) error {
		return setLimit(l, v)
	})
}

// setLimit applies one NAME=VALUE.
func setLimit(l *discovery.Limits, kv string) error {
	name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
	if !ok {
		return fmt.Errorf("want NAME=VALUE, got %q", kv)
	}
	return l.Set(name, value)
}

// checkBind refuses wildcard addresses unless explicitly allowed, in
// every spelling: an empty host, "0", "0.0.0.0", "::", "::ffff:0.0.0.0".
// Numeric hosts that are not plain IP addresses ("0x0", "0.0",
// "000.0.0.0", "2130706433") are refused too: some resolvers read them as
// addresses (inet_aton), so what they mean depends on the machine.
func checkBind(addr string, allowAll bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError("-addr %q: %v", addr, err)
	}
	wildcard := host == "" || host == "0"
	ip, err := netip.ParseAddr(host)
	switch {
	case err == nil:
		wildcard = wildcard || ip.Unmap().IsUnspecified()
	case !wildcard && numericHost.MatchString(host) && strings.ContainsAny(host, "0123456789"):
		return usageError("-addr %q: write the address as a plain IP address (such as 127.0.0.1); %q reads differently on different systems", addr, host)
	}
	if wildcard && !allowAll {
		return usageError("refusing to listen on all interfaces (%q): Switchboard starts commands; use 127.0.0.1, or pass --dangerously-bind-all if you really mean it", addr)
	}
	return nil
}

// numericHost matches hosts written only with what numeric address forms
// use (digits, dots, colons, x and a-f); with a digit in it, such a host
// is an address in a legacy spelling, not a name.
var numericHost = regexp.MustCompile(`^(?i)[0-9a-fx.:]+$`)

// checkBound checks the address actually bound, which a host name can
// make different from what checkBind saw: a wildcard is refused unless
// allowed, and any address beyond loopback is announced loudly. It
// returns the bound IP when it must be accepted as a Host header too.
func checkBound(ln net.Listener, allowAll bool, t *terminal) (extraHost string, err error) {
	tcp, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return "", nil
	}
	switch {
	case tcp.IP.IsUnspecified() && !allowAll:
		return "", usageError("refusing to listen on all interfaces (%s): the host name resolved to a wildcard address", tcp)
	case tcp.IP.IsUnspecified():
		t.warn("LISTENING ON ALL INTERFACES", tcp.String(),
			"Anyone who can reach port "+strconv.Itoa(tcp.Port)+" can try to log in and start commands on this machine.",
			"Only localhost and the names given with --allowed-host are answered.",
			"To stay on this machine: drop --dangerously-bind-all and listen on 127.0.0.1.")
		return "", nil
	case !tcp.IP.IsLoopback():
		t.warn("LISTENING BEYOND THIS MACHINE", tcp.String(),
			"Anyone who can reach "+tcp.String()+" can try to log in and start commands on this machine.",
			"To stay on this machine: -addr 127.0.0.1:"+strconv.Itoa(tcp.Port)+".")
		return tcp.IP.String(), nil
	}
	return "", nil
}

// serve runs the dashboard until ctx is cancelled.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseServeFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	term := newTerminal(cfg.LogFormat, stderr)
	log := term.log

	var db store.Store
	var coord cluster.Cluster // nil: a Switchboard on its own
	where := "database " + cfg.DBPath
	if cfg.Store.isETCD() {
		edb, err := cfg.Store.openETCD(ctx, log)
		if err != nil {
			return err
		}
		where = "etcd at " + cfg.Store.Store + " (keys under " + edb.Prefix() + ")"
		// etcd keeps the values sealing replaces in its history: a key
		// notes, before anything is sealed, that it is to be compacted,
		// and goes once it is, at this start or (cut short) a later one.
		pending := etcdCompactPending(edb)
		sealing, err := sealStore(ctx, etcdBackend{DB: edb, dir: filepath.Dir(cfg.DBPath)}, cfg.Key, getenv, cfg.DBPath, sealOptions{Shared: true, Create: true,
			Reseal: func() error { return edb.PutFlag(ctx, pending) }})
		if err != nil {
			edb.Close()
			return fmt.Errorf("start: %w", err)
		}
		if sealing.Resealed > 0 {
			log.Info("sealed the secrets an earlier release kept in clear", "secrets", sealing.Resealed)
		}
		if flagged, err := edb.Flag(ctx, pending); err != nil || flagged {
			if err == nil {
				err = edb.CompactHistory(ctx)
			}
			if err == nil {
				err = edb.DeleteFlag(ctx, pending)
			}
			if err != nil {
				log.Warn("could not compact etcd's history, which still holds secrets as they were before they were sealed; the next start tries again", "err", err)
			}
		}
		sealing.logKey(log)
		db = sealing.st.Store()
		if err := os.MkdirAll(filepath.Dir(cfg.DBPath), 0o700); err != nil {
			edb.Close()
			return fmt.Errorf("start: %w", err)
		}
		c, err := etcd.NewCoordinator(edb, cfg.Store.LeaseTTL)
		if err != nil {
			edb.Close()
			return fmt.Errorf("start: %w", err)
		}
		coord = c
	} else {
		open := func() (*bolt.DB, sealing, error) {
			bdb, err := bolt.Open(cfg.DBPath, bolt.Options{
				PrivateDir: cfg.DBPath == defaultDBPath(runtime.GOOS, getenv),
				Warn:       func(msg string) { log.Warn(msg) },
				SealKey:    peekSealKey(cfg.Key, getenv, cfg.DBPath),
			})
			if err != nil {
				return nil, sealing{}, err
			}
			s, err := sealStore(ctx, bdb, cfg.Key, getenv, cfg.DBPath, sealOptions{Create: true,
				Reseal: func() error { return markCompactPending(cfg.DBPath) }})
			if err != nil {
				bdb.Close()
				return nil, sealing{}, fmt.Errorf("start: %w", err)
			}
			bdb.SealWith(secretkey.SealKey(s.key.Current))
			return bdb, s, nil
		}
		bdb, sealing, err := open()
		if err != nil {
			return err
		}
		if sealing.Resealed > 0 {
			log.Info("sealed the secrets an earlier release kept in clear", "secrets", sealing.Resealed)
		}
		if _, err := os.Stat(compactPending(cfg.DBPath)); err == nil {
			// The file may hold values as they were before they were
			// sealed, in pages bbolt freed: rewritten, at this start or
			// (cut short) the next.
			if err := bdb.Close(); err != nil {
				return fmt.Errorf("start: %w", err)
			}
			if err := compactBolt(cfg.DBPath); err != nil {
				return fmt.Errorf("start: %w", err)
			}
			log.Info("rewrote the database without the copies of its secrets from before they were sealed", "database", cfg.DBPath)
			if _, sealing, err = open(); err != nil {
				return err
			}
		}
		sealing.logKey(log)
		db = sealing.st.Store()
	}
	defer func() {
		if c, ok := coord.(*etcd.Coordinator); ok {
			c.Close() // resigns, and lets the claims go, before the connection closes
		}
		// Close records the clean shutdown; if it fails, the next start
		// checks the file in full, so say why.
		if err := db.Close(); err != nil {
			log.Error("close the store", "store", where, "err", err)
		}
	}()
	replica := "local"
	if coord != nil {
		replica = coord.ID()
	}
	endTracing, err := tracing.Start(ctx, tracing.Config{Endpoint: cfg.OTLPEndpoint, Version: version, Replica: replica})
	if err != nil {
		return usageError("-otlp-endpoint: %v", err)
	}
	defer func() {
		// What is left goes before the process does, within a bound.
		tctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := endTracing(tctx); err != nil {
			log.Warn("send the last traces", "err", err)
		}
	}()
	// No server (nor any other process of this user) reads this process's
	// memory, environment or descriptors through /proc, or attaches to
	// it; a server's walls keep it from doing so even as root.
	if err := undumpable(); err != nil {
		log.Warn("could not make Switchboard undumpable", "err", err)
	}
	// Before anything starts a server: stop what a crash left running.
	runs, err := discovery.Contain(cfg.DBPath)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	defer runs.Close()
	if err := runs.Subreaper(); err != nil {
		log.Warn("servers' orphaned processes are not adopted while Switchboard runs", "err", err)
	}
	if swept, err := runs.Sweep(); err != nil {
		log.Warn("could not look for processes left by an earlier run", "err", err)
	} else if swept.Runs > 0 {
		log.Warn("stopped the processes left by runs an earlier crash cut short", "runs", swept.Runs, "stopped", len(swept.Killed), "pids", swept.Killed)
		if len(swept.Left) > 0 {
			log.Error("could not stop processes left by runs an earlier crash cut short", "pids", swept.Left)
		}
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	extraHost, err := checkBound(ln, cfg.DangerouslyBindAll, term)
	if err != nil {
		ln.Close()
		return err
	}
	if extraHost != "" {
		cfg.AllowedHosts = append(cfg.AllowedHosts, extraHost)
	}
	loginCode := randomToken()
	// Without SWITCHBOARD_TOKEN, the API token is the one kept beside the
	// database (see token.go), where switchboard token, connect and
	// disconnect, run by the same user, find it. With it, no file names
	// another token.
	token, tokenFile := cfg.Token, ""
	if token == "" {
		tokenFile = apiTokenPath(cfg.DBPath)
		var made bool
		token, made, err = keptAPIToken(tokenFile)
		switch {
		case err != nil && !made: // a file that holds no token of ours
			ln.Close()
			return fmt.Errorf("start: %w", err)
		case err != nil:
			term.warn("THE API TOKEN IS NOT KEPT", tokenFile,
				"It will change at every start, and switchboard token and connect cannot find it.",
				"Why: "+err.Error(),
				"Set SWITCHBOARD_TOKEN to choose one.")
			tokenFile = ""
		}
	} else {
		os.Remove(apiTokenPath(cfg.DBPath))
	}
	// Call records the store cannot take wait beside the database.
	cfg.MCP.AuditSpool = cfg.DBPath + ".audit-spool"
	cfg.MCP.TokenKept = func(tok string) {
		if err := keepMCPToken(mcpTokenPath(cfg.DBPath), tok); err != nil {
			log.Warn("switchboard mcp cannot find the MCP token by itself: set SWITCHBOARD_MCP_TOKEN for it", "err", err)
		}
	}
	// The program, from the bottom up: what reaches servers, what keeps
	// remote servers' sign-ins, what verifies and records, and the web
	// face over them (wiring as in docs/architecture.md "Architecture").
	verifier := discovery.NewVerifier(cfg.Limits, getenv).Contained(runs).Walled(sandbox.Config{
		Database:      cfg.DBPath,
		DashboardPort: ln.Addr().(*net.TCPAddr).Port,
		ExtraDeny:     append(nonEmpty(cfg.Store.ETCDKey, cfg.Store.ETCDCert), cfg.Key.files()...),
	})
	// Agent names given under an earlier, larger budget are shortened
	// once (see store.MaxAgentName); a replica that finds none to shorten
	// writes nothing.
	if n, err := db.ShortenAgentNames(ctx); err != nil {
		log.Warn("could not shorten the agent names of an earlier release", "err", err)
	} else if n > 0 {
		log.Info("shortened agent names to fit the clients' limits: agents that listed the tools before hear their list changed", "tools", n)
	}
	keeper := grants.NewKeeper(db, verifier)
	verifications := verify.New(verify.Config{
		Concurrency:     cfg.Concurrency,
		DefaultTTL:      cfg.TTL,
		NoVerifyOnStart: !cfg.VerifyOnStart,
		Cluster:         coord,
		Logger:          log,
	}, db, verifier, keeper)
	defer verifications.Close() // after the web face (its calls end first); again is nothing
	// The registries' copies, pulled in the background until serve ends.
	var copies *registry.Copies
	if len(cfg.Registries) > 0 {
		copies = registry.NewCopies(db, cfg.Registries, cfg.RegistryEvery, log)
		pctx, stopPulls := context.WithCancel(ctx)
		pulled := make(chan struct{})
		go func() { defer close(pulled); copies.Run(pctx) }()
		defer func() { stopPulls(); <-pulled }()
	}
	if cfg.NoSharedToken && cfg.OIDC == nil {
		if users, err := db.Users(ctx); err != nil {
			ln.Close()
			return fmt.Errorf("start: %w", err)
		} else if !slices.ContainsFunc(users, func(u store.User) bool { return u.Role == store.RoleAdmin && u.TokenHash != "" }) {
			ln.Close()
			return usageError("-no-shared-token would lock everyone out: no admin has a personal token yet (add one on the People page, or POST /api/v1/users), and no -oidc-issuer is given")
		}
	}
	app, err := web.New(web.Config{
		Token:        token,
		TokenFile:    tokenFile,
		LoginCode:    loginCode,
		AllowedHosts: cfg.AllowedHosts,
		OIDC:         cfg.OIDC,
		MetricsAllow: cfg.MetricsAllow,
		// The shared token is off only where people can get in otherwise.
		NoSharedToken: cfg.NoSharedToken,
		MCP:           cfg.MCP,
		Logger:        log,

		OAuthClientMetadataURL: cfg.OAuthClientMetadataURL,
	}, web.Deps{Store: db, Verify: verifications, Verifier: verifier, Grants: keeper, Cluster: coord, Registry: copies})
	if err != nil {
		ln.Close()
		return fmt.Errorf("start: %w", err)
	}
	verifications.Start()
	srv, guarded := app.HTTPServer(ln)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(guarded) }()

	base := "http://" + displayAddr(ln.Addr())
	fmt.Fprintf(stdout, "Switchboard is running with %s\n", where)
	switch {
	case cfg.NoSharedToken: // no link, no token: they are the shared token's
		how := "your personal token"
		if cfg.OIDC != nil {
			how = "the identity provider, or " + how
		}
		fmt.Fprintf(stdout, "Sign in at %s/login with %s (the shared API token is off)\n", base, how)
	default:
		fmt.Fprintf(stdout, "Open %s/login?code=%s\n", base, loginCode)
		fmt.Fprintf(stdout, "  (the link logs one browser in, once; sessions last a week and survive restarts)\n")
	}
	if cfg.Token == "" && !cfg.NoSharedToken {
		fmt.Fprintf(stdout, "API token (Authorization: Bearer, or the login form): %s\n", token)
		if tokenFile != "" {
			fmt.Fprintf(stdout, "  (kept in %s; the same at every start; switchboard token --rotate replaces it)\n", tokenFile)
		}
	}
	fmt.Fprintf(stdout, "MCP endpoint for agents: %s/mcp (its token is on the Agents page)\n", base)

	select {
	case err = <-served:
		app.Close()
		verifications.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintln(stderr, "Stopping: ending verifications, calls and open pages (Ctrl-C again to quit at once)")
	// Stop live streams and jobs first, so Shutdown has nothing open to
	// wait for; then close whatever is left.
	app.Close()
	verifications.Close()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
	}
	fmt.Fprintln(stderr, "Stopped.")
	return nil
}

// displayAddr is the address to print: a wildcard shows as 127.0.0.1.
func displayAddr(a net.Addr) string {
	host, port, _ := net.SplitHostPort(a.String())
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// nonEmpty returns the strings of list that are not empty.
func nonEmpty(list ...string) []string {
	var out []string
	for _, s := range list {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// readSecretFile reads a secret kept in a file: a regular file that only
// its owner, this user, may read or write, as OpenSSH asks of a key; the
// secret is its content without the final line break.
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	if err := onlyMine(path, fi); err != nil {
		return "", err
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// parsePrefix reads an address (one host) or a CIDR.
func parsePrefix(v string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(v); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(v)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is neither an address nor a CIDR", v)
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// etcdBackend is the etcd store as serve keeps it: a store.Backuper, so
// that GET /api/v1/backup answers on a team's replica too. Its copy is a
// database file (see package snapshot), written in Switchboard's own
// data directory (dir), which no server's walls let in, then sent and
// removed.
type etcdBackend struct {
	*etcd.DB
	dir string
}

// Backup writes a checked copy of the store, read at one etcd revision,
// to w.
func (b etcdBackend) Backup(ctx context.Context, w io.Writer) (int64, error) {
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return 0, err
	}
	tmp, err := os.MkdirTemp(b.dir, ".backup-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "switchboard.db")
	if _, err := snapshot.Write(ctx, b.DB, path); err != nil {
		return 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return io.Copy(w, f)
}
