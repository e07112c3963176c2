package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

// backup writes a checked copy of the database to the file named by its
// one argument (see bolt.DB.BackupTo). It opens the database itself, so
// it works only while no dashboard runs on it: a running dashboard holds
// the file's lock, and a backup of it has to be taken by that process.
func backup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("backup", flag.ContinueOnError)
	fset.SetOutput(stderr)
	dbFlagValue := dbFlag(fset, getenv)
	fset.Usage = func() {
		fmt.Fprint(stderr, "usage: switchboard backup [--db PATH] OUT\n\n"+
			"Writes a consistent, integrity-checked copy of the database to OUT, replacing OUT\n"+
			"only once the copy is complete. The dashboard must not be running on the database.\n\n")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2}
	}
	if fset.NArg() != 1 {
		fset.Usage()
		return usageError("backup needs exactly one argument, the file to write; got %q", fset.Args())
	}
	out, dbPath := fset.Arg(0), *dbFlagValue

	// Open would create a missing database; a backup must not.
	if _, err := os.Stat(dbPath); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backup: there is no database at %s (choose one with --db or SWITCHBOARD_DB)", dbPath)
	}
	db, err := bolt.Open(dbPath, bolt.Options{Warn: func(msg string) { fmt.Fprintln(stderr, "warning:", msg) }, SealKey: peekSealKey(keyFromEnv(getenv), getenv, dbPath)})
	if errors.Is(err, store.ErrInUse) {
		return fmt.Errorf("backup: %w; a running dashboard keeps its database locked: stop it, then run backup again", err)
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	err = db.BackupTo(ctx, out)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fi, err := os.Stat(out)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(stdout, "Backed up %s to %s (%d bytes, integrity checked)\n", dbPath, out, fi.Size())
	return nil
}
