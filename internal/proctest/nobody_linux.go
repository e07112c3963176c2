package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Nobody is the ordinary user RunAsNobody runs tests as.
const Nobody = 65534

// RunAsNobody runs the tests of this test binary that run matches again,
// as Nobody, in copies of the binary and of the executables in execs
// (each copy's path is handed to the run in the environment variable
// that names it), with a home and a temp dir of their own, in this
// process's working directory. It returns the run's output, and fails
// the test if the run fails or does not pass each of want.
//
// For tests that must hold for an ordinary user when they run as root,
// as CI runs them: the caller skips unless it is root.
func RunAsNobody(t *testing.T, run string, execs map[string]string, want ...string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "as-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	copyExec := func(from string) string {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dir, filepath.Base(from))
		if err := os.WriteFile(to, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return to
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(dir, "home"), "TMPDIR=" + filepath.Join(dir, "tmp")}
	for name, path := range execs {
		env = append(env, name+"="+copyExec(path))
	}
	tests := copyExec(os.Args[0])
	for _, d := range []string{"home", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(dir, d), Nobody, Nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tests, "-test.run="+run, "-test.v", "-test.count=1")
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	t.Logf("as uid %d:\n%s", Nobody, out)
	if err != nil {
		t.Fatalf("%s as uid %d: %v", run, Nobody, err)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("the run as uid %d says nothing of %q", Nobody, w)
		}
	}
	return string(out)
}
