// Package secretkey keeps the key that seals the secrets a store holds
// (see store.Sealer): where it comes from (the OS keychain, a key file, or
// the environment), and the cipher, AES-256-GCM with a fresh random nonce
// per value and the value's place in the store as associated data.
package secretkey

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-dev/switchboard/store"
)

// Size is a key's length in bytes.
const Size = 32

// New makes a random key.
func New() []byte {
	k := make([]byte, Size)
	rand.Read(k)
	return k
}

// Encode writes a key as text: standard base64, as a key file or
// SWITCHBOARD_SECRET_KEY holds it.
func Encode(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

// Parse reads a key written as Encode writes it (or as 64 hex digits,
// or URL-safe base64), with surrounding space ignored.
func Parse(text string) ([]byte, error) {
	text = strings.TrimSpace(text)
	for _, dec := range []func(string) ([]byte, error){
		base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
		base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString, hex.DecodeString,
	} {
		if k, err := dec(text); err == nil && len(k) == Size {
			return k, nil
		}
	}
	return nil, fmt.Errorf("not a secret key: want %d random bytes as base64 (44 characters) or hex (64 digits); make one with `openssl rand -base64 32`", Size)
}

// ID names a key without revealing it: the start of a hash of it, as
// sealed values carry it.
func ID(k []byte) string {
	sum := sha256.Sum256(append([]byte("switchboard secret key id\x00"), k...))
	return hex.EncodeToString(sum[:8])
}

// Ring seals with one key and opens with any of its keys: the current
// key, and while a rotation is under way the other one. It is a
// store.Sealer.
type Ring struct {
	keys []ringKey // keys[0] seals
}

type ringKey struct {
	id   string
	aead cipher.AEAD
}

// NewRing makes a ring that seals with current and opens with current
// and others (nil ones are skipped).
func NewRing(current []byte, others ...[]byte) (*Ring, error) {
	r := &Ring{}
	for i, k := range append([][]byte{current}, others...) {
		if k == nil && i > 0 {
			continue
		}
		if len(k) != Size {
			return nil, fmt.Errorf("secret key: %d bytes; want %d", len(k), Size)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		id := ID(k)
		if r.key(id) == nil {
			r.keys = append(r.keys, ringKey{id: id, aead: aead})
		}
	}
	return r, nil
}

// ID is the id of the key the ring seals with.
func (r *Ring) ID() string { return r.keys[0].id }

func (r *Ring) key(id string) *ringKey {
	for i := range r.keys {
		if r.keys[i].id == id {
			return &r.keys[i]
		}
	}
	return nil
}

// associated is what a value's ciphertext is bound to: its place in the
// store and its hash (which the sealed value shows).
func associated(ad, hash string) []byte { return []byte(ad + "\x00" + hash) }

// Seal seals value, kept where ad says (see store.Sealer).
func (r *Ring) Seal(ad, value string) (string, error) {
	k := r.keys[0]
	hash := store.ValueHash(value)
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(value)+k.aead.Overhead())
	rand.Read(nonce)
	box := k.aead.Seal(nonce, nonce, []byte(value), associated(ad, hash))
	return store.SealedPrefix + k.id + ":" + hash + ":" + base64.RawURLEncoding.EncodeToString(box), nil
}

// ErrOtherKey is the error of Open for a value sealed under a key the
// ring does not hold.
var ErrOtherKey = errors.New("sealed under another secret key")

// Open opens a sealed value kept where ad says (see store.Sealer).
func (r *Ring) Open(ad, sealed string) (string, error) {
	id, hash, text, ok := store.SealedParts(sealed)
	if !ok {
		return "", errors.New("not a sealed value")
	}
	k := r.key(id)
	if k == nil {
		return "", fmt.Errorf("%w (key %s; the key given is %s)", ErrOtherKey, id, r.ID())
	}
	box, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(box) < k.aead.NonceSize() {
		return "", errors.New("a sealed value is damaged")
	}
	value, err := k.aead.Open(nil, box[:k.aead.NonceSize()], box[k.aead.NonceSize():], associated(ad, hash))
	if err != nil {
		return "", fmt.Errorf("a sealed value does not open where it is kept (%s): it was damaged or moved", ad)
	}
	return string(value), nil
}

// Current reports whether sealed is sealed under the key the ring seals
// with.
func (r *Ring) Current(sealed string) bool {
	id, _, _, ok := store.SealedParts(sealed)
	return ok && id == r.ID()
}

var _ store.Sealer = (*Ring)(nil)

// SealKey is the key that keys a database file's seal (store/bolt),
// derived from the secret key k so that it is kept apart from the file
// as k is, and is no use for opening a secret.
func SealKey(k []byte) []byte {
	if k == nil {
		return nil
	}
	m := hmac.New(sha256.New, k)
	m.Write([]byte("switchboard store seal v2"))
	return m.Sum(nil)
}
