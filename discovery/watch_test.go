package discovery

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// watchRun runs Watch in the background and collects its events.
type watchRun struct {
	mu     sync.Mutex
	events []WatchEvent
	cancel context.CancelFunc
	done   chan error
}

func startWatch(t *testing.T, target Target, ping time.Duration) *watchRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchRun{cancel: cancel, done: make(chan error, 1)}
	go func() {
		w.done <- NewVerifier(Limits{}, nil).Watch(ctx, target, 5*time.Second, ping, func(ev WatchEvent) {
			w.mu.Lock()
			w.events = append(w.events, ev)
			w.mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
			t.Error("Watch did not return after cancel")
		}
	})
	return w
}

func (w *watchRun) count(kind string) (n int, last WatchEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ev := range w.events {
		if ev.Kind == kind {
			n++
			last = ev
		}
	}
	return n, last
}

func (w *watchRun) waitCount(t *testing.T, kind string, n int) WatchEvent {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, last := w.count(kind)
		if got >= n {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s events after 10 s; want %d", got, kind, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop cancels the watch and returns what Watch returned.
func (w *watchRun) stop(t *testing.T) error {
	t.Helper()
	w.cancel()
	select {
	case err := <-w.done:
		w.done <- err // for the cleanup
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return within 5 s of cancel")
		return nil
	}
}

func testMCPServer() *server.MCPServer {
	s := server.NewMCPServer("watched", "1.2.3", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("first"), nil)
	return s
}

// Over Streamable HTTP and legacy SSE, a held session reports who the
// server is and each list change, coalescing a burst of them.
func TestWatchRemote(t *testing.T) {
	for _, tr := range []string{TransportHTTP, TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			s := testMCPServer()
			ts := httptest.NewUnstartedServer(nil)
			url := ""
			if tr == TransportHTTP {
				ts.Config.Handler = server.NewStreamableHTTPServer(s)
				ts.Start()
				url = ts.URL + "/mcp"
			} else {
				ts.Start()
				sse := server.NewSSEServer(s, server.WithBaseURL(ts.URL))
				ts.Config.Handler = sse
				url = ts.URL + "/sse"
				// The SSE server's own goroutines end with its sessions.
				defer sse.Shutdown(context.Background())
			}
			defer ts.Close()
			w := startWatch(t, Target{Transport: tr, URL: url}, time.Minute)
			ev := w.waitCount(t, WatchConnected, 1)
			if ev.ServerName != "watched" || ev.ServerVersion != "1.2.3" || !ev.ListChanged {
				t.Errorf("connected = %+v; want watched 1.2.3 with listChanged", ev)
			}
			time.Sleep(100 * time.Millisecond) // let the notification stream open
			s.AddTool(mcp.NewTool("second"), nil)
			w.waitCount(t, WatchToolsChanged, 1)

			// A burst of 200 changes is one or two events, not 200.
			start := time.Now()
			for i := range 200 {
				s.AddTool(mcp.NewTool("burst_"+string(rune('a'+i%26))+string(rune('a'+i/26))), nil)
			}
			w.waitCount(t, WatchToolsChanged, 2)
			time.Sleep(WatchCoalesce + 300*time.Millisecond)
			n, _ := w.count(WatchToolsChanged)
			if limit := 3 + int(time.Since(start)/WatchCoalesce); n > limit {
				t.Errorf("%d events for a burst; want at most %d (one per %s)", n, limit, WatchCoalesce)
			}
			if err := w.stop(t); err != nil {
				t.Errorf("Watch after cancel = %v; want nil", err)
			}
		})
	}
}

// A remote server that goes away ends the watch with an error, within
// the ping interval.
func TestWatchRemoteLost(t *testing.T) {
	s := testMCPServer()
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	w := startWatch(t, Target{Transport: TransportHTTP, URL: ts.URL + "/mcp"}, 200*time.Millisecond)
	w.waitCount(t, WatchConnected, 1)
	ts.CloseClientConnections()
	ts.Close()
	select {
	case err := <-w.done:
		w.done <- err
		var e *Error
		if !errors.As(err, &e) || e.Phase != PhaseWatching {
			t.Errorf("Watch of a server that went away = %v; want an *Error in phase watching", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch still running 5 s after its server went away")
	}
}

// A stdio server is held as a process in its own group: a change of its
// tools file is heard, and cancelling ends the whole group.
func TestWatchStdio(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tools.json")
	write := func(version string, names ...string) {
		var tools []map[string]any
		for _, n := range names {
			tools = append(tools, map[string]any{"name": n, "inputSchema": map[string]any{"type": "object"}})
		}
		data, _ := json.Marshal(map[string]any{"version": version, "tools": tools})
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("4.5.6", "a")
	target, pidfile := withPidfile(t, Target{Transport: TransportStdio, Command: fixture, Args: []string{"-tools-file", file}})
	w := startWatch(t, target, time.Minute)
	if ev := w.waitCount(t, WatchConnected, 1); ev.ServerVersion != "4.5.6" || !ev.ListChanged {
		t.Errorf("connected = %+v; want version 4.5.6 with listChanged", ev)
	}
	pid := readPid(t, pidfile)
	write("4.5.6", "a", "b")
	w.waitCount(t, WatchToolsChanged, 1)
	if err := w.stop(t); err != nil {
		t.Errorf("Watch after cancel = %v; want nil", err)
	}
	assertGroupGone(t, pid)
}

// A stdio server that exits ends the watch with its exit, and its
// stderr tail.
func TestWatchStdioExit(t *testing.T) {
	w := startWatch(t, fixtureTarget("exit-after-init", "-exit-code", "5"), time.Minute)
	select {
	case err := <-w.done:
		w.done <- err
		var e *Error
		if !errors.As(err, &e) || e.Class != ClassExited {
			t.Errorf("Watch of a server that exits = %v; want class exited", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch still running 10 s after its server exited")
	}
}

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
	w := startWatch(t, Target{Transport: TransportHTTP, URL: u}, time.Minute)
	w.waitCount(t, WatchConnected, 1)
	first.Process.Signal(syscall.SIGTERM)
	first.Wait()
	start(strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp"))
	select {
	case err := <-w.done:
		w.done <- err
		var e *Error
		if !errors.As(err, &e) || e.Class != ClassNetwork || e.Phase != PhaseWatching {
			t.Errorf("Watch across a restart = %v; want a network error in phase watching", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not notice the restart within 5 s (its ping interval is a minute)")
	}
}
