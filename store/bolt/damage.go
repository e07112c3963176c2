package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/switchboard-dev/switchboard/store"
)

// damagedError is a database file the store refuses to open. It matches
// ErrDamaged, and its message names the file and says what to do, since
// the person reading it has to act: the store never repairs or
// re-initialises a file by itself, because that would silently throw
// away whatever it still holds.
type damagedError struct {
	path    string
	problem string // completes "<path> …", e.g. "is empty (0 bytes)"
}

func (e *damagedError) Error() string {
	return fmt.Sprintf("store: %s %s; move it aside and restore a backup, or start afresh "+
		"(switchboard never repairs or re-initialises a database by itself)", e.path, e.problem)
}

func (e *damagedError) Is(target error) bool { return target == store.ErrDamaged }

// damagedCheck is the error for a file that failed its integrity check;
// why says what made the check necessary ("" if it was asked for), and
// result what the check found ("found 2 problem(s): …", "crashed: …").
func damagedCheck(path, why, result string) error {
	problem := "is damaged: the integrity check " + result
	if why != "" {
		problem = "is damaged: " + why + ", and the integrity check " + result
	}
	return &damagedError{path: path, problem: problem}
}

// catchDamage runs fn, which reads path through bbolt, and turns a panic
// or a memory fault (a page beyond the end of the mapped file) that comes
// from the file (see fromFile) into an ErrDamaged error instead of a
// crash. It is the in-process safety net for damage that inspect cannot
// see from the header, at open and in every transaction after (see
// DB.view); bbolt rolls back a transaction that panics, so the handle
// stays usable for what is intact, and can be closed. Any other panic is
// a bug, and goes on as it was. Fatal runtime errors (an impossible
// allocation, a checkptr failure under -race) cannot be caught; that is
// why whole-file checks run in a child.
func catchDamage(path string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if !fromFile(r) {
				panic(r)
			}
			err = &damagedError{path: path, problem: fmt.Sprintf("is damaged: reading it failed (%v)", r)}
		}
	}()
	return fn()
}

// fromFile reports whether r, a panic that the deferred function calling
// fromFile recovered, comes from what was read in the file: a memory
// fault (see debug.SetPanicOnFault), or a panic raised in bbolt's own
// code, which trusts every page number, count and length it reads and
// panics when a page is not what the tree says ("invalid page type",
// "assertion failed"). A panic raised anywhere else — the store's own
// code, or a function of the caller's that runs inside a transaction
// (Catalog's, Offer's, ListedCatalog's, UpdateClientToken's,
// Options.BeforeCommit) — is a bug, not a damaged file: telling a person
// to restore a backup for it would be wrong. The panicking frames are
// still on the stack while deferred functions run: the first one below
// runtime.gopanic that is not the runtime's is where the panic began.
func fromFile(r any) bool {
	if _, fault := r.(interface{ Addr() uintptr }); fault {
		return true
	}
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			panicking = true
		case panicking && !strings.HasPrefix(f.Function, "runtime."):
			return strings.HasPrefix(f.Function, "go.etcd.io/bbolt.") || strings.HasPrefix(f.Function, "go.etcd.io/bbolt/")
		}
		if !more {
			return true // a stack not as expected: taken for damage, as before
		}
	}
}

// bbolt's file header: two meta pages at the start of the file, the
// second one page size in. Both are read here without bbolt, so that a
// file that bbolt would fault on is never mapped by this process.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16
	metaSize       = 64 // up to and including the checksum
	noFreelist     = ^uint64(0)

	branchPage   = 0x01
	leafPage     = 0x02
	freelistPage = 0x10
)

// boltMeta is the part of a bbolt meta page that inspect needs.
type boltMeta struct {
	valid    bool // magic, version and checksum are right
	pageSize int64
	root     uint64 // page of the root bucket
	freelist uint64 // page of the freelist, or noFreelist
	pages    uint64 // high-water mark: pages in use
	txid     uint64
}

func readBoltMeta(f *os.File, off int64) boltMeta {
	buf := make([]byte, pageHeaderSize+metaSize)
	if _, err := f.ReadAt(buf, off); err != nil {
		return boltMeta{}
	}
	m := buf[pageHeaderSize:]
	ne := binary.NativeEndian // bbolt writes its structs as they are in memory
	sum := fnv.New64a()
	sum.Write(m[:56])
	return boltMeta{
		valid: ne.Uint32(m[0:]) == boltMagic && ne.Uint32(m[4:]) == boltVersion &&
			ne.Uint64(m[56:]) == sum.Sum64(),
		pageSize: int64(ne.Uint32(m[8:])),
		root:     ne.Uint64(m[16:]),
		freelist: ne.Uint64(m[32:]),
		pages:    ne.Uint64(m[40:]),
		txid:     ne.Uint64(m[48:]),
	}
}

// inspect looks at a database file before anything maps it: it reports
// whether the file exists, refuses an empty one, and returns why a file
// looks damaged from its header (one meta page bad, a size that does not
// match the header: a copy cut short, a truncation; a freelist or root
// page that is not what the header says), for the message of the check
// that follows; "" means nothing looks wrong from here. A file with no
// valid meta page at all is left to bbolt, which refuses it without
// reading further.
func inspect(path string) (exists bool, why string, err error) {
	why, err = inspectFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, "", nil
	}
	return err == nil, why, err
}

func inspectFile(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("store: open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("store: open %s: %w", path, err)
	}
	size := fi.Size()
	if size == 0 {
		return "", &damagedError{path: path, problem: "is empty (0 bytes), which is not a valid database"}
	}
	m0 := readBoltMeta(f, 0)
	pageSize := int64(os.Getpagesize())
	if m0.valid {
		pageSize = m0.pageSize
	}
	m1 := readBoltMeta(f, pageSize)
	m := m0
	switch {
	case !m0.valid && !m1.valid:
		return "", nil
	case !m0.valid || !m1.valid:
		if m1.valid {
			m = m1
		}
		return "one of its two header pages is damaged", nil
	case m1.txid > m0.txid:
		m = m1
	}
	switch {
	case m.pageSize < 512 || size%m.pageSize != 0:
		return fmt.Sprintf("its size (%d bytes) is not a whole number of %d-byte pages", size, m.pageSize), nil
	case uint64(size/m.pageSize) < m.pages:
		return fmt.Sprintf("it is %d bytes but its header says it holds %d pages (%d bytes): it was cut short", size, m.pages, int64(m.pages)*m.pageSize), nil
	case m.root >= m.pages || (m.freelist >= m.pages && m.freelist != noFreelist):
		return "its header points beyond its last page", nil
	case m.freelist != noFreelist && !isFreelist(f, m):
		return "its freelist page is damaged", nil
	case !isPage(f, m, m.root, branchPage|leafPage):
		return "its root page is damaged", nil
	}
	return "", nil
}

// isPage reports whether page id of the file says it is page id, of one
// of the given types.
func isPage(f *os.File, m boltMeta, id uint64, types uint16) bool {
	var h [pageHeaderSize]byte
	if _, err := f.ReadAt(h[:], int64(id)*m.pageSize); err != nil {
		return false
	}
	flags := binary.NativeEndian.Uint16(h[8:])
	return binary.NativeEndian.Uint64(h[0:]) == id && flags&types != 0 && flags&^types == 0
}

// isFreelist reports whether the freelist page is one, and its list of
// page ids fits in the pages it spans: bbolt reads that list while
// opening, and a wrong length makes it read out of bounds.
func isFreelist(f *os.File, m boltMeta) bool {
	if !isPage(f, m, m.freelist, freelistPage) {
		return false
	}
	var h [pageHeaderSize + 8]byte
	if _, err := f.ReadAt(h[:], int64(m.freelist)*m.pageSize); err != nil {
		return false
	}
	ne := binary.NativeEndian
	ids, overflow := uint64(ne.Uint16(h[10:])), uint64(ne.Uint32(h[12:]))
	if ids == 0xFFFF { // the real count is in the first slot
		ids = ne.Uint64(h[pageHeaderSize:]) + 1
	}
	span := overflow + 1
	return m.freelist+span <= m.pages && ids <= (span*uint64(m.pageSize)-pageHeaderSize)/8
}
