package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/snapshot"
)

// backup writes a checked copy of the store to the file named by its one
// argument. Of a database file (see bolt.DB.BackupTo) it opens the
// database itself, so it works only while no dashboard runs on it: a
// running dashboard holds the file's lock, and a backup of it has to be
// taken by that process. Of a team's etcd (-store etcd://…) it reads the
// whole prefix at one revision while the replicas run, into a database
// file (see package snapshot).
func backup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("backup", flag.ContinueOnError)
	fset.SetOutput(stderr)
	dbFlagValue := dbFlag(fset, getenv)
	var st storeConfig
	storeFlags(fset, &st, getenv)
	fset.Usage = func() {
		fmt.Fprint(stderr, "usage: switchboard backup [--db PATH | -store etcd://host:2379[,…] [-etcd-* flags]] OUT\n\n"+
			"Writes a consistent, integrity-checked copy of the store to OUT, a database file, replacing OUT\n"+
			"only once the copy is complete. Of a database file, the dashboard must not be running on it\n"+
			"(GET /api/v1/backup copies it while it runs). Of etcd, the replicas keep running: the copy is\n"+
			"of one etcd revision; `switchboard migrate -from OUT -to etcd://…` restores it.\n\n")
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
	if st.isETCD() {
		return backupETCD(ctx, st, out, stdout, stderr)
	}

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

// backupETCD writes a checked copy of the etcd store st names to out.
func backupETCD(ctx context.Context, st storeConfig, out string, stdout, stderr io.Writer) error {
	db, err := st.openETCD(ctx, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer db.Close()
	w, err := snapshot.Write(ctx, db, out)
	if err != nil {
		return fmt.Errorf("backup: %w; %s was left as it was", err, out)
	}
	c := w.Counts
	fmt.Fprintf(stdout, "Backed up etcd at %s (keys under %s) to %s (%d bytes, read back and compared): %d servers, %d tools, %d history entries, %d OAuth grants, %d calls, %d connected clients, %d profiles, %d people; %d secrets.\n",
		st.Store, db.Prefix(), out, w.Size, c.Servers, c.Tools, c.History, c.Grants, c.Calls, c.Clients, c.Profiles, c.Users, c.Secrets)
	if len(w.Keys) > 0 {
		fmt.Fprintf(stdout, "The secrets are sealed under the key %s, as in etcd: keep that key with the copy (switchboard secrets status says where it is kept).\n",
			strings.Join(w.Keys, ", "))
	}
	return nil
}
