package discovery

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
)

// On Windows a server runs in a Job Object of its own, with the whole
// process tree in it: the job kills every process in it when its last
// handle closes (when the server is stopped, and when Switchboard dies
// in any way), nothing may break away from it, and the limits are the
// job's: memory per process, and how many processes at once. The
// launcher (this program run again) is put in the job before it starts
// the server, so no process of the server ever runs outside it; with the
// walls on it starts the server with a restricted low-integrity token
// (see runLauncher and sandbox.PrepareWindows). Children inherit no
// handles but stdin, stdout and stderr.

// AllowedEnv lists the variables of Switchboard's own environment that a
// child may inherit: what Windows programs need to run (the system
// directories, the user's profile and application data, PATH and
// PATHEXT), never Switchboard's token. The server's own env is added on
// top.
var AllowedEnv = []string{
	"APPDATA", "COMSPEC", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
	"PROGRAMDATA", "PROGRAMFILES", "PROGRAMFILES(X86)", "SYSTEMDRIVE", "SYSTEMROOT",
	"TEMP", "TMP", "USERNAME", "USERPROFILE", "WINDIR",
}

// createNoWindow keeps a console server from opening a window.
const createNoWindow = 0x08000000

// startIsolated starts the launcher for the program at path in a new
// Job Object holding the plan's limits, and puts it in the job; the
// launcher builds the walls and starts the server once it is in (see
// runLauncher and launch). It says in p.isolation what it got: the tier
// the launcher reported, then the job.
func (p *process) startIsolated(path string, pc processConfig) error {
	if p.killEscapee == nil {
		p.killEscapee = func(int, syscall.Signal) error { return nil }
	}
	self, ok := launcherPath()
	if !ok {
		return fmt.Errorf("servers need the launcher on Windows (call discovery.RunLauncherIfAsked in main)")
	}
	plan := unwalled(pc.MemoryBytes)
	if p.walls != nil {
		plan = p.walls.Plan
	}
	job, err := newJob(plan)
	if err != nil {
		return err
	}
	tier, err := launch(p.cmd, self, path, plan, job)
	if err != nil {
		windows.CloseHandle(job)
		return err
	}
	p.job = uintptr(job)
	p.tier = tier
	p.isolation = tier.String() + " · " + jobIsolation(plan)
	return nil
}

// launch starts cmd through the launcher at self, puts it in job and
// reads the launcher's report (see runLauncher): the walls it built, or
// why it could not build them or start the server, as the Unix launch
// does, so that a server that cannot start fails here, with its class
// (sandbox for the walls). Windows has no ExtraFiles: the report pipe's
// write end and the job go to the launcher as inherited handles, named
// by its last two arguments. The report ends when the launcher closes
// the pipe, once the server has started, or exits; on a failure the
// launcher is reaped before launch returns.
func launch(cmd *exec.Cmd, self, path string, plan *sandbox.Plan, job windows.Handle) (sandbox.Tier, error) {
	repR, repW, err := os.Pipe()
	if err != nil {
		return sandbox.Tier{}, err
	}
	rep := syscall.Handle(repW.Fd())
	cmd.Args = append(launcherArgs(path, plan, cmd.Args),
		strconv.FormatUint(uint64(rep), 10), strconv.FormatUint(uint64(job), 10))
	cmd.Path = self
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CreationFlags:              createNoWindow,
		AdditionalInheritedHandles: []syscall.Handle{rep, syscall.Handle(job)},
	}
	// os.Pipe's handles are inheritable, the job's is made so while the
	// launcher starts; os/exec names the handles each child inherits, so
	// only the launcher gets them.
	if err := windows.SetHandleInformation(job, windows.HANDLE_FLAG_INHERIT, windows.HANDLE_FLAG_INHERIT); err != nil {
		repR.Close()
		repW.Close()
		return sandbox.Tier{}, err
	}
	err = cmd.Start()
	windows.SetHandleInformation(job, windows.HANDLE_FLAG_INHERIT, 0)
	repW.Close()
	if err != nil {
		repR.Close()
		return sandbox.Tier{}, err
	}
	if err := assign(job, cmd.Process.Pid); err != nil {
		// Fail closed: never a server outside its job.
		repR.Close()
		cmd.Process.Kill()
		cmd.Wait()
		return sandbox.Tier{}, fmt.Errorf("put the server in its job object: %w", err)
	}
	report, _ := io.ReadAll(io.LimitReader(repR, 8192))
	// Closed before the launcher is waited for: one still writing then
	// fails rather than blocks.
	repR.Close()
	tier, failure := parseReport(string(report))
	if failure == "" {
		return tier, nil
	}
	cmd.Wait()
	if msg, ok := strings.CutPrefix(failure, wallReport); ok {
		return tier, &wallError{errors.New(msg)}
	}
	return tier, launchError(path, failure)
}

// newJob creates a Job Object that kills its processes when its last
// handle closes, lets none break away, and holds the plan's limits: each
// process's memory (MemoryBytes), and how many processes may be in it at
// once (Processes, and one more for the launcher, which stays in the job
// as the server's parent). Unlike Linux's limit, it does not count
// threads.
func newJob(plan *sandbox.Plan) (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("create a job object: %w", err)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | windows.JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION
	if plan.MemoryBytes > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_PROCESS_MEMORY
		info.ProcessMemoryLimit = uintptr(plan.MemoryBytes)
	}
	if plan.Processes > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
		info.BasicLimitInformation.ActiveProcessLimit = uint32(plan.Processes) + 1
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("set the job object's limits: %w", err)
	}
	return job, nil
}

// jobIsolation says what the job newJob makes for plan holds.
func jobIsolation(plan *sandbox.Plan) string {
	s := "job object (kill on close, no breakaway)"
	if plan.MemoryBytes > 0 {
		s += " + memory cap"
	}
	if plan.Processes > 0 {
		s += " + process cap"
	}
	return s
}

// assign puts the process pid in job.
func assign(job windows.Handle, pid int) error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return windows.AssignProcessToJobObject(job, h)
}

// terminate: Windows has no SIGTERM for a console program without a
// console; stop goes from closing stdin to ending the job.
func (p *process) terminate() bool { return false }

// killAll ends every process in the job.
func (p *process) killAll() {
	if p.job != 0 {
		windows.TerminateJobObject(windows.Handle(p.job), 1)
	}
}

// release closes the job, which ends anything still in it.
func (p *process) release() {
	if p.job != 0 {
		windows.CloseHandle(windows.Handle(p.job))
		p.job = 0
	}
}

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type jobAccounting struct {
	TotalUserTime, TotalKernelTime, ThisPeriodTotalUserTime, ThisPeriodTotalKernelTime int64
	TotalPageFaultCount, TotalProcesses, ActiveProcesses, TotalTerminatedProcesses     uint32
}

// groupGone reports whether no process is left in the job.
func (p *process) groupGone() bool {
	if p.job == 0 {
		return true
	}
	var info jobAccounting
	err := windows.QueryInformationJobObject(windows.Handle(p.job), windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil)
	return err != nil || info.ActiveProcesses == 0
}

// escapees: nothing leaves a job.
func (p *process) escapees() []int { return nil }

func (p *process) killEscapees() {}

// lookPath resolves command against the PATH and PATHEXT the child will
// get, as cmd.exe would.
func lookPath(command string, env []string) (string, error) {
	get := func(name string) string {
		for _, kv := range env {
			if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, name) {
				return v
			}
		}
		return ""
	}
	exts := strings.Split(strings.ToLower(get("PATHEXT")), ";")
	if get("PATHEXT") == "" {
		exts = []string{".com", ".exe", ".bat", ".cmd"}
	}
	try := func(p string) (string, bool) {
		if filepath.Ext(p) != "" {
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p, true
			}
		}
		for _, e := range exts {
			if fi, err := os.Stat(p + e); e != "" && err == nil && !fi.IsDir() {
				return p + e, true
			}
		}
		return "", false
	}
	if strings.ContainsAny(command, `/\:`) {
		if fi, err := os.Stat(command); err == nil && fi.IsDir() {
			return "", fmt.Errorf("command %q is a directory: %w", command, os.ErrPermission)
		}
		if p, ok := try(command); ok {
			return p, nil
		}
		return "", fmt.Errorf("command %q: %w", command, os.ErrNotExist)
	}
	path := get("PATH")
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		if p, ok := try(filepath.Join(dir, command)); ok {
			return p, nil
		}
	}
	return "", notFoundInPath(command, path)
}

// Windows has no child subreaper, pid clock or run sweep: the job kills
// the tree when Switchboard dies. Run records are still written, and
// removed at start.

func startChild(cmd *exec.Cmd) error { return cmd.Start() }

func childReaped(int) {}

func becomeReaper() (release func(), err error) { return func() {}, nil }

func bootID() string { return "" }

func pidNamespace() string { return "" }

func pidClock() (forks, inUse uint64) { return 0, 0 }

func forkCount() (uint64, bool) { return 0, false }

func sweepRuns([]runInfo, string, string) (killed, left []int) { return nil, nil }

// procStat is kept for the portable code's types.
type procStat struct {
	pid, ppid, pgrp int
	start           uint64
}

var isProcessInJob = windows.NewLazySystemDLL("kernel32.dll").NewProc("IsProcessInJob")

// inJob reports whether this process is in job.
func inJob(job windows.Handle) (bool, error) {
	var in int32
	r, _, err := isProcessInJob.Call(uintptr(windows.CurrentProcess()), uintptr(job), uintptr(unsafe.Pointer(&in)))
	if r == 0 {
		return false, err
	}
	return in != 0, nil
}

func asErrno(err error, en *syscall.Errno) bool { return errors.As(err, en) }

// osProcess is what Windows keeps of a process: job is the Job Object of
// its process tree.
type osProcess struct {
	job uintptr
}
