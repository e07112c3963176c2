// Package fixturetest runs cmd/mcp-fixture as a remote MCP server for
// tests.
package fixturetest

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Start runs the fixture bin over transport (http or sse) with args (an
// -addr among them, or it listens on any free port) until the test ends,
// and returns the URL it prints once it listens. It fails t, with the
// fixture's stderr, if none comes within 10 s.
func Start(t testing.TB, bin, transport string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-transport", transport}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		u, ok := strings.CutPrefix(strings.TrimSpace(s), "listening ")
		if !ok {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("fixture printed %q, want \"listening <URL>\"; stderr: %s", s, stderr.String())
		}
		return u
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		<-line
		t.Fatalf("fixture did not print its URL within 10 s; stderr: %s", stderr.String())
	}
	return ""
}

// MCP is u with the path /mcp, where a Streamable HTTP fixture serves
// MCP (it prints its origin or the endpoint, depending on the mode).
func MCP(u string) string {
	if strings.HasSuffix(u, "/mcp") {
		return u
	}
	return strings.TrimSuffix(u, "/") + "/mcp"
}
