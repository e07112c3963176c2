package discovery

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
)

// Real servers under the walls: the published MCP servers verify and
// answer calls under the default profile (and the package runner's
// preset), and a held session runs in the same walls as the
// verification. They need node (and, for npx, the npm registry).

// realScene is a user's machine for a real server: a home of its own
// (with a planted key, and no npm cache yet), Switchboard's database
// beside it, and a working directory.
type realScene struct {
	root, home, cwd, db string
}

func newRealScene(t *testing.T) *realScene {
	t.Helper()
	root := t.TempDir()
	s := &realScene{root: root, home: filepath.Join(root, "home"), cwd: filepath.Join(root, "cwd")}
	for _, d := range []string{s.home, s.cwd, filepath.Join(root, "data")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(s.home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\nplanted\n")
	mustWrite(t, filepath.Join(s.home, "notes.txt"), "not a secret\n")
	s.db = filepath.Join(root, "data", "switchboard.db")
	mustWrite(t, s.db, "switchboard's own\n")
	return s
}

// dir makes a directory in the scene.
func (s *realScene) dir(t *testing.T, name string) string {
	t.Helper()
	d := filepath.Join(s.root, name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// verifier is a walled Verifier whose servers get the scene's home, with
// generous deadlines: npx may download a hundred packages first.
func (s *realScene) verifier() *Verifier {
	getenv := func(k string) string {
		if k == "HOME" {
			return s.home
		}
		return os.Getenv(k)
	}
	limits := Limits{InitTimeout: 5 * time.Minute, ListTimeout: time.Minute, StderrBytes: 64 << 10}
	return NewVerifier(limits, getenv).Walled(sandbox.Config{Database: s.db, Home: s.home})
}

// realVerify verifies target with v and returns the result or the
// *Error, and how long it took.
func realVerify(t *testing.T, v *Verifier, target Target) (*Result, *Error, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := v.Verify(ctx, target, 0, nil)
	d := time.Since(start)
	if err == nil {
		return res, nil, d
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Verify error is %T (%v), want *Error", err, err)
	}
	return nil, e, d
}

// mustVerifyWalled verifies target, which must succeed walled: Landlock,
// a network namespace of its own, seccomp.
func mustVerifyWalled(t *testing.T, v *Verifier, target Target) *Result {
	t.Helper()
	res, e, d := realVerify(t, v, target)
	if e != nil {
		t.Fatalf("Verify under the walls: %v (class %s, phase %s, refused %+v)\nstderr:\n%s", e, e.Class, e.Phase, e.Refused, e.StderrTail)
	}
	t.Logf("verified in %v: %s %s, %d tools; isolation: %s", d.Round(time.Millisecond), res.ServerName, res.ServerVersion, len(res.Tools), res.Isolation)
	wantWalled(t, "verification", res.Isolation)
	return res
}

func wantWalled(t *testing.T, what, isolation string) {
	t.Helper()
	for _, w := range []string{"landlock", "netns", "seccomp"} {
		if !strings.Contains(isolation, w) {
			t.Errorf("%s's isolation %q does not say %s", what, isolation, w)
		}
	}
}

// realPins are the approved pins of a verification's tools, by name.
func realPins(t *testing.T, res *Result, want ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool.Pin
	}
	for _, w := range want {
		if out[w] == "" {
			t.Fatalf("the server lists no tool %q (it lists %v)", w, slices.Sorted(maps.Keys(out)))
		}
	}
	return out
}

// holdWalled opens target's session through a pool, as a tool call does,
// checks that it runs in walls as the verification did, and runs fn with
// a call function. The pool (and with it the session and its processes)
// is closed before it returns.
func holdWalled(t *testing.T, v *Verifier, target Target, pinned map[string]string, fn func(call callFunc)) {
	t.Helper()
	pool := NewPool(v, PoolConfig{})
	defer pool.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	_, err := pool.Use(ctx, "real", "1", target, 0, func(s *Session) error {
		t.Logf("held session opened in %v; isolation: %s", time.Since(start).Round(time.Millisecond), s.Isolation())
		wantWalled(t, "held session", s.Isolation())
		fn(func(tool string, args map[string]any) (string, bool) {
			cctx, ccancel := context.WithTimeout(ctx, 2*time.Minute)
			defer ccancel()
			res, err := s.Call(cctx, tool, pinned[tool], args, pool.MaxResult())
			return callText(t, tool, res, err)
		})
		return nil
	})
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			t.Fatalf("open the held session: %v (refused %+v)\nstderr:\n%s", e, e.Refused, e.StderrTail)
		}
		t.Fatalf("open the held session: %v", err)
	}
}

// callFunc calls a tool of a held session and returns its text and
// whether the tool said it failed; a call that fails fails the test.
type callFunc func(tool string, args map[string]any) (text string, isError bool)

// callText is a call's text, joined; a failed call fails the test.
func callText(t *testing.T, tool string, res *mcp.CallToolResult, err error) (text string, isError bool) {
	t.Helper()
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError
}

func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not installed: %v", err)
	}
}

// e2eModule returns the absolute path of a file of a module installed by
// `make deps-e2e` (npm ci --prefix e2e).
func e2eModule(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("../e2e/node_modules", rel))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed (%v): run `make deps-e2e` in the repository root", rel, err)
	}
	return p
}

// server-everything, by node on a local path, under the default profile.
func TestRealEverythingUnderDefaultWalls(t *testing.T) {
	t.Parallel()
	needNode(t)
	start := time.Now()
	defer func() { t.Logf("took %v", time.Since(start).Round(time.Millisecond)) }()
	s := newRealScene(t)
	v := s.verifier()
	target := Target{Transport: TransportStdio, Command: "node",
		Args: []string{e2eModule(t, "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"},
		Cwd:  s.cwd, Sandbox: &sandbox.Profile{}}
	res := mustVerifyWalled(t, v, target)
	if len(res.Tools) <= 5 {
		t.Errorf("%d tools listed; want more than 5", len(res.Tools))
	}
	pinned := realPins(t, res, "echo")
	holdWalled(t, v, target, pinned, func(call callFunc) {
		text, isErr := call("echo", map[string]any{"message": "through the walls"})
		if isErr || !strings.Contains(text, "through the walls") {
			t.Errorf("echo = %q (error %v); want the message back", text, isErr)
		}
	})
}

// filesystem is server-filesystem (node on its local path) serving dirs,
// under the default profile.
func (s *realScene) filesystem(t *testing.T, dirs ...string) Target {
	t.Helper()
	needNode(t)
	return Target{Transport: TransportStdio, Command: "node",
		Args: append([]string{e2eModule(t, "@modelcontextprotocol/server-filesystem/dist/index.js")}, dirs...),
		Cwd:  s.cwd, Sandbox: &sandbox.Profile{}}
}

// server-filesystem with its folder granted read-write (a directory in
// its arguments, see sandbox.ArgPaths): it writes in the folder, and the
// server itself refuses a file outside.
func TestRealFilesystemFolderGranted(t *testing.T) {
	t.Parallel()
	start := time.Now()
	defer func() { t.Logf("took %v", time.Since(start).Round(time.Millisecond)) }()
	s := newRealScene(t)
	folder := s.dir(t, "folder")
	v := s.verifier()
	target := s.filesystem(t, folder)
	res := mustVerifyWalled(t, v, target)
	pinned := realPins(t, res, "write_file", "read_text_file")
	holdWalled(t, v, target, pinned, func(call callFunc) {
		file := filepath.Join(folder, "hello.txt")
		text, isErr := call("write_file", map[string]any{"path": file, "content": "written under the walls\n"})
		if isErr {
			t.Fatalf("write_file in the granted folder failed: %s", text)
		}
		if got, err := os.ReadFile(file); err != nil || string(got) != "written under the walls\n" {
			t.Errorf("the file on disk: %q, %v; want what was written", got, err)
		}
		text, isErr = call("read_text_file", map[string]any{"path": file})
		if isErr || !strings.Contains(text, "written under the walls") {
			t.Errorf("read_text_file in the folder = %q (error %v)", text, isErr)
		}
		text, isErr = call("read_text_file", map[string]any{"path": filepath.Join(s.home, "notes.txt")})
		if !isErr || strings.Contains(text, "not a secret") {
			t.Errorf("read_text_file outside the folder = %q (error %v); want refused", text, isErr)
		}
		t.Logf("outside the folder: %s", text)
	})
}

// server-filesystem told to serve the home as well (which its arguments
// grant read-write): the server allows the planted key, the walls must
// not. The default secrets stay denied beneath a folder an argument
// names.
func TestRealFilesystemSecretsBeneathGrantedHome(t *testing.T) {
	t.Parallel()
	start := time.Now()
	defer func() { t.Logf("took %v", time.Since(start).Round(time.Millisecond)) }()
	s := newRealScene(t)
	folder := s.dir(t, "folder")
	v := s.verifier()
	target := s.filesystem(t, folder, s.home)
	res := mustVerifyWalled(t, v, target)
	pinned := realPins(t, res, "read_text_file")
	holdWalled(t, v, target, pinned, func(call callFunc) {
		// The home is served: a file in it is read.
		text, isErr := call("read_text_file", map[string]any{"path": filepath.Join(s.home, "notes.txt")})
		if isErr || !strings.Contains(text, "not a secret") {
			t.Errorf("read_text_file of a file in the home = %q (error %v); want it read", text, isErr)
		}
		// The key is within what the server serves: only the wall stops it.
		text, isErr = call("read_text_file", map[string]any{"path": filepath.Join(s.home, ".ssh", "id_ed25519")})
		t.Logf("the planted key: error %v: %s", isErr, text)
		switch {
		case strings.Contains(text, "planted"):
			t.Errorf("the planted key was read through server-filesystem: the default secrets are not denied beneath a directory its arguments name")
		case !isErr:
			t.Errorf("read_text_file of the key = %q; want an error", text)
		case strings.Contains(text, "Access denied"):
			t.Errorf("the server refused the key (%s); want the wall to (the home is an allowed directory)", text)
		case !strings.Contains(text, "EACCES") && !strings.Contains(text, "permission denied"):
			t.Errorf("read_text_file of the key = %q; want a permission error from the wall", text)
		}
	})
}

// registryReachable skips the test if the npm registry cannot be reached
// from here directly (no network).
func registryReachable(t *testing.T) {
	t.Helper()
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	defer c.CloseIdleConnections() // goleak: no connection outlives the test
	resp, err := c.Get("https://registry.npmjs.org/@modelcontextprotocol%2fserver-memory")
	if err != nil {
		t.Skipf("the npm registry is unreachable from this machine (%v): npx cannot fetch server-memory", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Skipf("the npm registry answered %s: npx cannot fetch server-memory", resp.Status)
	}
}

func needNpx(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("npx"); err != nil {
		t.Fatalf("npx is not installed: %v", err)
	}
}

// npxMemory is `npx -y @modelcontextprotocol/server-memory` in the
// scene under profile p, with its graph in the working directory, and
// npm's cache in cache if set (else ~/.npm).
func (s *realScene) npxMemory(p sandbox.Profile, cache string) Target {
	env := map[string]string{"MEMORY_FILE_PATH": filepath.Join(s.cwd, "memory.jsonl")}
	if cache != "" {
		env["npm_config_cache"] = cache
	}
	return Target{Transport: TransportStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"},
		Env: env, Cwd: s.cwd, Sandbox: &p}
}

// callMemory creates an entity and reads the graph back.
func callMemory(t *testing.T, call callFunc) {
	t.Helper()
	text, isErr := call("create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "Switchboard", "entityType": "project", "observations": []any{"runs servers in walls"}},
	}})
	if isErr {
		t.Fatalf("create_entities failed: %s", text)
	}
	text, isErr = call("read_graph", map[string]any{})
	if isErr || !strings.Contains(text, "Switchboard") || !strings.Contains(text, "runs servers in walls") {
		t.Errorf("read_graph = %q (error %v); want the entity created", text, isErr)
	}
}

// npxPreset is the profile a new npx server starts with.
func npxPreset(t *testing.T) sandbox.Profile {
	t.Helper()
	p := sandbox.ForCommand("npx")
	if p.Runner != "npx" || p.Network != sandbox.NetworkAllow || !slices.Contains(p.Allow, "registry.npmjs.org") || !slices.Contains(p.Write, "~/.npm") {
		t.Fatalf("ForCommand(npx) = %+v; want the npx preset", p)
	}
	return p
}

// runNpxMemory verifies npx's server-memory under p, then calls it
// through a held session, and checks the graph on disk.
func (s *realScene) runNpxMemory(t *testing.T, v *Verifier, target Target) {
	t.Helper()
	res := mustVerifyWalled(t, v, target)
	pinned := realPins(t, res, "create_entities", "read_graph")
	holdWalled(t, v, target, pinned, func(call callFunc) {
		callMemory(t, call)
	})
	if data, err := os.ReadFile(filepath.Join(s.cwd, "memory.jsonl")); err != nil || !strings.Contains(string(data), "Switchboard") {
		t.Errorf("the graph on disk: %q, %v", data, err)
	}
}

// npx -y with the package runner's preset: the npm registry through the
// egress proxy, npm's cache in the home written. The cache is empty (a
// home of its own): every package comes through the proxy; and on a
// machine where npm never ran there is no ~/.npm yet, which the preset
// grants and npm must be able to fill.
func TestRealNpxMemoryWithPreset(t *testing.T) {
	t.Parallel()
	needNpx(t)
	registryReachable(t)
	for _, c := range []struct {
		name  string
		cache bool
	}{{"empty cache", true}, {"no cache yet", false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			defer func() { t.Logf("took %v", time.Since(start).Round(time.Millisecond)) }()
			s := newRealScene(t)
			if c.cache {
				s.dir(t, "home/.npm")
			}
			s.runNpxMemory(t, s.verifier(), s.npxMemory(npxPreset(t), ""))
			if _, err := os.Stat(filepath.Join(s.home, ".npm", "_npx")); err != nil {
				t.Errorf("npx did not fill its cache in the home: %v", err)
			}
		})
	}
}

// Learn mode with a real npx: under the default profile (network none,
// npm's cache in the working directory, which it may write) npx fails,
// and the failure names the registry the egress proxy refused; with that
// host allowed ("Allow and verify again") it verifies and answers calls.
func TestRealNpxLearnMode(t *testing.T) {
	t.Parallel()
	needNpx(t)
	registryReachable(t)
	start := time.Now()
	defer func() { t.Logf("took %v", time.Since(start).Round(time.Millisecond)) }()
	s := newRealScene(t)
	v := s.verifier()
	cache := filepath.Join(s.cwd, ".npm-cache")
	p := sandbox.Profile{Network: sandbox.NetworkNone}
	_, e, d := realVerify(t, v, s.npxMemory(p, cache))
	if e == nil {
		t.Fatalf("npx under network none verified; want it refused the registry")
	}
	t.Logf("network none failed in %v: %s: %v; refused %+v\nstderr:\n%s", d.Round(time.Millisecond), e.Class, e, e.Refused, e.StderrTail)
	if e.Refused == nil {
		t.Fatalf("no refusal recorded")
	}
	var hosts []string
	for _, h := range e.Refused.Hosts {
		hosts = append(hosts, h.Host)
		if h.Reason == "" {
			t.Errorf("refused host %+v has no reason", h)
		}
	}
	if !slices.Contains(hosts, "registry.npmjs.org") {
		t.Fatalf("refused hosts %v; want registry.npmjs.org", hosts)
	}
	// Allow and verify again.
	p.Network, p.Allow = sandbox.NetworkAllow, hosts
	s.runNpxMemory(t, v, s.npxMemory(p, cache))
}

// A home whose entries come and go (an editor's swap files, a browser's
// lock files) while servers start: the walls open the entries of every
// directory above a secret one by one, and must not fail a server's
// start because one of them went away meanwhile.
func TestRealWallsHomeEntriesComeAndGo(t *testing.T) {
	t.Parallel()
	start := time.Now()
	defer func() { t.Logf("took %v", time.Since(start).Round(time.Millisecond)) }()
	s := newRealScene(t)
	v := s.verifier()
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Each lives a few milliseconds: made, then removed with the
			// next ones made.
			d := filepath.Join(s.home, ".swap-"+strconv.Itoa(i%64))
			if i%64 < 32 {
				os.Mkdir(d, 0o700)
			} else {
				os.Remove(filepath.Join(s.home, ".swap-"+strconv.Itoa(i%64-32)))
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	defer func() { close(stop); <-stopped }()
	const runs = 40
	failed := 0
	for range runs {
		_, e, _ := realVerify(t, v, Target{Transport: TransportStdio, Command: fixture, Cwd: s.cwd, Sandbox: &sandbox.Profile{}})
		if e != nil {
			failed++
			if failed == 1 {
				t.Errorf("a server failed to start while entries of the home came and went: %s: %v", e.Class, e)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d verifications failed", failed, runs)
	}
}
