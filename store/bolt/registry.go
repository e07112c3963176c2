package bolt

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/switchboard-dev/switchboard/store"
)

// openFiles are the database files open in this process. bbolt's lock is
// flock(2): on Linux a second handle in the same process only fails after
// the whole lock timeout, and where flock is emulated with per-process
// locks (NFS, some other systems) it does not fail at all, and two handles
// writing one file corrupt it. Open claims the file here first, so a
// second Open in the process fails at once, whichever name it uses. It is
// process-wide state because the lock it stands in for is.
var openFiles struct {
	sync.Mutex
	claims []*claim
}

// claim is one open file: its path with symlinks resolved, and its
// identity (for hard links) once it exists.
type claim struct {
	path string
	info os.FileInfo
}

// claimPath registers path as open in this process, or returns ErrInUse
// if it, or the same file under another name, already is. The directory
// must exist.
func claimPath(path string) (*claim, error) {
	canon, err := canonicalPath(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	info, _ := os.Stat(canon) // nil for a file Open is about to create
	openFiles.Lock()
	defer openFiles.Unlock()
	for _, c := range openFiles.claims {
		if c.path == canon || (info != nil && c.info != nil && os.SameFile(info, c.info)) {
			return nil, fmt.Errorf("%w: %s (it is already open in this process)", store.ErrInUse, path)
		}
	}
	c := &claim{path: canon, info: info}
	openFiles.claims = append(openFiles.claims, c)
	return c, nil
}

// canonicalPath is path made absolute, with symlinks resolved in the
// file name if the file exists, and in its directory otherwise.
func canonicalPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		return resolved, nil
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}

// opened records the identity of the file, now that it exists. Should
// the file not be found, the claim keeps matching by path alone.
func (c *claim) opened() {
	info, err := os.Stat(c.path)
	if err != nil {
		return
	}
	openFiles.Lock()
	c.info = info
	openFiles.Unlock()
}

// release forgets the claim; the file may be opened again.
func (c *claim) release() {
	openFiles.Lock()
	defer openFiles.Unlock()
	openFiles.claims = slices.DeleteFunc(openFiles.claims, func(o *claim) bool { return o == c })
}
