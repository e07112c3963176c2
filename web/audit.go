package web

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/r3labs/sse/v2"

	"github.com/switchboard-dev/switchboard/store"
)

// auditLog writes call records in the background, in batches, so that a
// routed call does not wait for a disk sync; close writes what is left.
// Nothing is dropped: when the queue is full, add waits.
type auditLog struct {
	s      *Server
	queue  chan store.Call
	done   chan struct{}
	mu     sync.RWMutex // closed, and sends on queue
	closed bool
}

// auditFlush is the longest a record waits before it is written.
const auditFlush = 100 * time.Millisecond

func newAuditLog(s *Server) *auditLog {
	a := &auditLog{s: s, queue: make(chan store.Call, 1024), done: make(chan struct{})}
	go a.run()
	return a
}

// add queues a record. A call that ends after close (its HTTP handler
// outlived the shutdown) is written at once.
func (a *auditLog) add(c store.Call) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		if err := a.s.store.AppendCalls([]store.Call{c}); err != nil {
			a.s.log.Error("write the call audit log", "calls", 1, "err", err)
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
		if err := a.s.store.AppendCalls(batch); err != nil {
			a.s.log.Error("write the call audit log", "calls", len(batch), "err", err)
		}
		batch = batch[:0]
		a.s.hub.Publish(&sse.Event{Event: []byte("calls"), Data: []byte("changed")})
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

// handleAPICalls serves GET /api/v1/calls?limit=N (newest first; 100 by
// default, at most store.MaxCalls).
func (s *Server) handleAPICalls(c echo.Context) error {
	limit := 100
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxCalls {
			return &apiError{Status: http.StatusUnprocessableEntity, Message: "invalid limit",
				Fields: map[string]string{"limit": "must be a whole number from 1 to " + strconv.Itoa(store.MaxCalls)}}
		}
		limit = n
	}
	calls, total, err := s.store.Calls(limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"calls": calls, "total": total})
}
