package reclaim

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

// Large work is followed by one return of memory once it stops, however
// much of it came in a burst; small work by none.
func TestAfterLargeWorkOnceQuiet(t *testing.T) {
	var runs atomic.Int32
	r := &reclaimer{quiet: 50 * time.Millisecond, free: func() { runs.Add(1) }}
	r.after(Threshold - 1)
	time.Sleep(100 * time.Millisecond)
	if n := runs.Load(); n != 0 {
		t.Fatalf("after small work: %d returns; want none", n)
	}
	for range 10 { // a burst, closer together than quiet
		r.after(Threshold)
		time.Sleep(10 * time.Millisecond)
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("during a burst of large work: %d returns; want none until it stops", n)
	}
	time.Sleep(150 * time.Millisecond)
	if n := runs.Load(); n != 1 {
		t.Fatalf("after the burst: %d returns; want 1", n)
	}
	r.after(Threshold)
	time.Sleep(150 * time.Millisecond)
	if n := runs.Load(); n != 2 {
		t.Fatalf("after more large work: %d returns; want 2", n)
	}
}

// What the process's reclaimer runs returns the free heap: the memory
// released to the operating system grows by what was garbage.
func TestFreeReturnsGarbage(t *testing.T) {
	debug.FreeOSMemory()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	garbage := make([][]byte, 64)
	for i := range garbage {
		garbage[i] = make([]byte, 256<<10)
	}
	runtime.KeepAlive(garbage)
	garbage = nil
	process.free()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if after.HeapInuse > before.HeapInuse+4<<20 {
		t.Errorf("heap in use after 16 MiB of garbage and a return: %d MiB (before %d MiB); want it back", after.HeapInuse>>20, before.HeapInuse>>20)
	}
}
