package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// grant is one path the walls open, with what is granted beneath it.
type grant struct {
	path  string
	dir   bool
	write bool
	// list: only the directory's listing (names), not what is beneath.
	list bool
}

// grants computes the paths a Landlock-style ruleset (one that can only
// allow, beneath a path) opens for the plan: each root minus what is
// denied beneath it. A root with something denied beneath it is not
// granted itself; its entries are, one by one, except the denied ones
// (and symbolic links: what they lead to is judged where it is). So a
// deny-list is built from an allow-list, as of now: an entry made later
// in a directory that holds a denied path is not readable.
//
// Listing such a directory is granted (its names, not its contents), so
// programs that look around their home still start.
func (p *Plan) grants() []grant {
	var out []grant
	always := p.alwaysPaths()
	secrets := append(resolveAll(p.Secrets), always...)
	for _, r := range p.ReadRoots {
		coverPath(r, false, secrets, p.AlwaysPrefixes, &out)
	}
	// A grant lifts the secrets it is or lies beneath, not those beneath
	// it: granting the home is no grant of ~/.ssh.
	for _, r := range p.Read {
		if real, ok := p.grantable(r, secrets); ok {
			coverPath(real, false, append(secretsBeneath(secrets, real), always...), p.AlwaysPrefixes, &out)
		}
	}
	for _, w := range p.Write {
		if real, ok := p.grantable(w, secrets); ok {
			coverPath(real, true, append(secretsBeneath(secrets, real), always...), p.AlwaysPrefixes, &out)
		}
	}
	for _, d := range p.Devices {
		if fi, err := os.Stat(d); err == nil {
			out = append(out, grant{path: d, dir: fi.IsDir(), write: true})
		}
	}
	if p.TempDir != "" {
		out = append(out, grant{path: p.TempDir, dir: true, write: true})
	}
	return out
}

// grantable returns where the Read or Write grant g really is, and
// whether it may be granted there. A grant reached through a symbolic
// link is refused when the server could have made the link (a link in
// a place it may write: a folder its arguments name, replaced by a link
// to the home or to /, would be granted read-write at its next start),
// and when it leads into a secret the grant as written does not name.
func (p *Plan) grantable(g string, secrets []string) (string, bool) {
	g = filepath.Clean(g)
	real, err := filepath.EvalSymlinks(g)
	if err != nil {
		return "", false // a missing path opens nothing
	}
	if real == g {
		return g, true
	}
	if link := firstLink(g); link != "" {
		for _, w := range append(slices.Clone(p.Write), p.TempDir) {
			if w != "" && link != filepath.Clean(w) && within(link, filepath.Clean(w)) {
				return "", false
			}
		}
	}
	for _, s := range secrets {
		if within(real, s) && !within(g, s) {
			return "", false
		}
	}
	return real, true
}

// firstLink returns the first component of path (an absolute, clean
// path) that is a symbolic link, or "".
func firstLink(path string) string {
	at := string(filepath.Separator)
	for _, part := range strings.Split(strings.TrimPrefix(path, at), string(filepath.Separator)) {
		at = filepath.Join(at, part)
		if fi, err := os.Lstat(at); err != nil {
			return ""
		} else if fi.Mode()&os.ModeSymlink != 0 {
			return at
		}
	}
	return ""
}

// alwaysPaths are the plan's Always paths, and where those that are
// symbolic links lead.
func (p *Plan) alwaysPaths() []string { return resolveAll(p.Always) }

// resolveAll returns paths and, for those whose real path differs (a
// link on the way), their real path too.
func resolveAll(paths []string) []string {
	out := slices.Clone(paths)
	for _, s := range paths {
		if r, err := filepath.EvalSymlinks(s); err == nil && r != s {
			out = append(out, r)
		}
	}
	return out
}

// coverPath adds the grants that open root minus denied (paths) and the
// entries matching prefixes (a directory and a name prefix each).
func coverPath(root string, write bool, denied, prefixes []string, out *[]grant) {
	fi, err := os.Lstat(root)
	if err != nil {
		return // a missing path opens nothing
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		// A grant of a link is a grant of what it leads to, which is judged
		// as itself.
		real, err := filepath.EvalSymlinks(root)
		if err != nil || real == root {
			return
		}
		coverPath(real, write, denied, prefixes, out)
		return
	}
	if isDenied(root, denied, prefixes) {
		return
	}
	if !fi.IsDir() || !deniedBeneath(root, denied, prefixes) {
		*out = append(*out, grant{path: root, dir: fi.IsDir(), write: write})
		return
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	*out = append(*out, grant{path: root, dir: true, list: true}) // see grants
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 {
			continue
		}
		coverPath(filepath.Join(root, e.Name()), write, denied, prefixes, out)
	}
}

// isDenied reports whether path is, or is beneath, a denied path or an
// entry matching a prefix.
func isDenied(path string, denied, prefixes []string) bool {
	for _, d := range denied {
		if within(path, d) && d != "/" {
			return true
		}
	}
	pl := Plan{AlwaysPrefixes: prefixes}
	return pl.alwaysDenied(path)
}

// deniedBeneath reports whether something strictly beneath dir is denied.
func deniedBeneath(dir string, denied, prefixes []string) bool {
	for _, d := range denied {
		if d != dir && within(d, dir) {
			return true
		}
	}
	for _, pre := range prefixes {
		if within(filepath.Dir(pre), dir) {
			return true
		}
	}
	return false
}

// secretsBeneath are the secrets strictly beneath grant.
func secretsBeneath(secrets []string, grant string) []string {
	var out []string
	for _, s := range secrets {
		if s != grant && within(s, grant) {
			out = append(out, s)
		}
	}
	return out
}
