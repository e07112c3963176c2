package discovery

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
)

// The Windows walls, end to end: mcp-fixture -mode escape verified
// through the launcher, in its job, with and without the low-integrity
// token. What the tier does not confine (reads, the network) is checked
// to get through, so that the tests say it as plainly as the tier must.

// winScene is a machine for a Windows server: a home with a planted key,
// Switchboard's database, the server's working directory, a folder
// outside it and a loopback listener.
type winScene struct {
	home, db, cwd, outside string
	listener               net.Listener
}

func newWinScene(t *testing.T) *winScene {
	t.Helper()
	s := &winScene{home: t.TempDir(), cwd: t.TempDir(), outside: t.TempDir()}
	s.db = filepath.Join(t.TempDir(), "switchboard.db")
	for path, content := range map[string]string{
		filepath.Join(s.home, ".ssh", "id_ed25519"): "planted key\n",
		s.db: "switchboard's own\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.listener = acceptAll(t)
	return s
}

// verify verifies the escape fixture under profile (nil: no walls),
// capped at memory bytes, trying attempts (name → kind=arg); it returns
// what each attempt got ("got …" or "refused …"), or the error.
func (s *winScene) verify(t *testing.T, profile *sandbox.Profile, memory int64, attempts map[string]string) (*Result, map[string]string, error) {
	t.Helper()
	var list []string
	for _, a := range attempts {
		list = append(list, a)
	}
	v := NewVerifier(Limits{StderrBytes: 64 << 10}, nil).Walled(sandbox.Config{Database: s.db, Home: s.home})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := v.Verify(ctx, Target{Transport: TransportStdio, Command: fixture, Args: []string{"-mode", "escape"},
		Env: map[string]string{"FIXTURE_ESCAPE": strings.Join(list, ",")}, Cwd: s.cwd, MemoryBytes: memory, Sandbox: profile}, 0, nil)
	if err != nil {
		return nil, nil, err
	}
	t.Logf("isolation: %s", res.Isolation)
	got := map[string]string{}
	for name, a := range attempts {
		for line := range strings.Lines(res.StderrTail) {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "mcp-fixture: escape "+a+": "); ok {
				got[name] = rest
			}
		}
		if got[name] == "" {
			t.Fatalf("attempt %q not reported in stderr:\n%s", a, res.StderrTail)
		}
	}
	return res, got, nil
}

// attempts are what a server under the Windows walls tries.
func (s *winScene) attempts() map[string]string {
	return map[string]string{
		"write in its folder": "write=" + filepath.Join(s.cwd, "made"),
		"write outside":       "write=" + filepath.Join(s.outside, "escaped"),
		"write in the home":   "write=" + filepath.Join(s.home, "escaped"),
		"20 processes":        "spawn=20",
		"512 MiB":             "alloc=" + strconv.Itoa(512<<20),
		"planted key":         "read=" + filepath.Join(s.home, ".ssh", "id_ed25519"),
		"database":            "read=" + s.db,
		"loopback listener":   "connect=" + s.listener.Addr().String(),
	}
}

// Weaker, the server runs Low in its job: it writes in its folder and
// nowhere else, and the job caps its processes and memory; it still
// reads the key and the database and reaches loopback, which the tier
// does not confine.
func TestWallsWindowsLowIntegrity(t *testing.T) {
	s := newWinScene(t)
	res, got, err := s.verify(t, &sandbox.Profile{Weaker: true, Processes: 8}, 128<<20, s.attempts())
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if want := "job+low-integrity · job object (kill on close, no breakaway) + memory cap + process cap"; res.Isolation != want {
		t.Errorf("isolation %q, want %q", res.Isolation, want)
	}
	for name, want := range map[string]string{
		"write in its folder": "got",
		"write outside":       "refused",
		"write in the home":   "refused",
		"20 processes":        "refused",
		"512 MiB":             "refused",
		// Not confined on Windows (see sandbox/token_windows.go).
		"planted key":       "got",
		"database":          "got",
		"loopback listener": "got",
	} {
		if !strings.HasPrefix(got[name], want) {
			t.Errorf("%s = %q, want %s", name, got[name], want)
		}
	}
}

// Without Weaker, a profile asks for walls the tier lacks (reads always,
// the network but for any): the server does not start, the error is of
// class sandbox and names them.
func TestWallsWindowsRefusedUnlessWeaker(t *testing.T) {
	for _, c := range []struct {
		profile sandbox.Profile
		lacks   []string
	}{
		{sandbox.Profile{}, []string{"read walls", "network walls"}},
		{sandbox.Profile{Network: sandbox.NetworkAny}, []string{"read walls"}},
	} {
		s := newWinScene(t)
		ran := filepath.Join(s.cwd, "ran")
		_, _, err := s.verify(t, &c.profile, 0, map[string]string{"ran": "write=" + ran})
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("network %q: Verify = %v; want a failure", c.profile.Network, err)
		}
		wantClass(t, e, ClassSandbox, PhaseStarting)
		for _, l := range c.lacks {
			if !strings.Contains(e.Message, l) {
				t.Errorf("network %q: message %q does not name %q", c.profile.Network, e.Message, l)
			}
		}
		if !strings.Contains(e.Message, "job+low-integrity") {
			t.Errorf("network %q: message %q does not name the tier this machine has", c.profile.Network, e.Message)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Errorf("network %q: the server ran", c.profile.Network)
		}
	}
}

// Walls off, and no profile: the job alone, as the tier says; the server
// writes where the user may.
func TestWallsWindowsOff(t *testing.T) {
	for _, profile := range []*sandbox.Profile{{Off: true}, nil} {
		s := newWinScene(t)
		res, got, err := s.verify(t, profile, 0, map[string]string{"write outside": "write=" + filepath.Join(s.outside, "escaped")})
		if err != nil {
			t.Fatalf("Verify (profile %+v): %v", profile, err)
		}
		if !strings.HasPrefix(res.Isolation, "none (walls off) · job object (kill on close, no breakaway)") {
			t.Errorf("profile %+v: isolation %q, want walls off in a job", profile, res.Isolation)
		}
		if !strings.HasPrefix(got["write outside"], "got") {
			t.Errorf("profile %+v: write outside = %q; want it to get through", profile, got["write outside"])
		}
	}
}
