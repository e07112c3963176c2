package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

var fixture string // path of the built mcp-fixture binary

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) != "" { // a test started this binary as switchboard
		main()
		os.Exit(0)
	}
	bolt.RunChildCheckIfAsked()
	discovery.RunLauncherIfAsked()
	// A program built with -race sleeps 1 s before exiting, by default;
	// the integrity-check children need not.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	dir, err := os.MkdirTemp("", "switchboard-cmd-test")
	if err != nil {
		panic(err)
	}
	// verify and call keep their runs' temp dirs beside the database:
	// never the real one of whoever runs the tests.
	if os.Getenv("SWITCHBOARD_DB") == "" {
		os.Setenv("SWITCHBOARD_DB", filepath.Join(dir, "switchboard.db"))
	}
	fixture = filepath.Join(dir, "mcp-fixture")
	if runtime.GOOS == "windows" {
		fixture += ".exe" // Windows runs nothing without it
	}
	if out, err := exec.Command("go", "build", "-o", fixture, "github.com/switchboard-dev/switchboard/cmd/mcp-fixture").CombinedOutput(); err != nil {
		panic("build fixture: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goroutine leak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func env(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok || k != "SWITCHBOARD_REGISTRY" {
			return v
		}
		return "none" // the tests reach no registry but their own
	}
}

var openURL = regexp.MustCompile(`Open (http://127\.0\.0\.1:\d+)/login\?code=([0-9a-f]{64})`)

// startServe runs `switchboard serve` in the background on a random port
// and returns its base URL, the login code and a stop function that waits
// for run to return.
func startServe(t *testing.T, vars map[string]string) (base, code string, stop func() error) {
	t.Helper()
	return startServeAt(t, "127.0.0.1:0", vars)
}

// startServeAt is startServe on addr.
func startServeAt(t *testing.T, addr string, vars map[string]string) (base, code string, stop func() error) {
	t.Helper()
	s := startServeArgs(t, []string{"-addr", addr}, vars)
	return s.base, s.code, s.stop
}

// serving is a `switchboard serve` running in the background.
type serving struct {
	base, code     string
	stdout, stderr *syncBuffer
	stop           func() error // cancels run and waits for it to return
}

// startServeArgs runs `switchboard serve ARGS...` in the background and
// waits for its login URL.
func startServeArgs(t *testing.T, args []string, vars map[string]string) *serving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"serve"}, args...), env(vars), nil, s.stdout, s.stderr) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := openURL.FindStringSubmatch(s.stdout.String()); m != nil {
			s.base, s.code, s.stop = m[1], m[2], func() error { cancel(); return <-done }
			return s
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("run returned early: %v\nstderr: %s", err, s.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	t.Fatalf("no login URL printed; stdout: %q stderr: %q", s.stdout.String(), s.stderr.String())
	return nil
}

func TestGeneratedTokenIsPrintedAndWorks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, env(map[string]string{"SWITCHBOARD_DB": filepath.Join(t.TempDir(), "sb.db")}), nil, &stdout, &stderr)
	}()
	defer func() { cancel(); <-done }()
	tokenLine := regexp.MustCompile(`API token .*: ([0-9a-f]{64})`)
	var token, base string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && (token == "" || base == ""); time.Sleep(10 * time.Millisecond) {
		if m := tokenLine.FindStringSubmatch(stdout.String()); m != nil {
			token = m[1]
		}
		if m := openURL.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		}
	}
	if token == "" || base == "" {
		t.Fatalf("stdout = %q; want the login URL and a generated token", stdout.String())
	}
	req, _ := http.NewRequest("GET", base+"/api/v1/servers", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("API with the printed token = %d; want 200", resp.StatusCode)
	}
}

func TestSecondInstanceOnSameDatabaseFailsFast(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sb.db")
	_, _, stop := startServe(t, map[string]string{"SWITCHBOARD_DB": db})
	defer stop()

	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := run(context.Background(), []string{"serve", "-addr", "127.0.0.1:0"}, env(map[string]string{"SWITCHBOARD_DB": db}), nil, &stdout, &stderr)
	elapsed := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), db) {
		t.Fatalf("second run = %v; want an 'in use' error naming %s", err, db)
	}
	if elapsed > 3*time.Second {
		t.Errorf("second run took %v; want about 1s", elapsed)
	}
}

// TestServeRefusesWildcardBind: every spelling of "all interfaces" is
// refused without --dangerously-bind-all, and legacy numeric spellings,
// which some resolvers read as addresses (0x0 and 0.0 as 0.0.0.0), are
// refused before anything resolves them.
func TestServeRefusesWildcardBind(t *testing.T) {
	cases := map[string]string{"plain IP address": "0x0:7420 0.0:7420 000.0.0.0:7420 0177.0.0.1:7420 2130706433:7420",
		"dangerously-bind-all": "0.0.0.0:7420 :7420 [::]:7420 0:7420 [::ffff:0.0.0.0]:7420 [0:0::0]:7420"}
	for want, addrs := range cases {
		for _, addr := range strings.Fields(addrs) {
			t.Run(addr, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				err := run(context.Background(), []string{"serve", "-addr", addr}, env(map[string]string{"SWITCHBOARD_DB": filepath.Join(t.TempDir(), "x.db")}), nil, &stdout, &stderr)
				var ee *exitError
				if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), want) {
					t.Fatalf("run(-addr %s) = %v; want exit 2 mentioning %q", addr, err, want)
				}
			})
		}
	}
}

// TestServeBindAllWarnsLoudly: with --dangerously-bind-all the dashboard
// starts, says loudly that it is reachable from the network, prints a
// loopback URL, and still answers only allowed Host names.
func TestServeBindAllWarnsLoudly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "-addr", "0.0.0.0:0", "--dangerously-bind-all"},
			env(map[string]string{"SWITCHBOARD_DB": filepath.Join(t.TempDir(), "sb.db")}), nil, &stdout, &stderr)
	}()
	defer func() { cancel(); <-done }()
	var base string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && base == ""; time.Sleep(10 * time.Millisecond) {
		if m := openURL.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("no loopback login URL printed; stdout %q stderr %q", stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "LISTENING ON ALL INTERFACES") {
		t.Errorf("stderr = %q; want the loud all-interfaces warning", stderr.String())
	}
	req, _ := http.NewRequest("GET", base+"/healthz", nil)
	req.Host = "attacker.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET /healthz with Host attacker.example = %d; want 403", resp.StatusCode)
	}
}

func TestVerifyJSONFixture(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"verify", "--json", "--", fixture, "-tools", "25", "-page-size", "10"}, os.Getenv, nil, &stdout, &stderr)
	if err != nil {
		t.Fatalf("verify = %v; stderr %s", err, stderr.String())
	}
	var out verifyOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout.String())
	}
	if n := strings.Count(stdout.String(), "\n"); n != 1 {
		t.Errorf("JSON for a program (not a terminal) spans %d lines, want 1 (compact)", n)
	}
	if !out.OK || len(out.Tools) != 25 || out.Pages != 3 || out.ProtocolVersion == "" || out.Server == nil || out.Server.Name != "mcp-fixture" {
		t.Fatalf("verify --json = ok %v, %d tools, %d pages, version %q, server %+v; want ok, 25 tools, 3 pages, a version, mcp-fixture",
			out.OK, len(out.Tools), out.Pages, out.ProtocolVersion, out.Server)
	}
	var phases []string
	for _, tm := range out.Timings {
		phases = append(phases, tm.Phase)
	}
	if got := strings.Join(phases, ","); got != "starting,initializing,listing,listing tools that ask agents" {
		t.Errorf("timings phases = %s; want starting,initializing,listing,listing tools that ask agents", got)
	}
	var first struct {
		Name string `json:"name"`
	}
	json.Unmarshal(out.Tools[0], &first)
	if first.Name != "tool_000" {
		t.Errorf("first tool = %q; want tool_000", first.Name)
	}
}

// verify and call run a stdio server in its walls, as the dashboard
// does, unless told --walls off; the output names them.
func TestVerifyWalls(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "escaped")
	verifyWith := func(flags ...string) (verifyOutput, error) {
		var stdout, stderr bytes.Buffer
		args := append(append([]string{"verify", "--json", "--env", "FIXTURE_ESCAPE=need:write=" + outside}, flags...), "--", fixture, "-mode", "escape")
		err := run(context.Background(), args, os.Getenv, nil, &stdout, &stderr)
		var out verifyOutput
		if jerr := json.Unmarshal(stdout.Bytes(), &out); jerr != nil {
			t.Fatalf("stdout is not JSON: %v\n%s%s", jerr, stdout.String(), stderr.String())
		}
		return out, err
	}
	out, err := verifyWith()
	if err == nil || out.Error == nil || !strings.Contains(out.Error.StderrTail, "refused") {
		t.Fatalf("verify of a server writing outside its folder = %v, %+v; want it refused by the walls", err, out.Error)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("the walled server wrote outside its folder")
	}
	out, err = verifyWith("--walls", "off")
	if err != nil || !out.OK {
		t.Fatalf("verify --walls off = %v, %+v; want the write to get through", err, out.Error)
	}
	if !strings.HasPrefix(out.Isolation, "none (walls off)") {
		t.Errorf("isolation = %q; want none (walls off)", out.Isolation)
	}
	out, err = verifyWith("--write", filepath.Dir(outside))
	if err != nil || !strings.HasPrefix(out.Isolation, "landlock") {
		t.Errorf("verify --write %s = %v, isolation %q; want it walled, and the write granted", filepath.Dir(outside), err, out.Isolation)
	}
	var stderr bytes.Buffer
	err = run(context.Background(), []string{"verify", "--network", "anywhere", "--", fixture}, os.Getenv, nil, io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--network") || !strings.Contains(err.Error(), "anywhere") {
		t.Errorf("verify --network anywhere = %v; want a usage error naming the flag and the value", err)
	}
}

// everything is the path of @modelcontextprotocol/server-everything's
// entry point, installed by make deps-e2e.
func everything(t *testing.T) string {
	t.Helper()
	entry, _ := filepath.Abs("../../e2e/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("server-everything is not installed (%v): run `make deps-e2e`", err)
	}
	return entry
}

func TestVerifyServerEverything(t *testing.T) {
	entry := everything(t)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	if err := run(context.Background(), []string{"verify", "--json", "--", "node", entry, "stdio"}, os.Getenv, nil, &stdout, &stderr); err != nil {
		t.Fatalf("verify = %v; stderr %s", err, stderr.String())
	}
	t.Logf("switchboard verify of server-everything: %v", time.Since(start))
	var out verifyOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	// 13 for every client, 4 only for one that answers what they ask.
	if len(out.Tools) != 17 || out.Server.Name != "mcp-servers/everything" {
		t.Fatalf("verify = %d tools, server %q; want 17, mcp-servers/everything", len(out.Tools), out.Server.Name)
	}
}

func TestVerifyFailureExitsOneWithClass(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"verify", "--json", "--", fixture, "-mode", "crash"}, os.Getenv, nil, &stdout, &stderr)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("verify of a crashing server = %v; want exit code 1", err)
	}
	var out verifyOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.OK || out.Error == nil || out.Error.Class != "exited" || out.Error.ExitCode == nil || *out.Error.ExitCode != 3 ||
		!strings.Contains(out.Error.StderrTail, "simulated crash") || out.Error.Suggestion == "" {
		t.Fatalf("error = %+v; want class exited, exit code 3, stderr tail and a suggestion", out.Error)
	}
}

// TestVerifyLimits checks that -limit reaches the verification: a
// server over the tools limit fails with too_large, naming it.
func TestVerifyLimits(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"verify", "--json", "--limit", "tools=3", "--limit", "message=1MiB", "--", fixture, "-tools", "25"},
		os.Getenv, nil, &stdout, &stderr)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("verify with -limit tools=3 = %v; want exit code 1", err)
	}
	var out verifyOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Error == nil || out.Error.Class != "too_large" || !strings.Contains(out.Error.Message, "more than 3 tools") {
		t.Fatalf("error = %+v; want too_large, more than 3 tools", out.Error)
	}
}

// A secret is never a flag's value: -mcp-token is refused (every process
// reads a command line), and -mcp-token-file is read only when no one else
// may read it (issue 34, L3).
func TestServeSecretNotInFlags(t *testing.T) {
	const tok = "a-token-of-thirty-two-characters"
	if _, err := parseServeFlags([]string{"-mcp-token", tok}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "-mcp-token-file") {
		t.Errorf("-mcp-token = %v; want it refused, naming -mcp-token-file", err)
	}
	file := filepath.Join(t.TempDir(), "mcp-token")
	if err := os.WriteFile(file, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseServeFlags([]string{"-mcp-token-file", file}, env(nil), io.Discard)
	if err != nil || cfg.MCP.Token != tok {
		t.Errorf("-mcp-token-file = %q, %v; want the file's token", cfg.MCP.Token, err)
	}
	os.Chmod(file, 0o644)
	if _, err := parseServeFlags([]string{"-mcp-token-file", file}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("-mcp-token-file readable by others = %v; want it refused", err)
	}
	cfg, err = parseServeFlags(nil, env(map[string]string{"SWITCHBOARD_MCP_TOKEN": tok}), io.Discard)
	if err != nil || cfg.MCP.Token != tok {
		t.Errorf("SWITCHBOARD_MCP_TOKEN: token %q, %v; want it", cfg.MCP.Token, err)
	}
}

func TestServeLimitsFromEnvironment(t *testing.T) {
	cfg, err := parseServeFlags([]string{"-limit", "pages=7"}, env(map[string]string{"SWITCHBOARD_LIMITS": "tools=3, schema=128KiB"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.Limits; l.MaxTools != 3 || l.SchemaBytes != 128<<10 || l.MaxPages != 7 {
		t.Errorf("Limits = %+v; want tools 3, schema 128 KiB, pages 7", l)
	}
	_, err = parseServeFlags(nil, env(map[string]string{"SWITCHBOARD_LIMITS": "tools=3,nope=1"}), io.Discard)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), `unknown limit "nope"`) {
		t.Errorf("SWITCHBOARD_LIMITS with an unknown name: %v; want a usage error naming it", err)
	}
}

func TestVerifyUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no target", []string{"verify"}},
		{"bad flag", []string{"verify", "--nope"}},
		{"bad transport", []string{"verify", "--transport", "ftp", "http://127.0.0.1:1/mcp"}},
		{"bad env", []string{"verify", "--env", "NOEQUALS", "--", "true"}},
		{"unknown limit", []string{"verify", "--limit", "bogus=1", "--", "true"}},
		{"bad limit value", []string{"verify", "--limit", "tools=many", "--", "true"}},
		{"limit without value", []string{"verify", "--limit", "tools", "--", "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, os.Getenv, nil, &stdout, &stderr)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 {
				t.Fatalf("run(%q) = %v; want exit code 2", tc.args, err)
			}
		})
	}
}

// A sign-in that fails is a failed verification, not a crash (issue 34,
// L7: printVerify read a nil result).
func TestVerifyFailedSignIn(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="nowhere"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	for _, asJSON := range []bool{false, true} {
		var stdout, stderr bytes.Buffer
		args := []string{"verify", "--oauth-non-interactive", srv.URL + "/mcp"}
		if asJSON {
			args = append(args[:1], append([]string{"--json"}, args[1:]...)...)
		}
		err := run(context.Background(), args, os.Getenv, nil, &stdout, &stderr)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(stdout.String(), "sign") {
			t.Errorf("verify (json %v) of a server whose sign-in fails = %v, stdout %q; want exit 1 saying why", asJSON, err, stdout.String())
		}
	}
}

// A kept API token is read only from a file no one else may read or
// write (issue 34, M4): another user's token file would be a token they
// know.
func TestAPITokenFileMustBeMine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchboard.db.api-token")
	tok := strings.Repeat("a1", 32)
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := readAPIToken(path); err != nil || got != tok {
		t.Fatalf("readAPIToken = %q, %v; want the token", got, err)
	}
	os.Chmod(path, 0o666)
	if _, err := readAPIToken(path); err == nil || !strings.Contains(err.Error(), "by others") {
		t.Errorf("readAPIToken of a file others may write = %v; want it refused", err)
	}
}
