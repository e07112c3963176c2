package bolt

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A seal lets a file closed cleanly skip the full check at its next open.
//
// The full check (check.go) exists because bbolt keeps no checksums: only
// reading every page, key and value finds damage that happened while the
// file was closed, and with 10,000 tools that takes most of a start.
// Close therefore writes, beside the file, its size and a checksum of
// every byte (sealPath). Open reads the file once through the seal's
// checksum: if it matches, the file is byte for byte the one the last
// run closed — a file this program checked (or created) at its own open
// and then changed only through committed bbolt transactions — so it is
// used without a child. Any other file (no seal, a seal that does not
// parse, a different size or checksum: a byte changed on disk, a file
// copied or restored, a crash) gets the full check, as before.
//
// The checksum is keyed (Options.SealKey, derived from the key that
// seals the store's secrets, kept apart from the file): an HMAC-SHA256,
// which nobody without the key can write for a file of their making, so
// a seal forged to match a damaged or planted file is no seal. Without
// a key (tests, tools that hold none) the seal is a CRC-32C, which only
// catches accidents; a store opened with a key trusts no such seal.
//
// Reading the file for the checksum goes through read(2), not bbolt's
// memory map, so it puts nothing in the process's memory but a buffer.
// A seal exists only while its file is closed: start removes it as soon
// as it holds the file's lock, before the first write.
const (
	sealFormat      = "switchboard store seal v1" // CRC-32C, no key
	keyedSealFormat = "switchboard store seal v2" // HMAC-SHA256
)

// crcTable is CRC-32C, which amd64 and arm64 compute in hardware.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// sealPath is where the seal of the database at path is kept.
func sealPath(path string) string { return path + ".seal" }

// SealPath is the file Close leaves beside the database at path (see
// above): whoever moves or copies a database file away leaves it, or
// removes it.
func SealPath(path string) string { return sealPath(path) }

// sealHash is the checksum a seal made with key holds: HMAC-SHA256 with
// a key, CRC-32C without.
func sealHash(key []byte) hash.Hash {
	if key == nil {
		return crc32.New(crcTable)
	}
	return hmac.New(sha256.New, key)
}

// sealHeader is the start of a seal made with key.
func sealHeader(key []byte) string {
	if key == nil {
		return sealFormat
	}
	return keyedSealFormat
}

// fileSeal is the size and checksum (hex) of the file at path.
func fileSeal(path string, key []byte) (size int64, sum string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sealHash(key)
	size, err = io.CopyBuffer(h, f, make([]byte, 1<<20))
	return size, hex.EncodeToString(h.Sum(nil)), err
}

// writeSeal seals the file at path, which must be closed cleanly, with
// key (nil: an unkeyed seal): it is written to a temporary file and
// renamed into place, so a seal is never half there.
func writeSeal(path string, key []byte) error {
	size, sum, err := fileSeal(path, key)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(sealPath(path))+".tmp-*")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(tmp, "%s size=%d sum=%s\n", sealHeader(key), size, sum)
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), sealPath(path))
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// sealed reports whether the file at path is the very file its seal,
// made with key, describes. Any doubt (no seal, an unreadable one, one
// made without the key or with another, a read error) is a no: the
// caller then checks the file in full.
func sealed(path string, key []byte) bool {
	if fi, err := os.Lstat(sealPath(path)); err != nil || !fi.Mode().IsRegular() {
		return false
	} else if _, foreign := foreignOwner(fi); foreign {
		return false // another user's word on this file is no seal
	}
	data, err := os.ReadFile(sealPath(path))
	if err != nil {
		return false
	}
	wantSize, wantSum, ok := parseSeal(string(data), sealHeader(key))
	if !ok {
		return false
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != wantSize {
		return false // the cheap test first: a cut or grown file is not read
	}
	size, sum, err := fileSeal(path, key)
	return err == nil && size == wantSize && hmac.Equal([]byte(sum), []byte(wantSum))
}

// parseSeal reads what writeSeal wrote, under header.
func parseSeal(s, header string) (size int64, sum string, ok bool) {
	rest, found := strings.CutPrefix(s, header+" ")
	if !found || !strings.HasSuffix(rest, "\n") {
		return 0, "", false
	}
	f := strings.Fields(rest)
	if len(f) != 2 {
		return 0, "", false
	}
	sizeText, ok1 := strings.CutPrefix(f[0], "size=")
	sum, ok2 := strings.CutPrefix(f[1], "sum=")
	if !ok1 || !ok2 {
		return 0, "", false
	}
	if _, err := hex.DecodeString(sum); err != nil || sum == "" {
		return 0, "", false
	}
	size, err := strconv.ParseInt(sizeText, 10, 64)
	if err != nil || size <= 0 {
		return 0, "", false
	}
	return size, sum, true
}

// breakSeal removes the seal of the file at path, which is about to be
// written. A seal that cannot be removed is harmless: the file will not
// match it.
func breakSeal(path string) { os.Remove(sealPath(path)) }
