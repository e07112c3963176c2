//go:build unix

// These follow a pooled server by the pid sh records, and signal its
// process group.

package discovery

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A call starts the server once, later calls reuse its session, the
// session closes (with its process group) after the idle time, and the
// next call starts it again.
func TestPoolLazyReuseIdle(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tools.json")
	toolsFile(t, file, map[string]string{"echo": "says it back"})
	target, pidfile := withPidfile(t, Target{Transport: TransportStdio, Command: fixture, Args: []string{"-tools-file", file}})
	pin := pins(t, target)["echo"]
	os.Remove(pidfile)

	p := NewPool(NewVerifier(Limits{}, nil), PoolConfig{Idle: 300 * time.Millisecond})
	defer p.Close()
	if len(p.Running()) != 0 {
		t.Fatal("a new pool runs sessions")
	}
	ctx := context.Background()
	res, info, err := p.Call(ctx, "fx", "cfg1", target, 0, "echo", pin, map[string]any{"x": 1})
	if err != nil || !info.Started || resultText(res) != `echo {"x":1}` {
		t.Fatalf("first call = %q, %+v, %v; want the echo, started", resultText(res), info, err)
	}
	pid := readPid(t, pidfile)
	res, info, err = p.Call(ctx, "fx", "cfg1", target, 0, "echo", pin, map[string]any{"y": "z"})
	if err != nil || info.Started || resultText(res) != `echo {"y":"z"}` {
		t.Fatalf("second call = %q, %+v, %v; want the echo, reused", resultText(res), info, err)
	}
	if r := p.Running(); len(r) != 1 || r[0].ServerID != "fx" || r[0].Calls != 2 || r[0].ServerName != "mcp-fixture" {
		t.Errorf("Running() = %+v; want fx with 2 calls", r)
	}
	if !alive(pid) {
		t.Fatal("the server is not running between calls")
	}
	// The idle session leaves Running before its server is reaped.
	waitFor(t, "idle session closed", 3*time.Second, func() bool {
		return len(p.Running()) == 0 && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	})
	assertGroupGone(t, pid)

	os.Remove(pidfile)
	if _, info, err = p.Call(ctx, "fx", "cfg1", target, 0, "echo", pin, nil); err != nil || !info.Started {
		t.Fatalf("call after idle close = %+v, %v; want a new start", info, err)
	}
	pid = readPid(t, pidfile)
	// A new configuration replaces the session.
	os.Remove(pidfile)
	if _, info, err = p.Call(ctx, "fx", "cfg2", target, 0, "echo", pin, nil); err != nil || !info.Started {
		t.Fatalf("call with a new configuration = %+v, %v; want a new start", info, err)
	}
	waitFor(t, "old configuration's server stopped", 3*time.Second, func() bool { return !alive(pid) })
	pid = readPid(t, pidfile)
	p.Close()
	assertGroupGone(t, pid)
	if _, _, err := p.Call(ctx, "fx", "cfg2", target, 0, "echo", pin, nil); !errors.Is(err, ErrPoolClosed) {
		t.Errorf("call after Close = %v; want ErrPoolClosed", err)
	}
}

// At most MaxRunning sessions run: a call for another server closes the
// least recently used idle one, or waits for one to become idle.
func TestPoolMaxRunning(t *testing.T) {
	release := make(chan struct{})
	s := server.NewMCPServer("blocking", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("wait"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return mcp.NewToolResultText("released"), nil
	})
	s.AddTool(mcp.NewTool("quick"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("quick"), nil
	})
	sv := serve(t, s, remoteVariants[1])
	remote := Target{Transport: TransportHTTP, URL: sv.url}
	rp := pins(t, remote)

	file := filepath.Join(t.TempDir(), "tools.json")
	toolsFile(t, file, map[string]string{"echo": "e"})
	local, pidfile := withPidfile(t, Target{Transport: TransportStdio, Command: fixture, Args: []string{"-tools-file", file}})
	lp := pins(t, local)

	p := NewPool(NewVerifier(Limits{}, nil), PoolConfig{MaxRunning: 1})
	defer p.Close()
	ctx := context.Background()
	if _, _, err := p.Call(ctx, "local", "c", local, 0, "echo", lp["echo"], nil); err != nil {
		t.Fatal(err)
	}
	pid := readPid(t, pidfile)
	if _, info, err := p.Call(ctx, "remote", "c", remote, 0, "quick", rp["quick"], nil); err != nil || !info.Started {
		t.Fatalf("call of a second server = %+v, %v", info, err)
	}
	waitFor(t, "the idle local server closed to make room", 3*time.Second, func() bool { return !alive(pid) })

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, _, err := p.Call(ctx, "remote", "c", remote, 0, "wait", rp["wait"], nil)
		if err != nil || resultText(res) != "released" {
			t.Errorf("blocked call = %q, %v", resultText(res), err)
		}
	}()
	waitFor(t, "call in flight", 3*time.Second, func() bool { r := p.Running(); return len(r) == 1 && r[0].InFlight == 1 })
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	var e *Error
	if _, _, err := p.Call(short, "local", "c", local, 0, "echo", lp["echo"], nil); !errors.As(err, &e) || e.Class != ClassTimeout || !strings.Contains(e.Message, "busy") {
		t.Errorf("call while the only slot is busy = %v; want a timeout saying the servers are busy", err)
	}
	go func() { time.Sleep(200 * time.Millisecond); close(release) }()
	if res, info, err := p.Call(ctx, "local", "c", local, 0, "echo", lp["echo"], nil); err != nil || !info.Started || resultText(res) != "echo {}" {
		t.Errorf("call waiting for a slot = %q, %+v, %v; want served once the slot freed", resultText(res), info, err)
	}
	wg.Wait()
}

// A server that dies between calls is forgotten, and the next call starts
// it again; a result over the cap is refused.
func TestPoolServerDiesAndResultCap(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tools.json")
	toolsFile(t, file, map[string]string{"echo": "e"})
	target, pidfile := withPidfile(t, Target{Transport: TransportStdio, Command: fixture, Args: []string{"-tools-file", file}})
	pin := pins(t, target)["echo"]
	p := NewPool(NewVerifier(Limits{}, nil), PoolConfig{MaxResult: 200})
	defer p.Close()
	ctx := context.Background()
	if _, _, err := p.Call(ctx, "fx", "c", target, 0, "echo", pin, nil); err != nil {
		t.Fatal(err)
	}
	pid := readPid(t, pidfile)
	syscall.Kill(-pid, syscall.SIGKILL)
	waitFor(t, "the dead server forgotten", 3*time.Second, func() bool { return len(p.Running()) == 0 })
	if _, info, err := p.Call(ctx, "fx", "c", target, 0, "echo", pin, nil); err != nil || !info.Started {
		t.Errorf("call after the server died = %+v, %v; want a new start", info, err)
	}
	var e *Error
	_, _, err := p.Call(ctx, "fx", "c", target, 0, "echo", pin, map[string]any{"big": strings.Repeat("x", 300)})
	if !errors.As(err, &e) || e.Class != ClassTooLarge {
		t.Errorf("call with a big result = %v; want too_large", err)
	}
}
