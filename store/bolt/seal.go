package bolt

import (
	"errors"
	"fmt"
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
// Close therefore writes, beside the file, its size and the CRC-32C of
// every byte (sealPath). Open reads the file once through the seal's
// checksum: if it matches, the file is byte for byte the one the last
// run closed — a file this program checked (or created) at its own open
// and then changed only through committed bbolt transactions — so it is
// used without a child. Any other file (no seal, a seal that does not
// parse, a different size or checksum: a byte changed on disk, a file
// copied or restored, a crash) gets the full check, as before.
//
// Reading the file for the checksum goes through read(2), not bbolt's
// memory map, so it puts nothing in the process's memory but a buffer.
// A seal exists only while its file is closed: start removes it as soon
// as it holds the file's lock, before the first write.
const sealFormat = "switchboard store seal v1"

// crcTable is CRC-32C, which amd64 and arm64 compute in hardware.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// sealPath is where the seal of the database at path is kept.
func sealPath(path string) string { return path + ".seal" }

// fileSeal is the size and CRC-32C of the file at path.
func fileSeal(path string) (size int64, sum uint32, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	h := crc32.New(crcTable)
	size, err = io.CopyBuffer(h, f, make([]byte, 1<<20))
	return size, h.Sum32(), err
}

// writeSeal seals the file at path, which must be closed cleanly: it is
// written to a temporary file and renamed into place, so a seal is never
// half there.
func writeSeal(path string) error {
	size, sum, err := fileSeal(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(sealPath(path))+".tmp-*")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(tmp, "%s size=%d crc32c=%08x\n", sealFormat, size, sum)
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), sealPath(path))
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// sealed reports whether the file at path is the very file its seal
// describes. Any doubt (no seal, an unreadable one, a read error) is a
// no: the caller then checks the file in full.
func sealed(path string) bool {
	if fi, err := os.Lstat(sealPath(path)); err != nil || !fi.Mode().IsRegular() {
		return false
	} else if _, foreign := foreignOwner(fi); foreign {
		return false // another user's word on this file is no seal
	}
	data, err := os.ReadFile(sealPath(path))
	if err != nil {
		return false
	}
	wantSize, wantSum, ok := parseSeal(string(data))
	if !ok {
		return false
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != wantSize {
		return false // the cheap test first: a cut or grown file is not read
	}
	size, sum, err := fileSeal(path)
	return err == nil && size == wantSize && sum == wantSum
}

// parseSeal reads what writeSeal wrote.
func parseSeal(s string) (size int64, sum uint32, ok bool) {
	rest, found := strings.CutPrefix(s, sealFormat+" ")
	if !found || !strings.HasSuffix(rest, "\n") {
		return 0, 0, false
	}
	f := strings.Fields(rest)
	if len(f) != 2 {
		return 0, 0, false
	}
	sizeText, ok1 := strings.CutPrefix(f[0], "size=")
	sumText, ok2 := strings.CutPrefix(f[1], "crc32c=")
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	size, err1 := strconv.ParseInt(sizeText, 10, 64)
	sum64, err2 := strconv.ParseUint(sumText, 16, 32)
	if err1 != nil || err2 != nil || size <= 0 {
		return 0, 0, false
	}
	return size, uint32(sum64), true
}

// breakSeal removes the seal of the file at path, which is about to be
// written. A seal that cannot be removed is harmless: the file will not
// match it.
func breakSeal(path string) { os.Remove(sealPath(path)) }
