package gateway

import (
	"context"
	"log/slog"
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
}

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

func newAuditLog(st Store, changed func(), log *slog.Logger) *auditLog {
	a := &auditLog{st: st, changed: changed, log: log, full: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
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
		a.log.Error("write the call audit log", "calls", len(batch), "err", err)
	}
	a.changed()
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
