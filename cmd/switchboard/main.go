// Command switchboard is a local control room for MCP servers: register
// servers, verify them live, review their tools and set a policy per tool.
//
//	switchboard [serve] [flags]            run the dashboard (default)
//	switchboard verify [--json] -- CMD ARGS  verify a stdio server once, without the store
//	switchboard verify [--json] URL          verify a remote server once
//	switchboard call [--json] (URL | -- CMD ARGS...) TOOL [JSON]  call one tool once
//	switchboard backup [--db PATH] OUT       copy the database, checked, while no dashboard runs
//	switchboard migrate -from SRC -to DST    copy the whole store between a database file and etcd, checked
//	switchboard import [--dry-run] FILE      import servers from another MCP client's config
//	switchboard export --format F            write servers in another MCP client's config format
//	switchboard mcp                          serve MCP on stdio, relaying to the dashboard's /mcp
//	switchboard connect|disconnect CLIENT    write Switchboard into a client's config, or remove it
//	switchboard token [--rotate]             print the API token, or replace it
//	switchboard secrets status|rotate        show the key that seals the store's secrets, or rotate it
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/discovery/sandbox"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

func main() {
	bolt.RunChildCheckIfAsked()
	discovery.RunLauncherIfAsked() // servers start through this program (discovery/launcher.go)
	inScope()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, which starts a graceful stop, the next one
	// ends the program at once, as the signal does by default.
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "switchboard:", msg)
		}
		os.Exit(code)
	}
}

// exitError carries a specific exit code; an empty message prints nothing.
// inScope runs the dashboard again in a systemd scope of its own when
// its servers' walls need one for their cgroups (sandbox.ScopeArgv: on
// cgroup v2, started from a terminal whose cgroup it shares). Where that
// cannot be, it goes on where it is, and the runs get rlimits.
func inScope() {
	if len(os.Args) > 1 && os.Args[1] != "serve" && !strings.HasPrefix(os.Args[1], "-") {
		return // only serve runs servers for long
	}
	if argv := sandbox.ScopeArgv(os.Args, os.Getenv); argv != nil {
		err := syscall.Exec(argv[0], argv, append(os.Environ(), sandbox.ScopeEnv+"=1"))
		fmt.Fprintln(os.Stderr, "switchboard: could not run in a systemd scope of its own:", err)
	}
}

type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageError(format string, args ...any) error {
	return &exitError{code: 2, msg: fmt.Sprintf(format, args...)}
}

// run is the whole program. It returns when ctx is cancelled (serve) or
// the command is done.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && (args[0] == "serve" || args[0] == "verify" || args[0] == "call" || args[0] == "backup" || args[0] == "migrate" || args[0] == "import" || args[0] == "export" || args[0] == "mcp" || args[0] == "connect" || args[0] == "disconnect" || args[0] == "service" || args[0] == "version" || args[0] == "token" || args[0] == "secrets" || args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, args, getenv, stdout, stderr)
	case "verify":
		return verifyCmd(ctx, args, getenv, stdout, stderr)
	case "call":
		return call(ctx, args, getenv, stdout, stderr)
	case "backup":
		return backup(ctx, args, getenv, stdout, stderr)
	case "migrate":
		return migrateCmd(ctx, args, getenv, stdout, stderr)
	case "import":
		return importCmd(ctx, args, getenv, stdin, stdout, stderr)
	case "export":
		return exportCmd(ctx, args, getenv, stdout, stderr)
	case "mcp":
		return mcpCmd(ctx, args, getenv, stdin, stdout, stderr)
	case "connect", "disconnect":
		return connectCmd(ctx, args, getenv, stdout, stderr, cmd == "disconnect")
	case "service":
		return serviceCmd(ctx, args, getenv, stdout, stderr)
	case "version":
		return versionCmd(args, stdout)
	case "token":
		return tokenCmd(args, getenv, stdout, stderr)
	case "secrets":
		return secretsCmd(ctx, args, getenv, stdout, stderr)
	}
	fmt.Fprint(stdout, usage)
	return nil
}

const usage = `Switchboard: register MCP servers, verify them live, review their tools, set policies.

Usage:
  switchboard [serve] [flags]               run the dashboard (see: switchboard serve -h)
  switchboard verify [--json] -- CMD ARGS   verify a stdio server once, without the store
  switchboard verify [--json] URL           verify a Streamable HTTP (or --transport sse) server once
  switchboard call [--json] URL TOOL ['{JSON}']
  switchboard call [--json] -- CMD ARGS... TOOL ['{JSON}']
                                            call one tool of a server once, bounded like a verification
  switchboard backup [--db PATH] OUT        write a checked copy of the database (dashboard stopped)
  switchboard migrate -from SRC -to DST     copy everything, secrets included, from a database file into an
                                            empty etcd (etcd://host:2379[,…]) or back, and check the copy
  switchboard import [--dry-run] FILE       import servers from a Claude, Cursor, Windsurf, VS Code or Codex config
  switchboard export --format F [--server ID]... [--include-secrets]
                                            write servers as claude, cursor, vscode or codex config
  switchboard mcp [-addr HOST:PORT]         serve MCP on stdio, relaying to the running dashboard's /mcp
                                            (for clients that start stdio servers only, such as Claude Desktop)
  switchboard connect CLIENT [--dry-run]    write Switchboard into a client's config, with a token of its own:
                                            claude-code, claude-desktop, cursor, vscode or codex
  switchboard disconnect CLIENT [--dry-run] remove it again, and revoke its token
  switchboard service install|uninstall|status
                                            start Switchboard at login (systemd user unit, launchd agent,
                                            Task Scheduler task), stop that, or say whether it runs
  switchboard token [--rotate] [-db PATH]   print the API token serve keeps (the same at every start),
                                            or replace it with a new one (the old one stops working)
  switchboard secrets status|rotate         where the key that seals the store's secrets is kept, and what it
                                            seals; or seal them all under a new key (dashboard stopped)
  switchboard version                       print the version, commit, build date and platform
`
