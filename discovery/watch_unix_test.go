//go:build unix

// TestWatchRemoteRestart stops its server with SIGTERM; TestWatchStdioExit
// runs its server through sh.

package discovery

import (
	"bufio"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A server restarted at the same address is noticed, though its
// successor answers pings: the session's event stream ended.
func TestWatchRemoteRestart(t *testing.T) {
	start := func(addr string) (*exec.Cmd, string) {
		cmd := exec.Command(fixture, "-transport", "http", "-tools", "2", "-addr", addr)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		line, _ := bufio.NewReader(out).ReadString('\n')
		u, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
		if !ok {
			t.Fatalf("fixture said %q", line)
		}
		return cmd, u
	}
	first, u := start("127.0.0.1:0")
	w := startWatch(t, nil, Target{Transport: TransportHTTP, URL: u}, time.Minute)
	w.waitCount(t, WatchConnected, 1)
	first.Process.Signal(syscall.SIGTERM)
	first.Wait()
	start(strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp"))
	e := w.ended(t, 5*time.Second) // its ping interval is a minute
	if e.Class != ClassNetwork || e.Phase != PhaseWatching {
		t.Errorf("Watch across a restart = %v; want a network error in phase watching", e)
	}
}

// A stdio server that exits ends the watch with its exit code and its
// stderr tail, secrets redacted; its group is gone.
func TestWatchStdioExit(t *testing.T) {
	const secret = "tok-8c1f2e-very-secret"
	target, pidfile := shTarget(t, `echo "starting with token $API_TOKEN" >&2; exec "$@"`, fixture, "-mode", "exit-after-init", "-exit-code", "5")
	target.Env = map[string]string{"API_TOKEN": secret}
	w := startWatch(t, nil, target, time.Minute)
	e := w.ended(t, 10*time.Second)
	if e.Class != ClassExited || e.Phase != PhaseWatching || e.ExitCode != 5 {
		t.Errorf("Watch of a server that exits = %v (exit code %d); want exited with 5 in phase watching", e, e.ExitCode)
	}
	if !strings.Contains(e.StderrTail, "starting with token [redacted]") || !strings.Contains(e.StderrTail, "exiting with status 5") {
		t.Errorf("stderr tail = %q; want the token redacted and the fixture's last words", e.StderrTail)
	}
	if strings.Contains(e.StderrTail+e.Message, secret) {
		t.Errorf("the secret shows in %q / %q", e.Message, e.StderrTail)
	}
	if n, _ := w.count(WatchConnected); n != 1 {
		t.Errorf("%d WatchConnected events; want 1", n)
	}
	assertGroupGone(t, readPid(t, pidfile))
}
