package sandbox

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// The OS-neutral part of the Windows wall (see token_windows.go): which
// walls of a plan it does not build, and which paths a run labels Low,
// so that its low-integrity server may write there and nowhere else.

// lowLabelSDDL is the SACL of a directory a low-integrity server may
// write: the mandatory label Low (LW), inherited by the files (OI) and
// directories (CI) beneath it, with the no-write-up policy (NW). The
// label goes down to what is already beneath the directory as well (see
// LabelLow).
const lowLabelSDDL = "S:(ML;OICI;NW;;;LW)"

// lowLabelFileSDDL is the same label for a file, which has nothing to
// pass it on to.
const lowLabelFileSDDL = "S:(ML;;NW;;;LW)"

// lowIntegrityMissing lists the walls plan p asks for that the Windows
// tier, a job and a restricted low-integrity token (job+low-integrity),
// does not build (see token_windows.go), worded as Tier.Missing words
// Linux's. Every walled plan asks for read walls: the secrets
// (DefaultSecrets and the profile's Deny) or a strict file mode, and
// always Switchboard's own files; a low-integrity process reads whatever
// the user can. Every network but "any" asks for a network wall, and
// there is none on Windows. So on Windows a walled server runs only if
// its profile is Weaker.
func lowIntegrityMissing(p *Plan) []string {
	if p.Off {
		return nil
	}
	m := []string{"read walls are not built on Windows (a low-integrity server reads whatever you can: your keys and credentials, Switchboard's own files)"}
	if p.Network != NetworkAny {
		m = append(m, "network walls are not built on Windows (the server connects anywhere you can, loopback and the dashboard included)")
	}
	return m
}

// LowWritePaths returns, sorted and without duplicates, the paths a run
// labels Low on Windows: the plan's TempDir, and every Write path (not
// Read, not Devices) as its real path. Nothing is returned that is, or
// is beneath, an Always path or an entry matching an AlwaysPrefixes
// prefix (see Plan.alwaysDenied), and, because a label is inherited by
// everything beneath it, nothing that holds such a path either: a Write
// directory with a denied path beneath it is not labelled itself; its
// entries are, one by one, except the denied ones, as the Landlock
// grants are made (see Plan.grants). So the server cannot create entries
// in that directory itself, and an entry made there later stays
// unwritable until the next run labels it.
//
// A path that does not exist is left out (there is nothing to label), as
// are links met while going down (what they lead to is judged where it
// is) and a Write path that is a Windows junction or other reparse point
// filepath.EvalSymlinks does not follow (what it leads to cannot be
// judged). A path beneath another returned one is left out: the label of
// the one above reaches it. TempDir is the run's own (it lies beneath the
// temp root, an Always path, among the database's entries) and is always
// returned when set. On Windows paths are compared without regard to
// case (Always paths that do not exist cannot be spelt as the disk does).
//
// The list depends on the files as they are now: it reads the directories
// it goes down into.
func LowWritePaths(p *Plan) []string {
	return lowWritePaths(p, runtime.GOOS == "windows")
}

// lowWritePaths is LowWritePaths, comparing paths case-insensitively if
// fold.
func lowWritePaths(p *Plan, fold bool) []string {
	key := func(s string) string { return s }
	if fold {
		key = strings.ToLower
	}
	// The always-denied paths, and where those behind a link lead, in
	// the form paths are compared in.
	deny := &Plan{}
	for _, a := range p.Always {
		for _, s := range withReal(a) {
			deny.Always = append(deny.Always, key(s))
		}
	}
	for _, pre := range p.AlwaysPrefixes {
		dir, base := filepath.Dir(pre), filepath.Base(pre)
		for _, d := range withReal(dir) {
			deny.AlwaysPrefixes = append(deny.AlwaysPrefixes, key(filepath.Join(d, base)))
		}
	}
	var secrets []string
	for _, s := range p.Secrets {
		for _, r := range withReal(s) {
			secrets = append(secrets, key(r))
		}
	}
	var out []string
	if p.TempDir != "" {
		out = append(out, filepath.Clean(p.TempDir))
	}
	for _, w := range p.Write {
		// A grant of a link is a grant of what it leads to, judged as
		// itself, unless the server could have made the link or it leads
		// into a secret (see Plan.grantable); on Windows this also spells
		// the path as the disk does.
		real, ok := p.grantable(w, resolveAll(p.Secrets))
		if !ok {
			continue
		}
		// The secrets beneath the grant are not labelled: granting the
		// home is no grant of ~/.ssh.
		d := &Plan{Always: append(slices.Clone(deny.Always), secretsBeneath(secrets, key(real))...), AlwaysPrefixes: deny.AlwaysPrefixes}
		lowCover(real, d, key, &out)
	}
	// Sort in the compared form, so a directory comes just before what
	// is beneath it, then keep the first of each run of nested paths.
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(key(a), key(b)) })
	kept := out[:0]
	for _, s := range out {
		if len(kept) > 0 && within(key(s), key(kept[len(kept)-1])) {
			continue
		}
		kept = append(kept, s)
	}
	return slices.Clip(kept)
}

// reparse are the modes of a link: a symbolic link, or on Windows a
// junction or another reparse point (ModeIrregular).
const reparse = os.ModeSymlink | os.ModeIrregular

// lowCover adds to out what labels path (a real path: no link on the way)
// minus what deny denies.
func lowCover(path string, deny *Plan, key func(string) string, out *[]string) {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&reparse != 0 {
		return
	}
	k := key(path)
	if deny.alwaysDenied(k) {
		return
	}
	if !fi.IsDir() || !deniedBelow(k, deny) {
		*out = append(*out, path)
		return
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type()&reparse != 0 {
			continue // judged where it leads, if granted there
		}
		lowCover(filepath.Join(path, e.Name()), deny, key, out)
	}
}

// deniedBelow reports whether something strictly beneath dir (in the
// compared form) is denied: an Always path, or an entry of a directory
// at or beneath dir matching a prefix.
func deniedBelow(dir string, deny *Plan) bool {
	for _, a := range deny.Always {
		if a != dir && within(a, dir) {
			return true
		}
	}
	for _, pre := range deny.AlwaysPrefixes {
		if within(filepath.Dir(pre), dir) {
			return true
		}
	}
	return false
}

// withReal returns path and, if it differs, its real path.
func withReal(path string) []string {
	path = filepath.Clean(path)
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		return []string{path, real}
	}
	return []string{path}
}
