package sandbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A run's cgroup left behind (a Switchboard that died, a process not
// reaped in time) is removed by a later run's sweep once it is a minute
// old and empty; a young one, maybe another Switchboard's, stays.
func TestSweepCgroups(t *testing.T) {
	dirs := cgroupV1Dirs()
	if os.Getuid() != 0 || len(dirs) != len(cgroupControllers) {
		t.Skip("needs root on cgroup v1 (as CI runs)")
	}
	parent := dirs["pids"]
	old, young := filepath.Join(parent, cgroupPrefix+"sweep-old"), filepath.Join(parent, cgroupPrefix+"sweep-young")
	for _, d := range []string{old, young} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(d) })
	}
	if err := os.Chtimes(old, time.Now().Add(-2*time.Minute), time.Now().Add(-2*time.Minute)); err != nil {
		t.Skipf("cgroupfs keeps no times set here: %v", err)
	}
	lastSweep.Store(0)
	sweepCgroups()
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the old empty cgroup is still there (%v)", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("the young cgroup was removed: %v", err)
	}
}
