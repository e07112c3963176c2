//go:build unix

// These need a Unix system: sh records the pid of every server started
// (TestHostileVerifyRepeated), and a refused connection is reported in the
// system's words, "connection refused" (TestHostileRemote).

package discovery

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestHostileVerifyRepeated is #13: Verify clicked over and over while
// one runs joins that one. The rest of #13 is covered elsewhere: the
// global limit by TestRunnerConcurrencyLimit, a changed configuration
// getting a job of its own by TestRunnerSingleFlight, and the result of
// a verification whose configuration changed being discarded by the store
// (store.TestConfigChangedWhileVerifying, ErrConfigChanged).
func TestHostileVerifyRepeated(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := newRunLog()
	r := NewRunner(NewVerifier(Limits{}, nil), l.config(2))
	defer r.Close()
	pids := filepath.Join(t.TempDir(), "pids")
	target := Target{Transport: TransportStdio, Command: "sh",
		Args: []string{"-c", `echo $$ >> "$0"; exec "$@"`, pids, fixture, "-startup-delay", "300ms", "-tools", "2"}}
	req := Request{ServerID: "clicked", ConfigHash: "h", Target: target}

	const clicks = 20
	start := time.Now()
	var wg sync.WaitGroup
	jobs := make([]Job, clicks)
	joined := make([]bool, clicks)
	for i := range clicks {
		wg.Go(func() {
			var err error
			jobs[i], joined[i], err = r.Submit(req)
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range clicks {
		if jobs[i].ID != jobs[0].ID {
			t.Fatalf("click %d got job %s, click 0 got %s", i, jobs[i].ID, jobs[0].ID)
		}
	}
	if n := clicks - countTrue(joined); n != 1 {
		t.Errorf("%d clicks started a job, want 1", n)
	}
	final := l.waitDone(t, jobs[0].ID)
	d := time.Since(start)
	if final.Status != JobSuccess || final.ToolCount != 2 {
		t.Fatalf("job %+v", final)
	}
	r.Close() // the server is stopped
	data, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	// One verification: the server started once for the plain listing
	// and once for the listing that declares every feature (see
	// features.go), which finds no tool of its own here.
	started := strings.Fields(string(data))
	if len(started) != 2 {
		t.Fatalf("%d servers started for %d clicks, want the two of one verification: %v", len(started), clicks, started)
	}
	for _, p := range started {
		pid, _ := strconv.Atoi(p)
		assertGroupGone(t, pid)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started[final.ID] != 1 || len(l.finishes[final.ID]) != 1 {
		t.Errorf("Started %d times, Finish %d times, want 1 and 1", l.started[final.ID], len(l.finishes[final.ID]))
	}
	t.Logf("hostile #13 verify clicked %d times: 1 job, 1 server, %s in %v", clicks, final.Status, d.Round(time.Millisecond))
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func TestHostileRemote(t *testing.T) {
	refused := func(transport, path string) func(*testing.T) Target {
		return func(t *testing.T) Target { return Target{Transport: transport, URL: "http://" + freePort(t) + path} }
	}
	fixed := func(transport, url string) func(*testing.T) Target {
		return func(*testing.T) Target { return Target{Transport: transport, URL: url} }
	}
	short := Limits{InitTimeout: 2 * time.Second}
	oneMiB := int64(1 << 20)
	for _, c := range []hostileCase{
		{num: 35, name: "refused http", target: refused(TransportHTTP, "/mcp"), limits: short,
			class: ClassNetwork, phase: PhaseInitializing, message: []string{"connection refused"}, max: time.Second},
		{num: 35, name: "refused sse", target: refused(TransportSSE, "/sse"), limits: short,
			class: ClassNetwork, phase: PhaseStarting, message: []string{"connection refused"}, max: time.Second},
		{num: 35, name: "dns failure", target: fixed(TransportHTTP, "http://switchboard-hostile-test.invalid/mcp"), limits: short,
			class: ClassNetwork, phase: PhaseInitializing, message: []string{"no such host"}, max: 2 * time.Second},
		{num: 36, name: "http-status 401 http", target: remoteTarget(TransportHTTP, "-mode", "http-status", "-status", "401"), limits: short,
			class: ClassAuth, phase: PhaseInitializing, message: []string{"401", "signed-in"}, max: time.Second}, // a Bearer challenge: sign in
		{num: 36, name: "http-status 403 http", target: remoteTarget(TransportHTTP, "-mode", "http-status", "-status", "403"), limits: short,
			class: ClassHTTPStatus, phase: PhaseInitializing, message: []string{"403", "check credentials"}, max: time.Second},
		{num: 36, name: "http-status 401 sse", target: remoteTarget(TransportSSE, "-mode", "http-status", "-status", "401"), limits: short,
			class: ClassAuth, phase: PhaseStarting, message: []string{"401", "signed-in"}, max: time.Second}, // a Bearer challenge: sign in
		{num: 36, name: "http-status 403 sse", target: remoteTarget(TransportSSE, "-mode", "http-status", "-status", "403"), limits: short,
			class: ClassHTTPStatus, phase: PhaseStarting, message: []string{"403", "check credentials"}, max: time.Second},
		{num: 37, name: "html http", target: remoteTarget(TransportHTTP, "-mode", "html"), limits: short,
			class: ClassProtocol, phase: PhaseInitializing, max: time.Second,
			message: []string{"HTML page instead of MCP", `"<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n<body>\x1b[31m<script>`}},
		{num: 37, name: "html sse", target: remoteTarget(TransportSSE, "-mode", "html"), limits: short,
			class: ClassProtocol, phase: PhaseStarting, message: []string{"HTML page instead of MCP", `\x1b[31m<script>`}, max: time.Second},
		{num: 38, name: "redirect http", target: remoteTarget(TransportHTTP, "-mode", "redirect"), limits: short,
			class: ClassNetwork, phase: PhaseInitializing, message: []string{"169.254.169.254", "link-local", "never connects"}, max: time.Second},
		{num: 38, name: "redirect sse", target: remoteTarget(TransportSSE, "-mode", "redirect", "-redirect-to", "http://[fe80::1]:8080/sse"), limits: short,
			class: ClassNetwork, phase: PhaseStarting, message: []string{"[fe80::1]:8080", "link-local"}, max: time.Second},
		{num: 39, name: "sse-no-endpoint", target: remoteTarget(TransportSSE, "-mode", "sse-no-endpoint", "-interval", "50ms"),
			limits: Limits{InitTimeout: time.Second}, class: ClassTimeout, phase: PhaseStarting, min: time.Second, max: 2 * time.Second},
		{num: 40, name: "endless-body http", target: remoteTarget(TransportHTTP, "-mode", "endless-body", "-interval", "0"),
			limits: Limits{TotalBytes: oneMiB}, class: ClassTooLarge, phase: PhaseInitializing,
			message: []string{"more than 1048576 bytes"}, max: 2 * time.Second, maxAlloc: 8 << 20},
		{num: 40, name: "endless-body sse", target: remoteTarget(TransportSSE, "-mode", "endless-body", "-interval", "0"),
			limits: Limits{TotalBytes: oneMiB}, class: ClassTooLarge, phase: PhaseStarting,
			message: []string{"more than 1048576 bytes"}, max: 3 * time.Second, maxAlloc: 8 << 20},
		// A body that never ends slowly: the deadline ends it.
		{num: 40, name: "endless-body slow", target: remoteTarget(TransportHTTP, "-mode", "endless-body", "-interval", "20ms"),
			limits: Limits{InitTimeout: time.Second}, class: ClassTimeout, phase: PhaseInitializing, min: time.Second, max: 2 * time.Second},
	} {
		t.Run(fmt.Sprintf("%02d %s", c.num, c.name), func(t *testing.T) { runHostile(t, c) })
	}
}
