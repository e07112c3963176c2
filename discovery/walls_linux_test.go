package discovery

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
	"github.com/switchboard-dev/switchboard/internal/proctest"
)

// escapeScene is a machine an escaping server is let loose on: a home
// with a planted key, Switchboard's database and token files, a folder
// outside the server's, a loopback listener and the dashboard's port.
type escapeScene struct {
	home, db, cwd, outside string
	listener, dashboard    net.Listener
	udp                    net.PacketConn
	agent                  string // a Unix socket, as ssh-agent's
	key                    string // a key's name in the session keyring
}

func newEscapeScene(t *testing.T) *escapeScene {
	t.Helper()
	s := &escapeScene{home: t.TempDir(), cwd: t.TempDir(), outside: t.TempDir()}
	mustWrite(t, filepath.Join(s.home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\nplanted\n")
	mustWrite(t, filepath.Join(s.home, "notes.txt"), "not a secret\n")
	dataDir := t.TempDir()
	s.db = filepath.Join(dataDir, "switchboard.db")
	for _, f := range []string{"", ".mcp-token", ".api-token", ".seal"} {
		mustWrite(t, s.db+f, "switchboard's own "+f+"\n")
	}
	s.listener = acceptAll(t)
	// The dashboard answers HTTP, as Switchboard's does.
	dashboard := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "the dashboard") }))
	t.Cleanup(dashboard.Close)
	s.dashboard = dashboard.Listener
	var err error
	if s.udp, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.udp.Close() })
	s.agent = filepath.Join(s.outside, "agent.sock")
	agent, err := net.Listen("unix", s.agent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Close() })
	go func() {
		for {
			c, err := agent.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// A name of its own: adding a key of a name the keyring holds
	// updates that key, which another scene's cleanup would revoke.
	s.key = "switchboard-escape-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(escapeScenes.Add(1), 10)
	id, err := unix.AddKey("user", s.key, []byte("a credential"), unix.KEY_SPEC_SESSION_KEYRING)
	if err != nil {
		t.Fatalf("add a key to the session keyring: %v", err)
	}
	// A process started without a session keyring (CI's shell) gets one
	// on the thread that adds the key only, and a server forked by
	// another thread falls back to the user-session keyring: the key is
	// linked there too, so that every server without walls finds it
	// whichever thread starts it (a flake seen under make test).
	if _, err := unix.KeyctlInt(unix.KEYCTL_LINK, id, unix.KEY_SPEC_USER_SESSION_KEYRING, 0, 0); err != nil {
		t.Fatalf("link the key into the user-session keyring: %v", err)
	}
	t.Cleanup(func() { unix.KeyctlInt(unix.KEYCTL_REVOKE, id, 0, 0, 0) })
	return s
}

// escapeScenes counts the scenes made, for their keys' names.
var escapeScenes atomic.Int64

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func portOf(l net.Listener) string { return strconv.Itoa(l.Addr().(*net.TCPAddr).Port) }

// attempts are the escape attempts, by the wall that stops each.
func (s *escapeScene) attempts() map[string]string {
	a := map[string]string{
		"planted key":          "read=" + filepath.Join(s.home, ".ssh", "id_ed25519"),
		"database":             "read=" + s.db,
		"mcp token":            "read=" + s.db + ".mcp-token",
		"dashboard environ":    "environ",
		"dashboard memory":     "maps",
		"write outside":        "write=" + filepath.Join(s.outside, "escaped"),
		"loopback listener":    "connect=127.0.0.1:" + portOf(s.listener),
		"dashboard port":       "connect=127.0.0.1:" + portOf(s.dashboard),
		"dashboard by proxy":   "http=http://127.0.0.1:" + portOf(s.dashboard) + "/api/v1/servers",
		"udp":                  "udp=" + s.udp.LocalAddr().String(),
		"300 processes":        "spawn=300",
		"more than its memory": "alloc=" + strconv.Itoa(1536<<20),
		"unix socket":          "unix=" + s.agent,
		"session keyring":      "keyring=" + s.key,
	}
	if os.Getenv(escapeTTYEnv) != "" {
		a["controlling terminal"] = "tty" // see TestEscapeNoTerminal
	}
	if os.Getuid() == 0 {
		// Root's server is root in its user namespace: it must hold no
		// capability there either. (An ordinary user's has none to lose.)
		a["capabilities"] = "caps"
	}
	return a
}

// verifyEscape verifies the escape fixture under profile (nil: no walls)
// and returns what each attempt got, by attempt.
func (s *escapeScene) verifyEscape(t *testing.T, profile *sandbox.Profile) map[string]string {
	t.Helper()
	return s.verifyEscapeOn(t, nil, profile)
}

// verifyEscapeOn is verifyEscape on a machine that builds only what m
// says (nil: this machine as it is).
func (s *escapeScene) verifyEscapeOn(t *testing.T, m *sandbox.Machine, profile *sandbox.Profile) map[string]string {
	t.Helper()
	c := sandbox.Config{Database: s.db, DashboardPort: s.dashboard.Addr().(*net.TCPAddr).Port, Home: s.home, Machine: m}
	return s.try(t, c, profile, nil, s.attempts())
}

// try verifies the escape fixture, walled as c says, under profile,
// with args after its own, trying attempts (name → kind=arg), and
// returns what each got.
func (s *escapeScene) try(t *testing.T, c sandbox.Config, profile *sandbox.Profile, args []string, attempts map[string]string) map[string]string {
	t.Helper()
	var list []string
	for _, a := range attempts {
		list = append(list, a)
	}
	getenv := func(k string) string {
		if k == "HOME" {
			return s.home
		}
		return os.Getenv(k)
	}
	v := NewVerifier(Limits{StderrBytes: 64 << 10}, getenv).Walled(c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := v.Verify(ctx, Target{Transport: TransportStdio, Command: fixture, Args: append([]string{"-mode", "escape"}, args...),
		Env: map[string]string{"FIXTURE_ESCAPE": strings.Join(list, ",")}, Cwd: s.cwd, Sandbox: profile}, 0, nil)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	t.Logf("isolation: %s", res.Isolation)
	got := map[string]string{}
	for name, a := range attempts {
		for line := range strings.Lines(res.StderrTail) {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "mcp-fixture: escape "+a+": "); ok {
				got[name] = rest
			}
		}
		if got[name] == "" {
			t.Fatalf("attempt %q not reported in stderr:\n%s", a, res.StderrTail)
		}
	}
	return got
}

// A server that may write its folder can leave a link where its next
// launch grants a path: a folder its arguments name, replaced by a link
// to the home's keys or to a folder outside. Switchboard's database named
// by a relative path, or in a directory reached through a link, is as
// denied as any other. (Each fails with the grant judged by its path as
// written.)
func TestEscapeThroughLinks(t *testing.T) {
	s := newEscapeScene(t)
	c := sandbox.Config{Database: s.db, Home: s.home}
	t.Run("an argument's folder replaced by a link", func(t *testing.T) {
		toKeys, toOutside := filepath.Join(s.cwd, "keys"), filepath.Join(s.cwd, "out")
		if err := os.Symlink(filepath.Join(s.home, ".ssh"), toKeys); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(s.outside, toOutside); err != nil {
			t.Fatal(err)
		}
		wantEach(t, s.try(t, c, &sandbox.Profile{}, []string{toKeys, toOutside}, map[string]string{
			"the key through the link":      "read=" + filepath.Join(toKeys, "id_ed25519"),
			"a write outside, through link": "write=" + filepath.Join(toOutside, "escaped"),
		}), "refused")
	})
	t.Run("the database by a relative path", func(t *testing.T) {
		wd, _ := os.Getwd()
		rel, err := filepath.Rel(wd, s.db)
		if err != nil {
			t.Fatal(err)
		}
		c := c
		c.Database = rel
		wantEach(t, s.try(t, c, &sandbox.Profile{}, nil, map[string]string{"database": "read=" + s.db, "seal": "read=" + s.db + ".seal"}), "refused")
	})
	t.Run("the database in a directory reached through a link", func(t *testing.T) {
		link := filepath.Join(t.TempDir(), "data")
		if err := os.Symlink(filepath.Dir(s.db), link); err != nil {
			t.Fatal(err)
		}
		c := c
		c.Database = filepath.Join(link, filepath.Base(s.db))
		wantEach(t, s.try(t, c, &sandbox.Profile{}, nil, map[string]string{"database": "read=" + s.db, "mcp token": "read=" + s.db + ".mcp-token"}), "refused")
	})
}

func TestEscapeUnderDefaultProfile(t *testing.T) {
	if os.Getenv(escapeTTYEnv) != "" {
		// This process must have the terminal, or the attempt proves nothing.
		f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			t.Fatalf("no controlling terminal to escape to: %v", err)
		}
		f.Close()
	}
	s := newEscapeScene(t)
	wantEach(t, s.verifyEscape(t, &sandbox.Profile{}), "refused")
}

// wantEach checks, an attempt a subtest, that each attempt got verdict
// ("refused" or "got").
func wantEach(t *testing.T, got map[string]string, verdict string) {
	t.Helper()
	for name, result := range got {
		t.Run(name, func(t *testing.T) {
			t.Log(result)
			if !strings.HasPrefix(result, verdict) {
				t.Errorf("%s = %q; want %s", name, result, verdict)
			}
		})
	}
}

// Where unprivileged user namespaces are disabled (some distributions,
// containers), the walls are Landlock's TCP rules and seccomp, the limits
// rlimits: every attempt is still refused.
func TestEscapeWithoutUserNamespaces(t *testing.T) {
	s := newEscapeScene(t)
	m := sandbox.Probe(sandbox.Config{})
	m.UserNS = false
	wantEach(t, s.verifyEscapeOn(t, &m, &sandbox.Profile{}), "refused")
}

// A wall the machine cannot build fails the run, never silently: root
// without a user namespace or a cgroup cannot cap its server's processes
// (RLIMIT_NPROC does not bind root). Chosen weaker, it runs, and says
// what it was.
func TestWallsFailClosed(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("an ordinary user's processes are capped by RLIMIT_NPROC everywhere")
	}
	s := newEscapeScene(t)
	m := sandbox.Probe(sandbox.Config{})
	m.UserNS, m.Cgroup = false, ""
	v := NewVerifier(Limits{}, nil).Walled(sandbox.Config{Database: s.db, Home: s.home, Machine: &m})
	target := Target{Transport: TransportStdio, Command: fixture, Cwd: s.cwd, Sandbox: &sandbox.Profile{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := v.Verify(ctx, target, 0, nil)
	var e *Error
	if !errors.As(err, &e) || e.Class != ClassSandbox || !strings.Contains(e.Message, "processes") {
		t.Fatalf("Verify = %v; want a sandbox failure naming the process cap", err)
	}
	target.Sandbox = &sandbox.Profile{Weaker: true}
	res, err := v.Verify(ctx, target, 0, nil)
	if err != nil {
		t.Fatalf("Verify, weaker: %v", err)
	}
	if !strings.HasPrefix(res.Isolation, "landlock-v7 + seccomp + rlimits") {
		t.Errorf("isolation = %q; want the walls it had", res.Isolation)
	}
}

// The same attempts without walls get through: the scene is real.
func TestEscapeWithoutWalls(t *testing.T) {
	s := newEscapeScene(t)
	wantEach(t, s.verifyEscape(t, nil), "got") // else the tests above prove nothing
}

// Learn mode: a server that needs a host fails under network none, and
// the failure names the host the egress proxy refused; listed, the same
// server verifies.
func TestLearnModeNamesRefusedHost(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	host := strings.TrimPrefix(up.URL, "http://")
	s := newEscapeScene(t)
	v := NewVerifier(Limits{}, nil).Walled(sandbox.Config{Database: s.db, Home: s.home})
	target := Target{Transport: TransportStdio, Command: fixture, Args: []string{"-mode", "escape"},
		Env: map[string]string{"FIXTURE_ESCAPE": "need:http=" + up.URL + "/"}, Cwd: s.cwd, Sandbox: &sandbox.Profile{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := v.Verify(ctx, target, 0, nil)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Verify under network none = %v; want a failure", err)
	}
	if e.Refused == nil || len(e.Refused.Hosts) != 1 {
		t.Fatalf("Refused = %+v; want the one host refused", e.Refused)
	}
	if h := e.Refused.Hosts[0]; h.Host+":"+strconv.Itoa(h.Port) != host || h.Reason == "" {
		t.Errorf("refused host = %+v; want %s with a reason", h, host)
	}
	if !strings.HasPrefix(e.Suggestion, "Its walls refused") {
		t.Errorf("suggestion = %q; want the walls' refusal first", e.Suggestion)
	}
	target.Sandbox = &sandbox.Profile{Network: sandbox.NetworkAllow, Allow: []string{host}}
	res, err := v.Verify(ctx, target, 0, nil)
	if err != nil {
		t.Fatalf("Verify with %s allowed: %v", host, err)
	}
	if !strings.Contains(res.StderrTail, ": got status 200") {
		t.Errorf("stderr = %q; want the request through the proxy to succeed", res.StderrTail)
	}
}

// The walls hold for an ordinary user too. Run as root (as CI is), the
// tests above meet a root-owned /proc and cgroup caps; this test runs
// them again as nobody, where an unprivileged user namespace and rlimits
// must do.
func TestEscapeAsOrdinaryUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("this test already runs as an ordinary user: TestEscapeUnderDefaultProfile is the test")
	}
	proctest.RunAsNobody(t, "^TestEscape(UnderDefaultProfile|WithoutUserNamespaces|WithoutWalls)$", map[string]string{fixtureEnv: fixture},
		"--- PASS: TestEscapeUnderDefaultProfile", "--- PASS: TestEscapeWithoutUserNamespaces", "--- PASS: TestEscapeWithoutWalls",
		"isolation: landlock-v7 + netns + seccomp + rlimits")
}

// escapeTTYEnv, set, adds the controlling terminal to the attempts: the
// test then runs with one (TestEscapeNoTerminal).
const escapeTTYEnv = "DISCOVERY_TEST_ESCAPE_TTY"

// A server cannot type into the terminal Switchboard was started from
// (TIOCSTI): it runs in a session of its own, without a controlling
// terminal. The escape test runs again in a copy of this test binary
// whose controlling terminal is a new pseudo-terminal.
func TestEscapeNoTerminal(t *testing.T) {
	if os.Getenv(escapeTTYEnv) != "" {
		t.Skip("the copy runs TestEscapeUnderDefaultProfile")
	}
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pts.Close()
	go io.Copy(io.Discard, ptmx) // whatever is written to the terminal
	cmd := exec.Command(os.Args[0], "-test.run=^TestEscapeUnderDefaultProfile$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), escapeTTYEnv+"=1", fixtureEnv+"="+fixture)
	cmd.Stdin = pts
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err = cmd.Run()
	t.Logf("with a controlling terminal:\n%s", out.String())
	if err != nil {
		t.Fatalf("the escape test with a controlling terminal: %v", err)
	}
	if !strings.Contains(out.String(), "--- PASS: TestEscapeUnderDefaultProfile/controlling_terminal") {
		t.Error("the copy did not try the controlling terminal")
	}
}
