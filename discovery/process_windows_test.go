package discovery

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
)

// The job holds the plan's limits, and the isolation says which.
func TestNewJobLimits(t *testing.T) {
	for _, c := range []struct {
		plan      sandbox.Plan
		flags     uint32 // of the optional limits
		processes uint32
		isolation string
	}{
		{sandbox.Plan{}, 0, 0, "job object (kill on close, no breakaway)"},
		{sandbox.Plan{MemoryBytes: 64 << 20}, windows.JOB_OBJECT_LIMIT_PROCESS_MEMORY, 0,
			"job object (kill on close, no breakaway) + memory cap"},
		// One process more than the plan's: the launcher stays in the job.
		{sandbox.Plan{MemoryBytes: 64 << 20, Processes: 8}, windows.JOB_OBJECT_LIMIT_PROCESS_MEMORY | windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS, 9,
			"job object (kill on close, no breakaway) + memory cap + process cap"},
	} {
		job, err := newJob(&c.plan)
		if err != nil {
			t.Fatal(err)
		}
		var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
		err = windows.QueryInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
			uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil)
		windows.CloseHandle(job)
		if err != nil {
			t.Fatal(err)
		}
		basic := info.BasicLimitInformation
		always := uint32(windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | windows.JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION)
		if want := always | c.flags; basic.LimitFlags != want {
			t.Errorf("%+v: limit flags %#x, want %#x (no breakaway)", c.plan, basic.LimitFlags, want)
		}
		if c.plan.MemoryBytes > 0 && info.ProcessMemoryLimit != uintptr(c.plan.MemoryBytes) {
			t.Errorf("%+v: memory limit %d", c.plan, info.ProcessMemoryLimit)
		}
		if basic.ActiveProcessLimit != c.processes {
			t.Errorf("%+v: active process limit %d, want %d", c.plan, basic.ActiveProcessLimit, c.processes)
		}
		if got := jobIsolation(&c.plan); got != c.isolation {
			t.Errorf("%+v: isolation %q, want %q", c.plan, got, c.isolation)
		}
	}
}

// The launcher takes its report pipe and its job from its last two
// arguments, and leaves the rest to parseLaunch.
func TestLauncherHandles(t *testing.T) {
	report, job, rest, err := launcherHandles([]string{"{}", `C:\s.exe`, "s", "12", "34"})
	if err != nil {
		t.Fatal(err)
	}
	if report != 12 || job != 34 || len(rest) != 3 || rest[1] != `C:\s.exe` {
		t.Errorf("launcherHandles = %d, %d, %q", report, job, rest)
	}
	for _, args := range [][]string{{"12"}, {"{}", "x", "s", "12", "job"}, {"{}", "x", "s", "pipe", "34"}} {
		if _, _, _, err := launcherHandles(args); err == nil {
			t.Errorf("launcherHandles(%q): no error", args)
		}
	}
}
