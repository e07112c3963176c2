package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// CallHealth is what the routed calls say of a server's health. A call
// that could not start, reach or hear the server fails it, from the
// first such failure until a call gets an answer again, whatever its
// last verification said: the verification is a moment, calls are now.
type CallHealth struct {
	// LastCall is when the latest call routed to the server started.
	LastCall time.Time
	// Failing says the latest call failed; FailingSince is when the
	// failures began, Error the latest one.
	Failing      bool
	FailingSince time.Time
	Error        string
}

// callHealth keeps each server's CallHealth, telling changed when a
// server starts or stops failing.
type callHealth struct {
	mu      sync.Mutex
	servers map[string]CallHealth
	changed func(serverID string)
}

func newCallHealth(changed func(string)) *callHealth {
	return &callHealth{servers: map[string]CallHealth{}, changed: changed}
}

// note takes a routed call's record and its error. Calls Switchboard
// refused never reached the server, and one the agent cancelled says
// nothing of it; a tool's own error is an answer, so the server is up.
func (h *callHealth) note(c store.Call, err error) {
	if c.ServerID == "" || (c.Outcome != "ok" && c.Outcome != "tool_error" && c.Outcome != "error") || errors.Is(err, context.Canceled) {
		return
	}
	h.mu.Lock()
	was := h.servers[c.ServerID]
	now := CallHealth{LastCall: c.At}
	if c.Outcome == "error" {
		now.Failing, now.FailingSince, now.Error = true, c.At, c.Error
		if was.Failing {
			now.FailingSince = was.FailingSince
		}
	}
	h.servers[c.ServerID] = now
	h.mu.Unlock()
	if was.Failing != now.Failing && h.changed != nil {
		h.changed(c.ServerID)
	}
}

func (h *callHealth) get(serverID string) (CallHealth, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.servers[serverID]
	return ch, ok
}
