package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// auditLog logs and writes call records in the background, in batches,
// so that a routed call waits for neither a log handler nor a disk sync;
// close writes what is left.
// A call only appends its record under a lock: no goroutine is woken per
// call. Nothing is dropped: when auditQueue records wait, add waits.
type auditLog struct {
	st      Store
	changed func() // after a batch was written
	log     *slog.Logger

	mu      sync.Mutex
	room    *sync.Cond // broadcast when records were taken, and at close
	pending []auditItem
	closed  bool

	full chan struct{} // a batch is ready (1-buffered)
	quit chan struct{} // closed by close
	done chan struct{} // closed when run returned
	// observe, if set, sees each record as it is added (see Deps.Observe).
	observe func(store.Call)
	// spool, if set, is where records the store refused wait (see
	// Config.AuditSpool); held keeps them in memory when there is none,
	// or the file cannot be written. lastTry is the last time the waiting
	// ones were offered to the store again.
	spool   string
	held    []store.Call
	lastTry time.Time
}

// maxHeld bounds the records kept in memory for a store out of reach,
// and maxSpool the spool file: past them, the oldest go, and the log says
// how many.
const (
	maxHeld  = 100_000
	maxSpool = 256 << 20
)

// retryEvery is how often records waiting for the store are offered to
// it again.
const retryEvery = 2 * time.Second

// auditItem is a record waiting, with the arguments its ArgsHash is made
// of (if it has none yet): hashing them is the writer's work, not the
// call's.
type auditItem struct {
	c    store.Call
	args any
}

// record is the item's record, its ArgsHash made.
func (it auditItem) record() store.Call {
	if it.c.ArgsHash == "" {
		it.c.ArgsHash = argsHash(it.args)
	}
	return it.c
}

const (
	// auditFlush is the longest a record waits before it is written.
	auditFlush = 100 * time.Millisecond
	// auditBatch records are written as soon as they wait; auditQueue
	// waiting make add wait.
	auditBatch = 256
	auditQueue = 1024
)

func newAuditLog(st Store, changed func(), log *slog.Logger, spool string, observe func(store.Call)) *auditLog {
	a := &auditLog{st: st, changed: changed, log: log, spool: spool, observe: observe, full: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	a.room = sync.NewCond(&a.mu)
	go a.run()
	return a
}

// add queues a call's record, for its line in the log and the store. A
// call that ends after close (its HTTP handler outlived the shutdown) is
// logged and written at once.
func (a *auditLog) add(c store.Call, args any) {
	if a.observe != nil {
		a.observe(c)
	}
	it := auditItem{c, args}
	a.mu.Lock()
	for len(a.pending) >= auditQueue && !a.closed {
		a.room.Wait()
	}
	if a.closed {
		a.mu.Unlock()
		c := it.record()
		logCall(a.log, c)
		if err := a.st.AppendCalls(context.Background(), []store.Call{c}); err != nil {
			a.log.Error("write the call audit log", "calls", 1, "err", err)
		}
		return
	}
	a.pending = append(a.pending, it)
	if len(a.pending) >= auditBatch {
		select {
		case a.full <- struct{}{}:
		default: // already told
		}
	}
	a.mu.Unlock()
}

// run writes the waiting records every auditFlush, or as soon as a batch
// waits, until close.
func (a *auditLog) run() {
	defer close(a.done)
	tick := time.NewTicker(auditFlush)
	defer tick.Stop()
	for {
		select {
		case <-a.full:
		case <-tick.C:
		case <-a.quit:
			a.flush()
			return
		}
		a.flush()
		a.retry()
	}
}

// flush logs and writes the records waiting now. The lines are written
// here, not by the calls, which then do not wait for a log handler.
func (a *auditLog) flush() {
	a.mu.Lock()
	batch := a.pending
	a.pending = nil
	a.room.Broadcast()
	a.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	calls := make([]store.Call, len(batch))
	for i, it := range batch {
		calls[i] = it.record()
		logCall(a.log, calls[i])
	}
	if err := a.st.AppendCalls(context.Background(), calls); err != nil {
		a.log.Error("write the call audit log: kept to write when the store is back", "calls", len(batch), "err", err)
		a.keep(calls)
		return
	}
	a.changed()
}

// keep keeps records the store refused: in the spool file, else in
// memory.
func (a *auditLog) keep(calls []store.Call) {
	if a.spool != "" {
		if err := appendSpool(a.spool, calls); err == nil {
			return
		} else {
			a.log.Error("keep call records in the audit spool: kept in memory", "spool", a.spool, "err", err)
		}
	}
	a.held = append(a.held, calls...)
	if over := len(a.held) - maxHeld; over > 0 {
		a.log.Error("call records waiting for the store are too many: the oldest are dropped", "dropped", over)
		a.held = slices.Clone(a.held[over:])
	}
}

// retry offers the records waiting (in memory, then in the spool) to the
// store again, at most every retryEvery.
func (a *auditLog) retry() {
	if len(a.held) == 0 && (a.spool == "" || !spoolWaits(a.spool)) || time.Since(a.lastTry) < retryEvery {
		return
	}
	a.lastTry = time.Now()
	if len(a.held) > 0 {
		if err := a.st.AppendCalls(context.Background(), a.held); err != nil {
			return
		}
		a.log.Info("call records kept while the store was out of reach are written", "calls", len(a.held))
		a.held = nil
		a.changed()
	}
	if a.spool == "" {
		return
	}
	calls, err := readSpool(a.spool)
	if err != nil {
		a.log.Error("read the audit spool", "spool", a.spool, "err", err)
		return
	}
	for len(calls) > 0 {
		n := min(len(calls), auditBatch)
		if err := a.st.AppendCalls(context.Background(), calls[:n]); err != nil {
			return // the rest waits; what was written is taken off
		}
		calls = calls[n:]
		if err := rewriteSpool(a.spool, calls); err != nil {
			a.log.Error("update the audit spool", "spool", a.spool, "err", err)
			return
		}
	}
	a.log.Info("call records spooled while the store was out of reach are written")
	a.changed()
}

// appendSpool appends records to the spool file, one JSON line each.
func appendSpool(path string, calls []store.Call) error {
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxSpool {
		return fmt.Errorf("the spool is over %d MiB", maxSpool>>20)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, c := range calls {
		if err := enc.Encode(c); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// spoolWaits reports whether the spool file holds records.
func spoolWaits(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Size() > 0
}

// readSpool reads the spool's records; a line that does not decode (a
// torn last write) is skipped.
func readSpool(path string) ([]store.Call, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []store.Call
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var c store.Call
		if json.Unmarshal(sc.Bytes(), &c) == nil {
			out = append(out, c)
		}
	}
	return out, sc.Err()
}

// rewriteSpool replaces the spool with calls (removes it for none).
func rewriteSpool(path string, calls []store.Call) error {
	if len(calls) == 0 {
		err := os.Remove(path)
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
		return err
	}
	tmp := path + ".tmp"
	os.Remove(tmp)
	if err := appendSpool(tmp, calls); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// close writes the records still waiting and stops the writer; a call
// added after it is written at once.
func (a *auditLog) close() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.quit)
	}
	a.room.Broadcast()
	a.mu.Unlock()
	<-a.done
}

// logCall writes the one line of a routed call (or read, or get): who
// called which tool (read which resource, got which prompt),
// what was decided and by whom, how it ended, and how long it took. The
// arguments are never logged (the record keeps only their hash).
func logCall(log *slog.Logger, c store.Call) {
	ctx := context.Background()
	if !log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	attrs := make([]slog.Attr, 0, 9)
	attrs = append(attrs, slog.String("agent", callerOf(c)), slog.String("tool", c.AgentName), slog.String("decision", string(c.Decision)),
		slog.String("by", c.DecidedBy), slog.String("outcome", c.Outcome), slog.String("duration", (time.Duration(c.DurationMS)*time.Millisecond).String()))
	if c.Method != "" && c.Method != store.MethodCallTool {
		attrs = append(attrs, slog.String("method", c.Method))
	}
	if c.Reason != "" {
		attrs = append(attrs, slog.String("reason", c.Reason))
	}
	if c.Error != "" {
		attrs = append(attrs, slog.String("err", c.Error))
	}
	log.LogAttrs(ctx, slog.LevelInfo, "routed call", attrs...)
}

// callerOf names who made a call: the connected client whose token it
// used, else the client's own name, else its MCP session.
func callerOf(c store.Call) string {
	switch {
	case c.ConnectedAs != "":
		return c.ConnectedAs
	case c.Client != "":
		return c.Client
	}
	return "session " + c.Session
}
