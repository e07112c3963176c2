package bolt

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

// mappedRSS is how much of the file at path this process has resident
// through its memory maps, from /proc/self/smaps.
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) >= 5 && strings.Contains(fields[0], "-") {
			in = len(fields) >= 6 && fields[5] == path
			continue
		}
		if kb, ok := strings.CutPrefix(line, "Rss:"); ok && in {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("smaps: %q: %v", line, err)
			}
			total += n << 10
		}
	}
	return total
}

// A whole-catalog scan leaves the pages it read out of the process's
// resident memory (they stay in the page cache); a read that does not
// release them keeps them, which is what the test would see without.
func TestWholeCatalogScanReleasesItsPages(t *testing.T) {
	old := releaseMin
	releaseMin = 0
	t.Cleanup(func() { releaseMin = old })
	path, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(path, "big.db")
	db := mustOpenPath(t, path, Options{NoSync: true})
	long := strings.Repeat("a tool that does many things, described at length. ", 40)
	var tools []store.Tool
	for i := range 100 {
		tools = append(tools, storetest.MkTool(fmt.Sprintf("tool_%03d", i), long))
	}
	for i := range 20 {
		s := storetest.MustCreate(t, db, storetest.StdioServer(fmt.Sprintf("srv-%02d", i)))
		storetest.MustRecordSuccess(t, db, s.ID, storetest.Verification(s, "j", storetest.At(i), tools...))
	}
	touchAll := func() {
		t.Helper()
		if err := db.bolt.View(func(tx *bbolt.Tx) error {
			return tx.ForEach(func(_ []byte, b *bbolt.Bucket) error { return walkAll(b) })
		}); err != nil {
			t.Fatal(err)
		}
	}
	touchAll()
	held := mappedRSS(t, path)
	if held < 4<<20 {
		t.Fatalf("resident after reading every value: %d KiB; want the file's pages (over 4 MiB) to be", held>>10)
	}
	for _, scan := range []struct {
		name string
		run  func() error
	}{
		{"Catalog", func() error { _, err := db.AllTools(t.Context()); return err }},
		{"Offer", func() error {
			_, err := db.Offer(t.Context(), func(*store.Summary, store.OfferedTool) error { return nil })
			return err
		}},
	} {
		touchAll()
		if err := scan.run(); err != nil {
			t.Fatal(err)
		}
		if got := mappedRSS(t, path); got > held/8 {
			t.Errorf("resident after %s: %d KiB of %d KiB; want the scan's pages released", scan.name, got>>10, held>>10)
		}
	}
	if tools, err := db.Tools(t.Context(), "srv-03"); err != nil || len(tools) != 100 || !strings.Contains(tools[7].Description, "at length") {
		t.Errorf("Tools(srv-03) after the pages were released = %d tools, %v; want them read again, whole", len(tools), err)
	}
}

// walkAll reads every key and value under b.
func walkAll(b *bbolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			return walkAll(b.Bucket(k))
		}
		var sum byte
		for _, c := range v {
			sum ^= c
		}
		_ = sum
		return nil
	})
}
