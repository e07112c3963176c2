package secretkey

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"

	"github.com/switchboard-dev/switchboard/store"
)

func TestSealOpen(t *testing.T) {
	k := New()
	r, err := NewRing(k)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := r.Seal("server/a/env/X", "value")
	b, _ := r.Seal("server/a/env/X", "value")
	if a == b || !store.IsSealed(a) || strings.Contains(a, "value") || !r.Current(a) {
		t.Errorf("Seal = %q, %q; want two different sealed values, neither holding the value", a, b)
	}
	if store.ValueHash(a) != store.ValueHash("value") {
		t.Errorf("the hash of a sealed value is not its value's")
	}
	if v, err := r.Open("server/a/env/X", a); err != nil || v != "value" {
		t.Errorf("Open = %q, %v", v, err)
	}
	if _, err := r.Open("server/b/env/X", a); err == nil {
		t.Error("a value opened in another place")
	}
	// The hash a sealed value shows is bound to it.
	id, _, box, _ := store.SealedParts(a)
	forged := store.SealedPrefix + id + ":" + store.ValueHash("other") + ":" + box
	if _, err := r.Open("server/a/env/X", forged); err == nil {
		t.Error("a value with another hash written on it opened")
	}
	other, _ := NewRing(New())
	if _, err := other.Open("server/a/env/X", a); !errors.Is(err, ErrOtherKey) {
		t.Errorf("Open under another key = %v; want ErrOtherKey", err)
	}
	both, _ := NewRing(New(), k)
	if v, err := both.Open("server/a/env/X", a); err != nil || v != "value" || both.Current(a) {
		t.Errorf("a ring with the old key as its second: Open = %q, %v, current %v", v, err, both.Current(a))
	}
}

func TestParse(t *testing.T) {
	k := New()
	for _, text := range []string{Encode(k), Encode(k) + "\n", "  " + strings.TrimRight(Encode(k), "=") + " "} {
		if got, err := Parse(text); err != nil || string(got) != string(k) {
			t.Errorf("Parse(%q) = %x, %v", text, got, err)
		}
	}
	for _, bad := range []string{"", "short", Encode(k[:16])} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "openssl rand -base64 32") {
			t.Errorf("Parse(%q) = %v; want refused, saying how to make one", bad, err)
		}
	}
}

func TestLoadFromEnvironment(t *testing.T) {
	k, next := New(), New()
	got, err := Load(Options{Env: Encode(k), NextEnv: Encode(next), File: "/nonexistent", Shared: true})
	if err != nil || string(got.Current) != string(k) || string(got.Next) != string(next) || got.Source.Kind != FromEnvironment {
		t.Errorf("Load = %+v, %v", got, err)
	}
	if _, err := Load(Options{Env: "nope"}); err == nil || !strings.Contains(err.Error(), "SWITCHBOARD_SECRET_KEY") {
		t.Errorf("Load of a bad variable = %v", err)
	}
}

func TestLoadKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sb.db.key")
	if _, err := Load(Options{DefaultFile: path}); !errors.Is(err, ErrNoKey) {
		t.Errorf("Load with no key and no Create = %v; want ErrNoKey", err)
	}
	made, err := Load(Options{DefaultFile: path, Create: true})
	if err != nil || !made.Made || made.Source != (Source{FromFile, path}) {
		t.Fatalf("Load with Create = %+v, %v", made, err)
	}
	if fi, _ := os.Stat(path); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("the key file's mode = %v; want 0600", fi.Mode().Perm())
	}
	again, err := Load(Options{DefaultFile: path, Create: true})
	if err != nil || again.Made || string(again.Current) != string(made.Current) {
		t.Errorf("Load again = %+v, %v; want the same key, not made", again, err)
	}
	if runtime.GOOS != "windows" {
		os.Chmod(path, 0o644)
		if _, err := Load(Options{DefaultFile: path}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("Load of a 0644 key file = %v; want refused, saying chmod 600", err)
		}
		os.Chmod(path, 0o600)
	}
	link := filepath.Join(dir, "link.key")
	os.Symlink(path, link)
	if _, err := Load(Options{File: link}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Load of a link = %v; want refused", err)
	}

	// A rotation keeps its new key beside the old one until Finish.
	next := New()
	r := NewRotation(Options{DefaultFile: path}, made)
	if err := r.Keep(next); err != nil {
		t.Fatal(err)
	}
	mid, err := Load(Options{DefaultFile: path})
	if err != nil || string(mid.Current) != string(made.Current) || string(mid.Next) != string(next) {
		t.Errorf("Load mid-rotation = %+v, %v; want the old key and the new", mid, err)
	}
	retired, err := r.Finish(next)
	if err != nil {
		t.Fatal(err)
	}
	done, err := Load(Options{DefaultFile: path})
	if err != nil || string(done.Current) != string(next) || done.Next != nil {
		t.Errorf("Load after the rotation = %+v, %v; want the new key alone", done, err)
	}
	// The old key is kept apart, for backups sealed under it.
	if old, err := readKeyFile(retired); err != nil || string(old) != string(made.Current) || retired != path+".retired-"+ID(made.Current) {
		t.Errorf("the retired key at %q = %x, %v; want the old key", retired, old, err)
	}
}

// A key file named (-secret-key-file) is never made, even for a store
// with nothing sealed: a missing one is a mistake, such as a volume that
// did not mount (issue 34 review).
func TestNamedKeyFileIsNeverMade(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "mount", "key")
	for _, shared := range []bool{false, true} {
		if k, err := Load(Options{File: missing, Shared: shared, Create: true}); !errors.Is(err, ErrNoKey) || k.Made {
			t.Errorf("Load of a missing named key file (shared %v) = %+v, %v; want ErrNoKey, nothing made", shared, k, err)
		}
	}
	if _, err := os.Stat(filepath.Dir(missing)); err == nil {
		t.Error("Load made the named key file's directory")
	}
}

func TestLoadShared(t *testing.T) {
	if _, err := Load(Options{Shared: true, Keychain: OSKeychain{}, Account: "/x", DefaultFile: filepath.Join(t.TempDir(), "k"), Create: true}); !errors.Is(err, ErrNoKey) ||
		!strings.Contains(err.Error(), "SWITCHBOARD_SECRET_KEY") {
		t.Errorf("Load for a team with no key given = %v; want ErrNoKey, saying how to give one", err)
	}
}

// The keychain, through go-keyring's in-memory stand-in: the real
// Secret Service, Keychain and Credential Manager are not on this
// machine (see the README).
func TestLoadKeychain(t *testing.T) {
	keyring.MockInit()
	dir := t.TempDir()
	o := Options{Keychain: OSKeychain{}, Account: filepath.Join(dir, "sb.db"), DefaultFile: filepath.Join(dir, "sb.db.key"), Create: true}
	made, err := Load(o)
	if err != nil || !made.Made || made.Source.Kind != FromKeychain {
		t.Fatalf("Load = %+v, %v; want a key made in the keychain", made, err)
	}
	if _, err := os.Stat(o.DefaultFile); err == nil {
		t.Error("a key file was written although the keychain keeps the key")
	}
	again, err := Load(o)
	if err != nil || again.Made || string(again.Current) != string(made.Current) {
		t.Errorf("Load again = %+v, %v", again, err)
	}
	next := New()
	r := NewRotation(o, again)
	if err := r.Keep(next); err != nil {
		t.Fatal(err)
	}
	if mid, _ := Load(o); string(mid.Next) != string(next) {
		t.Errorf("Load mid-rotation has next %x; want %x", mid.Next, next)
	}
	if _, err := r.Finish(next); err != nil {
		t.Fatal(err)
	}
	if done, _ := Load(o); string(done.Current) != string(next) || done.Next != nil {
		t.Errorf("Load after the rotation = %+v", done)
	}

	// A keychain that does not answer: the key file.
	keyring.MockInitWithError(errors.New("no Secret Service"))
	defer keyring.MockInit()
	k, err := Load(o)
	if err != nil || k.Source.Kind != FromFile || !k.Made {
		t.Errorf("Load with a keychain that does not answer = %+v, %v; want a key file made", k, err)
	}
}
