//go:build !linux

package discovery

import "os/exec"

// Elsewhere than on Linux there is no child subreaper and no /proc to
// sweep: runs are still recorded, and their records removed at start.

func startChild(cmd *exec.Cmd) error { return cmd.Start() }

func childReaped(int) {}

func becomeReaper() (release func(), err error) { return func() {}, nil }

func bootID() string { return "" }

func pidNamespace() string { return "" }

func pidClock() (forks, inUse uint64) { return 0, 0 }

func readStatAny(int) (procStat, byte, bool) { return procStat{}, 0, false }

func sweepRuns([]runInfo, string, string) (killed, left []int) { return nil, nil }
