// The process the server starts on its way out is found by its run marker,
// read from /proc.

package discovery

import (
	"fmt"
	"os"
	"slices"
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

	want := fmt.Sprintf("the server started background processes that left its process group (pid %d); they were killed when it stopped", pid)
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.finishes[j.ID]; len(f) != 1 || f[0].res == nil || slices.Contains(f[0].res.Warnings, want) {
		t.Fatalf("Finish calls %+v: want one, with a result recorded before the stop", f)
	}
	if late := l.late[j.ID]; len(late) != 1 || !slices.Equal(late[0], []string{want}) {
		t.Errorf("Late got %q, want once [%q]", late, want)
	}
	if got, _ := r.Job(j.ID); !slices.Equal(got.LateWarnings, []string{want}) {
		t.Errorf("Job(%s).LateWarnings = %q, want [%q]", j.ID, got.LateWarnings, want)
	}
	if ev := l.events[j.ID]; !slices.Equal(ev[len(ev)-1].LateWarnings, []string{want}) {
		t.Errorf("last event %+v does not show the late warning", ev[len(ev)-1])
	}
}
