package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

const migrateUsage = `usage: switchboard migrate -from SRC -to DST [-etcd-* flags]

Copies everything Switchboard keeps (servers with their secrets, tools,
policies, approvals, history, OAuth grants, the call log, the MCP and
connected clients' tokens, profiles, browser sessions) from SRC into DST,
then reads DST back and compares it with SRC. SRC and DST are each a
database file or etcd://host:2379[,host:2379…]; the -etcd-* flags apply to
the etcd side. DST must be empty: a new file, or an etcd prefix nothing
is kept under. No dashboard may run on either meanwhile.

`

// migrateCmd is `switchboard migrate -from SRC -to DST`: it dumps SRC,
// loads the dump into DST (which must be empty), dumps DST and compares
// the two, and prints what it copied, in counts. A difference is an
// error naming what differs.
func migrateCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fset.SetOutput(stderr)
	from := fset.String("from", "", "the store to copy: a database file, or etcd://host:2379[,host:2379…]")
	to := fset.String("to", "", "the empty store to copy into: a database file (made if there is none), or etcd://host:2379[,host:2379…]")
	var etcdCfg storeConfig
	etcdFlags(fset, &etcdCfg, getenv)
	fset.Usage = func() {
		fmt.Fprint(stderr, migrateUsage)
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2}
	}
	switch {
	case fset.NArg() != 0:
		fset.Usage()
		return usageError("migrate takes no arguments besides its flags; got %q", fset.Args())
	case *from == "" || *to == "":
		fset.Usage()
		return usageError("migrate needs both -from and -to")
	case *from == *to:
		return usageError("migrate: -from and -to are both %s; copy into another store", *from)
	case strings.HasPrefix(*from, "etcd://") && strings.HasPrefix(*to, "etcd://"):
		return usageError("migrate: -from and -to are both etcd, and the -etcd-* flags would apply to both; copy through a database file")
	}

	for _, spec := range []string{*from, *to} {
		// A malformed etcd side is a usage error before either is opened.
		if c := etcdCfg; strings.HasPrefix(spec, "etcd://") {
			c.Store = spec
			if _, err := c.etcdOptions(nil); err != nil {
				return err
			}
		}
	}

	src, err := openMigrated(ctx, "from", *from, etcdCfg, stderr)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := openMigrated(ctx, "to", *to, etcdCfg, stderr)
	if err != nil {
		return err
	}
	defer dst.Close()

	d, err := src.Dump(ctx)
	if err != nil {
		return fmt.Errorf("migrate: read %s: %w", *from, err)
	}
	// The secrets travel sealed, as they are kept: never in clear.
	keys := map[string]bool{}
	for _, v := range d.SecretValues() {
		id, _, _, ok := store.SealedParts(v)
		if !ok {
			return fmt.Errorf("migrate: %s keeps secrets in clear (an earlier release wrote it): start switchboard serve on it once, which seals them, then migrate; nothing was copied", *from)
		}
		keys[id] = true
	}
	if err := dst.Load(ctx, d); err != nil {
		if errors.Is(err, store.ErrNotEmpty) {
			return fmt.Errorf("migrate: %w; nothing was copied: choose an empty destination (a new file, or another -etcd-prefix)", err)
		}
		return fmt.Errorf("migrate: write %s: %w", *to, err)
	}
	copied, err := dst.Dump(ctx)
	if err != nil {
		return fmt.Errorf("migrate: read %s back: %w", *to, err)
	}
	if diffs := d.Diff(copied); len(diffs) > 0 {
		return fmt.Errorf("migrate: the copy in %s differs from %s:\n  %s", *to, *from, strings.Join(diffs, "\n  "))
	}
	if err := errors.Join(src.Close(), dst.Close()); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	c := d.Counts()
	fmt.Fprintf(stdout, "Copied %s to %s, and checked the copy: %d servers, %d tools, %d resources and prompts, %d history entries, %d OAuth grants, %d calls, %d connected clients, %d profiles, %d browser sessions; %d secrets.\n",
		*from, *to, c.Servers, c.Tools, c.Listed, c.History, c.Grants, c.Calls, c.Clients, c.Profiles, c.Sessions, c.Secrets)
	if len(keys) > 0 {
		fmt.Fprintf(stdout, "The secrets were copied sealed, under the key %s: give %s that key (SWITCHBOARD_SECRET_KEY or -secret-key-file; switchboard secrets status says where it is kept now).\n",
			strings.Join(slices.Sorted(maps.Keys(keys)), ", "), *to)
	}
	return nil
}

// migrated is a store migrate copies from or into.
type migrated interface {
	store.Dumper
	Close() error
}

// openMigrated opens the store spec names for the flag which: an etcd
// cluster (etcd://…, with the -etcd-* flags of cfg), or a database file,
// which must exist unless it is the destination.
func openMigrated(ctx context.Context, which, spec string, cfg storeConfig, stderr io.Writer) (migrated, error) {
	if strings.HasPrefix(spec, "etcd://") {
		cfg.Store = spec
		db, err := cfg.openETCD(ctx, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			return nil, fmt.Errorf("migrate: -%s: %w", which, err)
		}
		return db, nil
	}
	if which == "from" {
		// Open would make a missing database; a source must be there.
		if _, err := os.Stat(spec); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("migrate: there is no database at %s", spec)
		}
	}
	db, err := bolt.Open(spec, bolt.Options{Warn: func(msg string) { fmt.Fprintln(stderr, "warning:", msg) }})
	if errors.Is(err, store.ErrInUse) {
		return nil, fmt.Errorf("migrate: %w; a running dashboard keeps its database locked: stop it, then run migrate again", err)
	}
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return db, nil
}
