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
	"path/filepath"
	"runtime"
	"strings"

	"github.com/switchboard-dev/switchboard/internal/secretkey"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/etcd"
	"github.com/switchboard-dev/switchboard/store/sealed"
)

// Secrets at rest (see store/sealed and internal/secretkey): every
// command that reads or writes the catalog's secrets finds the key the
// same way, and `switchboard secrets` shows it and rotates it.

// keyConfig says where the secret key is.
type keyConfig struct {
	// File is -secret-key-file (env SWITCHBOARD_SECRET_KEY_FILE).
	File string
	// Env and NextEnv are SWITCHBOARD_SECRET_KEY and
	// SWITCHBOARD_NEW_SECRET_KEY.
	Env, NextEnv string
	// NoKeychain is SWITCHBOARD_KEYCHAIN=off: never ask the OS keychain.
	NoKeychain bool
}

// keyFlags adds -secret-key-file to fs, and reads the key's variables.
func keyFlags(fs *flag.FlagSet, c *keyConfig, getenv func(string) string) {
	c.Env, c.NextEnv = getenv("SWITCHBOARD_SECRET_KEY"), getenv("SWITCHBOARD_NEW_SECRET_KEY")
	c.NoKeychain = getenv("SWITCHBOARD_KEYCHAIN") == "off"
	c.File = getenv("SWITCHBOARD_SECRET_KEY_FILE")
	fs.StringVar(&c.File, "secret-key-file", c.File, "a file (0600, yours) holding the key that seals the secrets the store keeps; without it, SWITCHBOARD_SECRET_KEY, else the OS keychain, else <db>.key (env SWITCHBOARD_SECRET_KEY_FILE)")
}

// files are the key files named with -secret-key-file, with a
// rotation's next and retired keys beside them: no server may read them
// (a key file beside the database is denied with it).
func (c keyConfig) files() []string {
	if c.File == "" {
		return nil
	}
	retired, _ := filepath.Glob(c.File + ".retired-*")
	return append([]string{c.File, c.File + ".next"}, retired...)
}

// keychain is the OS keychain, unless it was turned off or cannot
// answer: on Linux the Secret Service is reached over the session's
// D-Bus, which a server, a container or CI has none of (and go-keyring
// would try to start one).
func (c keyConfig) keychain(getenv func(string) string) secretkey.Keychain {
	if c.NoKeychain || runtime.GOOS == "linux" && getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		return nil
	}
	return secretkey.OSKeychain{}
}

// sealing is a store's secrets, sealed, and how.
type sealing struct {
	st  *sealed.Store
	key secretkey.Key
	// none says the store has no key yet, nor anything sealed: st opens
	// nothing and seals nothing.
	none bool
	// Resealed counts the secrets found in clear (an earlier release's)
	// and sealed now.
	Resealed int
}

// sealOptions says how sealStore treats a store.
type sealOptions struct {
	// Shared is a team's store: its key must be given.
	Shared bool
	// Create may make a key for a store that holds nothing sealed (serve,
	// import); a command that only reads never makes one.
	Create bool
	// Reseal, if set, seals the secrets an earlier release kept in clear,
	// after calling it (serve: it notes that the store is to be compacted
	// afterwards, so a start cut short between the two compacts at the
	// next).
	Reseal func() error
}

// sealStore finds the key for the store b (the database at dbPath, or a
// team's store) and wraps b with it. A store that holds sealed secrets
// gets no new key: without its key, or with another, it is an error
// saying what to do.
func sealStore(ctx context.Context, b sealed.Backend, c keyConfig, getenv func(string) string, dbPath string, so sealOptions) (sealing, error) {
	census, err := sealed.Scan(ctx, b)
	if err != nil {
		return sealing{}, fmt.Errorf("read the store's secrets: %w", err)
	}
	account, _ := filepath.Abs(dbPath)
	o := secretkey.Options{Env: c.Env, NextEnv: c.NextEnv, File: c.File, Keychain: c.keychain(getenv), Account: account,
		DefaultFile: secretkey.DefaultFile(dbPath), Create: so.Create && census.Total() == 0, Shared: so.Shared}
	key, err := secretkey.Load(o)
	if errors.Is(err, secretkey.ErrNoKey) && census.Total() == 0 && !so.Create {
		// Nothing sealed to open, and this command seals nothing: a key
		// for this run only, kept nowhere (and none made for the store).
		ring, rerr := secretkey.NewRing(secretkey.New())
		if rerr != nil {
			return sealing{}, rerr
		}
		return sealing{st: sealed.New(b, readOnly{ring}), none: true}, nil
	}
	if errors.Is(err, secretkey.ErrNoKey) && census.Total() > 0 {
		return sealing{}, fmt.Errorf("the store holds %d sealed secrets (key %s), but their key is not here (%v). "+
			"Give it with SWITCHBOARD_SECRET_KEY or -secret-key-file, or put back the key file or keychain entry it was kept in; "+
			"Switchboard never makes a new key for a store that holds sealed secrets", census.Total(), strings.Join(census.KeyIDs(), ", "), err)
	}
	if err != nil {
		return sealing{}, err
	}
	ring, err := secretkey.NewRing(key.Current, key.Next)
	if err != nil {
		return sealing{}, err
	}
	if n := census.Sealed[sealed.Unreadable]; n > 0 {
		return sealing{}, fmt.Errorf("%d secrets in the store are sealed values Switchboard cannot read (damaged, or written by a later release): restore a backup, or use the release that wrote them", n)
	}
	for _, id := range census.KeyIDs() {
		if id != secretkey.ID(key.Current) && (key.Next == nil || id != secretkey.ID(key.Next)) {
			return sealing{}, fmt.Errorf("the store's secrets are sealed under the key %s, and the key from the %s is %s: "+
				"give the key they were sealed with (SWITCHBOARD_SECRET_KEY or -secret-key-file)", id, key.Source, ring.ID())
		}
	}
	s := sealing{st: sealed.New(b, ring), key: key}
	if so.Reseal != nil && census.Clear > 0 {
		if err := so.Reseal(); err != nil {
			return sealing{}, err
		}
		if s.Resealed, err = s.st.Reseal(ctx, false); err != nil {
			return sealing{}, fmt.Errorf("seal the secrets an earlier release kept in clear: %w", err)
		}
	}
	return s, nil
}

// peekSealKey is the key of the database file's seal (see
// bolt.Options.SealKey), from the secret key where one is found now;
// nil if none is (a new store's key is made after it opens: see
// sealStore and bolt.DB.SealWith).
func peekSealKey(c keyConfig, getenv func(string) string, dbPath string) []byte {
	account, _ := filepath.Abs(dbPath)
	k, err := secretkey.Load(secretkey.Options{Env: c.Env, File: c.File, Keychain: c.keychain(getenv), Account: account, DefaultFile: secretkey.DefaultFile(dbPath)})
	if err != nil {
		return nil
	}
	return secretkey.SealKey(k.Current)
}

// keyFromEnv is the key configuration of a command without the key's
// flag: the environment's.
func keyFromEnv(getenv func(string) string) keyConfig {
	return keyConfig{Env: getenv("SWITCHBOARD_SECRET_KEY"), NextEnv: getenv("SWITCHBOARD_NEW_SECRET_KEY"), File: getenv("SWITCHBOARD_SECRET_KEY_FILE"),
		NoKeychain: getenv("SWITCHBOARD_KEYCHAIN") == "off"}
}

// readOnly is a Sealer for a store with no key yet: it seals nothing.
type readOnly struct{ *secretkey.Ring }

func (readOnly) Seal(string, string) (string, error) {
	return "", errors.New("this store has no secret key yet: start the dashboard once (it makes one), or give one with SWITCHBOARD_SECRET_KEY")
}

// logKey says on serve's start which key seals the secrets, and where
// it is.
func (s sealing) logKey(log *slog.Logger) {
	log.Info("secrets are sealed at rest", "key", secretkey.ID(s.key.Current), "kept in", s.key.Source.String())
	if s.key.Made {
		log.Info("made the secret key: without it the store's secrets cannot be read; back it up apart from the database", "kept in", s.key.Source.String())
	}
	if s.key.Next != nil {
		log.Warn("a rotation of the secret key did not finish: both keys are used; run switchboard secrets rotate again", "new key", secretkey.ID(s.key.Next))
	}
}

// compactPending is the file that says the database at path holds, in
// pages bbolt freed, copies of values since sealed: the next start
// compacts it whatever else happened (see compactBolt).
func compactPending(path string) string { return path + ".compact-pending" }

// markCompactPending notes that the database at path is to be compacted,
// before anything is sealed in it.
func markCompactPending(path string) error {
	f, err := os.OpenFile(compactPending(path), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("note that %s is to be compacted: %w", path, err)
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

// compactBolt rewrites the closed bolt file at path so that no freed page
// keeps a copy of a value since sealed (bbolt leaves overwritten values
// in free pages), then forgets that it was pending.
func compactBolt(path string) error {
	if err := bolt.Compact(path); err != nil {
		return fmt.Errorf("rewrite %s without the values it kept before they were sealed: %w", path, err)
	}
	if err := os.Remove(compactPending(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// etcdCompactPending is the key that says a team's store is to have its
// history compacted (see compactBolt). It is kept outside the store's
// prefix, where no reader of the store meets it.
func etcdCompactPending(edb *etcd.DB) string { return "\x00switchboard/compact_pending" + edb.Prefix() }

// secretsCmd is `switchboard secrets status|rotate`.
func secretsCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("secrets", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs, getenv)
	var sc storeConfig
	storeFlags(fs, &sc, getenv)
	var kc keyConfig
	keyFlags(fs, &kc, getenv)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: switchboard secrets status|rotate [flags]\n\n"+
			"status: where the key that seals the store's secrets is, and what it seals.\n"+
			"rotate: seal every secret under a new key, then keep the new key where the old one was\n"+
			"        (a key from SWITCHBOARD_SECRET_KEY: give the new one as SWITCHBOARD_NEW_SECRET_KEY).\n"+
			"        Run it with the dashboard stopped; cut short, it is finished by running it again.\n\n")
		fs.PrintDefaults()
	}
	if len(args) == 0 || args[0] != "status" && args[0] != "rotate" {
		fs.Usage()
		return usageError("secrets needs status or rotate")
	}
	verb := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2}
	}
	var b sealed.Backend
	var compact func() error
	if sc.isETCD() {
		edb, err := sc.openETCD(ctx, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
		defer edb.Close()
		b, compact = edb, func() error { return edb.CompactHistory(ctx) }
	} else {
		bdb, err := openBoltFor("secrets "+verb, *db, kc, getenv, stderr)
		if err != nil {
			return err
		}
		closed := false
		defer func() {
			if !closed {
				bdb.Close()
			}
		}()
		b, compact = bdb, func() error {
			closed = true
			if err := bdb.Close(); err != nil {
				return err
			}
			return compactBolt(*db)
		}
	}
	s, err := sealStore(ctx, b, kc, getenv, *db, sealOptions{Shared: sc.isETCD()})
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	census, err := sealed.Scan(ctx, b)
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	if s.none {
		if verb == "rotate" {
			return errors.New("secrets rotate: this store has no secret key yet, and nothing sealed to move to a new one")
		}
		fmt.Fprintf(stdout, "key:    none yet (the first start of the dashboard makes one)\nclear:  %d\n", census.Clear)
		return nil
	}
	if verb == "status" {
		fmt.Fprintf(stdout, "key:    %s, kept in the %s\n", secretkey.ID(s.key.Current), s.key.Source)
		if s.key.Next != nil {
			fmt.Fprintf(stdout, "        a rotation to %s did not finish: run switchboard secrets rotate\n", secretkey.ID(s.key.Next))
		}
		fmt.Fprintf(stdout, "sealed: %d secrets", census.Total())
		for _, id := range census.KeyIDs() {
			fmt.Fprintf(stdout, ", %d under %s", census.Sealed[id], id)
		}
		fmt.Fprintf(stdout, "\nclear:  %d (an earlier release's; the next start of the dashboard seals them)\n", census.Clear)
		return nil
	}

	old := s.key.Current
	next := s.key.Next
	rotation := secretkey.NewRotation(secretkey.Options{Keychain: kc.keychain(getenv), Account: absPath(*db)}, s.key)
	switch {
	case next != nil: // finish the rotation a crash cut short
	case s.key.Source.Kind == secretkey.FromEnvironment:
		return usageError("secrets rotate: the key comes from SWITCHBOARD_SECRET_KEY: make a new one (openssl rand -base64 32), give it as SWITCHBOARD_NEW_SECRET_KEY, and run this again")
	default:
		next = secretkey.New()
		if err := rotation.Keep(next); err != nil {
			return fmt.Errorf("secrets rotate: keep the new key before sealing anything under it: %w", err)
		}
	}
	ring, err := secretkey.NewRing(next, old)
	if err != nil {
		return err
	}
	n, err := sealed.New(b, ring).Reseal(ctx, true)
	if err != nil {
		return fmt.Errorf("secrets rotate: sealed %d secrets under the new key, then: %w; both keys are kept: run switchboard secrets rotate again to finish", n, err)
	}
	// The old key goes only once nothing needs it: a value sealed under
	// it meanwhile (a replica still running) stops the rotation here.
	after, err := sealed.Scan(ctx, b)
	if err != nil {
		return fmt.Errorf("secrets rotate: %w", err)
	}
	if left := after.Total() - after.Sealed[secretkey.ID(next)]; left > 0 || after.Clear > 0 {
		return fmt.Errorf("secrets rotate: %d secrets are still under another key and %d in clear after sealing: is a dashboard or replica still running? Stop every one and run switchboard secrets rotate again; both keys are kept meanwhile", left, after.Clear)
	}
	if err := compact(); err != nil {
		return fmt.Errorf("secrets rotate: %w", err)
	}
	retired, err := rotation.Finish(next)
	if err != nil {
		return fmt.Errorf("secrets rotate: every secret is sealed under the new key %s, but it could not be kept as the key: %w; run switchboard secrets rotate again", secretkey.ID(next), err)
	}
	fmt.Fprintf(stdout, "sealed %d secrets under the new key %s (was %s)\n", n, secretkey.ID(next), secretkey.ID(old))
	if retired != "" {
		fmt.Fprintf(stdout, "backups made before now are sealed under %s: that key is kept in %s; delete it once you no longer need them\n", secretkey.ID(old), retired)
	}
	if s.key.Source.Kind == secretkey.FromEnvironment {
		fmt.Fprintln(stdout, "now set SWITCHBOARD_SECRET_KEY to the new key (SWITCHBOARD_NEW_SECRET_KEY) wherever Switchboard runs, and drop SWITCHBOARD_NEW_SECRET_KEY")
	} else {
		fmt.Fprintf(stdout, "the new key is kept in the %s\n", s.key.Source)
	}
	return nil
}

func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

var _ sealed.Backend = (*etcd.DB)(nil)
var _ sealed.Backend = (*bolt.DB)(nil)
