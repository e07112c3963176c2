package store

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
)

func TestScratchGarbage(t *testing.T) {
	for _, n := range []int{1, 100, 1024, 2047, 2048, 3000, 4096, 5000, 8191, 8192, 16384, 65536, 1 << 20} {
		p := filepath.Join(t.TempDir(), "x.db")
		b := make([]byte, n)
		rand.Read(b)
		os.WriteFile(p, b, 0o600)
		db, err := Open(p, Options{})
		t.Logf("%d: %v", n, err)
		if db != nil {
			db.Close()
		}
	}
	p := filepath.Join(t.TempDir(), "x.json")
	os.WriteFile(p, []byte(`{"servers":[{"id":"a"}]}`), 0o600)
	_, err := Open(p, Options{})
	t.Logf("json: %v", err)
}

func TestScratchTruncated(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.db")
	db, err := Open(p, Options{})
	if err != nil { t.Fatal(err) }
	for i := 0; i < 50; i++ {
		db.CreateServer(Server{ID: string(rune('a'+i%26)) + string(rune('a'+i/26)), Transport: "stdio", Command: "x"})
	}
	db.Close()
	fi, _ := os.Stat(p)
	t.Logf("size %d", fi.Size())
	data, _ := os.ReadFile(p)
	for _, n := range []int{8192, 12288, 16384} {
		q := filepath.Join(dir, "t.db")
		os.WriteFile(q, data[:n], 0o600)
		db, err := Open(q, Options{})
		t.Logf("trunc %d: %v", n, err)
		if db != nil {
			s, err := db.Summaries()
			t.Logf("summaries %d %v", len(s), err)
			db.Close()
		}
	}
}
