package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// shutdownTimeout bounds the graceful shutdown of the http and sse
// transports once ctx has been cancelled.
const shutdownTimeout = 3 * time.Second

// newMCPServer builds the MCP server that serves tools. It declares the
// tools capability with listChanged and, when cfg.pageSize is positive,
// paginates tools/list.
//
// mcp-go's WithPaginationLimit returns a next cursor whenever a page is
// full, so when the number of tools is a multiple of the page size a client
// walking the cursors would get one extra, empty page. An after-list hook
// clears the cursor of the page that ends with the last tool, so a client
// always sees exactly ceil(tools/pageSize) pages.
//
// In -mode no-tools the server declares no tools capability and has no
// tools. With live (-tools-file) set, the tools and the reported version
// may change while serving: initialize answers (and, from 2026-07-28,
// the serverInfo in every result's _meta) report live's version, and the
// last page is found among the tools served at the time.
func newMCPServer(cfg config, tools []mcp.Tool, live *liveTools) *server.MCPServer {
	if cfg.mode == modeNoTools {
		return server.NewMCPServer(cfg.name, cfg.version, server.WithRecovery())
	}
	opts := []server.ServerOption{
		server.WithToolCapabilities(true),
		server.WithRecovery(),
	}
	var s *server.MCPServer
	hooks := &server.Hooks{}
	if live != nil {
		// Clients of 2025 protocols read the version from initialize;
		// those of 2026-07-28 from the serverInfo in the _meta of
		// server/discover's (and every other) result, which mcp-go fills
		// with the version given to NewMCPServer only where a hook left
		// it unset. mcp-go runs these hooks before it encodes the result.
		hooks.AddAfterInitialize(func(_ context.Context, _ any, _ *mcp.InitializeRequest, result *mcp.InitializeResult) {
			result.ServerInfo.Version = live.version(cfg.version)
		})
		hooks.AddOnSuccess(func(ctx context.Context, _ any, _ mcp.MCPMethod, _ any, result any) {
			if !server.IsModernRequest(ctx) {
				return // legacy results carry no serverInfo
			}
			if r, ok := result.(mcp.ResultMetadata); ok {
				r.EnsureResultMeta().SetServerInfo(mcp.Implementation{Name: cfg.name, Version: live.version(cfg.version)})
			}
		})
	}
	if cfg.pageSize > 0 {
		last := lastToolName(tools)
		hooks.AddAfterListTools(func(_ context.Context, _ any, _ *mcp.ListToolsRequest, result *mcp.ListToolsResult) {
			if result == nil || result.NextCursor == "" || len(result.Tools) == 0 {
				return
			}
			end := last
			if live != nil {
				end = lastServed(s)
			}
			if result.Tools[len(result.Tools)-1].Name == end {
				result.NextCursor = ""
			}
		})
		opts = append(opts, server.WithPaginationLimit(cfg.pageSize))
	}
	if cfg.listed || cfg.app {
		opts = append(opts, listedOptions...)
	}
	if cfg.conformance {
		opts = append(opts, conformanceOptions...)
	}
	if cfg.mode == modeAsks {
		opts = append(opts, server.WithLogging()) // log_steps
		if cfg.gated {
			opts = append(opts, server.WithToolFilter(gatedTools))
		}
		if cfg.variant {
			opts = append(opts, server.WithToolFilter(variantTools))
		}
	}
	opts = append(opts, server.WithHooks(hooks))
	s = server.NewMCPServer(cfg.name, cfg.version, opts...)
	if cfg.listed {
		addListed(s)
	}
	if cfg.app {
		addApp(s)
	}
	if cfg.traceEcho {
		s.AddTool(mcp.NewTool("trace_context", mcp.WithDescription("Answers the traceparent this call's _meta carried.")),
			func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var tp string
				if m := req.Params.Meta; m != nil {
					tp, _ = m.AdditionalFields["traceparent"].(string)
				}
				return mcp.NewToolResultText(tp), nil
			})
	}
	if cfg.conformance {
		addConformance(s)
	}
	if len(tools) > 0 {
		s.AddTools(serverTools(tools)...)
	}
	if cfg.mode == modeTryIt {
		s.AddTools(tryItTools()...)
	}
	if cfg.mode == modeAsks {
		s.AddTools(asksTools()...)
		if cfg.gated {
			s.AddTools(sampleRootsTool)
		}
	}
	if cfg.mode == modeEscape {
		s.AddTool(mcp.NewTool("escape", mcp.WithDescription("Tries the -escape attempts again, during a call, and answers what each got.")),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(strings.Join(escapeAll(cfg.escape), "\n")), nil
			})
	}
	return s
}

// serveStdio serves newline-delimited JSON-RPC on stdin and stdout until
// stdin is closed or ctx is cancelled. Diagnostics go to stderr only. The
// misbehaving modes take over here: some never serve at all, some speak
// through the hand-written peer in raw.go, and the rest misbehave once
// before mcp-go serves normally.
func serveStdio(ctx context.Context, cfg config, s *server.MCPServer, tools []mcp.Tool, stdin io.Reader, stdout, stderr io.Writer) error {
	switch cfg.mode {
	case modeHangInit:
		return hangStdio(ctx, stdin)
	case modeTrickle:
		return trickle(ctx, cfg, stdin, stdout)
	case modeCloseStdout:
		return closeStdout(ctx, stdout)
	case modeIgnoreSIGTERM:
		return ignoreSIGTERM(ctx, stdin)
	case modeNoRead:
		return noRead(ctx, cfg, stdout)
	case modeEndlessLine:
		return endlessLine(stdout)
	case modeProgressForever, modeExitAfterInit, modeNotifyFlood, modeInvalidUTF8, modeDeepJSON,
		modeDuplicateKeys, modeWrongIDs, modeClientRequests, modeBadVersion, modeListError, modeLegacySilent,
		modeEndlessCursor, modeRepeatCursor, modeHugeSchema, modeDeepSchema, modeSchemaRefs, modeInjection,
		modeDuplicateNames, modeHostileNames, modeXSS, modeManyTinyTools, modeHostileResources:
		return serveRaw(ctx, cfg, tools, stdin, stdout, stderr)
	}
	if err := beforeServing(cfg, stdin, stdout, stderr); err != nil {
		return err
	}
	stdio := server.NewStdioServer(s)
	stdio.SetErrorLogger(log.New(stderr, "mcp-fixture: ", log.LstdFlags))
	if cfg.legacy {
		stdio.SetContextFunc(func(ctx context.Context) context.Context {
			return server.WithSupportedProtocolVersions(ctx, legacyVersions())
		})
	}
	err := stdio.Listen(ctx, stdin, stdout)
	if afterErr := afterServing(cfg, stderr); afterErr != nil {
		return afterErr
	}
	if ctx.Err() != nil {
		// Cancellation by a signal is a normal way to stop.
		return nil
	}
	return err
}

// serveHTTP serves the http (Streamable HTTP, endpoint /mcp) or sse (legacy
// HTTP+SSE, endpoint /sse) transport. It opens the listener first, so that
// an address with port 0 works, prints "listening <URL>" to stdout and then
// serves until ctx is cancelled. mcp-go's default protection against DNS
// rebinding (rejecting non-localhost Host headers on loopback connections)
// stays enabled.
func serveHTTP(ctx context.Context, cfg config, s *server.MCPServer, stdout, stderr io.Writer) error {
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	baseURL := "http://" + dialableAddr(ln.Addr())

	httpServer := &http.Server{
		// Request contexts derive from ctx, so cancelling ctx also ends
		// long-lived SSE streams and hanging requests.
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(stderr, "mcp-fixture: http: ", log.LstdFlags),
	}
	shutdown := httpServer.Shutdown

	var endpoint string
	hostile := hostileHTTPHandler(cfg)
	switch {
	case hostile != nil:
		endpoint = map[string]string{transportHTTP: "/mcp", transportSSE: "/sse"}[cfg.transport]
		httpServer.Handler = hostile
	case cfg.transport == transportHTTP:
		endpoint = "/mcp"
		mux := http.NewServeMux()
		if cfg.mode == modeHangInit {
			mux.Handle(endpoint, hangHandler())
		} else {
			opts := []server.StreamableHTTPOption{
				server.WithEndpointPath(endpoint),
				server.WithStreamableHTTPServer(httpServer),
				server.WithStreamableHTTPLogger(slog.New(slog.NewTextHandler(stderr, nil))),
			}
			if cfg.legacy {
				opts = append(opts, server.WithStreamableHTTPProtocolVersions(legacyVersions()...))
			}
			streamable := server.NewStreamableHTTPServer(s, opts...)
			if cfg.oauthIssuer != "" {
				newOAuthGuard(cfg, baseURL, endpoint).routes(mux, endpoint, streamable)
			} else {
				mux.Handle(endpoint, streamable)
			}
			shutdown = streamable.Shutdown
		}
		httpServer.Handler = mux
	case cfg.transport == transportSSE:
		endpoint = "/sse"
		if cfg.mode == modeHangInit {
			mux := http.NewServeMux()
			mux.Handle(endpoint, hangHandler())
			mux.Handle("/message", hangHandler())
			httpServer.Handler = mux
		} else {
			sse := server.NewSSEServer(s,
				server.WithBaseURL(baseURL),
				server.WithSSEEndpoint(endpoint),
				server.WithMessageEndpoint("/message"),
				server.WithHTTPServer(httpServer),
			)
			httpServer.Handler = sse
			shutdown = sse.Shutdown
		}
	default:
		ln.Close()
		return fmt.Errorf("transport %q is not served over HTTP", cfg.transport)
	}

	if _, err := fmt.Fprintf(stdout, "listening %s%s\n", baseURL, endpoint); err != nil {
		ln.Close()
		return err
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- httpServer.Serve(ln) }()

	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}

	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := shutdown(shutdownCtx); err != nil {
		fmt.Fprintf(stderr, "mcp-fixture: graceful shutdown: %v\n", err)
		httpServer.Close()
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// dialableAddr returns addr as host:port, replacing an unspecified listen
// address such as 0.0.0.0 or [::] by the matching loopback address so that
// the printed URL can be dialled and passes the localhost Host check.
func dialableAddr(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	ip := tcp.IP
	switch {
	case ip == nil || ip.Equal(net.IPv4zero):
		ip = net.IPv4(127, 0, 0, 1)
	case ip.Equal(net.IPv6unspecified):
		ip = net.IPv6loopback
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(tcp.Port))
}

// legacyVersions are the MCP revisions before 2026-07-28 (see -legacy).
func legacyVersions() []string {
	var out []string
	for _, v := range mcp.ValidProtocolVersions {
		if !mcp.IsModernProtocol(v) {
			out = append(out, v)
		}
	}
	return out
}
