package discovery

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
)

// escapeScene is a machine an escaping server is let loose on: a home
// with a planted key, Switchboard's database and token files, a folder
// outside the server's, a loopback listener and the dashboard's port.
type escapeScene struct {
	home, db, cwd, outside string
	listener, dashboard    net.Listener
	udp                    net.PacketConn
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
	var err error
	for _, l := range []*net.Listener{&s.listener, &s.dashboard} {
		if *l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		ln := *l
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	if s.udp, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.udp.Close() })
	return s
}

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
	return map[string]string{
		"planted key":          "read=" + filepath.Join(s.home, ".ssh", "id_ed25519"),
		"database":             "read=" + s.db,
		"mcp token":            "read=" + s.db + ".mcp-token",
		"dashboard environ":    "environ",
		"dashboard memory":     "maps",
		"write outside":        "write=" + filepath.Join(s.outside, "escaped"),
		"loopback listener":    "connect=127.0.0.1:" + portOf(s.listener),
		"dashboard port":       "connect=127.0.0.1:" + portOf(s.dashboard),
		"udp":                  "udp=" + s.udp.LocalAddr().String(),
		"300 processes":        "spawn=300",
		"more than its memory": "alloc=" + strconv.Itoa(1536<<20),
	}
}

// verifyEscape verifies the escape fixture under profile (nil: no walls)
// and returns what each attempt got, by attempt.
func (s *escapeScene) verifyEscape(t *testing.T, profile *sandbox.Profile) map[string]string {
	t.Helper()
	var list []string
	for _, a := range s.attempts() {
		list = append(list, a)
	}
	getenv := func(k string) string {
		if k == "HOME" {
			return s.home
		}
		return os.Getenv(k)
	}
	v := NewVerifier(Limits{StderrBytes: 64 << 10}, getenv).Walled(sandbox.Config{Database: s.db, DashboardPort: s.dashboard.Addr().(*net.TCPAddr).Port, Home: s.home})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := v.Verify(ctx, Target{Transport: TransportStdio, Command: fixture, Args: []string{"-mode", "escape"},
		Env: map[string]string{"FIXTURE_ESCAPE": strings.Join(list, ",")}, Cwd: s.cwd, Sandbox: profile}, 0, nil)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	t.Logf("isolation: %s", res.Isolation)
	got := map[string]string{}
	for name, a := range s.attempts() {
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

func TestEscapeUnderDefaultProfile(t *testing.T) {
	s := newEscapeScene(t)
	got := s.verifyEscape(t, &sandbox.Profile{})
	for name, result := range got {
		t.Run(name, func(t *testing.T) {
			t.Log(result)
			if !strings.HasPrefix(result, "refused") {
				t.Errorf("%s = %q; want refused", name, result)
			}
		})
	}
}

// The same attempts without walls get through: the scene is real.
func TestEscapeWithoutWalls(t *testing.T) {
	s := newEscapeScene(t)
	got := s.verifyEscape(t, nil)
	for name, result := range got {
		t.Logf("%s: %s", name, result)
	}
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
	target.Sandbox = &sandbox.Profile{Network: sandbox.NetworkAllow, Allow: []string{host}}
	res, err := v.Verify(ctx, target, 0, nil)
	if err != nil {
		t.Fatalf("Verify with %s allowed: %v", host, err)
	}
	if !strings.Contains(res.StderrTail, ": got status 200") {
		t.Errorf("stderr = %q; want the request through the proxy to succeed", res.StderrTail)
	}
}
