// The process the server starts on its way out is found by its run marker,
// read from /proc.

package discovery

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRunnerEscapeeFoundWhileStopping is hostile #9 through the runner,
// where a success is recorded before the server is stopped: the server
// starts its background process only on the way out, when its stdin
// closes, so only the stop finds it. The warning still reaches the job
// and Late, and the process is killed.
func TestRunnerEscapeeFoundWhileStopping(t *testing.T) {
	l := newRunLog()
	r := NewRunner(NewVerifier(Limits{}, nil), l.config(1))
	defer r.Close()
	// The fixture's stderr goes to a file, where its report of the pid
	// is still there after the stop.
	target, pidfile := shTarget(t, `exec "$@" 2>"$0.err"`, fixture, "-mode", "setsid-on-exit", "-tools", "2")
	j := submit(t, r, Request{ServerID: "escapes-late", ConfigHash: "h", Target: target})
	done := l.waitDone(t, j.ID)
	if done.Status != JobSuccess || done.ToolCount != 2 {
		t.Fatalf("job %+v", done)
	}
	r.Close() // the server is stopped
	assertGroupGone(t, readPid(t, pidfile))
	stderr, err := os.ReadFile(pidfile + ".err")
	if err != nil {
		t.Fatal(err)
	}
	pid := reportedPid(t, string(stderr), "background process pid")
	killAtEnd(t, pid)
	assertDead(t, pid, "the process started on the way out")

	// The verification ran the server twice (the plain listing and the
	// one declaring every feature, see features.go): each left a process,
	// and the stderr file holds the report of the one that wrote last.
	late := regexp.MustCompile(`^the server started background processes that left its process group \(pid (\d+), (\d+)\); they were killed when it stopped$`)
	isWant := func(w []string) bool {
		m := late.FindStringSubmatch(strings.Join(w, "|"))
		return m != nil && (m[1] == strconv.Itoa(pid) || m[2] == strconv.Itoa(pid))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.finishes[j.ID]; len(f) != 1 || f[0].res == nil || slices.ContainsFunc(f[0].res.Warnings, func(w string) bool { return late.MatchString(w) }) {
		t.Fatalf("Finish calls %+v: want one, with a result recorded before the stop", f)
	}
	if got := l.late[j.ID]; len(got) != 1 || !isWant(got[0]) {
		t.Errorf("Late got %q, want once one naming pid %d", got, pid)
	}
	if got, _ := r.Job(j.ID); !isWant(got.LateWarnings) {
		t.Errorf("Job(%s).LateWarnings = %q, want one naming pid %d", j.ID, got.LateWarnings, pid)
	}
	if ev := l.events[j.ID]; !isWant(ev[len(ev)-1].LateWarnings) {
		t.Errorf("last event %+v does not show the late warning", ev[len(ev)-1])
	}
}
