package registry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/switchboard-dev/switchboard/store"
)

// maxLock bounds the npx lock file read.
const maxLock = 16 << 20

// Artifact is what the launch of a server added from a registry really
// ran, as its verification left it: for npm, the package's resolved
// version and integrity (sha512), from the lock file npx keeps for the
// exact package spec in npm's cache (the server's npm_config_cache, else
// ~/.npm under home). "" with no error for a kind not recorded yet.
func Artifact(srv store.Server, home string) (string, error) {
	f := srv.From
	if f == nil || f.Kind != "npm" {
		return "", nil
	}
	cache := srv.Env["npm_config_cache"]
	if cache == "" {
		cache = srv.Env["NPM_CONFIG_CACHE"]
	}
	if cache == "" {
		cache = filepath.Join(home, ".npm")
	}
	dirs, err := filepath.Glob(filepath.Join(cache, "_npx", "*", "package.json"))
	if err != nil {
		return "", err
	}
	id, _, ok := cutVersion(f.Package)
	if !ok {
		return "", fmt.Errorf("the launch's package %q names no version", f.Package)
	}
	for _, pj := range dirs {
		var spec struct {
			Npx struct {
				Packages []string `json:"packages"`
			} `json:"_npx"`
		}
		if readJSON(pj, &spec) != nil || !slices.Contains(spec.Npx.Packages, f.Package) {
			continue
		}
		var lock struct {
			Packages map[string]struct {
				Version   string `json:"version"`
				Resolved  string `json:"resolved"`
				Integrity string `json:"integrity"`
			} `json:"packages"`
		}
		if err := readJSON(filepath.Join(filepath.Dir(pj), "package-lock.json"), &lock); err != nil {
			return "", fmt.Errorf("read npx's lock of %s: %w", f.Package, err)
		}
		p, ok := lock.Packages["node_modules/"+id]
		if !ok || p.Integrity == "" {
			return "", fmt.Errorf("npx's lock of %s names no integrity for %s", f.Package, id)
		}
		return "npm " + id + "@" + p.Version + " " + p.Integrity, nil
	}
	return "", fmt.Errorf("npx left no lock of %s in %s", f.Package, cache)
}

// cutVersion splits "id@version" (an id may start with @scope/).
func cutVersion(spec string) (id, version string, ok bool) {
	i := len(spec) - 1
	for i > 0 && spec[i] != '@' {
		i--
	}
	if i <= 0 {
		return spec, "", false
	}
	return spec[:i], spec[i+1:], true
}

func readJSON(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() > maxLock {
		return fmt.Errorf("%s is over %d MiB", path, maxLock>>20)
	}
	return json.NewDecoder(f).Decode(v)
}
