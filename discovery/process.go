package discovery

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// childEnv builds a child's environment from the allow-list, read through
// getenv, plus the server's own variables, which win.
func childEnv(getenv func(string) string, own map[string]string) []string {
	env := map[string]string{}
	for _, k := range AllowedEnv {
		if v := getenv(k); v != "" {
			env[k] = v
		}
	}
	for k, v := range own {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

func isNotFound(err error) bool { return errors.Is(err, exec.ErrNotFound) }

// RunMarkerVar names the environment variable that marks every process of
// one verification with a random value. Children inherit it, also those
// that leave the process group (setsid, setpgid) and are then orphaned,
// which is how stop still finds them, and, the run's value being written
// down beside the database (see Containment), how the next start finds
// them after a crash.
const RunMarkerVar = "SWITCHBOARD_RUN"

// process is a stdio server running in its own process group. Its stdin
// and stdout are pipes we own; stderr goes to a bounded tail.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // write end of the child's stdin
	stdout *os.File // read end of the child's stdout
	stderr *tail
	// marker is RunMarkerVar=value as /proc/<pid>/environ holds it.
	marker []byte
	// startTicks is the child's start time in clock ticks after boot;
	// only processes started since can carry its marker.
	startTicks uint64
	// startForks is the kernel's count of processes created since boot,
	// read just after the child started (0 if unknown); see newSince.
	startForks uint64

	waitDone chan struct{} // closed once cmd.Wait has returned
	waitErr  error
	stopOnce sync.Once

	killEscapee func(pid int, sig syscall.Signal) error
	// isolation says what startIsolated got (see Isolation).
	isolation string
	// job is the Windows Job Object of the process tree (0 elsewhere).
	job uintptr
	// record is the run's record beside the database (nil without a
	// Containment), removed once stop is done.
	record *runRecord

	mu      sync.Mutex
	escaped map[int]uint64 // pid → start time of processes seen outside the group
	killed  []int          // escapees stop killed
	left    []int          // escapees stop could not kill
}

// processConfig says how to start and stop a process.
type processConfig struct {
	Command   string
	Args      []string
	Env       []string
	Dir       string
	StderrCap int
	// Grace is how long a process gets to exit after stdin closes, and
	// again after SIGTERM, before the group is SIGKILLed.
	Grace time.Duration
	// MemoryBytes, if positive, is the child's RLIMIT_DATA.
	MemoryBytes int64
	// KillEscapee signals a process that left the group; nil is
	// syscall.Kill (Linux and macOS). Tests use it to stand for a kernel
	// that refuses.
	KillEscapee func(pid int, sig syscall.Signal) error
	// Runs, if set, records the run before the process starts, so that
	// what is left of it after a crash is stopped at the next start.
	Runs *Containment
}

// startProcess starts the command isolated as this operating system
// allows (see startIsolated and Isolation). The returned process must be
// stopped with stop, which always reaps it.
func startProcess(pc processConfig) (*process, error) {
	path, err := lookPath(pc.Command, pc.Env)
	if err != nil {
		return nil, err
	}
	if pc.Dir != "" {
		if fi, err := os.Stat(pc.Dir); err != nil {
			return nil, fmt.Errorf("working directory %q: %w", pc.Dir, err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("working directory %q is not a directory: %w", pc.Dir, os.ErrNotExist)
		}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	mark := make([]byte, 8)
	rand.Read(mark)
	markValue := hex.EncodeToString(mark)
	marker := RunMarkerVar + "=" + markValue
	// Written down before the process exists: from its first instruction
	// on, a crash of ours leaves something the next start must find.
	record, err := pc.Runs.begin(markValue)
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	forks, inUse := pidClock()
	cmd := exec.Command(path, pc.Args...)
	cmd.Args[0] = pc.Command
	// Appended last: exec keeps the last of duplicate variables, so the
	// server's own env cannot replace the marker.
	cmd.Env = append(slices.Clip(pc.Env), marker)
	cmd.Dir = pc.Dir
	cmd.Stdin = inR
	cmd.Stdout = outW
	p := &process{cmd: cmd, stdin: inW, stdout: outR, stderr: newTail(pc.StderrCap), marker: append([]byte(marker), 0),
		waitDone: make(chan struct{}), escaped: map[int]uint64{}, killEscapee: pc.KillEscapee, record: record}
	cmd.Stderr = p.stderr
	// WaitDelay bounds how long Wait waits for the stderr copy after the
	// process exits, in case a grandchild still holds the pipe.
	cmd.WaitDelay = 500 * time.Millisecond
	err = p.startIsolated(path, pc)
	inR.Close()
	outW.Close()
	if err == nil {
		err = record.started(cmd.Process.Pid, p.startTicks, forks, inUse)
		if err != nil {
			// Fail closed: a server is never left running unrecorded.
			p.killAll()
			cmd.Wait()
			childReaped(cmd.Process.Pid)
			p.release()
		}
	}
	if err != nil {
		inW.Close()
		outR.Close()
		record.end()
		return nil, err
	}
	p.startForks, _ = forkCount()
	go func() {
		p.waitErr = cmd.Wait()
		childReaped(cmd.Process.Pid)
		// The server is gone. Whatever is left of its group (e.g. a
		// grandchild that holds its stdout) would keep the read loop,
		// and so the verification, waiting until a deadline: end it.
		p.killAll()
		close(p.waitDone)
	}()
	return p, nil
}

// exited reports whether the direct child has exited, and its exit code
// (-1 if it was killed by a signal).
func (p *process) exited() (bool, int) {
	select {
	case <-p.waitDone:
		return true, p.cmd.ProcessState.ExitCode()
	default:
		return false, 0
	}
}

// waitExit waits up to d for the direct child to exit.
func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.waitDone:
		return true
	case <-t.C:
		return false
	}
}

// stop ends the process and everything in its group: close stdin (and
// stdout, so a server blocked writing to us fails instead of waiting for
// a signal), wait up to grace; ask the group to terminate (SIGTERM, where
// there is one), wait up to grace; kill the group. Whatever the child
// did, the group is killed at the end (catching grandchildren that
// outlived it), the child is reaped, and stop returns once no process of
// the group is left or a second has passed. Processes that left the
// group are looked for before anything exits (while their parents still
// lead back to the child) and killed once the group is gone; see
// escapees. That look is always taken, also when the caller looked just
// before: a process may have left the group since.
func (p *process) stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		p.escapees()
		p.stdin.Close()
		p.stdout.Close()
		if !p.waitExit(grace) {
			if !p.terminate() || !p.waitExit(grace) {
				p.killAll()
				<-p.waitDone
			}
		}
		p.killAll()
		deadline := time.Now().Add(time.Second)
		for !p.groupGone() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		p.killEscapees()
		p.release()
		p.record.end()
	})
}

// Containment keeps the processes of one database's servers from
// outliving a crash of Switchboard. Every run is written down in a
// directory beside the database before its server starts (its run
// marker, and once it started its process group and start time), and
// crossed off when stop is done; a record still there at the next start
// is a run a crash cut short, and Sweep stops whatever is left of it. On
// Linux, while a Containment is open this process is also a child
// subreaper: the orphaned descendants of its servers become its children,
// not init's, and it reaps them.
type Containment struct {
	dir       string
	boot      string // boot id; start times count from the boot
	pidNS     string // pid namespace; pids are numbers in it
	release   func()
	subreaper error // why this process is no child subreaper, if it is not
}

// Contain opens the run records of the database at dbPath, in the
// directory dbPath+".runs" (made if missing, closed to others), and
// makes this process a child subreaper where the OS has them (see
// Subreaper). Close ends it. Call Sweep before the first server starts.
func Contain(dbPath string) (*Containment, error) {
	dir := dbPath + ".runs"
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("run records: %w", err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("run records: %s is not a directory", dir)
	} else if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("run records: %w", err)
		}
	}
	c := &Containment{dir: dir, boot: bootID(), pidNS: pidNamespace(), release: func() {}}
	if release, err := becomeReaper(); err != nil {
		c.subreaper = fmt.Errorf("cannot become a child subreaper: %w", err)
	} else {
		c.release = release
	}
	return c, nil
}

// Subreaper returns why this process could not become a child subreaper
// (a kernel or a seccomp policy that refuses), or nil if it is one.
// Without it, orphans go to init while Switchboard runs, and only Sweep
// at the next start finds those that outlive their run.
func (c *Containment) Subreaper() error { return c.subreaper }

// Close stops being a child subreaper (once no other Containment is
// open), after reaping the orphans adopted so far. The records stay.
func (c *Containment) Close() error {
	c.release()
	return nil
}

// Swept is what Sweep found of the runs a crash cut short.
type Swept struct {
	// Runs is how many runs were recorded and never crossed off.
	Runs int
	// Killed are the processes of those runs that Sweep stopped; Left
	// those it could not (another user's, or still there after 2 s).
	Killed, Left []int
}

// Sweep stops what is left of the runs recorded and never crossed off,
// and removes their records. What is left of a run: the processes that
// carry its marker, the members of its server's process group (only
// while that group cannot be another's, see groupIsRun), and their
// descendants. It must run before this process starts servers with the
// Containment.
func (c *Containment) Sweep() (Swept, error) {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return Swept{}, fmt.Errorf("run records: %w", err)
	}
	var runs []runInfo
	for _, e := range entries {
		if r, ok := readRun(filepath.Join(c.dir, e.Name())); ok {
			runs = append(runs, r)
		}
	}
	var sw Swept
	if len(runs) > 0 {
		sw.Runs = len(runs)
		sw.Killed, sw.Left = sweepRuns(runs, c.boot, c.pidNS)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), runPrefix) {
			os.Remove(filepath.Join(c.dir, e.Name()))
		}
	}
	return sw, nil
}

// runPrefix starts the name of every run record.
const runPrefix = "run-"

// runRecord is the record of one run while it runs: "boot ID", "pidns
// NS", "marker VALUE" lines, written before the server starts, and
// "group PGID START FORKS INUSE" once it started. It is not synced: a
// crash of Switchboard leaves it in the page cache, and a crash of the
// machine leaves no process to find.
type runRecord struct {
	f    *os.File // open until the group line is written
	path string
}

// begin writes the record of a run whose marker has value; a nil
// Containment records nothing.
func (c *Containment) begin(value string) (*runRecord, error) {
	if c == nil {
		return nil, nil
	}
	path := filepath.Join(c.dir, runPrefix+value)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("record the run: %w", err)
	}
	if _, err := fmt.Fprintf(f, "boot %s\npidns %s\nmarker %s\n", c.boot, c.pidNS, value); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("record the run: %w", err)
	}
	return &runRecord{f: f, path: path}, nil
}

// started adds the server's process group, its start time and the pid
// clock read before it started (see groupIsRun).
func (r *runRecord) started(pgid int, start, forks, inUse uint64) error {
	if r == nil {
		return nil
	}
	_, err := fmt.Fprintf(r.f, "group %d %d %d %d\n", pgid, start, forks, inUse)
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	r.f = nil
	if err != nil {
		return fmt.Errorf("record the run: %w", err)
	}
	return nil
}

// end crosses the run off.
func (r *runRecord) end() {
	if r == nil {
		return
	}
	if r.f != nil {
		r.f.Close()
	}
	os.Remove(r.path)
}

// runInfo is a run record as read back.
type runInfo struct {
	boot, pidNS, marker string
	pgid                int
	start, forks, inUse uint64
}

// readRun reads a run record; ok is false if it is not one.
func readRun(path string) (runInfo, bool) {
	if !strings.HasPrefix(filepath.Base(path), runPrefix) {
		return runInfo{}, false
	}
	f, err := os.Open(path)
	if err != nil {
		return runInfo{}, false
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, 4096))
	var r runInfo
	for line := range strings.Lines(string(data)) {
		key, value, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch key {
		case "boot":
			r.boot = value
		case "pidns":
			r.pidNS = value
		case "marker":
			r.marker = value
		case "group":
			var pgid int
			var start, forks, inUse uint64
			if n, _ := fmt.Sscanf(value, "%d %d %d %d", &pgid, &start, &forks, &inUse); n == 4 {
				r.pgid, r.start, r.forks, r.inUse = pgid, start, forks, inUse
			}
		}
	}
	return r, r.marker != ""
}

// Contained has the Verifier record the runs of its stdio servers with c
// (see Containment). It returns v.
func (v *Verifier) Contained(c *Containment) *Verifier {
	v.runs = c
	return v
}

// escapeReport returns the escapees stop killed and those it could not.
func (p *process) escapeReport() (killed, left []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.killed), slices.Clone(p.left)
}

// tail keeps the last cap bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
	cap int
	cut bool
}

func newTail(n int) *tail { return &tail{cap: n} }

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	if len(b) >= t.cap {
		b = b[len(b)-t.cap:]
		t.buf = t.buf[:0]
		t.cut = true
	} else if over := len(t.buf) + len(b) - t.cap; over > 0 {
		t.buf = t.buf[over:]
		t.cut = true
	}
	t.buf = append(t.buf, b...)
	return n, nil
}

// String returns the kept bytes, starting at a line boundary when earlier
// output was dropped.
func (t *tail) String() string {
	s, _ := t.text()
	return s
}

// text is String, and whether it starts in the middle of a line (output
// was dropped, and no line break was kept to start after).
func (t *tail) text() (s string, partial bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s = string(t.buf)
	if t.cut {
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			return s[i+1:], false
		}
		return s, true
	}
	return s, false
}

// minSecretPart is the shortest end of a secret that redacted removes
// from the start of a tail that starts in the middle of a line: shorter
// ends tell next to nothing, and would be found everywhere.
const minSecretPart = 4

// redacted is String with the secrets redacted, also the end of one whose
// start was dropped with the output before the tail.
func (t *tail) redacted(secrets []string) string {
	s, partial := t.text()
	s = redact(s, secrets)
	if !partial {
		return s
	}
	for _, v := range secrets {
		for k := len(v) - 1; k >= minSecretPart; k-- {
			if strings.HasPrefix(s, v[len(v)-k:]) {
				return "[redacted]" + s[k:]
			}
		}
	}
	return s
}
