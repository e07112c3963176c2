package secretkey

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/zalando/go-keyring"

	"github.com/switchboard-dev/switchboard/internal/fileowner"
)

// Where the key comes from, first found first:
//
//  1. SWITCHBOARD_SECRET_KEY (Options.Env);
//  2. a key file named with -secret-key-file (Options.File), which must
//     exist: it is never made;
//  3. the OS keychain (macOS Keychain, Windows Credential Manager, the
//     Secret Service on Linux), under the service "switchboard" and the
//     database's path, where one answers;
//  4. a key file beside the database (Options.DefaultFile, "<db>.key").
//
// A team's store (etcd) takes only 1 or 2: its replicas must share one
// key, and a key made on one machine is not on the others. A key file
// must be a regular file of this user that no one else may read or
// write (0600), as OpenSSH asks of a private key. A key is made only
// where the caller says the store holds nothing sealed yet (Create): a
// store whose key is missing is a start-up error saying what to do,
// never a new key and secrets that no longer open.
//
// A rotation (switchboard secrets rotate) keeps its new key beside the
// current one until every value is sealed under it: "<file>.next", the
// keychain entry "<path> (next)", or SWITCHBOARD_NEW_SECRET_KEY for a
// key from the environment. Load returns it as Next, so that a start
// after a rotation cut short opens every value.

// Service is the keychain service the key is kept under.
const Service = "switchboard"

// Kinds of source.
const (
	FromEnvironment = "environment"
	FromFile        = "key file"
	FromKeychain    = "keychain"
)

// Source says where a key came from.
type Source struct {
	Kind  string // FromEnvironment, FromFile or FromKeychain
	Where string // the variable, the file's path, or service/account
}

func (s Source) String() string { return s.Kind + " " + s.Where }

// Keychain is the OS keychain (see OSKeychain).
type Keychain interface {
	Get(service, user string) (string, error)
	Set(service, user, secret string) error
	Delete(service, user string) error
}

// OSKeychain is the OS's keychain, through github.com/zalando/go-keyring.
type OSKeychain struct{}

func (OSKeychain) Get(service, user string) (string, error) { return keyring.Get(service, user) }
func (OSKeychain) Set(service, user, secret string) error   { return keyring.Set(service, user, secret) }
func (OSKeychain) Delete(service, user string) error        { return keyring.Delete(service, user) }

// Options says where to look for the key.
type Options struct {
	Env, NextEnv string // SWITCHBOARD_SECRET_KEY, SWITCHBOARD_NEW_SECRET_KEY
	File         string // -secret-key-file
	Keychain     Keychain
	// Account names the keychain entry: the database's absolute path.
	Account string
	// DefaultFile is the key file used where no keychain answers.
	DefaultFile string
	// Create makes a key where none is found; only for a store that holds
	// nothing sealed.
	Create bool
	// Shared is a team's store: the key must come from Env or File.
	Shared bool
}

// Key is the key found, and a rotation's new one while it is unfinished.
type Key struct {
	Current, Next []byte
	Source        Source
	// Made says Current was made now.
	Made bool
}

// ErrNoKey is Load's error when no key exists and none may be made.
var ErrNoKey = errors.New("no secret key")

// Load finds the key (see above).
func Load(o Options) (Key, error) {
	if o.Env != "" {
		cur, err := Parse(o.Env)
		if err != nil {
			return Key{}, fmt.Errorf("SWITCHBOARD_SECRET_KEY: %w", err)
		}
		k := Key{Current: cur, Source: Source{FromEnvironment, "SWITCHBOARD_SECRET_KEY"}}
		if o.NextEnv != "" {
			if k.Next, err = Parse(o.NextEnv); err != nil {
				return Key{}, fmt.Errorf("SWITCHBOARD_NEW_SECRET_KEY: %w", err)
			}
		}
		return k, nil
	}
	if o.File != "" {
		// A file named is never made: a missing one is a mistake (a
		// volume that did not mount), and a key made in its place would
		// seal the secrets under a key nobody keeps.
		return loadFile(o.File, false)
	}
	if o.Shared {
		return Key{}, fmt.Errorf("%w: a team's replicas share one key, so it is never made or kept per machine: "+
			"make one (openssl rand -base64 32) and give every replica SWITCHBOARD_SECRET_KEY or -secret-key-file", ErrNoKey)
	}
	if o.Keychain != nil && o.Account != "" {
		k, ok, err := loadKeychain(o)
		if ok || err != nil {
			return k, err
		}
	}
	return loadFile(o.DefaultFile, o.Create)
}

// nextUser is the keychain entry of a rotation's new key.
func nextUser(account string) string { return account + " (next)" }

// loadKeychain reads the key from the keychain; ok is false when the
// keychain does not answer (no Secret Service, say), or holds no key
// while a key file does (a key made before the keychain answered).
func loadKeychain(o Options) (Key, bool, error) {
	src := Source{FromKeychain, Service + "/" + o.Account}
	text, err := o.Keychain.Get(Service, o.Account)
	switch {
	case errors.Is(err, keyring.ErrNotFound):
		if _, ferr := os.Lstat(o.DefaultFile); ferr == nil || !o.Create {
			return Key{}, false, nil
		}
		cur := New()
		if err := o.Keychain.Set(Service, o.Account, Encode(cur)); err != nil {
			return Key{}, false, nil // the keychain would not keep it: a key file will
		}
		return Key{Current: cur, Source: src, Made: true}, true, nil
	case err != nil:
		return Key{}, false, nil
	}
	cur, err := Parse(text)
	if err != nil {
		return Key{}, true, fmt.Errorf("the keychain's entry %s: %w", src.Where, err)
	}
	k := Key{Current: cur, Source: src}
	if text, err := o.Keychain.Get(Service, nextUser(o.Account)); err == nil {
		if k.Next, err = Parse(text); err != nil {
			return Key{}, true, fmt.Errorf("the keychain's entry %s: %w", nextUser(src.Where), err)
		}
	}
	return k, true, nil
}

// loadFile reads the key file at path (and a rotation's next to it),
// making it if it does not exist and create is set.
func loadFile(path string, create bool) (Key, error) {
	src := Source{FromFile, path}
	cur, err := readKeyFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		cur = New()
		if err := writeKeyFile(path, cur, false); err != nil {
			return Key{}, fmt.Errorf("make the secret key file: %w", err)
		}
		return Key{Current: cur, Source: src, Made: true}, nil
	case errors.Is(err, fs.ErrNotExist):
		return Key{}, fmt.Errorf("%w: %s does not exist", ErrNoKey, path)
	case err != nil:
		return Key{}, err
	}
	k := Key{Current: cur, Source: src}
	if next, err := readKeyFile(path + ".next"); err == nil {
		k.Next = next
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Key{}, err
	}
	return k, nil
}

// readKeyFile reads a key file, refusing one that is not a regular file
// of this user, or that others may read or write. The checks are made on
// the file opened, not on its name, so a link swapped in between is
// refused too.
func readKeyFile(path string) ([]byte, error) {
	if fi, err := os.Lstat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("the secret key file %s is not a regular file", path)
	}
	f, err := openNoFollow(path)
	if err != nil {
		return nil, fmt.Errorf("the secret key file %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("the secret key file %s is not a regular file", path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the secret key file %s may be read or written by others (mode %04o): chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	if owner, foreign := fileowner.Foreign(fi); foreign {
		return nil, fmt.Errorf("the secret key file %s belongs to another user (uid %d): it is not used", path, owner)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, err
	}
	k, err := Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("the secret key file %s: %w", path, err)
	}
	return k, nil
}

// writeKeyFile writes k to path (0600), through a temporary file renamed
// into place and synced, so that a crash leaves the old file or the new
// one, never half of one; replace says an existing file may be replaced.
func writeKeyFile(path string, k []byte, replace bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if !replace {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("%s exists", path)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return err
	}
	_, err = tmp.WriteString(Encode(k) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Rotation keeps a rotation's new key where the current one is, so that
// a rotation cut short is finished by running it again (see above).
type Rotation struct {
	o   Options
	src Source
	old []byte
}

// NewRotation is the rotation of the key k, found with o.
func NewRotation(o Options, k Key) Rotation { return Rotation{o: o, src: k.Source, old: k.Current} }

// Keep keeps next as the rotation's new key, before any value is sealed
// under it. A key from the environment is not kept: the new one is
// SWITCHBOARD_NEW_SECRET_KEY.
func (r Rotation) Keep(next []byte) error {
	switch r.src.Kind {
	case FromFile:
		return writeKeyFile(r.src.Where+".next", next, true)
	case FromKeychain:
		return r.o.Keychain.Set(Service, nextUser(r.o.Account), Encode(next))
	}
	return nil
}

// Finish makes next the current key once every value is sealed under
// it. The old key is kept apart as retired, since backups made before the
// rotation are sealed under it: Finish returns where ("" for a key from
// the environment, which the person holds).
func (r Rotation) Finish(next []byte) (retired string, err error) {
	if ID(r.old) == ID(next) { // a rerun after the key was made current
		return "", r.promote(next)
	}
	switch r.src.Kind {
	case FromFile:
		retired = r.src.Where + ".retired-" + ID(r.old)
		if err := writeKeyFile(retired, r.old, true); err != nil {
			return "", err
		}
	case FromKeychain:
		retired = r.o.Account + " (retired " + ID(r.old) + ")"
		if err := r.o.Keychain.Set(Service, retired, Encode(r.old)); err != nil {
			return "", err
		}
		retired = "keychain entry " + Service + "/" + retired
	}
	return retired, r.promote(next)
}

// promote makes next the current key and forgets the rotation's note.
func (r Rotation) promote(next []byte) error {
	switch r.src.Kind {
	case FromFile:
		if err := writeKeyFile(r.src.Where, next, true); err != nil {
			return err
		}
		if err := os.Remove(r.src.Where + ".next"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	case FromKeychain:
		if err := r.o.Keychain.Set(Service, r.o.Account, Encode(next)); err != nil {
			return err
		}
		if err := r.o.Keychain.Delete(Service, nextUser(r.o.Account)); err != nil && !errors.Is(err, keyring.ErrNotFound) {
			return err
		}
	}
	return nil
}

// DefaultFile is the key file of the database at dbPath, where no
// keychain answers.
func DefaultFile(dbPath string) string { return dbPath + ".key" }
