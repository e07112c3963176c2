// Package snapshot writes a consistent copy of a store into a new
// database file: the backup of a team's Switchboard on etcd, taken while
// its replicas run. The copy is read at one etcd revision (the store's
// Dump), written into a bbolt file beside the destination, read back and
// compared with what was read, and only then renamed into place, so that
// the destination is either the old file or a whole, checked copy. The
// secrets travel sealed, as the store keeps them; the copy opens as a
// database as it is, and goes back into etcd with `switchboard migrate`.
package snapshot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

// ErrClearSecrets is a store that keeps some secrets in clear (an earlier
// release wrote them): no copy is written of it.
var ErrClearSecrets = errors.New("the store keeps secrets in clear (an earlier release wrote it): start switchboard serve on it once, which seals them, then back it up")

// Written is what a snapshot copied.
type Written struct {
	Counts store.DumpCounts
	// Keys are the ids of the keys the copied secrets are sealed under.
	Keys []string
	// Size is the copy's size in bytes.
	Size int64
}

// Write copies src into a new database file at path, replacing what is
// there only once the copy is complete and checked (see the package
// comment).
func Write(ctx context.Context, src store.Dumper, path string) (Written, error) {
	d, err := src.Dump(ctx)
	if err != nil {
		return Written{}, fmt.Errorf("read the store: %w", err)
	}
	keys := map[string]bool{}
	for _, v := range d.SecretValues() {
		id, _, _, ok := store.SealedParts(v)
		if !ok {
			return Written{}, ErrClearSecrets
		}
		keys[id] = true
	}
	var b [6]byte
	rand.Read(b[:])
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".partial-"+hex.EncodeToString(b[:]))
	defer os.Remove(tmp) // gone once renamed; else what a failure left
	// Close leaves a seal beside the file, of no use at another path
	// (the copy gets a full check at its first open).
	defer os.Remove(bolt.SealPath(tmp))
	size, err := write(ctx, d, tmp)
	if err != nil {
		return Written{}, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return Written{}, err
	}
	if dir, err := os.Open(filepath.Dir(path)); err == nil { // the rename, kept
		dir.Sync()
		dir.Close()
	}
	w := Written{Counts: d.Counts(), Size: size}
	for id := range keys {
		w.Keys = append(w.Keys, id)
	}
	return w, nil
}

// write loads d into a new database file at path, reads it back and
// compares, and syncs it; its size.
func write(ctx context.Context, d *store.Dump, path string) (int64, error) {
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		return 0, fmt.Errorf("make the copy: %w", err)
	}
	if err := db.Load(ctx, d); err != nil {
		db.Close()
		return 0, fmt.Errorf("write the copy: %w", err)
	}
	copied, err := db.Dump(ctx)
	if err != nil {
		db.Close()
		return 0, fmt.Errorf("read the copy back: %w", err)
	}
	if err := db.Close(); err != nil {
		return 0, fmt.Errorf("write the copy: %w", err)
	}
	if diffs := d.Diff(copied); len(diffs) > 0 {
		return 0, fmt.Errorf("the copy differs from the store:\n  %s", strings.Join(diffs, "\n  "))
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
