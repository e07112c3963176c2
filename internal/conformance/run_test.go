//go:build linux

package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/proctest"
)

// The test binary is also the client under test of Client mode: with
// stubClientLog set it appends what it was run with to that file, hangs
// if stubClientHang is set, and exits.
const (
	stubClientLog  = "CONFORMANCE_STUB_CLIENT_LOG"
	stubClientHang = "CONFORMANCE_STUB_CLIENT_HANG"
)

func TestMain(m *testing.M) {
	if log := os.Getenv(stubClientLog); log != "" {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintf(f, "%s %s %s\n", os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION"), os.Args[len(os.Args)-1])
			f.Close()
		}
		if os.Getenv(stubClientHang) != "" {
			time.Sleep(time.Hour)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// stubClient is the Command running the test binary as the client, with
// a marker in its arguments to find its processes by.
func stubClient(t *testing.T) (command, marker string) {
	t.Helper()
	marker = "stub-client-" + strings.ReplaceAll(t.Name(), "/", "-")
	return os.Args[0] + " " + marker, marker
}

// Client mode runs the command once per scenario of the requirement set,
// the scenario's URL last and its name in the environment, and reads
// every scenario's checks.
func TestRunClient(t *testing.T) {
	command, marker := stubClient(t)
	log := filepath.Join(t.TempDir(), "runs.log")
	rep, err := Run(context.Background(), Options{Mode: Client, Command: command, Requirements: "2025-11-25",
		Env: []string{stubClientLog + "=" + log}, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Summary())
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 3 || fields[1] != "2025-11-25" || !strings.HasPrefix(fields[2], "http://localhost:") {
			t.Errorf("the client was run with %q; want the scenario, version 2025-11-25 and its URL last", line)
			continue
		}
		ran[fields[0]] = true
	}
	var names []string
	for _, s := range rep.Scenarios {
		names = append(names, s.Name)
		if !s.Ran {
			t.Errorf("scenario %s: not Ran; want its checks read", s.Name)
		}
		if !ran[s.Name] {
			t.Errorf("scenario %s did not run the client", s.Name)
		}
	}
	if !slices.Contains(names, "initialize") || !slices.Contains(names, "auth/metadata-default") || slices.Contains(names, "server-initialize") {
		t.Errorf("client scenarios of 2025-11-25 = %q; want initialize and auth/metadata-default, no server scenario", names)
	}
	// A client that does nothing passes nothing, and the suite agrees.
	if problems := rep.Problems(); !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, "scenario initialize failed") }) ||
		slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, "exited with status") }) {
		t.Errorf("Problems() = %q; want initialize failed, and the suite's status agreeing", problems)
	}
	if n := proctest.Count(marker); n != 0 {
		t.Errorf("%d client processes left after the run", n)
	}
}

// A run that outlasts its timeout ends with an error, and nothing it
// started is left running.
func TestRunTimeout(t *testing.T) {
	command, marker := stubClient(t)
	start := time.Now()
	_, err := Run(context.Background(), Options{Mode: Client, Command: command, Requirements: "2025-11-25", Timeout: 3 * time.Second,
		Env: []string{stubClientLog + "=" + filepath.Join(t.TempDir(), "runs.log"), stubClientHang + "=1"}})
	if err == nil || !strings.Contains(err.Error(), "the suite did not finish within 3s") {
		t.Fatalf("Run with hanging clients = %v; want it to stop after 3s", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Run took %s; want it bounded by its 3s timeout", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for proctest.Count(marker) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d client processes still running after the run ended", proctest.Count(marker))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A file that lists a required scenario is refused before anything runs.
func TestRunRefusesBadExpectations(t *testing.T) {
	file := writeFile(t, "initialize # cannot\n")
	_, err := Run(context.Background(), Options{Mode: Client, Command: "true", Requirements: "2025-11-25",
		ExpectedFailures: file, Required: []string{"initialize"}})
	if err == nil || !strings.Contains(err.Error(), "initialize is required to pass") {
		t.Errorf("Run with a required scenario listed = %v; want it refused", err)
	}
	_, err = Run(context.Background(), Options{Mode: Client, Command: "true", Requirements: "2025-11-25", Required: []string{"no-such"}})
	if err == nil || !strings.Contains(err.Error(), "required scenario no-such is not one the suite runs") {
		t.Errorf("Run requiring an unknown scenario = %v; want it refused", err)
	}
}
