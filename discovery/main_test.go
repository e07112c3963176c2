package discovery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// fixture is the path of the mcp-fixture binary built by TestMain, or
// the one fixtureEnv names (a copy of the tests run as another user, who
// has no Go build cache: see TestEscapeAsOrdinaryUser).
var fixture string

const fixtureEnv = "DISCOVERY_TEST_FIXTURE"

// everythingEntry is @modelcontextprotocol/server-everything's entry point,
// installed by `npm ci --prefix e2e`, relative to this package.
const everythingEntry = "../e2e/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

func TestMain(m *testing.M) {
	RunLauncherIfAsked()
	runConformanceClientIfAsked()
	if mode := os.Getenv(testServerEnv); mode == modernOnly {
		os.Exit(serveModernOnly())
	} else if mode != "" {
		os.Exit(serveTestServer(mode))
	}
	dir, err := os.MkdirTemp("", "discovery-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "discovery tests:", err)
		os.Exit(1)
	}
	if fixture = os.Getenv(fixtureEnv); fixture == "" {
		fixture = filepath.Join(dir, "mcp-fixture")
		if runtime.GOOS == "windows" {
			fixture += ".exe" // Windows runs nothing without it
		}
		build := exec.Command("go", "build", "-o", fixture, "github.com/switchboard-dev/switchboard/cmd/mcp-fixture")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "discovery tests: building mcp-fixture: %v\n%s", err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	// No ignores: every goroutine a verification or a runner starts must
	// be gone once it returns.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// ---- processes ----
//
// What is left of a server once it was stopped is checked on Unix (see
// main_unix_test.go: withGroupCheck, groupGoneAtEnd, assertNoChildren);
// on Windows those helpers run targets as they are (main_windows_test.go).

// readPid waits for a pid file written by a wrapper script (as long as
// a loaded machine may take to start a shell).
func readPid(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(file)
		if err == nil && strings.HasSuffix(string(data), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil || pid <= 1 {
				t.Fatalf("pid file %s holds %q", file, data)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid file %s was not written: %v", file, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readPidNoWait reads a pid file that may not exist.
func readPidNoWait(file string) (int, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// verify runs one verification with the limits and a background context.
// A stdio target runs through withGroupCheck: once Verify has returned no
// process of the child's group may be left.
func verify(t *testing.T, limits Limits, target Target, progress func(Progress)) (*Result, *Error, time.Duration) {
	t.Helper()
	check := func() {}
	if target.Transport == TransportStdio {
		target, check = withGroupCheck(t, target)
	}
	res, e, d := verifyRaw(t, limits, target, progress)
	check()
	return res, e, d
}

// verifyRaw runs one verification of the target as is.
func verifyRaw(t *testing.T, limits Limits, target Target, progress func(Progress)) (*Result, *Error, time.Duration) {
	t.Helper()
	v := NewVerifier(limits, nil)
	start := time.Now()
	res, err := v.Verify(context.Background(), target, 0, progress)
	d := time.Since(start)
	if err == nil {
		return res, nil, d
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Verify error is %T (%v), want *Error", err, err)
	}
	if res != nil {
		t.Errorf("Verify returned both a result and an error")
	}
	return nil, e, d
}

func wantClass(t *testing.T, e *Error, class, phase string) {
	t.Helper()
	if e == nil {
		t.Fatalf("Verify succeeded, want class %q", class)
	}
	if e.Class != class || (phase != "" && e.Phase != phase) {
		t.Fatalf("error class %q phase %q, want %q %q: %v (stderr %q)", e.Class, e.Phase, class, phase, e, e.StderrTail)
	}
	want := Suggestion(class)
	if class == ClassHTTPStatus {
		want = statusSuggestion(e.HTTPStatus, want) // the status's own advice
	}
	if e.Suggestion == "" || e.Suggestion != want {
		t.Errorf("suggestion %q, want the one of %q", e.Suggestion, class)
	}
	if class != ClassExited && e.ExitCode != -1 {
		t.Errorf("ExitCode = %d for class %q, want -1", e.ExitCode, class)
	}
}
