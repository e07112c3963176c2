package bolt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	bbolt "go.etcd.io/bbolt"

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
	src, err := bbolt.Open(path, filePerm, &bbolt.Options{Timeout: DefaultOpenTimeout, ReadOnly: true})
	if errors.Is(err, bbolt.ErrTimeout) {
		return fmt.Errorf("%w: %s", store.ErrInUse, path)
	}
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := path + ".compact"
	os.Remove(tmp)
	dst, err := bbolt.Open(tmp, filePerm, &bbolt.Options{Timeout: DefaultOpenTimeout})
	if err != nil {
		return err
	}
	err = catchDamage(path, func() error { return bbolt.Compact(dst, src, 64<<20) })
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncFile(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	breakSeal(path)
	return syncDir(filepath.Dir(path))
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
