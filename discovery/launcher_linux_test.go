// TestLaunchedInPlace reads the server's program and descriptors from
// /proc.

package discovery

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A server started through the launcher is the launcher's process,
// exec'd in place: same pid and group, the server's program, limits set
// before its first instruction, no descriptor but 0, 1 and 2. Without
// the launcher (a program that does not call RunLauncherIfAsked) the
// limits come just after start, and the isolation says so.
func TestLaunchedInPlace(t *testing.T) {
	if !launcherReady.Load() {
		t.Fatal("TestMain must call RunLauncherIfAsked")
	}
	p, err := startForTest(t, fixture)
	if err != nil {
		t.Fatal(err)
	}
	if want := "none (walls off) · process group + limits set before exec + escapee sweep"; !strings.HasPrefix(p.isolation, want) {
		t.Errorf("isolation = %q; want it to start with %q", p.isolation, want)
	}
	pid := p.cmd.Process.Pid
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.EvalSymlinks(fixture); exe != want {
		t.Errorf("pid %d runs %s; want the server %s, exec'd by the launcher in place", pid, exe, want)
	}
	if pgid, _ := syscall.Getpgid(pid); pgid != pid {
		t.Errorf("process group %d; want its own, %d", pgid, pid)
	}
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		// A Go server opens its own (epoll and the like) once running;
		// none of those is fd 3, the launcher's report pipe.
		if fd.Name() == "3" {
			if target, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/3"); strings.HasPrefix(target, "pipe:") {
				t.Errorf("the server inherited fd 3 (%s), the launcher's report pipe", target)
			}
		}
	}

	launcherReady.Store(false)
	defer launcherReady.Store(true)
	direct, err := startForTest(t, fixture)
	if err != nil {
		t.Fatal(err)
	}
	if want := "none (walls off) · process group + limits set after start + escapee sweep"; !strings.HasPrefix(direct.isolation, want) {
		t.Errorf("isolation without the launcher = %q; want it to start with %q", direct.isolation, want)
	}
}
