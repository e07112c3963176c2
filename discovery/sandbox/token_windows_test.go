//go:build windows

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// tokenInfo returns the token information of class.
func tokenInfo(token windows.Token, class uint32) ([]byte, error) {
	n := uint32(64)
	for {
		b := make([]byte, n)
		err := windows.GetTokenInformation(token, class, &b[0], n, &n)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, windows.ERROR_INSUFFICIENT_BUFFER) || n <= uint32(len(b)) {
			return nil, err
		}
	}
}

// integrityOf returns the SID of token's integrity level ("S-1-16-4096"
// for Low).
func integrityOf(token windows.Token) (string, error) {
	b, err := tokenInfo(token, windows.TokenIntegrityLevel)
	if err != nil {
		return "", err
	}
	return (*windows.Tokenmandatorylabel)(unsafe.Pointer(&b[0])).Label.Sid.String(), nil
}

const lowSID = "S-1-16-4096"

func TestLowIntegrityTokenIsLow(t *testing.T) {
	token, err := LowIntegrityToken()
	if err != nil {
		t.Fatal(err)
	}
	defer token.Close()
	il, err := integrityOf(token)
	if err != nil {
		t.Fatal(err)
	}
	if il != lowSID {
		t.Errorf("integrity level %s, want Low (%s)", il, lowSID)
	}
	// This process keeps its own level.
	if own, err := integrityOf(windows.GetCurrentProcessToken()); err != nil {
		t.Fatal(err)
	} else if own == lowSID {
		t.Errorf("this process's token was lowered too")
	}
}

func TestLowIntegrityTokenRestricted(t *testing.T) {
	token, err := LowIntegrityToken()
	if err != nil {
		t.Fatal(err)
	}
	defer token.Close()

	// No privilege but traverse.
	b, err := tokenInfo(token, windows.TokenPrivileges)
	if err != nil {
		t.Fatal(err)
	}
	var notify windows.LUID
	if err := windows.LookupPrivilegeValue(nil, windows.StringToUTF16Ptr("SeChangeNotifyPrivilege"), &notify); err != nil {
		t.Fatal(err)
	}
	privs := (*windows.Tokenprivileges)(unsafe.Pointer(&b[0]))
	for _, p := range privs.AllPrivileges() {
		if p.Luid != notify {
			t.Errorf("privilege %v left in the token", p.Luid)
		}
	}

	// Administrators, if there, only denies.
	groups, err := token.GetTokenGroups()
	if err != nil {
		t.Fatal(err)
	}
	admins, err := windows.CreateWellKnownSid(windows.WinBuiltinAdministratorsSid)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.AllGroups() {
		if g.Sid.Equals(admins) && g.Attributes&windows.SE_GROUP_USE_FOR_DENY_ONLY == 0 {
			t.Errorf("Administrators grants access: attributes %#x", g.Attributes)
		}
	}

	// No restricting SIDs (see LowIntegrityToken).
	if restricted, err := token.IsRestricted(); err != nil {
		t.Fatal(err)
	} else if restricted {
		t.Errorf("the token has restricting SIDs")
	}
}

func TestLabelLow(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, file} {
		if err := LabelLow(p); err != nil {
			t.Fatal(err)
		}
		if !labelledLow(t, p) {
			t.Errorf("%s: not labelled Low no-write-up", p)
		}
	}
	if err := LabelLow(filepath.Join(dir, "missing")); err == nil {
		t.Error("LabelLow of a missing path: no error")
	}
}

// labelledLow reports whether path carries the mandatory label Low,
// no-write-up.
func labelledLow(t *testing.T, path string) bool {
	t.Helper()
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.LABEL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatal(err)
	}
	s := sd.String()
	return strings.Contains(s, "ML;") && strings.Contains(s, "NW") && strings.Contains(s, ";LW)")
}

// lowWriteEnv names the file the helper child writes.
const lowWriteEnv = "SWITCHBOARD_TEST_LOW_WRITE"

// TestLowIntegrityHelper is the child of lowWrite: it checks it runs
// Low, then writes the file lowWriteEnv names. Exit 0: written; 3: not
// written; 4: not Low.
func TestLowIntegrityHelper(t *testing.T) {
	path := os.Getenv(lowWriteEnv)
	if path == "" {
		return
	}
	il, err := integrityOf(windows.GetCurrentProcessToken())
	if err != nil || il != lowSID {
		fmt.Fprintln(os.Stderr, "integrity:", il, err)
		os.Exit(4)
	}
	if err := os.WriteFile(path, []byte("low"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	os.Exit(0)
}

// lowWrite runs the helper with token, to write path, and reports
// whether it wrote it.
func lowWrite(t *testing.T, token windows.Token, path string) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLowIntegrityHelper$", "-test.count=1")
	// An explicit Env: with a Token and no Env, the child would get the
	// user's default environment.
	cmd.Env = append(os.Environ(), lowWriteEnv+"="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Token: syscall.Token(token)}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("the child said it wrote %s: %v", path, err)
		}
		return true
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("the child said it could not write %s, which is there", path)
		}
		return false
	default:
		t.Fatalf("child: %v\n%s", err, out)
		return false
	}
}

func TestLowIntegrityChildWrites(t *testing.T) {
	medium := t.TempDir() // unlabelled: Medium
	low := t.TempDir()
	if err := LabelLow(low); err != nil {
		t.Fatal(err)
	}
	token, err := LowIntegrityToken()
	if err != nil {
		t.Fatal(err)
	}
	defer token.Close()
	if lowWrite(t, token, filepath.Join(medium, "f")) {
		t.Errorf("a Low child created a file in a Medium directory")
	}
	if !lowWrite(t, token, filepath.Join(low, "f")) {
		t.Errorf("a Low child could not create a file in a directory labelled Low")
	}
	// Labelling passes the label to what is already there: the child may
	// change an existing file too.
	existing := filepath.Join(t.TempDir(), "d")
	if err := os.MkdirAll(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(existing, "old"), []byte("medium"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := LabelLow(filepath.Dir(existing)); err != nil {
		t.Fatal(err)
	}
	if !lowWrite(t, token, filepath.Join(existing, "old")) {
		t.Errorf("a Low child could not rewrite a file beneath a directory labelled Low")
	}
}

func TestPrepareWindows(t *testing.T) {
	root := t.TempDir()
	mk := func(name string) string {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tmp, work, read, state := mk("tmp"), mk("work"), mk("read"), mk("state")
	proj := mk(filepath.Join("work", "proj"))
	denied := mk(filepath.Join("work", "sb.db.keys"))
	// Network none and the reads, which this tier does not wall: Weaker.
	p := &Plan{
		Weaker:         true,
		Network:        NetworkNone,
		TempDir:        tmp,
		Write:          []string{work},
		Read:           []string{read},
		AlwaysPrefixes: []string{filepath.Join(work, "sb.db"), filepath.Join(state, "sb.db")},
	}
	tier, token, err := PrepareWindows(p)
	if err != nil {
		t.Fatal(err)
	}
	defer token.Close()
	if want := (Tier{LowIntegrity: true}); tier != want || tier.String() != "job+low-integrity" {
		t.Errorf("tier %+v (%s), want %+v", tier, tier, want)
	}
	for _, c := range []struct {
		path  string
		write bool
	}{
		{filepath.Join(tmp, "f"), true},
		{filepath.Join(proj, "f"), true},
		{filepath.Join(work, "f"), false}, // work holds a denied path: not labelled itself
		{filepath.Join(read, "f"), false},
		{filepath.Join(denied, "f"), false},
		{filepath.Join(root, "f"), false},
	} {
		if got := lowWrite(t, token, c.path); got != c.write {
			t.Errorf("write %s: %v, want %v", c.path, got, c.write)
		}
	}

	// Walls off: no token, nothing labelled.
	off := mk("off")
	if tier, tok, err := PrepareWindows(&Plan{Off: true, TempDir: off}); err != nil || tok != 0 || tier != (Tier{Off: true}) {
		t.Errorf("PrepareWindows(off) = %+v, %v, %v; want walls off, 0, nil", tier, tok, err)
	}
	if labelledLow(t, off) {
		t.Errorf("walls off: %s labelled Low", off)
	}
}

// A plan this tier cannot wall in full is refused, saying what it lacks,
// unless it is Weaker; and nothing is labelled for it.
func TestPrepareWindowsRefusedUnlessWeaker(t *testing.T) {
	for _, c := range []struct {
		network string
		lacks   []string
	}{
		{NetworkNone, []string{"read walls", "network walls"}},
		{NetworkAllow, []string{"read walls", "network walls"}},
		{NetworkAny, []string{"read walls"}},
	} {
		tmp, work := t.TempDir(), t.TempDir()
		tier, token, err := PrepareWindows(&Plan{Network: c.network, TempDir: tmp, Write: []string{work}})
		if err == nil {
			token.Close()
			t.Fatalf("network %s: no error; want the run refused", c.network)
		}
		if token != 0 {
			t.Errorf("network %s: a token with the error", c.network)
		}
		msg := err.Error()
		for _, l := range c.lacks {
			if !strings.Contains(msg, l) {
				t.Errorf("network %s: error %q does not name %q", c.network, msg, l)
			}
		}
		if c.network == NetworkAny && strings.Contains(msg, "network walls") {
			t.Errorf("network any: error %q names the network walls", msg)
		}
		if !strings.Contains(msg, "("+tier.String()+")") || tier.String() != "job+low-integrity" {
			t.Errorf("network %s: error %q does not name the tier it has (%s)", c.network, msg, tier)
		}
		for _, dir := range []string{tmp, work} {
			if labelledLow(t, dir) {
				t.Errorf("network %s: %s labelled Low for a refused run", c.network, dir)
			}
		}
	}
}
