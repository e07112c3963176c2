package sandbox

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// -update rewrites the golden files of testdata/seatbelt. Another test
// file of the package may register the same flag; it is then shared.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files")
	}
}

func seatbeltUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// The fixtures are written out (not made by NewPlan) so that the golden
// files change only when the generator does.
const (
	sbHome   = "/Users/ann"
	sbDB     = "/Users/ann/Library/Application Support/Switchboard/switchboard.db"
	sbTemp   = sbDB + ".tmp/run-1234"
	sbCwd    = "/Users/ann/proj"
	sbPort   = 47219
	sbDarwin = "/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T"
)

var sbDevices = []string{"/dev/full", "/dev/null", "/dev/ptmx", "/dev/pts", "/dev/random", "/dev/tty", "/dev/urandom", "/dev/zero"}

var sbSecrets = []string{
	sbHome + "/.aws", sbHome + "/.docker/config.json", sbHome + "/.gnupg", sbHome + "/.netrc",
	sbHome + "/.ssh", sbHome + "/Library/Application Support/Google/Chrome", sbHome + "/Library/Keychains",
}

// sbDefaultPlan: files default (read "/" minus the secrets), network none.
func sbDefaultPlan() *Plan {
	return &Plan{
		ReadRoots:      []string{"/"},
		Write:          []string{sbCwd},
		Secrets:        slices.Clone(sbSecrets),
		AlwaysPrefixes: []string{sbDB},
		Devices:        slices.Clone(sbDevices),
		TempDir:        sbTemp,
		Network:        NetworkNone,
	}
}

// sbStrictPlan: files strict (the runtime's roots and the program's
// directory), temp dirs under macOS's TMPDIR (beneath /var, a link).
func sbStrictPlan() *Plan {
	root := sbDarwin + "/switchboard-runs-501"
	return &Plan{
		ReadRoots: []string{"/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
			"/nix/store", "/proc", "/sys", "/System", "/Library", "/Applications", "/private/etc",
			"/private/var/db/timezone", "/dev/random", "/dev/urandom", sbHome + "/.local/bin", sbHome + "/.local"},
		Read:           []string{sbHome + "/notes.txt"},
		Write:          []string{sbCwd},
		Always:         []string{root},
		AlwaysPrefixes: []string{sbDB},
		Devices:        slices.Clone(sbDevices),
		TempDir:        root + "/run-42",
		Network:        NetworkNone,
	}
}

func sbWithNetwork(p *Plan, mode string) *Plan {
	p.Network, p.ProxyPort = mode, sbPort
	return p
}

// sbAlwaysPlan: the whole home granted read-write, an Always prefix family
// (the database and its kin) and another store beneath it, and the run's
// temp dir beneath the prefix.
func sbAlwaysPlan() *Plan {
	return &Plan{
		ReadRoots:      []string{"/"},
		Read:           []string{filepath.Dir(sbDB)},
		Write:          []string{sbHome},
		Secrets:        slices.Clone(sbSecrets),
		Always:         []string{sbHome + "/.other-store"},
		AlwaysPrefixes: []string{sbDB},
		Devices:        slices.Clone(sbDevices),
		TempDir:        sbDB + ".tmp/run-7",
		Network:        NetworkNone,
	}
}

// sbQuotingPlan: paths with quotes, backslashes and spaces everywhere.
func sbQuotingPlan() *Plan {
	return &Plan{
		ReadRoots:      []string{"/"},
		Read:           []string{`/Volumes/My Drive/a "quoted" dir`},
		Write:          []string{sbHome + `/dir with spaces`, sbHome + `/we\ird`},
		Secrets:        []string{sbHome + `/my "secret" notes`, sbHome + `/back\slash`},
		AlwaysPrefixes: []string{sbHome + `/sb "db"\x.db`},
		Devices:        []string{"/dev/null"},
		TempDir:        sbHome + `/sb "db"\x.db.tmp/run "1"`,
		Network:        NetworkNone,
	}
}

var sbGolden = []struct {
	name string
	plan func() *Plan
}{
	{"default", sbDefaultPlan},
	{"strict", sbStrictPlan},
	{"allow", func() *Plan { return sbWithNetwork(sbDefaultPlan(), NetworkAllow) }},
	{"any", func() *Plan { return sbWithNetwork(sbDefaultPlan(), NetworkAny) }},
	{"always", sbAlwaysPlan},
	{"quoting", sbQuotingPlan},
	{"off", func() *Plan { p := sbDefaultPlan(); p.Off = true; return p }},
}

func TestSeatbeltGolden(t *testing.T) {
	for _, g := range sbGolden {
		t.Run(g.name, func(t *testing.T) {
			p := g.plan()
			if err := CheckSeatbeltPaths(p); err != nil {
				t.Fatalf("CheckSeatbeltPaths: %v", err)
			}
			got := SeatbeltProfile(p)
			if _, err := sbParse(got); err != nil {
				t.Fatalf("the profile does not read back: %v\n%s", err, got)
			}
			file := filepath.Join("testdata", "seatbelt", g.name+".sb")
			if seatbeltUpdate() {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("%s changed (run with -update if that is meant):\n%s", file, sbDiff(string(want), got))
			}
		})
	}
}

func TestSeatbeltDeterministic(t *testing.T) {
	for _, g := range sbGolden {
		p := g.plan()
		want := SeatbeltProfile(p)
		// The same plan with its lists reversed and duplicated.
		q := g.plan()
		for _, l := range []*[]string{&q.ReadRoots, &q.Read, &q.Write, &q.Secrets, &q.Always, &q.AlwaysPrefixes, &q.Devices} {
			slices.Reverse(*l)
			*l = append(*l, *l...)
		}
		if got := SeatbeltProfile(q); got != want {
			t.Errorf("%s: the profile depends on the lists' order:\n%s", g.name, sbDiff(want, got))
		}
		if got := SeatbeltProfile(p); got != want {
			t.Errorf("%s: two profiles of one plan differ", g.name)
		}
	}
}

func TestSeatbeltShape(t *testing.T) {
	for _, g := range sbGolden {
		if g.name == "off" {
			continue
		}
		rules := sbRules(t, SeatbeltProfile(g.plan()))
		if len(rules) == 0 || rules[0].action != "deny" || !slices.Equal(rules[0].ops, []string{"default"}) {
			t.Errorf("%s: the first rule is not (deny default)", g.name)
		}
		for _, r := range rules {
			if r.action == "allow" && slices.Contains(r.ops, "default") {
				t.Errorf("%s: (allow default) in a walled profile", g.name)
			}
			for _, op := range r.ops {
				if strings.HasPrefix(op, "file-") && len(r.filters) == 0 {
					t.Errorf("%s: rule #%d (%s %v) has no filter: it applies to every path", g.name, r.index, r.action, r.ops)
				}
			}
		}
	}
}

// A plan with empty lists writes no rule for them: a rule without a
// filter would open every path.
func TestSeatbeltSparsePlans(t *testing.T) {
	for name, p := range map[string]*Plan{
		"empty":      {},
		"read only":  {ReadRoots: []string{"/"}},
		"write only": {Write: []string{sbCwd}},
		"temp only":  {TempDir: sbTemp, AlwaysPrefixes: []string{sbDB}},
	} {
		got := SeatbeltProfile(p)
		rules := sbRules(t, got)
		for _, r := range rules {
			for _, op := range r.ops {
				if strings.HasPrefix(op, "file-") && len(r.filters) == 0 {
					t.Errorf("%s: rule #%d (%s %v) has no filter", name, r.index, r.action, r.ops)
				}
			}
		}
		sbExpect(t, rules, "file-write-data", "/Users/ann/elsewhere/x", false)
		sbExpect(t, rules, "file-write-unlink", "/Users/ann/elsewhere/x", false)
		sbExpect(t, rules, "file-read-data", sbHome+"/.ssh/id_rsa", name == "read only")
		sbExpect(t, rules, "file-read-data", "/etc/hosts", name == "read only")
		sbExpect(t, rules, "file-write-data", sbCwd+"/x", name == "write only")
		sbExpect(t, rules, "file-write-data", sbTemp+"/x", name == "temp only")
		if strings.Contains(got, "network") && !strings.Contains(got, ";; Network: none") {
			t.Errorf("%s: a network rule", name)
		}
	}
}

func TestSeatbeltOff(t *testing.T) {
	p := sbDefaultPlan()
	p.Off = true
	p.Secrets = []string{"/bad\npath"} // not looked at: no path is written
	got := SeatbeltProfile(p)
	rules := sbRules(t, got)
	if len(rules) != 1 || rules[0].action != "allow" || !slices.Equal(rules[0].ops, []string{"default"}) {
		t.Errorf("off: want only (allow default), got\n%s", got)
	}
	if !strings.Contains(got, "(version 1)") {
		t.Errorf("off: no (version 1)")
	}
	if err := CheckSeatbeltPaths(p); err != nil {
		t.Errorf("off: CheckSeatbeltPaths: %v", err)
	}
}

func TestSeatbeltProxyPortOnlyInAllow(t *testing.T) {
	port := fmt.Sprint(sbPort)
	for _, mode := range []string{NetworkNone, NetworkAllow, NetworkAny} {
		p := sbWithNetwork(sbDefaultPlan(), mode) // the port is set in every mode
		got := SeatbeltProfile(p)
		rules := sbRules(t, got)
		var network []sbRule
		for _, r := range rules {
			if slices.ContainsFunc(r.ops, func(op string) bool { return strings.HasPrefix(op, "network") }) {
				network = append(network, r)
			}
		}
		switch mode {
		case NetworkAllow:
			want := `(allow network-outbound (remote tcp "localhost:` + port + `"))`
			if !strings.Contains(got, want) {
				t.Errorf("allow: no %s", want)
			}
			if strings.Count(got, port) != 1 {
				t.Errorf("allow: the port appears %d times, want once", strings.Count(got, port))
			}
			if len(network) != 1 || network[0].action != "allow" || !slices.Equal(network[0].ops, []string{"network-outbound"}) {
				t.Errorf("allow: want exactly one network rule, network-outbound, got %d", len(network))
			}
			if strings.Contains(got, "network*") || strings.Contains(got, "network-inbound") || strings.Contains(got, "system-socket") {
				t.Errorf("allow: more network than the proxy's port")
			}
		case NetworkNone:
			if strings.Contains(got, port) {
				t.Errorf("none: the proxy port appears")
			}
			if len(network) != 0 || strings.Contains(got, "network-outbound") || strings.Contains(got, "system-socket") {
				t.Errorf("none: a network rule: %v", network)
			}
		case NetworkAny:
			if strings.Contains(got, port) {
				t.Errorf("any: the proxy port appears")
			}
			if !strings.Contains(got, "\n(allow network*)\n") {
				t.Errorf("any: no (allow network*)")
			}
		}
	}
}

// Every secret beneath a read root is denied (reads and writes) by a rule
// that comes after the broad read allow, so that it wins.
func TestSeatbeltSecretsDeniedAfterReadAllow(t *testing.T) {
	p := sbDefaultPlan()
	rules := sbRules(t, SeatbeltProfile(p))
	broad := -1
	for _, r := range rules {
		if r.action == "allow" && slices.Contains(r.ops, "file-read*") && r.hasFilter("subpath", "/") {
			broad = r.index
			break
		}
	}
	if broad < 0 {
		t.Fatal("no (allow file-read* (subpath \"/\"))")
	}
	for _, s := range p.Secrets {
		found := false
		for _, r := range rules {
			if r.action == "deny" && r.index > broad && slices.Contains(r.ops, "file-read*") &&
				slices.Contains(r.ops, "file-write*") && r.hasFilter("subpath", s) {
				found = true
			}
		}
		if !found {
			t.Errorf("secret %q is not denied after rule #%d", s, broad)
		}
		sbExpect(t, rules, "file-read-data", s+"/x", false)
		sbExpect(t, rules, "file-read-data", s, false)
		sbExpect(t, rules, "file-write-create", s+"/x", false)
	}
}

// An explicit grant beneath a secret is read again; a secret beneath an
// explicit grant stays denied (granting a folder is no grant of the keys
// in it), but for what is granted beneath it in turn.
func TestSeatbeltGrantsAndSecrets(t *testing.T) {
	p := sbDefaultPlan()
	p.Read = []string{sbHome + "/.ssh/known_hosts"}
	p.Write = append(p.Write, sbHome+"/.aws/cli-cache")
	p.Secrets = append(p.Secrets, sbCwd+"/.env")
	got := SeatbeltProfile(p)
	rules := sbRules(t, got)
	sbExpect(t, rules, "file-read-data", sbHome+"/.ssh/known_hosts", true)
	sbExpect(t, rules, "file-read-metadata", sbHome+"/.ssh/", true) // realpath of the grant
	sbExpect(t, rules, "file-read-data", sbHome+"/.ssh/", false)    // not its listing
	sbExpect(t, rules, "file-read-data", sbHome+"/.ssh/id_ed25519", false)
	sbExpect(t, rules, "file-write-data", sbHome+"/.ssh/known_hosts", false) // read-only grant
	sbExpect(t, rules, "file-write-data", sbHome+"/.aws/cli-cache/x.json", true)
	sbExpect(t, rules, "file-read-data", sbHome+"/.aws/credentials", false)
	sbExpect(t, rules, "file-read-data", sbCwd+"/.env", false)
	sbExpect(t, rules, "file-write-data", sbCwd+"/.env", false)
	sbExpect(t, rules, "file-write-data", sbCwd+"/main.go", true)
	// The home granted whole: its keys stay denied, what is granted
	// beneath them is not.
	h := sbDefaultPlan()
	h.Write = append(h.Write, sbHome)
	h.Read = []string{sbHome + "/.ssh/known_hosts"}
	hr := sbRules(t, SeatbeltProfile(h))
	sbExpect(t, hr, "file-write-data", sbHome+"/notes.txt", true)
	sbExpect(t, hr, "file-read-data", sbHome+"/.ssh/id_rsa", false)
	sbExpect(t, hr, "file-write-create", sbHome+"/.ssh/authorized_keys", false)
	sbExpect(t, hr, "file-read-data", sbHome+"/.ssh/known_hosts", true)
	sbExpect(t, hr, "file-write-data", sbHome+"/.ssh/known_hosts", false)
	// A secret granted itself is granted.
	g := sbDefaultPlan()
	g.Read = []string{sbHome + "/.aws"}
	sbExpect(t, sbRules(t, SeatbeltProfile(g)), "file-read-data", sbHome+"/.aws/config", true)
	// A secret not beneath any read root is denied by default; no rule.
	q := sbStrictPlan()
	q.Secrets = []string{sbHome + "/.ssh"}
	if strings.Contains(SeatbeltProfile(q), ".ssh") {
		t.Errorf("strict: a secret outside the read roots is written in the profile")
	}
	sbExpect(t, sbRules(t, SeatbeltProfile(q)), "file-read-data", sbHome+"/.ssh/id_rsa", false)
}

// Always wins over Read and Write; the run's own temp dir, allowed last,
// wins over Always; the other runs' temp dirs stay denied.
func TestSeatbeltTempDirAfterAlways(t *testing.T) {
	for _, p := range []*Plan{sbAlwaysPlan(), sbStrictPlan(), sbDefaultPlan()} {
		rules := sbRules(t, SeatbeltProfile(p))
		lastDeny, tmpAllow := -1, -1
		for _, r := range rules {
			denies := false
			for _, a := range p.Always {
				denies = denies || r.hasFilter("subpath", a)
			}
			for _, pre := range p.AlwaysPrefixes {
				denies = denies || r.hasFilter("prefix", pre)
			}
			if denies && r.action == "deny" {
				lastDeny = r.index
			}
			if r.action == "allow" && r.hasFilter("subpath", p.TempDir) && slices.Contains(r.ops, "file-write*") {
				tmpAllow = r.index
			}
		}
		if lastDeny < 0 || tmpAllow < 0 || tmpAllow < lastDeny {
			t.Errorf("temp dir %q: allow at #%d, last Always deny at #%d", p.TempDir, tmpAllow, lastDeny)
		}
		for _, op := range []string{"file-read-data", "file-write-create", "file-write-data"} {
			sbExpect(t, rules, op, p.TempDir+"/scratch", true)
			sbExpect(t, rules, op, filepath.Dir(p.TempDir)+"/run-9999/scratch", false)
		}
		sbExpect(t, rules, "file-read-metadata", filepath.Dir(p.TempDir)+"/", true) // realpath of the temp dir
		sbExpect(t, rules, "file-read-data", filepath.Dir(p.TempDir), false)        // not its listing
		for _, a := range p.Always {
			sbExpect(t, rules, "file-read-data", a+"/x", false)
		}
		for _, pre := range p.AlwaysPrefixes {
			for _, s := range []string{"", "-wal", "-shm", ".seal", ".token", ".bak/1"} {
				sbExpect(t, rules, "file-read-data", pre+s, false)
				sbExpect(t, rules, "file-write-data", pre+s, false)
				sbExpect(t, rules, "file-read-metadata", pre+s+"/", false)
			}
			// Renaming the directory above would carry them out of the denial.
			for _, d := range seatbeltAncestors(pre) {
				sbExpect(t, rules, "file-write-unlink", d, false)
			}
		}
	}
	// Beneath the whole home, granted read-write.
	rules := sbRules(t, SeatbeltProfile(sbAlwaysPlan()))
	sbExpect(t, rules, "file-write-data", sbHome+"/proj/main.go", true)
	sbExpect(t, rules, "file-read-data", filepath.Dir(sbDB)+"/other.txt", true) // beside the family
	sbExpect(t, rules, "file-read-data", sbHome+"/.other-store/keys", false)
	sbExpect(t, rules, "file-write-unlink", sbHome+"/.other-store", false)
	sbExpect(t, rules, "file-write-unlink", filepath.Dir(sbDB), false)
	sbExpect(t, rules, "file-write-unlink", sbHome+"/proj/old.txt", true)
	sbExpect(t, rules, "file-read-data", sbHome+"/.ssh/id_rsa", false) // ~ granted whole is no grant of ~/.ssh
}

// Paths beneath /tmp, /var and /etc are matched by the kernel under
// /private: both spellings are written.
func TestSeatbeltPrivateSpelling(t *testing.T) {
	p := sbStrictPlan()
	rules := sbRules(t, SeatbeltProfile(p))
	for _, tmp := range []string{p.TempDir, "/private" + p.TempDir} {
		sbExpect(t, rules, "file-write-data", tmp+"/f", true)
		sbExpect(t, rules, "file-read-data", filepath.Dir(tmp)+"/run-1/f", false)
	}
	sbExpect(t, rules, "file-read-data", "/private/etc/hosts", true)
	sbExpect(t, rules, "file-read-data", "/private/var/db/timezone/zoneinfo/UTC", true)
	sbExpect(t, rules, "file-read-data", "/private/var/log/system.log", false)
}

func TestSeatbeltReadWriteBounds(t *testing.T) {
	rules := sbRules(t, SeatbeltProfile(sbDefaultPlan()))
	sbExpect(t, rules, "file-read-data", "/etc/hosts", true)
	sbExpect(t, rules, "file-read-data", sbHome+"/Documents/a.txt", true)
	sbExpect(t, rules, "file-write-data", sbHome+"/Documents/a.txt", false)
	sbExpect(t, rules, "file-write-create", "/usr/local/bin/x", false)
	sbExpect(t, rules, "file-write-data", sbCwd+"/out.txt", true)
	sbExpect(t, rules, "file-write-data", "/dev/null", true)
	sbExpect(t, rules, "file-ioctl", "/dev/tty", true)
	sbExpect(t, rules, "file-write-data", "/dev/disk0", false)
	strict := sbRules(t, SeatbeltProfile(sbStrictPlan()))
	sbExpect(t, strict, "file-read-data", "/usr/lib/libSystem.B.dylib", true)
	sbExpect(t, strict, "file-read-data", sbHome+"/.local/bin/mcp-server", true)
	sbExpect(t, strict, "file-read-data", sbHome+"/notes.txt", true)
	sbExpect(t, strict, "file-write-data", sbHome+"/notes.txt", false)
	sbExpect(t, strict, "file-read-data", sbHome+"/Documents/a.txt", false)
	sbExpect(t, strict, "file-read-metadata", sbHome+"/Documents/", true) // a directory: stat only
	sbExpect(t, strict, "file-read-metadata", sbHome+"/Documents/a.txt", false)
}

// Quotes and backslashes are escaped; the text reads back to the paths.
func TestSeatbeltQuoting(t *testing.T) {
	p := sbQuotingPlan()
	got := SeatbeltProfile(p)
	for _, want := range []string{
		`(subpath "/Volumes/My Drive/a \"quoted\" dir")`,
		`(subpath "/Users/ann/we\\ird")`,
		`(subpath "/Users/ann/my \"secret\" notes")`,
		`(prefix "/Users/ann/sb \"db\"\\x.db")`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in\n%s", want, got)
		}
	}
	rules := sbRules(t, got)
	for _, s := range append(append(slices.Clone(p.Read), p.Write...), p.Secrets...) {
		if !slices.ContainsFunc(rules, func(r sbRule) bool { return r.hasFilter("subpath", s) }) {
			t.Errorf("%q does not read back from the profile", s)
		}
	}
	sbExpect(t, rules, "file-read-data", p.Secrets[0]+"/a", false)
	sbExpect(t, rules, "file-write-data", p.Write[1]+"/a", true)
	sbExpect(t, rules, "file-write-data", p.TempDir+"/a", true)
	sbExpect(t, rules, "file-read-data", p.AlwaysPrefixes[0]+"-wal", false)
}

// The Always prefix is a (prefix …) filter: a string, not a regular
// expression, so . + ( [ in it are only SBPL-quoted, never regex-escaped
// (and the profile holds no regex at all).
func TestSeatbeltPrefixIsLiteral(t *testing.T) {
	p := sbDefaultPlan()
	pre := sbHome + "/data/sb.v2+x (copy) [1].db"
	p.AlwaysPrefixes = []string{pre}
	got := SeatbeltProfile(p)
	if want := `(prefix "` + pre + `")`; !strings.Contains(got, want) {
		t.Errorf("no %s in\n%s", want, got)
	}
	for _, g := range sbGolden {
		if strings.Contains(SeatbeltProfile(g.plan()), "(regex") {
			t.Errorf("%s: a regex filter", g.name)
		}
	}
	rules := sbRules(t, got)
	sbExpect(t, rules, "file-read-data", pre+"-wal", false)
	sbExpect(t, rules, "file-read-data", sbHome+"/data/sbXv2+x (copy) [1].db", true) // "." is a dot
	sbExpect(t, rules, "file-read-data", sbHome+"/data/sb.v2x (copy) [1].db", true)  // "+" is a plus
}

func TestCheckSeatbeltPaths(t *testing.T) {
	for _, g := range sbGolden {
		if err := CheckSeatbeltPaths(g.plan()); err != nil {
			t.Errorf("%s: %v", g.name, err)
		}
	}
	bad := map[string]string{
		"newline": "/Users/ann/a\nb", "carriage return": "/Users/ann/a\rb", "NUL": "/Users/ann/a\x00b",
		"tab": "/Users/ann/a\tb", "DEL": "/Users/ann/a\x7fb", "C1": "/Users/ann/a\u0085b",
		"relative": "Users/ann", "empty": "", "invalid UTF-8": "/Users/ann/\xff",
	}
	set := map[string]func(*Plan, string){
		"read_roots": func(p *Plan, s string) { p.ReadRoots = append(p.ReadRoots, s) },
		"read":       func(p *Plan, s string) { p.Read = append(p.Read, s) },
		"write":      func(p *Plan, s string) { p.Write = append(p.Write, s) },
		"secrets":    func(p *Plan, s string) { p.Secrets = append(p.Secrets, s) },
		"always":     func(p *Plan, s string) { p.Always = append(p.Always, s) },
		"prefixes":   func(p *Plan, s string) { p.AlwaysPrefixes = append(p.AlwaysPrefixes, s) },
		"devices":    func(p *Plan, s string) { p.Devices = append(p.Devices, s) },
		"temp_dir":   func(p *Plan, s string) { p.TempDir = s },
	}
	for what, s := range bad {
		for field, f := range set {
			if field == "temp_dir" && s == "" {
				continue // no temp dir
			}
			p := sbDefaultPlan()
			f(p, s)
			if err := CheckSeatbeltPaths(p); err == nil {
				t.Errorf("%s in %s: no error", what, field)
			}
			got := SeatbeltProfile(p)
			if got != seatbeltRefused {
				t.Errorf("%s in %s: the profile is not the refusing one:\n%s", what, field, got)
			}
		}
	}
	// The refusing profile allows nothing, and names no path.
	for _, r := range sbRules(t, seatbeltRefused) {
		if r.action == "allow" {
			t.Errorf("the refusing profile allows %v", r.ops)
		}
	}
	p := sbDefaultPlan()
	p.Network = NetworkAllow
	if CheckSeatbeltPaths(p) == nil {
		t.Errorf("allow-list without a proxy port: no error")
	}
	p.ProxyPort = 70000
	if CheckSeatbeltPaths(p) == nil {
		t.Errorf("allow-list with port 70000: no error")
	}
	p.Network = "everything"
	if CheckSeatbeltPaths(p) == nil {
		t.Errorf("unknown network mode: no error")
	}
	if CheckSeatbeltPaths(nil) == nil {
		t.Errorf("nil plan: no error")
	}
	p = sbDefaultPlan()
	p.Network = ""
	if err := CheckSeatbeltPaths(p); err != nil || strings.Contains(SeatbeltProfile(p), "(allow network") {
		t.Errorf(`network "": want none, got %v`, err)
	}
}

func TestSeatbeltArgv(t *testing.T) {
	p := sbDefaultPlan()
	prof := SeatbeltProfile(p)
	got := SeatbeltArgv(p, "/opt/homebrew/bin/npx", []string{"npx", "-y", "@scope/server", "--root=/x"})
	want := []string{"/usr/bin/sandbox-exec", "-p", prof, "/opt/homebrew/bin/npx", "-y", "@scope/server", "--root=/x"}
	if !slices.Equal(got, want) {
		t.Errorf("argv:\n got %q\nwant %q", got[3:], want[3:])
	}
	if got := SeatbeltArgv(p, "/bin/server", nil); !slices.Equal(got, []string{"/usr/bin/sandbox-exec", "-p", prof, "/bin/server"}) {
		t.Errorf("no argv: %q", got[3:])
	}
	if got := SeatbeltArgv(p, "-n", []string{"-n", "a"}); got[3] != "./-n" || got[4] != "a" {
		t.Errorf("a path like an option: %q", got[3:])
	}
}

// sbExpect checks the decision the profile's rules give op on path (a
// directory when it ends in "/"), as SBPL decides: the last rule that
// matches.
func sbExpect(t *testing.T, rules []sbRule, op, path string, allow bool) {
	t.Helper()
	dir := strings.HasSuffix(path, "/") && path != "/"
	got, by := sbDecide(rules, op, strings.TrimSuffix(path, "/"), dir)
	if got != allow {
		what := map[bool]string{true: "allowed", false: "denied"}
		t.Errorf("%s %q: %s (by rule #%d), want %s", op, path, what[got], by, what[allow])
	}
}

// A small reader of the SBPL this file writes: lists, symbols, strings
// with \\ and \" escapes, comments. It refuses what the generator never
// writes (other escapes, raw strings, a newline in a string).
type sbNode struct {
	list  []sbNode
	isStr bool
	text  string // a symbol's or a string's text
	isLst bool
}

func sbParse(src string) ([]sbNode, error) {
	var stack [][]sbNode
	cur := []sbNode{}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\n' || c == '\t':
			i++
		case c == ';':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '(':
			stack = append(stack, cur)
			cur = []sbNode{}
			i++
		case c == ')':
			if len(stack) == 0 {
				return nil, fmt.Errorf("unbalanced ) at %d", i)
			}
			n := sbNode{list: cur, isLst: true}
			cur = append(stack[len(stack)-1], n)
			stack = stack[:len(stack)-1]
			i++
		case c == '"':
			var b strings.Builder
			i++
			for {
				if i >= len(src) {
					return nil, fmt.Errorf("unterminated string")
				}
				c := src[i]
				if c == '"' {
					i++
					break
				}
				if c == '\n' || c < 0x20 || c == 0x7f {
					return nil, fmt.Errorf("control character in a string at %d", i)
				}
				if c == '\\' {
					if i+1 >= len(src) || (src[i+1] != '\\' && src[i+1] != '"') {
						return nil, fmt.Errorf("unknown escape at %d", i)
					}
					i++
					c = src[i]
				}
				b.WriteByte(c)
				i++
			}
			cur = append(cur, sbNode{isStr: true, text: b.String()})
		case c == '#':
			return nil, fmt.Errorf("# at %d", i)
		default:
			j := i
			for j < len(src) && !strings.ContainsRune(" \n\t();\"", rune(src[j])) {
				j++
			}
			cur = append(cur, sbNode{text: src[i:j]})
			i = j
		}
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("unbalanced (")
	}
	return cur, nil
}

// sbRule is one (allow|deny op… filter…) of a profile.
type sbRule struct {
	index   int
	action  string
	ops     []string
	filters []sbNode
}

func (r sbRule) hasFilter(kind, arg string) bool {
	return slices.ContainsFunc(r.filters, func(f sbNode) bool {
		return len(f.list) == 2 && f.list[0].text == kind && f.list[1].isStr && f.list[1].text == arg
	})
}

func sbRules(t *testing.T, src string) []sbRule {
	t.Helper()
	forms, err := sbParse(src)
	if err != nil {
		t.Fatalf("the profile does not read back: %v\n%s", err, src)
	}
	var out []sbRule
	for _, f := range forms {
		if !f.isLst || len(f.list) == 0 {
			t.Fatalf("a top-level form that is not a list: %+v", f)
		}
		head := f.list[0].text
		if head == "version" {
			continue
		}
		if head != "allow" && head != "deny" {
			t.Fatalf("unknown form (%s …)", head)
		}
		r := sbRule{index: len(out), action: head}
		for _, n := range f.list[1:] {
			if n.isLst {
				r.filters = append(r.filters, n)
			} else if len(r.filters) == 0 && !n.isStr {
				r.ops = append(r.ops, n.text)
			} else {
				t.Fatalf("rule #%d: an operation after a filter", r.index)
			}
		}
		out = append(out, r)
	}
	return out
}

// sbDecide decides op on path as SBPL does: the last rule whose
// operation and one of whose filters match; (deny default) or (allow
// default) when none does. It knows the filters the generator writes for
// files: subpath, literal, prefix and vnode-type.
func sbDecide(rules []sbRule, op, path string, dir bool) (bool, int) {
	def, defIndex := false, -1
	for i := len(rules) - 1; i >= 0; i-- {
		r := rules[i]
		if slices.Contains(r.ops, "default") {
			if defIndex < 0 {
				def, defIndex = r.action == "allow", r.index
			}
			continue
		}
		if !slices.ContainsFunc(r.ops, func(o string) bool {
			return o == op || strings.HasSuffix(o, "*") && strings.HasPrefix(op, strings.TrimSuffix(o, "*"))
		}) {
			continue
		}
		if len(r.filters) == 0 || slices.ContainsFunc(r.filters, func(f sbNode) bool { return sbMatch(f, path, dir) }) {
			return r.action == "allow", r.index
		}
	}
	return def, defIndex
}

func sbMatch(f sbNode, path string, dir bool) bool {
	if len(f.list) != 2 {
		return false
	}
	arg := f.list[1].text
	switch f.list[0].text {
	case "subpath":
		return seatbeltBeneath(path, arg)
	case "literal":
		return path == arg
	case "prefix":
		return strings.HasPrefix(path, arg)
	case "vnode-type":
		return arg == "DIRECTORY" && dir
	}
	return false
}

// sbDiff is a line diff of two texts (- want, + got).
func sbDiff(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	// lcs[i][j]: the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			fmt.Fprintf(&out, "+%d: %s\n", j+1, y[j])
			j++
		default:
			fmt.Fprintf(&out, "-%d: %s\n", i+1, x[i])
			i++
		}
	}
	return out.String()
}
