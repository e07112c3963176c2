package verify

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/discovery/oauth"
	"github.com/switchboard-dev/switchboard/store"
)

// Every state discovery flags a tool with is a flagged state of the
// store's (denied, never offered), and every failure class a status the
// store knows; discovery and the store never import each other, so this
// one place ties their words together.
func TestDiscoveryWordsMapToTheStore(t *testing.T) {
	for _, s := range discovery.ToolStates {
		if got, ok := toolStates[s]; !ok || !got.Flagged() || string(got) != string(s) {
			t.Errorf("discovery's %q maps to the store's %q (known %v); want the flagged state of that name", s, got, ok)
		}
	}
	want := map[string]store.Status{discovery.ClassTimeout: store.StatusTimeout, discovery.ClassCancelled: store.StatusCancelled,
		discovery.ClassAuth: store.StatusSignIn, discovery.ClassExited: store.StatusFailed, discovery.ClassNetwork: store.StatusFailed}
	for class, status := range want {
		if got := statusOf(&discovery.Error{Class: class}); got != status {
			t.Errorf("statusOf(%s) = %s; want %s", class, got, status)
		}
	}
}

// A finished job writes one line; a job still going, and the later event
// of its late warnings, write none.
func TestLog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	running := discovery.Job{ID: "j1", ServerID: "files", Status: discovery.JobRunning, StartedAt: start, Trigger: "manual"}
	done := running
	done.Status, done.FinishedAt, done.ToolCount = discovery.JobSuccess, start.Add(1234*time.Millisecond), 3
	late := done
	late.LateWarnings = []string{"a process was left behind"}
	failed := running
	failed.ServerID, failed.Status, failed.FinishedAt = "web", discovery.JobFailed, start.Add(2*time.Second)
	failed.Error = discovery.NewError(discovery.ClassNotFound, discovery.PhaseStarting, "command not found: nosuch")
	for _, j := range []discovery.Job{running, done, late, failed} {
		logJob(log, j)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("Log wrote %d lines; want 2 (the ends of two jobs):\n%s", len(lines), buf.String())
	}
	for i, want := range [][]string{
		{"level=INFO", `msg=verified`, "server=files", "outcome=success", "tools=3", "duration=1.234s", "trigger=manual"},
		{"level=WARN", `msg="verification did not succeed"`, "server=web", "outcome=failed", "tools=0", "duration=2s", "class=not_found", "phase=starting", `err="command not found: nosuch"`},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d = %s; want %s in it", i+1, lines[i], w)
			}
		}
	}
}

// What is stored and logged of a failure holds no OAuth credential a
// token endpoint's echo put in its message, though record has not the
// values to redact (issue 34 M5): the message, the sign-in problem and
// the log line keep what was said, the credentials taken out.
func TestFailureRedactsOAuthCredentials(t *testing.T) {
	const echo = `HTTP 400: invalid_grant body refresh_token=rt-4711&client_secret=cs%2F4712; fields {"refresh_token":"rt-4711","client_secret":"cs/4712"}; authorization Basic ZWNobzpjcyUyRjQ3MTI=`
	const want = `HTTP 400: invalid_grant body refresh_token=[redacted]&client_secret=[redacted]; fields {"refresh_token":"[redacted]","client_secret":"[redacted]"}; authorization Basic [redacted]`
	e := discovery.NewError(discovery.ClassAuth, discovery.PhaseInitializing, "refreshing the access token failed: "+echo)
	e.Auth, e.SignInProblem = &oauth.Challenge{Status: 401}, "discovery failed: "+echo
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	j := discovery.Job{ID: "j1", ServerID: "remote", Status: discovery.JobFailed, StartedAt: start, FinishedAt: start.Add(time.Second), Error: e}

	f := failureOf(j, e, start.Add(time.Second))
	if got := f.Error.Message; got != "refreshing the access token failed: "+want {
		t.Errorf("failureOf(…).Error.Message = %q; want %q", got, "refreshing the access token failed: "+want)
	}
	if got := f.Error.SignIn; got == nil || got.Problem != "discovery failed: "+want {
		t.Errorf("failureOf(…).Error.SignIn = %+v; want the problem %q", got, "discovery failed: "+want)
	}
	var buf bytes.Buffer
	logJob(slog.New(slog.NewTextHandler(&buf, nil)), j)
	for _, secret := range []string{"4711", "4712", "ZWNob"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("Log wrote %s; want no %q", buf.String(), secret)
		}
	}
	if !strings.Contains(buf.String(), "refresh_token=[redacted]") {
		t.Errorf("Log wrote %s; want the message, redacted", buf.String())
	}
}
