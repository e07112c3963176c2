package web_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/discovery/sandbox"
	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/internal/proctest"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/sealed"
)

// escapeJS is the Node escaping server (see e2e/mcp/escape.mjs).
var escapeJS, _ = filepath.Abs("../e2e/mcp/escape.mjs")

// Two escaping servers, mcp-fixture's escape mode and escape.mjs under
// Node, are added through the API with no sandbox settings, so they get
// the default profile; verified from the dashboard; then an agent calls
// their escape tool through /mcp, a routed call on a held session, which
// tries every attempt again. Each is refused, and the held run's
// isolation names the walls: calls run under the profile verification
// ran under. (discovery's walls tests show each attempt gets through
// without the walls, as root and as an ordinary user.)
func TestEscapeThroughTheDashboard(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is needed (the README's test command installs it)")
	}
	home, outside := t.TempDir(), t.TempDir()
	key := filepath.Join(home, ".ssh", "id_ed25519")
	writeFile(t, key, "-----BEGIN OPENSSH PRIVATE KEY-----\nplanted\n")
	dbPath := filepath.Join(t.TempDir(), "sb.db")
	db, err := bolt.Open(dbPath, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dbPath+".mcp-token", "the agents' token\n")
	getenv := func(k string) string {
		if k == "HOME" {
			return home
		}
		return os.Getenv(k)
	}
	verifier := discovery.NewVerifier(discovery.Limits{InitTimeout: 30 * time.Second}, getenv)
	st := sealed.New(db, testRing)
	e := newEnvVerifying(t, st.Store(), verifier)
	e.db, e.raw = st, db
	srv, _ := e.liveServer()
	dashboardPort := srv.Listener.Addr().(*net.TCPAddr).Port
	verifier.Walled(sandbox.Config{Database: dbPath, DashboardPort: dashboardPort, Home: home})

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	go func() {
		for {
			c, err := listener.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	attempts := map[string]string{
		"planted key":          "read=" + key,
		"database":             "read=" + dbPath,
		"mcp token":            "read=" + dbPath + ".mcp-token",
		"dashboard environ":    "environ",
		"dashboard memory":     "maps",
		"write outside":        "write=" + filepath.Join(outside, "escaped"),
		"loopback listener":    "connect=" + listener.Addr().String(),
		"dashboard port":       "connect=127.0.0.1:" + strconv.Itoa(dashboardPort),
		"dashboard by proxy":   "http=http://127.0.0.1:" + strconv.Itoa(dashboardPort) + "/healthz",
		"udp":                  "udp=" + udp.LocalAddr().String(),
		"300 processes":        "spawn=300",
		"more than its memory": "alloc=" + strconv.Itoa(1536<<20),
	}
	if os.Getuid() == 0 {
		attempts["capabilities"] = "caps"
	}
	var list []string
	for _, a := range attempts {
		list = append(list, a)
	}
	escape := strings.Join(list, ",")

	for id, body := range map[string]map[string]any{
		"fixture": {"command": fixtureBin, "args": []string{"-mode", "escape"}, "env": map[string]string{"FIXTURE_ESCAPE": escape}},
		"node":    {"command": "node", "args": []string{escapeJS}, "env": map[string]string{"ESCAPE": escape}},
	} {
		body["id"], body["name"], body["transport"], body["cwd"] = id, "Escape "+id, "stdio", t.TempDir()
		if got := e.createServer(body); got.Sandbox == nil || got.Sandbox.Network != "none" {
			t.Fatalf("%s's sandbox = %+v; want the default profile (network none)", id, got.Sandbox)
		}
		if job := e.waitJob(e.verify(id).ID); job.Status != "success" {
			t.Fatalf("verify %s = %s: %+v", id, job.Status, e.discovery(id).Error)
		}
		e.setPolicy(id, "escape", "allow")
		if iso := e.discovery(id).Isolation; !strings.Contains(iso, "landlock") || !strings.Contains(iso, "netns") {
			t.Errorf("%s verified with isolation %q; want the walls named", id, iso)
		}
	}

	c := mcptest.Connect(t, srv.URL, testMCPToken)
	for _, id := range []string{"fixture", "node"} {
		t.Run(id, func(t *testing.T) {
			res, err := c.Call(id+"__escape", nil)
			if err != nil || res.IsError {
				t.Fatalf("call %s__escape = %+v, %v", id, res, err)
			}
			answer := mcptest.Text(res)
			for name, a := range attempts {
				line := ""
				for l := range strings.Lines(answer) {
					if _, rest, ok := strings.Cut(l, " escape "+a+": "); ok {
						line = strings.TrimSpace(rest)
					}
				}
				if !strings.HasPrefix(line, "refused") {
					t.Errorf("%s: %s = %q; want refused\n%s", id, name, line, answer)
				}
			}
			rec := e.api(http.MethodGet, "/api/v1/upstreams", nil)
			var ups struct {
				Upstreams []struct {
					ServerID  string `json:"server_id"`
					Isolation string `json:"isolation"`
				} `json:"upstreams"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &ups); err != nil {
				t.Fatal(err)
			}
			held := false
			for _, u := range ups.Upstreams {
				if u.ServerID == id {
					held = true
					if !strings.Contains(u.Isolation, "landlock") || !strings.Contains(u.Isolation, "netns") {
						t.Errorf("held %s runs with isolation %q; want the walls verification had", id, u.Isolation)
					}
				}
			}
			if !held {
				t.Errorf("upstreams = %s; want %s held", rec.Body, id)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Error("a file was written outside the servers' folders")
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The same as an ordinary user: run as root (as CI is), this test runs
// TestEscapeThroughTheDashboard again as nobody, in copies of this test
// binary and of the fixture, where an unprivileged user namespace and
// rlimits must do.
func TestEscapeThroughTheDashboardAsOrdinaryUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("this test already runs as an ordinary user: TestEscapeThroughTheDashboard is the test")
	}
	// escape.mjs and the SDK it imports are read where they are checked out.
	for d := filepath.Dir(escapeJS); d != "/"; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Skipf("nobody cannot reach %s (%s is not searchable by others): check out the repository where other users can read it", escapeJS, d)
		}
	}
	proctest.RunAsNobody(t, "^TestEscapeThroughTheDashboard$", map[string]string{fixtureEnv: fixtureBin},
		"--- PASS: TestEscapeThroughTheDashboard/fixture", "--- PASS: TestEscapeThroughTheDashboard/node")
}
