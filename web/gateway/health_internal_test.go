package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// Only calls that reached for the server count; a failing streak keeps
// its start; changed hears each flip, once.
func TestCallHealth(t *testing.T) {
	var flips []string
	h := newCallHealth(func(id string) { flips = append(flips, id) })
	t0 := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }

	h.note(store.Call{ServerID: "s", At: at(0), Outcome: "refused"}, nil)
	h.note(store.Call{ServerID: "s", At: at(0), Outcome: "error", Error: "cancelled"}, context.Canceled)
	if _, ok := h.get("s"); ok || len(flips) != 0 {
		t.Fatalf("a refused or cancelled call counted: %v", flips)
	}
	h.note(store.Call{ServerID: "s", At: at(1), Outcome: "error", Error: "first"}, errors.New("first"))
	h.note(store.Call{ServerID: "s", At: at(2), Outcome: "error", Error: "second"}, errors.New("second"))
	got, _ := h.get("s")
	if want := (CallHealth{LastCall: at(2), Failing: true, FailingSince: at(1), Error: "second"}); got != want {
		t.Errorf("after two failures: %+v; want %+v", got, want)
	}
	h.note(store.Call{ServerID: "s", At: at(3), Outcome: "tool_error"}, nil)
	if got, _ := h.get("s"); got.Failing || got.LastCall != at(3) {
		t.Errorf("after a tool's own error (an answer): %+v; want not failing", got)
	}
	if len(flips) != 2 {
		t.Errorf("changed heard %v; want the start and the end of the failures", flips)
	}
}
