// These test what containment takes from Linux: /proc, the pid clock, run
// records with the boot id and pid namespace, the start-up sweep and the
// child subreaper.

package discovery

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNewSince checks the window of pids an escapee scan looks at: from
// the server's pid while nothing can have wrapped, everything otherwise;
// and that a scan with the window sees what a full scan sees among the
// server's processes.
func TestNewSince(t *testing.T) {
	p, err := startProcess(processConfig{Command: "sh", Args: []string{"-c", "sleep 30 & sleep 30 & cat"},
		Env: childEnv(os.Getenv, nil), StderrCap: 1024, Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop(100 * time.Millisecond)
	pid := p.pgid()
	// Unless the machine's pids wrapped round since the start (a busy
	// machine with a small pid_max), the window starts at the server.
	if last, _ := lastPid(); last >= pid {
		if got := p.newSince(100); got != pid {
			t.Errorf("newSince(100) = %d just after start; want the server's pid %d", got, pid)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(GroupMembers(pid)) < 4 && time.Now().Before(deadline) { // sh, two sleeps, cat
		time.Sleep(5 * time.Millisecond)
	}
	members := func(procs []procStat) []int {
		var out []int
		for _, ps := range procs {
			if ps.pgrp == pid {
				out = append(out, ps.pid)
			}
		}
		slices.Sort(out)
		return out
	}
	if all, window := members(scanProcs(nil)), members(scanProcs(p.newSince)); len(all) != 4 || !slices.Equal(all, window) {
		t.Errorf("group members: %v in a full scan, %v in the window; want the same 4", all, window)
	}

	forks := p.startForks
	p.startForks = forks - uint64(pidMax()) // as if the pid space went round since
	if got := p.newSince(100); got != 0 {
		t.Errorf("newSince after pid_max forks = %d; want 0 (all)", got)
	}
	p.startForks = 0 // the count could not be read at start
	if got := p.newSince(100); got != 0 {
		t.Errorf("newSince without a start count = %d; want 0 (all)", got)
	}
	p.startForks = forks
}

// TestStopLooksAgain: a process that leaves the group after the server's
// processes were looked at (here, as if after the tools were listed, see
// VerifyEarly) and drops the run marker is still found by stop, which
// looks again before anything exits, while its parent still leads back to
// the server.
func TestStopLooksAgain(t *testing.T) {
	gcfile := filepath.Join(t.TempDir(), "gc")
	p, err := startProcess(processConfig{Command: "sh",
		Args: []string{"-c", `read go; setsid env -i sleep 300 & echo $! > "$0"; exec cat >/dev/null`, gcfile},
		Env:  childEnv(os.Getenv, nil), StderrCap: 1024, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop(time.Second)
	if esc := p.escapees(); len(esc) != 0 {
		t.Fatalf("escapees() = %v before the server started any", esc)
	}
	if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	pid := readPid(t, gcfile)
	killAtEnd(t, pid)
	// Wait until it is sleep: out of the group, without the marker.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		ps, ok := readProcStat(pid)
		if ok && ps.pgrp != p.pgid() && !hasMarker(pid, p.marker) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not leave the group (%+v, %v)", pid, ps, ok)
		}
	}
	p.stop(time.Second)
	assertGroupGone(t, p.pgid())
	assertDead(t, pid, "the process that left the group after the last look")
	if killed, left := p.escapeReport(); !slices.Equal(killed, []int{pid}) || len(left) != 0 {
		t.Errorf("escapeReport() = %v, %v; want [%d] killed", killed, left, pid)
	}
}

// TestEscapeesIgnoreOlderGroup: processes in a group with the server's
// group id that started before the server are not the server's (once a
// group is gone, its id may be taken by another), and neither are their
// children outside it.
func TestEscapeesIgnoreOlderGroup(t *testing.T) {
	gcfile := filepath.Join(t.TempDir(), "gc")
	stranger := exec.Command("sh", "-c", `setsid sleep 300 & echo $! > "$0"; exec sleep 300`, gcfile)
	stranger.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-stranger.Process.Pid, syscall.SIGKILL)
		stranger.Wait()
	}()
	pid := readPid(t, gcfile)
	killAtEnd(t, pid)
	var leader, child procStat
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var ok1, ok2 bool
		leader, ok1 = readProcStat(stranger.Process.Pid)
		child, ok2 = readProcStat(pid)
		if ok1 && ok2 && child.pgrp == pid && child.ppid == leader.pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stranger's child did not leave its group: %+v %+v", leader, child)
		}
	}
	// A server whose pid, and so group id, is the stranger's.
	server := func(start uint64) *process {
		return &process{cmd: &exec.Cmd{Process: stranger.Process}, marker: []byte(RunMarkerVar + "=none\x00"),
			startTicks: start, escaped: map[int]uint64{}}
	}
	if got := server(leader.start).escapees(); !slices.Equal(got, []int{pid}) {
		t.Fatalf("escapees() of the group's own server = %v; want [%d] (the test is void)", got, pid)
	}
	if got := server(max(leader.start, child.start) + 1).escapees(); len(got) != 0 {
		t.Errorf("escapees() of a server started after the group = %v; want none", got)
	}
}

// killAtEndExactly kills pid when the test ends, if it is still the
// process it is now.
func killAtEndExactly(t *testing.T, pid int) {
	if ps, ok := readProcStat(pid); ok {
		t.Cleanup(func() { killExactly(pid, ps.start) })
	}
}

// runFiles returns the run records in c's directory.
func runFiles(t *testing.T, c *Containment) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(c.dir, runPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestRunRecorded: a run is written down before its server starts, with
// the server's marker, group and start time once it runs, and crossed
// off when it is stopped, or when it fails to start.
func TestRunRecorded(t *testing.T) {
	c, err := Contain(filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if fi, err := os.Stat(c.dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("run records directory: %v, %v; want mode 0700", fi, err)
	}
	p, err := startProcess(processConfig{Command: "cat", Env: childEnv(os.Getenv, nil), StderrCap: 1024, Grace: time.Second, Runs: c})
	if err != nil {
		t.Fatal(err)
	}
	files := runFiles(t, c)
	if len(files) != 1 {
		p.stop(time.Second)
		t.Fatalf("run records while a server runs: %q; want 1", files)
	}
	got, ok := readRun(files[0])
	want := runInfo{boot: bootID(), pidNS: pidNamespace(), marker: strings.TrimSuffix(strings.TrimPrefix(string(p.marker), RunMarkerVar+"="), "\x00"),
		pgid: p.pgid(), start: p.startTicks, forks: got.forks, inUse: got.inUse}
	if !ok || got != want || got.boot == "" || got.start == 0 || got.forks == 0 || got.inUse == 0 || got.forks > p.startForks {
		t.Errorf("readRun(%s) = %+v, %v; want %+v with a pid clock read before the start (forks then %d)", files[0], got, ok, want, p.startForks)
	}
	// Another user's record is not read: it would have this process kill
	// what it names (issue 34, M4).
	if os.Getuid() == 0 {
		foreign := filepath.Join(t.TempDir(), filepath.Base(files[0]))
		data, _ := os.ReadFile(files[0])
		os.WriteFile(foreign, data, 0o600)
		os.Chown(foreign, 65534, 65534)
		if _, ok := readRun(foreign); ok {
			t.Errorf("readRun of another user's record = ok; want it ignored")
		}
	}
	p.stop(time.Second)
	if files := runFiles(t, c); len(files) != 0 {
		t.Errorf("run records after stop: %q; want none", files)
	}

	// A file the kernel will not run: the start fails after the record
	// was written.
	bad := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(bad, []byte("\x7fELF not really"), 0o755)
	if _, err := startProcess(processConfig{Command: bad, Env: childEnv(os.Getenv, nil), StderrCap: 1024, Grace: time.Second, Runs: c}); err == nil {
		t.Fatal("startProcess of a bad executable succeeded")
	}
	if files := runFiles(t, c); len(files) != 0 {
		t.Errorf("run records after a failed start: %q; want none", files)
	}
}

// TestSweepStopsWhatACrashLeft: the start-up sweep stops what is left of
// a run recorded and never crossed off, as a crash leaves it: the server
// is dead; a process of its group without the run marker, one that left
// the group with the marker, and that one's child without the marker
// live on. It spares processes in groups the records name but that are
// not (or may not be) the servers' groups: one whose leader started at
// another time (its pid was reused), one whose leader is gone and whose
// pid the kernel may have handed out again since, one recorded in
// another boot.
func TestSweepStopsWhatACrashLeft(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sb.db")
	c, err := Contain(db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	start := func(marker, script string) *exec.Cmd {
		t.Helper()
		cmd := exec.Command("sh", "-c", script, dir)
		cmd.Env = childEnv(os.Getenv, nil)
		if marker != "" {
			cmd.Env = append(cmd.Env, RunMarkerVar+"="+marker)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAtEndExactly(t, cmd.Process.Pid)
		return cmd
	}
	pidOf := func(name string) int {
		pid := readPid(t, filepath.Join(dir, name))
		killAtEndExactly(t, pid)
		return pid
	}
	record := func(c *Containment, marker string, pgid int, start, forks, inUse uint64) {
		t.Helper()
		r, err := c.begin(marker)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.started(pgid, start, forks, inUse); err != nil {
			t.Fatal(err)
		}
	}

	// The crashed run.
	const marker = "0123456789abcdef"
	forks, inUse := pidClock()
	server := start(marker, `env -i sleep 300 & echo $! > "$0/member"; `+
		`setsid sh -c 'env -i sleep 300 & echo $! > "$0/grandchild"; exec sleep 300' "$0" & echo $! > "$0/escapee"; exec sleep 300`)
	serverStat, _ := readProcStat(server.Process.Pid)
	record(c, marker, server.Process.Pid, serverStat.start, forks, inUse)
	member, escapee, grandchild := pidOf("member"), pidOf("escapee"), pidOf("grandchild")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		m, _ := readProcStat(member)
		e, _ := readProcStat(escapee)
		g, _ := readProcStat(grandchild)
		if m.pgrp == server.Process.Pid && e.pgrp == escapee && g.ppid == escapee && !hasMarker(member, []byte(RunMarkerVar)) && hasMarker(escapee, []byte(RunMarkerVar+"="+marker+"\x00")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the crashed run's processes are not in place: %+v %+v %+v", m, e, g)
		}
	}
	syscall.Kill(server.Process.Pid, syscall.SIGKILL)
	server.Wait()

	// A group whose leader started after the recorded server: the pid
	// went to another process.
	reused := start("", `sleep 300 & exec sleep 300`)
	reusedStat, _ := readProcStat(reused.Process.Pid)
	record(c, "1111111111111111", reused.Process.Pid, reusedStat.start-1, forks, inUse)
	// A group whose leader is gone, recorded as if all pids had been in
	// use: its pid may have been handed out again since.
	headless := start("", `sleep 300 & echo $! > "$0/headless"`)
	headless.Wait()
	headlessMember := pidOf("headless")
	record(c, "2222222222222222", headless.Process.Pid, 0, forks, uint64(pidMax()))
	// A group recorded in another boot: start times and pids then say
	// nothing about processes now.
	elsewhere := start("", `exec sleep 300`)
	elsewhereStat, _ := readProcStat(elsewhere.Process.Pid)
	other := *c
	other.boot = "another-boot"
	record(&other, "3333333333333333", elsewhere.Process.Pid, elsewhereStat.start, forks, inUse)

	swept, err := c.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	want := []int{member, escapee, grandchild}
	slices.Sort(want)
	if swept.Runs != 4 || !slices.Equal(swept.Killed, want) || len(swept.Left) != 0 {
		t.Errorf("Sweep() = %+v; want 4 runs, killed %v, none left", swept, want)
	}
	assertDead(t, member, "the member of the crashed run's group")
	assertDead(t, escapee, "the crashed run's process outside the group")
	assertDead(t, grandchild, "the child of that process")
	for what, pid := range map[string]int{"a group leader with a reused pid": reused.Process.Pid,
		"a member of a group whose pid may have been reused": headlessMember, "a process recorded in another boot": elsewhere.Process.Pid} {
		if !alive(pid) {
			t.Errorf("%s (pid %d) was killed", what, pid)
		}
	}
	if files := runFiles(t, c); len(files) != 0 {
		t.Errorf("run records after the sweep: %q; want none", files)
	}
	syscall.Kill(-reused.Process.Pid, syscall.SIGKILL)
	reused.Wait()
	syscall.Kill(elsewhere.Process.Pid, syscall.SIGKILL)
	elsewhere.Wait()
}

// TestReaperReapsOnlyAdopted: as a child subreaper this process adopts an
// orphan that left the group (setsid) and reaps it once it dies, by pid;
// it leaves to their own Wait a zombie server started by startChild and
// a zombie child in its own process group (such as the store's check),
// both already waiting when the reaper passes.
func TestReaperReapsOnlyAdopted(t *testing.T) {
	release, err := becomeReaper()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	zombie := func(what string, pid int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			switch state := procState(pid); {
			case state == "Z":
				return
			case state == "":
				t.Fatalf("%s (pid %d) is gone before its Wait: someone else reaped it", what, pid)
			case time.Now().After(deadline):
				t.Fatalf("%s (pid %d) did not exit (state %q)", what, pid, state)
			}
		}
	}

	plain := exec.Command("sh", "-c", "exit 7")
	if err := plain.Start(); err != nil {
		t.Fatal(err)
	}
	server := exec.Command("sh", "-c", "exit 5")
	server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := startChild(server); err != nil {
		t.Fatal(err)
	}
	gcfile := filepath.Join(t.TempDir(), "orphan")
	parent := exec.Command("sh", "-c", `setsid sleep 300 & echo $! > "$0"`, gcfile)
	parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := startChild(parent); err != nil {
		t.Fatal(err)
	}
	orphan := readPid(t, gcfile)
	killAtEndExactly(t, orphan)
	if err := parent.Wait(); err != nil {
		t.Fatalf("Wait of the orphan's parent, a server: %v", err)
	}
	childReaped(parent.Process.Pid)
	if ps, ok := readProcStat(orphan); !ok || ps.ppid != os.Getpid() {
		t.Fatalf("orphan %d: %+v, %v; want it adopted by this process %d", orphan, ps, ok, os.Getpid())
	}

	zombie("the child in this process's group", plain.Process.Pid)
	zombie("the server", server.Process.Pid)
	syscall.Kill(orphan, syscall.SIGKILL)
	reapAdopted()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat("/proc/" + strconv.Itoa(orphan)); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("adopted orphan %d not reaped (state %q)", orphan, procState(orphan))
		}
		reapAdopted()
	}
	if err := plain.Wait(); plain.ProcessState == nil || plain.ProcessState.ExitCode() != 7 {
		t.Errorf("child in this process's group: Wait() = %v, exit code %v; want 7", err, plain.ProcessState)
	}
	err = server.Wait()
	childReaped(server.Process.Pid)
	if server.ProcessState == nil || server.ProcessState.ExitCode() != 5 {
		t.Errorf("server: Wait() = %v, exit code %v; want 5", err, server.ProcessState)
	}
}
