package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// lowTree makes dirs (and files, ending in ".txt") beneath a new temp
// dir, and returns its real path.
func lowTree(t *testing.T, paths ...string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		full := filepath.Join(root, filepath.FromSlash(p))
		if filepath.Ext(p) == ".txt" {
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(full, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func lowCheck(t *testing.T, got []string, root string, want ...string) {
	t.Helper()
	for i, w := range want {
		want[i] = filepath.Join(root, filepath.FromSlash(w))
	}
	if !slices.Equal(got, want) {
		t.Errorf("LowWritePaths:\n got  %q\n want %q", got, want)
	}
}

func TestLowLabelSDDL(t *testing.T) {
	// Mandatory label, object and container inherit, no-write-up, Low.
	if lowLabelSDDL != "S:(ML;OICI;NW;;;LW)" {
		t.Errorf("lowLabelSDDL = %q", lowLabelSDDL)
	}
	if lowLabelFileSDDL != "S:(ML;;NW;;;LW)" {
		t.Errorf("lowLabelFileSDDL = %q", lowLabelFileSDDL)
	}
}

func TestLowWritePathsTempAndWrite(t *testing.T) {
	root := lowTree(t, "tmp/run1", "work", "data", "read", "cache", "notes.txt")
	p := &Plan{
		TempDir: filepath.Join(root, "tmp", "run1"),
		Write: []string{
			filepath.Join(root, "work"), filepath.Join(root, "data"),
			filepath.Join(root, "work") + string(filepath.Separator), // the same, spelt otherwise
			filepath.Join(root, "notes.txt"),
			filepath.Join(root, "missing"), // nothing to label
		},
		Read:      []string{filepath.Join(root, "read")},
		ReadRoots: []string{root},
		Devices:   []string{filepath.Join(root, "cache")},
	}
	lowCheck(t, LowWritePaths(p), root, "data", "notes.txt", "tmp/run1", "work")
}

func TestLowWritePathsEmpty(t *testing.T) {
	if got := LowWritePaths(&Plan{}); len(got) != 0 {
		t.Errorf("LowWritePaths(empty plan) = %q", got)
	}
	// TempDir alone, even missing: it is the run's and made by the caller.
	if got := LowWritePaths(&Plan{TempDir: "/x/run"}); !slices.Equal(got, []string{filepath.Clean("/x/run")}) {
		t.Errorf("LowWritePaths(temp only) = %q", got)
	}
}

func TestLowWritePathsNested(t *testing.T) {
	root := lowTree(t, "a/b/c", "a2", "tmp")
	p := &Plan{
		TempDir: filepath.Join(root, "a", "b", "tmp"),
		Write:   []string{filepath.Join(root, "a", "b", "c"), filepath.Join(root, "a"), filepath.Join(root, "a2")},
	}
	// a's label reaches a/b/c and the temp dir beneath it; a2 is not
	// beneath a.
	lowCheck(t, LowWritePaths(p), root, "a", "a2")
}

func TestLowWritePathsAlways(t *testing.T) {
	root := lowTree(t, "secret/inner", "ok", "also")
	p := &Plan{
		Write: []string{
			filepath.Join(root, "secret"),          // equal to Always
			filepath.Join(root, "secret", "inner"), // beneath it
			filepath.Join(root, "ok"),
		},
		Always: []string{filepath.Join(root, "secret")},
	}
	lowCheck(t, LowWritePaths(p), root, "ok")
}

func TestLowWritePathsAlwaysPrefixes(t *testing.T) {
	// The database sb.db and its kin: sb.db-token, sb.db.tmp/<run>.
	root := lowTree(t, "state/sb.db.tmp/run1", "state/sb.db.tmp/run2", "state/sb.db-backup", "state/other", "state/sb.db.txt", "state/sbx")
	db := filepath.Join(root, "state", "sb.db")
	p := &Plan{
		TempDir: filepath.Join(root, "state", "sb.db.tmp", "run1"),
		Write: []string{
			filepath.Join(root, "state", "sb.db.tmp", "run2"), // another run's temp dir
			filepath.Join(root, "state", "sb.db-backup"),
			filepath.Join(root, "state", "other"),
			filepath.Join(root, "state", "sbx"),
		},
		AlwaysPrefixes: []string{db},
	}
	// The run's own temp dir is labelled though it matches the prefix.
	lowCheck(t, LowWritePaths(p), root, "state/other", "state/sb.db.tmp/run1", "state/sbx")
}

// A Write grant of the home labels neither its secrets nor the home
// itself (the label would reach them), but a secret granted itself is.
func TestLowWritePathsKeepsSecrets(t *testing.T) {
	root := lowTree(t, "home/.ssh/id_rsa.txt", "home/.aws", "home/notes.txt", "home/proj")
	home := filepath.Join(root, "home")
	p := &Plan{Write: []string{home, filepath.Join(home, ".aws")}, Secrets: []string{filepath.Join(home, ".ssh"), filepath.Join(home, ".aws")}}
	lowCheck(t, LowWritePaths(p), root, "home/.aws", "home/notes.txt", "home/proj")
}

func TestLowWritePathsHoldsDenied(t *testing.T) {
	// Write is the home; Switchboard's database lives in it, and a path
	// always denied too. A label on home would reach them: its entries
	// are labelled instead, one by one, but for the denied ones, and the
	// way down to them.
	root := lowTree(t,
		"home/proj/src", "home/notes.txt",
		"home/.config/switchboard/sb.db.tmp/run1", "home/.config/switchboard/sb.db.txt", "home/.config/switchboard/keep", "home/.config/other",
		"home/vault/inner", "home/vault2")
	home := filepath.Join(root, "home")
	p := &Plan{
		TempDir:        filepath.Join(home, ".config", "switchboard", "sb.db.tmp", "run1"),
		Write:          []string{home},
		Always:         []string{filepath.Join(home, "vault")},
		AlwaysPrefixes: []string{filepath.Join(home, ".config", "switchboard", "sb.db")},
	}
	lowCheck(t, LowWritePaths(p), root,
		"home/.config/other",
		"home/.config/switchboard/keep",
		"home/.config/switchboard/sb.db.tmp/run1",
		"home/notes.txt",
		"home/proj",
		"home/vault2",
	)
}

func TestLowWritePathsLinks(t *testing.T) {
	root := lowTree(t, "real/dir", "home/db", "home/x", "elsewhere")
	if err := os.Symlink(filepath.Join(root, "real", "dir"), filepath.Join(root, "link")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	// A link met while going down is not followed.
	if err := os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(root, "home", "ln")); err != nil {
		t.Fatal(err)
	}
	// An Always path reached through a link is denied where it leads.
	if err := os.Symlink(filepath.Join(root, "home", "db"), filepath.Join(root, "dblink")); err != nil {
		t.Fatal(err)
	}
	p := &Plan{
		Write:  []string{filepath.Join(root, "link"), filepath.Join(root, "home")},
		Always: []string{filepath.Join(root, "dblink")},
	}
	lowCheck(t, LowWritePaths(p), root, "home/x", "real/dir")
}

func TestLowWritePathsFoldCase(t *testing.T) {
	root := lowTree(t, "home/DB", "home/x")
	home := filepath.Join(root, "home")
	p := &Plan{
		Write:  []string{home},
		Always: []string{filepath.Join(home, "db")}, // spelt otherwise
	}
	// Case-sensitive (Linux): home/db, were it made, is not home/DB,
	// which is labelled.
	lowCheck(t, lowWritePaths(p, false), root, "home/DB", "home/x")
	// Windows: the same path, not labelled.
	lowCheck(t, lowWritePaths(p, true), root, "home/x")
}

// The Windows tier never walls reads, nor the network: a walled plan
// lacks the one always, the other unless its network is any.
func TestLowIntegrityMissing(t *testing.T) {
	for _, c := range []struct {
		plan Plan
		want int
	}{
		{Plan{Off: true, Network: NetworkNone}, 0},
		{Plan{Network: NetworkNone}, 2},
		{Plan{Network: NetworkAllow}, 2},
		{Plan{Network: NetworkAny}, 1},
		{Plan{Network: NetworkNone, Weaker: true}, 2}, // Weaker runs it, lacking them
	} {
		got := lowIntegrityMissing(&c.plan)
		if len(got) != c.want {
			t.Errorf("%+v: missing %q, want %d", c.plan, got, c.want)
			continue
		}
		if c.want > 0 && !strings.HasPrefix(got[0], "read walls") {
			t.Errorf("%+v: missing %q, want the read walls first", c.plan, got)
		}
		if c.want > 1 && !strings.HasPrefix(got[1], "network walls") {
			t.Errorf("%+v: missing %q, want the network walls", c.plan, got)
		}
	}
	// What NewPlan makes of the default profile asks for both.
	if got := lowIntegrityMissing(NewPlan(Profile{}, Run{Home: "/home/u"}, 0)); len(got) != 2 {
		t.Errorf("default profile: missing %q, want reads and network", got)
	}
}
