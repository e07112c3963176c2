// Package reclaim gives back to the operating system the memory that a
// large piece of one-off work left free, once the process is quiet.
//
// Building the MCP offer or rendering the API's catalog of 10,000 tools
// allocates tens of megabytes that are garbage a moment later. Go's
// collector frees them, but keeps the freed heap for reuse, and with its
// default pacing (a collection once the heap has doubled) a dashboard
// that holds 20 MiB of answers can stay at 60 MiB resident until the
// runtime's own forced collection, two minutes on. After such work, once
// no more has come for Quiet, a collection runs and the free heap is
// returned (debug.FreeOSMemory). Small work is not worth one: only work
// of Threshold bytes or more is noted.
package reclaim

import (
	"runtime/debug"
	"sync"
	"time"
)

const (
	// Quiet is how long after the last large work the memory is
	// returned.
	Quiet = 500 * time.Millisecond
	// Threshold is the least work, in bytes, worth a collection.
	Threshold = 4 << 20
)

// After says that work which allocated about size bytes just ended.
func After(size int) { process.after(size) }

// process is the process's reclaimer: the heap is the process's.
var process = reclaimer{free: debug.FreeOSMemory}

// reclaimer runs free once no work of Threshold bytes was noted for
// quiet, after such work.
type reclaimer struct {
	mu    sync.Mutex
	timer *time.Timer // nil until the first large work
	quiet time.Duration
	free  func()
}

func (r *reclaimer) after(size int) {
	if size < Threshold {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	quiet := r.quiet
	if quiet == 0 {
		quiet = Quiet
	}
	if r.timer == nil {
		r.timer = time.AfterFunc(quiet, r.free) // its goroutine ends with free
		return
	}
	r.timer.Reset(quiet)
}
