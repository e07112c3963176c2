package gateway

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// auditLog writes call records in the background, in batches, so that a
// routed call does not wait for a disk sync; close writes what is left.
// Nothing is dropped: when the queue is full, add waits.
type auditLog struct {
	st      Store
	changed func() // after a batch was written
	log     *slog.Logger
	queue   chan store.Call
	done    chan struct{}
	mu      sync.RWMutex // closed, and sends on queue
	closed  bool
}

// auditFlush is the longest a record waits before it is written.
const auditFlush = 100 * time.Millisecond

func newAuditLog(st Store, changed func(), log *slog.Logger) *auditLog {
	a := &auditLog{st: st, changed: changed, log: log, queue: make(chan store.Call, 1024), done: make(chan struct{})}
	go a.run()
	return a
}

// add logs a call's line and queues its record. A call that ends after
// close (its HTTP handler outlived the shutdown) is written at once.
func (a *auditLog) add(c store.Call) {
	logCall(a.log, c)
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		if err := a.st.AppendCalls(context.Background(), []store.Call{c}); err != nil {
			a.log.Error("write the call audit log", "calls", 1, "err", err)
		}
		return
	}
	a.queue <- c
}

func (a *auditLog) run() {
	defer close(a.done)
	var batch []store.Call
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if err := a.st.AppendCalls(context.Background(), batch); err != nil {
			a.log.Error("write the call audit log", "calls", len(batch), "err", err)
		}
		batch = batch[:0]
		a.changed()
	}
	tick := time.NewTicker(auditFlush)
	defer tick.Stop()
	for {
		select {
		case c, ok := <-a.queue:
			if !ok {
				flush()
				return
			}
			batch = append(batch, c)
			if len(batch) >= 256 {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}

// close writes the records still queued and stops the writer; no call
// may be added after it.
func (a *auditLog) close() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.queue)
	}
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
