package discovery

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// AllowedEnv lists the variables of Switchboard's own environment that a
// child may inherit. Everything else, including Switchboard's token, stays
// out; the server's own env is added on top.
var AllowedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "TMPDIR"}

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

// lookPath resolves command against the PATH the child will get, not
// Switchboard's own.
func lookPath(command string, env []string) (string, error) {
	if strings.Contains(command, "/") {
		fi, err := os.Stat(command)
		if err != nil {
			return "", fmt.Errorf("command %q: %w", command, err)
		}
		if fi.IsDir() {
			return "", fmt.Errorf("command %q is a directory: %w", command, syscall.EISDIR)
		}
		if fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("command %q is not executable: %w", command, os.ErrPermission)
		}
		return command, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, command)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH %q: %w", command, path, exec.ErrNotFound)
}

func isNotFound(err error) bool { return errors.Is(err, exec.ErrNotFound) }

// process is a stdio server running in its own process group. Its stdin
// and stdout are pipes we own; stderr goes to a bounded tail.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // write end of the child's stdin
	stdout *os.File // read end of the child's stdout
	stderr *tail

	waitDone chan struct{} // closed once cmd.Wait has returned
	waitErr  error
	stopOnce sync.Once
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
}

// startProcess starts the command in a new process group. The returned
// process must be stopped with stop, which always reaps it.
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
	cmd := exec.Command(path, pc.Args...)
	cmd.Args[0] = pc.Command
	cmd.Env = pc.Env
	cmd.Dir = pc.Dir
	cmd.Stdin = inR
	cmd.Stdout = outW
	p := &process{cmd: cmd, stdin: inW, stdout: outR, stderr: newTail(pc.StderrCap), waitDone: make(chan struct{})}
	cmd.Stderr = p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// WaitDelay bounds how long Wait waits for the stderr copy after the
	// process exits, in case a grandchild still holds the pipe.
	cmd.WaitDelay = 500 * time.Millisecond
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	go func() {
		p.waitErr = cmd.Wait()
		// The server is gone. Whatever is left of its group (e.g. a
		// grandchild that holds its stdout) would keep the read loop,
		// and so the verification, waiting until a deadline: end it.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		close(p.waitDone)
	}()
	return p, nil
}

// pgid is the process group id, which equals the child's pid.
func (p *process) pgid() int { return p.cmd.Process.Pid }

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

// stop ends the process and everything in its group: close stdin, wait
// up to grace; SIGTERM the group, wait up to grace; SIGKILL the group.
// Whatever the child did, the group is SIGKILLed at the end (catching
// grandchildren that outlived it), the child is reaped, and stop returns
// once no process of the group is left or a second has passed.
func (p *process) stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		p.stdin.Close()
		if !p.waitExit(grace) {
			syscall.Kill(-p.pgid(), syscall.SIGTERM)
			if !p.waitExit(grace) {
				syscall.Kill(-p.pgid(), syscall.SIGKILL)
				<-p.waitDone
			}
		}
		syscall.Kill(-p.pgid(), syscall.SIGKILL)
		p.stdout.Close()
		deadline := time.Now().Add(time.Second)
		for !groupGone(p.pgid()) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// groupGone reports whether no live process is left in the group. The
// cheap check comes first: once the group is empty (the usual case, the
// child reaped), kill(-pgid, 0) fails with ESRCH; only when something is
// left, zombies included, is /proc read to tell the living from zombies.
func groupGone(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	return len(GroupMembers(pgid)) == 0
}

// GroupMembers returns the pids of live processes (not zombies) in the
// process group, read from /proc.
func GroupMembers(pgid int) []int {
	return LiveProcesses(func(_, pgrp int) bool { return pgrp == pgid })
}

// LiveProcesses returns the pids of live processes (not zombies) whose
// parent pid and process group match, read from /proc.
func LiveProcesses(match func(ppid, pgrp int) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses and may
		// contain spaces: state ppid pgrp ...
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		if match(ppid, pgrp) {
			pids = append(pids, pid)
		}
	}
	return pids
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
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	if t.cut {
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			s = s[i+1:]
		}
	}
	return s
}
