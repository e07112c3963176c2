package bolt

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store/storetest"

	"github.com/switchboard-dev/switchboard/store"
)

// Go benchmarks of the store's hot paths; `make bench` runs them, and
// `make test` runs each once so they keep compiling and working. The
// whole-product figures are in cmd/bench.

// benchTools returns n tools with a realistic size (a few properties of
// schema, a sentence of description).
func benchTools(n int) []store.Tool {
	tools := make([]store.Tool, n)
	for i := range tools {
		tools[i] = storetest.MkTool(fmt.Sprintf("tool_%03d", i), "searches the record catalogue for entries matching a free-text query")
	}
	return tools
}

func benchDB(b *testing.B, servers, toolsPerServer int) *DB {
	ctx := b.Context()
	b.Helper()
	db, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	tools := benchTools(toolsPerServer)
	for i := range servers {
		s := storetest.StdioServer(fmt.Sprintf("srv-%03d", i))
		if err := db.CreateServer(ctx, s); err != nil {
			b.Fatal(err)
		}
		if err := db.RecordSuccess(ctx, s.ID, storetest.Verification(s, "j", storetest.At(i), tools...)); err != nil {
			b.Fatal(err)
		}
	}
	return db
}

// BenchmarkRecordSuccess: saving a re-verification of a 50-tool server
// (one transaction, fsync included).
func BenchmarkRecordSuccess(b *testing.B) {
	ctx := b.Context()
	db := benchDB(b, 1, 0)
	s, err := db.Server(ctx, "srv-000")
	if err != nil {
		b.Fatal(err)
	}
	tools := benchTools(50)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := db.RecordSuccess(ctx, s.ID, storetest.Verification(s, "j", storetest.At(i), tools...)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAllTools: reading the whole catalog (200 servers × 50 tools),
// what the catalog cache renders from once per change.
func BenchmarkAllTools(b *testing.B) {
	ctx := b.Context()
	db := benchDB(b, 200, 50)
	b.ReportAllocs()
	for b.Loop() {
		tools, err := db.AllTools(ctx)
		if err != nil || len(tools) != 10000 {
			b.Fatalf("%d tools, %v", len(tools), err)
		}
	}
}

// BenchmarkTools: one server's 50 tools, as GET /api/v1/servers/:id/tools
// reads them.
func BenchmarkTools(b *testing.B) {
	ctx := b.Context()
	db := benchDB(b, 200, 50)
	b.ReportAllocs()
	for b.Loop() {
		if tools, err := db.Tools(ctx, "srv-100"); err != nil || len(tools) != 50 {
			b.Fatalf("%d tools, %v", len(tools), err)
		}
	}
}

// BenchmarkSummaries: every server's summary, as the servers page and an
// SSE snapshot read them (200 servers).
func BenchmarkSummaries(b *testing.B) {
	ctx := b.Context()
	db := benchDB(b, 200, 5)
	b.ReportAllocs()
	for b.Loop() {
		if sums, err := db.Summaries(ctx); err != nil || len(sums) != 200 {
			b.Fatalf("%d summaries, %v", len(sums), err)
		}
	}
}

// seedFile makes a closed store of servers × 50 tools for the open and
// check benchmarks (without fsync, to build it quickly) and returns its
// path.
func seedFile(b *testing.B, servers int) string {
	ctx := b.Context()
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	tools := benchTools(50)
	for i := range servers {
		s := storetest.StdioServer(fmt.Sprintf("srv-%03d", i))
		if err := db.CreateServer(ctx, s); err != nil {
			b.Fatal(err)
		}
		if err := db.RecordSuccess(ctx, s.ID, storetest.Verification(s, "j", storetest.At(i), tools...)); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkOpen: opening and closing a store of 10 000 tools, as
// switchboard starts and stops: after a clean shutdown, and after a crash,
// when the whole file is first checked in a child process.
func BenchmarkOpen(b *testing.B) {
	path := seedFile(b, 200)
	b.Run("clean", func(b *testing.B) {
		for b.Loop() {
			db, err := Open(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			db.Close()
		}
		b.ReportMetric(float64(fileBytes(b, path))/(1<<20), "MiB")
	})
	b.Run("after-crash", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			crash(b, path)
			b.StartTimer()
			db, err := Open(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			db.Close()
		}
	})
}

// BenchmarkCheckInChild: the whole-file check of a ~32 MiB store (about
// 60 000 tools), child process included.
func BenchmarkCheckInChild(b *testing.B) {
	path := seedFile(b, 400)
	for b.Loop() {
		if err := CheckInChild(b.Context(), path); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(fileBytes(b, path))/(1<<20), "MiB")
}

// crash leaves the file as a killed switchboard would: marked open.
func crash(b *testing.B, path string) {
	bdb, err := bbolt.Open(path, 0o600, nil)
	if err == nil {
		err = bdb.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyOpen, []byte("killed")) })
		bdb.Close()
	}
	if err != nil {
		b.Fatal(err)
	}
}

func fileBytes(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}
