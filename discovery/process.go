package discovery

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
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
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

func isNotFound(err error) bool { return errors.Is(err, exec.ErrNotFound) }

// wallError: a run's walls could not be made ready (a profile that does
// not check out, a temp dir or proxy that could not be made).
type wallError struct{ err error }

func (e *wallError) Error() string { return "sandbox: " + e.err.Error() }
func (e *wallError) Unwrap() error { return e.err }

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
	// isolation says what startIsolated got (see Isolation); tier is the
	// walls the launcher built.
	isolation string
	tier      sandbox.Tier
	// walls are the run's walls made ready by the parent (temp dir,
	// egress proxy, cgroup), closed once the process is stopped; nil for
	// a run without a profile.
	walls *sandbox.Prepared
	// osProcess is what one OS keeps of the process (the Windows Job
	// Object, see process_windows.go).
	//lint:ignore U1000 empty but on Windows
	osProcess
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
	// Sandbox is the server's permission profile; nil runs it with the
	// limits alone (no walls), which the tier says.
	Sandbox *sandbox.Profile
	// Walls is what the walls know of Switchboard (its database, port).
	Walls sandbox.Config
}

// plan returns the plan of a run without walls: the limits alone.
func unwalled(memory int64) *sandbox.Plan {
	return &sandbox.Plan{Off: true, MemoryBytes: memory}
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
	var walls *sandbox.Prepared
	if pc.Sandbox != nil {
		walls, err = sandbox.Prepare(*pc.Sandbox, sandbox.Run{Path: path, Args: pc.Args, Cwd: pc.Dir}, pc.MemoryBytes, pc.Walls, sandbox.Probe(pc.Walls))
		if err != nil {
			return nil, &wallError{err}
		}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		walls.Close()
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		walls.Close()
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
		walls.Close()
		return nil, err
	}
	forks, inUse := pidClock()
	cmd := exec.Command(path, pc.Args...)
	cmd.Args[0] = pc.Command
	// Appended last: exec keeps the last of duplicate variables, so the
	// server's own env cannot replace the marker.
	cmd.Env = slices.Clip(pc.Env)
	if walls != nil {
		cmd.Env = append(cmd.Env, walls.Env...)
	}
	cmd.Env = append(cmd.Env, marker)
	cmd.Dir = pc.Dir
	cmd.Stdin = inR
	cmd.Stdout = outW
	p := &process{cmd: cmd, stdin: inW, stdout: outR, stderr: newTail(pc.StderrCap), marker: append([]byte(marker), 0),
		waitDone: make(chan struct{}), escaped: map[int]uint64{}, killEscapee: pc.KillEscapee, record: record, walls: walls}
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
		walls.Close()
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
		p.walls.Close()
		p.record.end()
	})
}

// escapeReport returns the escapees stop killed and those it could not.
func (p *process) escapeReport() (killed, left []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.killed), slices.Clone(p.left)
}
