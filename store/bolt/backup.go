package bolt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	bbolt "go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the whole database to w, as it was
// when Backup started, while other reads and writes go on; it returns the
// number of bytes written. The copy is a database file that Open accepts;
// having been taken from a store that was open, it is checked in full the
// first time it is opened. Writes that need the file to grow wait until
// the copy is done, so a long backup can delay them.
func (db *DB) Backup(ctx context.Context, w io.Writer) (int64, error) {
	var n int64
	err := db.view(func(tx *bbolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("store: back up %s: %w", db.path, err)
	}
	return n, nil
}

// BackupTo writes a backup (see Backup) to the file at path, replacing it
// only once the new copy is complete, on disk and has passed an integrity
// check in a child process (see CheckInChild): until then path keeps what
// it held before, so a failed or interrupted backup never destroys the
// previous one. It refuses to write over the database itself. Cancelling
// ctx stops the backup and leaves path as it was.
func (db *DB) BackupTo(ctx context.Context, path string) (err error) {
	if fi, err := os.Stat(path); err == nil {
		if self, serr := os.Stat(db.path); serr == nil && os.SameFile(fi, self) {
			return fmt.Errorf("store: back up %s: %s is the database itself", db.path, path)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("store: back up %s: %w", db.path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := db.Backup(ctx, ctxWriter{ctx, tmp}); err != nil {
		return err
	}
	if err := errors.Join(tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("store: back up %s: write %s: %w", db.path, tmp.Name(), err)
	}
	if err := CheckInChild(ctx, tmp.Name()); err != nil {
		return fmt.Errorf("store: back up %s: the copy failed its check: %w", db.path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("store: back up %s: %w", db.path, err)
	}
	return syncDir(filepath.Dir(path))
}

// ctxWriter fails writes once its context is done, so that a long copy
// can be stopped.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("store: sync %s: %w", dir, err)
	}
	return nil
}
