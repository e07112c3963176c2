// Package repotest holds tests of the repository itself, not of a
// package: that the README's Layout names every package, and that the
// commands import only the web face of web/.
package repotest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the module's root, two directories up.
var root, _ = filepath.Abs("../..")

// entry is a line of the Layout block that names a directory: the name
// at its start, then what it holds.
var entry = regexp.MustCompile(`^([a-z0-9_/-]+/)\s`)

// layout reads the README's Layout block into its entries: directory
// (with a trailing slash) → the text of its entry, continuation lines
// included.
func layout(t *testing.T) map[string]string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## Layout\n\n```\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("the README has no Layout block (## Layout, then a ``` block)")
	}
	out := map[string]string{}
	var last string
	for line := range strings.Lines(block) {
		if m := entry.FindStringSubmatch(line); m != nil {
			last = m[1]
			out[last] = line
		} else if last != "" {
			out[last] += line
		}
	}
	return out
}

// Every package of the module is in the README's Layout: its directory
// has an entry, or its name is in its parent's (web/internal/hub in
// web/internal/'s), so that a stranger finds where each thing lives and
// a new package cannot go unmentioned (issue 35).
func TestLayoutNamesEveryPackage(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	entries := layout(t)
	dirs := strings.Fields(string(out))
	if len(dirs) < 20 {
		t.Fatalf("go list found %d packages; want the module's", len(dirs))
	}
	for _, dir := range dirs {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel) + "/"
		if _, ok := entries[rel]; ok {
			continue
		}
		named := false
		// Up the tree: the nearest entry must name it.
		for parent := filepath.Dir(strings.TrimSuffix(rel, "/")); parent != "."; parent = filepath.Dir(parent) {
			if text, ok := entries[filepath.ToSlash(parent)+"/"]; ok {
				named = regexp.MustCompile(`\b` + regexp.QuoteMeta(filepath.Base(strings.TrimSuffix(rel, "/"))) + `\b`).MatchString(text)
				break
			}
		}
		if !named {
			t.Errorf("the README's Layout does not name %s: give it an entry, or name it in its parent's", rel)
		}
	}
	// And nothing it names is gone.
	for dir := range entries {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			t.Errorf("the README's Layout names %s, which is not in the repository", dir)
		}
	}
}
