package bolt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/switchboard-dev/switchboard/store"
)

// Compact rewrites the closed database file at path with only what it
// holds now, and puts the copy in its place: nothing a transaction freed
// is left in the file. bbolt does not clear a page it frees, so a value
// overwritten (a secret kept in clear by an earlier release, then
// sealed; one sealed under a key since rotated away) stays readable in
// the file until its page is reused; after Compact it is gone. The copy
// is written beside the file, synced, then renamed over it, so a crash
// leaves one whole file or the other. A file in use is ErrInUse.
func Compact(path string) error {
	if err := refuseForeign(path); err != nil {
		return err
	}
	tmp := path + ".compact"
	os.Remove(tmp)
	err := compactInto(path, tmp)
	if err == nil {
		err = syncFile(tmp)
	}
	if err == nil {
		// Both files are closed: Windows renames no file open without
		// sharing its deletion.
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	breakSeal(path)
	return syncDir(filepath.Dir(path))
}

// compactInto writes the live content of the closed database at path
// into a new database at tmp, and closes both.
func compactInto(path, tmp string) error {
	src, err := bbolt.Open(path, filePerm, &bbolt.Options{Timeout: DefaultOpenTimeout, ReadOnly: true})
	if errors.Is(err, berrors.ErrTimeout) {
		return fmt.Errorf("%w: %s", store.ErrInUse, path)
	}
	if err != nil {
		return err
	}
	dst, err := bbolt.Open(tmp, filePerm, &bbolt.Options{Timeout: DefaultOpenTimeout})
	if err != nil {
		src.Close()
		return err
	}
	err = catchDamage(path, func() error { return bbolt.Compact(dst, src, 64<<20) })
	return errors.Join(err, dst.Close(), src.Close())
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
