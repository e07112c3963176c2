package bolt

import (
	"encoding/binary"
	"fmt"
	"os"
)

// Before bbolt walks a file it is about to check, the child walks it
// itself, with plain reads of the file: bbolt trusts every count, length
// and page number it finds, so a damaged one can make it read far out of
// its page, or spend hours (and all memory) on a page that claims to
// span four billion more. checkLayout makes sure every page of every
// bucket's tree is one bbolt can walk — each reached once, of its kind,
// within the file, its elements within it — so that tx.Check and the
// reads after it only ever look at what is there.

const (
	elemSize         = 16 // a branch or leaf element
	bucketHeaderSize = 16 // root page, sequence
	bucketLeafFlag   = 0x01
	maxTreeDepth     = 64 // far beyond any real file's nesting of pages and buckets
)

// layoutWalk is one walk over a file with meta m.
type layoutWalk struct {
	f    *os.File
	m    boltMeta
	seen map[uint64]bool // pages reached so far
}

// checkLayout walks the file at path as its newest sound meta page
// describes it, and returns the first problem it finds, or nil. A file
// without a sound meta page is left to bbolt, which refuses it.
func checkLayout(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	m0 := readBoltMeta(f, 0)
	pageSize := int64(os.Getpagesize())
	if m0.valid {
		pageSize = m0.pageSize
	}
	m1 := readBoltMeta(f, pageSize)
	m := m0
	switch {
	case !m0.valid && !m1.valid:
		return nil
	case !m0.valid || (m1.valid && m1.txid > m0.txid):
		m = m1
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	switch {
	case m.pageSize < 512 || m.pageSize > 1<<20:
		return fmt.Errorf("page size %d is not one bbolt writes", m.pageSize)
	case uint64(fi.Size()/m.pageSize) < m.pages:
		return fmt.Errorf("the file holds %d pages, its header says %d", fi.Size()/m.pageSize, m.pages)
	}
	w := &layoutWalk{f: f, m: m, seen: map[uint64]bool{0: true, 1: true}}
	if m.freelist != noFreelist {
		if err := w.freelist(); err != nil {
			return err
		}
	}
	return w.tree(m.root, 0)
}

// freelist checks the freelist page: its span is within the file, and
// each page it lists is a page of the file other than the meta pages.
func (w *layoutWalk) freelist() error {
	data, err := w.read(w.m.freelist, freelistPage)
	if err != nil {
		return err
	}
	ne := binary.NativeEndian
	n, ids := uint64(ne.Uint16(data[10:])), data[pageHeaderSize:]
	if n == 0xFFFF { // the real count is in the first slot
		if len(ids) < 8 {
			return fmt.Errorf("freelist page %d: cut short", w.m.freelist)
		}
		n, ids = ne.Uint64(ids), ids[8:]
	}
	if n > uint64(len(ids)/8) {
		return fmt.Errorf("freelist page %d: %d pages listed in room for %d", w.m.freelist, n, len(ids)/8)
	}
	for i := range n {
		if id := ne.Uint64(ids[8*i:]); id < 2 || id >= w.m.pages {
			return fmt.Errorf("freelist page %d: lists page %d, outside the file's %d pages", w.m.freelist, id, w.m.pages)
		}
	}
	return nil
}

// read reads page id with the pages it overflows into, checking that it
// says it is page id, of one of the types, within the file and not
// reached before.
func (w *layoutWalk) read(id uint64, types uint16) ([]byte, error) {
	if id < 2 || id >= w.m.pages {
		return nil, fmt.Errorf("page %d is outside the file's %d pages", id, w.m.pages)
	}
	var h [pageHeaderSize]byte
	if _, err := w.f.ReadAt(h[:], int64(id)*w.m.pageSize); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	ne := binary.NativeEndian
	flags, overflow := ne.Uint16(h[8:]), uint64(ne.Uint32(h[12:]))
	switch {
	case ne.Uint64(h[0:]) != id:
		return nil, fmt.Errorf("page %d says it is page %d", id, ne.Uint64(h[0:]))
	case flags&types == 0 || flags&^types != 0:
		return nil, fmt.Errorf("page %d is of type %#x, not %#x", id, flags, types)
	case id+overflow >= w.m.pages:
		return nil, fmt.Errorf("page %d spans %d more pages, past the file's %d", id, overflow, w.m.pages)
	}
	for p := id; p <= id+overflow; p++ {
		if w.seen[p] {
			return nil, fmt.Errorf("page %d is reached twice", p)
		}
		w.seen[p] = true
	}
	data := make([]byte, int64(overflow+1)*w.m.pageSize)
	if _, err := w.f.ReadAt(data, int64(id)*w.m.pageSize); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	return data, nil
}

// tree checks the bucket tree whose root is page id, depth pages and
// buckets below the file's root.
func (w *layoutWalk) tree(id uint64, depth int) error {
	data, err := w.read(id, branchPage|leafPage)
	if err != nil {
		return err
	}
	return w.node(data, fmt.Sprintf("page %d", id), depth)
}

// node checks one page (or an inline bucket's page) and what it refers
// to.
func (w *layoutWalk) node(data []byte, where string, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("%s: nested more than %d deep", where, maxTreeDepth)
	}
	if len(data) < pageHeaderSize {
		return fmt.Errorf("%s: cut short", where)
	}
	ne := binary.NativeEndian
	flags, count := ne.Uint16(data[8:]), int(ne.Uint16(data[10:]))
	if pageHeaderSize+count*elemSize > len(data) {
		return fmt.Errorf("%s: %d elements do not fit in its %d bytes", where, count, len(data))
	}
	branch := flags&branchPage != 0
	if branch && count == 0 {
		return fmt.Errorf("%s: a branch page without elements", where)
	}
	for i := range count {
		off := pageHeaderSize + i*elemSize
		e := data[off : off+elemSize]
		var pos, ksize, vsize uint64
		if branch {
			pos, ksize = uint64(ne.Uint32(e[0:])), uint64(ne.Uint32(e[4:]))
		} else {
			pos, ksize, vsize = uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
		}
		end := uint64(off) + pos + ksize + vsize
		if end > uint64(len(data)) {
			return fmt.Errorf("%s: element %d ends %d bytes past it", where, i, end-uint64(len(data)))
		}
		if branch {
			if err := w.tree(ne.Uint64(e[8:]), depth+1); err != nil {
				return err
			}
			continue
		}
		if ne.Uint32(e[0:])&bucketLeafFlag == 0 {
			continue
		}
		value := data[uint64(off)+pos+ksize : end]
		if len(value) < bucketHeaderSize {
			return fmt.Errorf("%s: element %d is a bucket of %d bytes", where, i, len(value))
		}
		if root := ne.Uint64(value); root != 0 {
			if err := w.tree(root, depth+1); err != nil {
				return err
			}
			continue
		}
		inline := value[bucketHeaderSize:]
		if len(inline) < pageHeaderSize || ne.Uint16(inline[8:]) != leafPage {
			return fmt.Errorf("%s: element %d is an inline bucket without its leaf page", where, i)
		}
		if err := w.node(inline, fmt.Sprintf("%s, inline bucket %d", where, i), depth+1); err != nil {
			return err
		}
	}
	return nil
}
