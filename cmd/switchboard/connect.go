package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/internal/service"
	"github.com/switchboard-dev/switchboard/store"
)

// apiTokenPath is where `switchboard serve` keeps a generated API token
// for `switchboard connect` and `disconnect`, beside the database.
func apiTokenPath(dbPath string) string { return dbPath + ".api-token" }

const connectUsage = `usage: switchboard connect CLIENT [--dry-run] [-profile ID] [-addr HOST:PORT] [-db PATH] [-config PATH]
       switchboard disconnect CLIENT [--dry-run] [-addr HOST:PORT] [-db PATH] [-config PATH]

connect writes Switchboard's entry into the client's own config file (a
backup of the file first, everything else in it kept as written) with a
token of the client's own, made by the running dashboard; the diff is
shown; -profile gives the token a profile (what its agent is offered: see
the Profiles page; the default offers everything). The client's entries of
servers the dashboard has (the same command and arguments, or the same URL)
move behind Switchboard in the same write: out of its file and out of its
project files (Claude Code's projects in ~/.claude.json; .cursor/mcp.json
and .vscode/mcp.json of the folders the editor opened, and of this
directory), kept in FILE.switchboard-moved beside its file. disconnect
removes the entry, puts the moved entries back where they were and revokes
the token. CLIENT is one of:
  claude-code     ~/.claude.json (Claude Code's user scope), over HTTP
  claude-desktop  claude_desktop_config.json, through switchboard mcp
  cursor          ~/.cursor/mcp.json, over HTTP
  vscode          the user mcp.json, over HTTP
  codex           ~/.codex/config.toml, through switchboard mcp
`

// connectCmd runs `switchboard connect` (remove false) and
// `switchboard disconnect` (remove true).
func connectCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, remove bool) error {
	name := "connect"
	if remove {
		name = "disconnect"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, connectUsage); fs.PrintDefaults() }
	dryRun := fs.Bool("dry-run", false, "show the diff, change nothing")
	addr := cmpOr(getenv("SWITCHBOARD_ADDR"), "127.0.0.1:"+strconv.Itoa(DefaultPort))
	fs.StringVar(&addr, "addr", addr, "the dashboard's address, as given to serve (env SWITCHBOARD_ADDR)")
	dbPath := fs.String("db", cmpOr(getenv("SWITCHBOARD_DB"), defaultDBPath(runtime.GOOS, getenv)), "the dashboard's database, beside which it keeps a generated API token (env SWITCHBOARD_DB)")
	config := fs.String("config", "", "the client's config file, if not where the client keeps it")
	profile := fs.String("profile", "", "the profile of the client's token (connect only; the default if empty)")
	// The client comes first; flags may follow it.
	var key string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		key, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &exitError{code: 0}
		}
		return &exitError{code: 2}
	}
	if key == "" && fs.NArg() == 1 {
		key = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usageError("%s takes one client, got %q", name, fs.Args())
	}
	client, ok := serverconfig.ClientByKey(key)
	if !ok {
		return usageError("%s: which client? one of claude-code, claude-desktop, cursor, vscode, codex (got %q)", name, key)
	}
	path := *config
	home := cmpOr(getenv("HOME"), getenv("USERPROFILE"))
	if path == "" {
		if home == "" {
			return fmt.Errorf("%s: no home directory (HOME) to find %s's config in; give -config", name, client.Name)
		}
		path = client.ConfigPath(runtime.GOOS, home, getenv)
	}
	api := &dashboardAPI{base: "http://" + addr, token: getenv("SWITCHBOARD_TOKEN")}
	if api.token == "" {
		if b, err := os.ReadFile(apiTokenPath(*dbPath)); err == nil {
			api.token = strings.TrimSpace(string(b))
		}
	}
	if remove {
		return disconnect(ctx, client, path, api, *dryRun, stdout, stderr)
	}
	var projects []string
	if *config == "" && home != "" {
		cwd, _ := os.Getwd()
		projects = serverconfig.ProjectFiles(client, runtime.GOOS, home, getenv, cwd)
	}
	return connect(ctx, client, path, addr, *profile, home, getenv, projects, api, *dryRun, stdout, stderr)
}

func connect(ctx context.Context, c serverconfig.Client, path, addr, profile, home string, getenv func(string) string, projects []string, api *dashboardAPI, dryRun bool, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("connect: where is this switchboard? %w", err)
	}
	exe = service.StableExe(service.Env{GOOS: runtime.GOOS, Home: home, Getenv: getenv}, exe) // the service's, if installed
	ep := serverconfig.Endpoint{URL: api.base + "/mcp", Exe: exe, Addr: addr, Token: "<a token of " + c.Name + "'s own, made when you connect>"}
	managed, err := managedServers(ctx, api)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	opts := serverconfig.ConnectOptions{Managed: managed, Projects: projects}
	if dryRun {
		p, err := serverconfig.PlanConnect(c, path, c.Entry(ep), opts)
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		fmt.Fprint(stdout, p.Diff())
		sayMoved(stdout, p)
		fmt.Fprintf(stdout, "Dry run: %s not written, no token made.\n", path)
		return nil
	}
	var made struct {
		Client struct{ ID string } `json:"client"`
		Token  string              `json:"token"`
	}
	if err := api.do(ctx, http.MethodPost, "/api/v1/clients", map[string]any{"name": c.Name, "profile": profile}, http.StatusCreated, &made); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	ep.Token = made.Token
	p, err := serverconfig.PlanConnect(c, path, c.Entry(ep), opts)
	var backups []string
	var tightened bool
	if err == nil {
		fmt.Fprint(stdout, p.Diff())
		tightened = p.Main().Tightens()
		backups, err = p.Write(time.Now())
	}
	if !serverconfig.MainWritten(err) {
		api.do(ctx, http.MethodDelete, "/api/v1/clients/"+made.Client.ID, nil, http.StatusNoContent, nil) // no orphan token
		return fmt.Errorf("connect: %w", err)
	}
	if p.Old != nil {
		revoke(ctx, api, serverconfig.TokenOf(*p.Old), stderr) // the entry it replaced
	}
	if err != nil { // its own file is written, with the new token: a project file is not
		return fmt.Errorf("connect: %s is connected, but %w; the record of moved entries says where each is", p.Main().Path, err)
	}
	fmt.Fprintf(stdout, "Connected %s: wrote %s", c.Name, p.Main().Path)
	if len(backups) > 0 {
		fmt.Fprintf(stdout, " (the files as they were: %s, readable by you only)", strings.Join(backups, ", "))
	}
	if tightened {
		fmt.Fprint(stdout, ". It holds a token now, so others may no longer read it (group and other permissions removed)")
	}
	fmt.Fprintln(stdout, ".")
	sayMoved(stdout, p)
	fmt.Fprintf(stdout, "Its token is its own: revoke it on the Agents page or with switchboard disconnect %s. Restart %s to load it.\n", c.Key, c.Name)
	return nil
}

// sayMoved says which entries connecting moves behind Switchboard.
func sayMoved(w io.Writer, p serverconfig.Connection) {
	moved := p.Moved()
	if len(moved) == 0 {
		return
	}
	var names []string
	for _, m := range moved {
		names = append(names, movedName(m))
	}
	fmt.Fprintf(w, "Moved behind Switchboard (its agent reaches them only through the gate now): %s. They are kept in %s; switchboard disconnect %s puts them back.\n",
		strings.Join(names, ", "), p.MovesPath(), p.Client.Key)
}

// movedName names a moved entry, with its project if it has one.
func movedName(m serverconfig.MovedEntry) string {
	if m.Where != "" {
		return m.Name + " (project " + m.Where + ")"
	}
	return m.Name
}

// managedServers is the launches of the servers the dashboard has.
func managedServers(ctx context.Context, api *dashboardAPI) (serverconfig.Managed, error) {
	var list struct {
		Servers []store.Server `json:"servers"`
	}
	if err := api.do(ctx, http.MethodGet, "/api/v1/servers", nil, http.StatusOK, &list); err != nil {
		return serverconfig.Managed{}, err
	}
	return serverconfig.ManagedOf(list.Servers), nil
}

func disconnect(ctx context.Context, c serverconfig.Client, path string, api *dashboardAPI, dryRun bool, stdout, stderr io.Writer) error {
	p, err := serverconfig.PlanDisconnect(c, path)
	if err != nil {
		return fmt.Errorf("disconnect: %w", err)
	}
	if p.Old == nil && !p.Changed() {
		fmt.Fprintf(stdout, "%s has no %s entry: nothing to do.\n", path, serverconfig.EntryName)
		return nil
	}
	fmt.Fprint(stdout, p.Diff())
	if dryRun {
		fmt.Fprintf(stdout, "Dry run: %s not written, no token revoked.\n", path)
		return nil
	}
	backups, err := p.Write(time.Now())
	if err != nil {
		return fmt.Errorf("disconnect: %w", err)
	}
	fmt.Fprintf(stdout, "Disconnected %s: removed its entry from %s (the files as they were: %s).\n", c.Name, p.Main().Path, strings.Join(backups, ", "))
	var names []string
	for _, m := range p.Restored() {
		names = append(names, movedName(m))
	}
	if len(names) > 0 {
		fmt.Fprintf(stdout, "Put back as they were: %s.\n", strings.Join(names, ", "))
	}
	names = names[:0]
	for _, m := range p.Kept() {
		names = append(names, movedName(m))
	}
	if len(names) > 0 {
		fmt.Fprintf(stderr, "warning: not put back, since an entry of the same name is there now: %s; they stay in %s\n", strings.Join(names, ", "), p.MovesPath())
	}
	if p.Old != nil {
		revoke(ctx, api, serverconfig.TokenOf(*p.Old), stderr)
	}
	return nil
}

// revoke revokes the connected client whose token this is, if one is;
// it says so on stderr when it cannot.
func revoke(ctx context.Context, api *dashboardAPI, token string, stderr io.Writer) {
	if token == "" {
		return
	}
	var list struct {
		Clients []struct{ ID, Name, Fingerprint string } `json:"clients"`
	}
	if err := api.do(ctx, http.MethodGet, "/api/v1/clients", nil, http.StatusOK, &list); err != nil {
		fmt.Fprintf(stderr, "warning: the entry's token was not revoked (%v); revoke it on the Agents page\n", err)
		return
	}
	fp := store.HashToken(token)[:12]
	for _, c := range list.Clients {
		if c.Fingerprint == fp {
			if err := api.do(ctx, http.MethodDelete, "/api/v1/clients/"+c.ID, nil, http.StatusNoContent, nil); err != nil {
				fmt.Fprintf(stderr, "warning: the token of %s was not revoked (%v); revoke it on the Agents page\n", c.Name, err)
			}
			return
		}
	}
}

// dashboardAPI is the running dashboard's JSON API.
type dashboardAPI struct{ base, token string }

// get is a GET of path's body as it comes (an export's file).
func (a *dashboardAPI) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the dashboard is not reachable at %s: %w", a.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	switch {
	case err != nil:
		return nil, err
	case resp.StatusCode == http.StatusUnauthorized:
		return nil, errors.New("the dashboard refused the API token: set SWITCHBOARD_TOKEN, or run as the user who runs switchboard serve")
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	return data, nil
}

func (a *dashboardAPI) do(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the dashboard is not reachable at %s (is switchboard serve running? it makes the client's token): %w", a.base, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return errors.New("the dashboard refused the API token: set SWITCHBOARD_TOKEN, or run as the user who runs switchboard serve")
	case resp.StatusCode != want:
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(data)))
	case out != nil:
		return json.Unmarshal(data, out)
	}
	return nil
}
