package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
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
	// Resealed counts the secrets found in clear (an earlier release's)
	// and sealed now.
	Resealed int
}

// sealStore finds the key for the store b (the database at dbPath, or a
// team's store if shared) and wraps b with it. A store that holds
// sealed secrets gets no new key: without its key, or with another, it
// is an error saying what to do. With reseal, secrets an earlier release
// kept in clear are sealed now.
func sealStore(ctx context.Context, b sealed.Backend, c keyConfig, getenv func(string) string, dbPath string, shared, reseal bool) (sealing, error) {
	census, err := sealed.Scan(ctx, b)
	if err != nil {
		return sealing{}, fmt.Errorf("read the store's secrets: %w", err)
	}
	account, _ := filepath.Abs(dbPath)
	o := secretkey.Options{Env: c.Env, NextEnv: c.NextEnv, File: c.File, Keychain: c.keychain(getenv), Account: account,
		DefaultFile: secretkey.DefaultFile(dbPath), Create: census.Total() == 0, Shared: shared}
	key, err := secretkey.Load(o)
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
	for _, id := range census.KeyIDs() {
		if id != secretkey.ID(key.Current) && (key.Next == nil || id != secretkey.ID(key.Next)) {
			return sealing{}, fmt.Errorf("the store's secrets are sealed under the key %s, and the key from the %s is %s: "+
				"give the key they were sealed with (SWITCHBOARD_SECRET_KEY or -secret-key-file)", id, key.Source, ring.ID())
		}
	}
	s := sealing{st: sealed.New(b, ring), key: key}
	if reseal && census.Clear > 0 {
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

// compactBolt seals what an earlier release kept in clear in the bolt
// file at path, then rewrites the file so that no freed page keeps a
// copy of the clear values: bbolt leaves overwritten values in free
// pages. The database must be closed.
func compactBolt(path string) error {
	if err := bolt.Compact(path); err != nil {
		return fmt.Errorf("rewrite %s without the secrets it kept in clear: %w", path, err)
	}
	return nil
}

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
	s, err := sealStore(ctx, b, kc, getenv, *db, sc.isETCD(), false)
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	census, err := sealed.Scan(ctx, b)
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
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
	if err := compact(); err != nil {
		return fmt.Errorf("secrets rotate: %w", err)
	}
	if err := rotation.Finish(next); err != nil {
		return fmt.Errorf("secrets rotate: every secret is sealed under the new key %s, but it could not be kept as the key: %w; run switchboard secrets rotate again", secretkey.ID(next), err)
	}
	fmt.Fprintf(stdout, "sealed %d secrets under the new key %s (was %s)\n", n, secretkey.ID(next), secretkey.ID(old))
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
