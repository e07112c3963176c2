package discovery

import "os"

// procState returns the state of pid: "R" while it runs, "Z" once it is
// a zombie, "" if it is gone (macOS has no /proc; sysctl tells).
func procState(pid int) string {
	_, state, ok := readStatAny(pid)
	if !ok {
		return ""
	}
	return string(state)
}

// children returns the live child processes of this test process.
func children() []int {
	self := os.Getpid()
	return LiveProcesses(func(ppid, _ int) bool { return ppid == self })
}
