//go:build !linux

package sandbox

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"syscall"
)

var probed struct {
	once sync.Once
	m    Machine
}

// Probe finds out once what this machine can build (see Machine).
func Probe(Config) Machine {
	probed.once.Do(func() {
		probed.m = Machine{OS: runtime.GOOS}
		if runtime.GOOS == "darwin" {
			_, err := os.Stat(seatbeltPath)
			probed.m.Seatbelt = err == nil
		}
	})
	return probed.m
}

// seatbeltPath is macOS's sandbox-exec.
const seatbeltPath = "/usr/bin/sandbox-exec"

// Attr: no namespaces here.
func (sp *Prepared) Attr(*syscall.SysProcAttr) {}

// Started: the launcher waits for no word here (see Plan.Ctl).
func (sp *Prepared) Started(int, *os.File) error { return nil }

// cgroup: none here.
type cgroup struct{ name string }

func newCgroup(Machine, *Plan) (*cgroup, error) { return nil, nil }

func (*cgroup) remove() {}

// CtlPair: no launcher here takes a control socket (see Plan.Ctl).
func CtlPair() (parent, child *os.File, err error) {
	return nil, nil, errors.New("no control socket on " + runtime.GOOS)
}

// ScopeEnv: see cgroup2_linux.go.
const ScopeEnv = "SWITCHBOARD_SCOPE"

// ScopeArgv: only Linux has systemd scopes.
func ScopeArgv([]string, func(string) string) []string { return nil }
