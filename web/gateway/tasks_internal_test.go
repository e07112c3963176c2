package gateway

import (
	"context"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/discovery"
)

// fakeSession is a client session of a given id, for mcp-go's context.
type fakeSession struct{ id string }

func (s fakeSession) SessionID() string                                   { return s.id }
func (s fakeSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (s fakeSession) Initialize()                                         {}
func (s fakeSession) Initialized() bool                                   { return true }

// An agent may cancel its task before the task's call has started
// (mcp-go answers with the task at once): the call then ends as soon as
// it starts. Another session's cancel of it, early or not, ends nothing.
func TestATaskCancelledBeforeItsCallStartsEnds(t *testing.T) {
	life, end := context.WithCancel(context.Background())
	defer end()
	e := &Endpoint{life: life}
	srv := server.NewMCPServer("t", "1")
	start := func(id, session string) context.Context {
		ctx := srv.WithContext(context.Background(), fakeSession{session})
		ctx = context.WithValue(ctx, taskSlotKey{}, &taskSlot{id: id, session: session})
		tctx, done := e.detachTask(ctx)
		t.Cleanup(done)
		return tctx
	}
	cancel := func(id, session string) {
		e.cancelTask(srv.WithContext(context.Background(), fakeSession{session}), nil,
			&mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: id}})
	}

	cancel("t1", "ada")
	if ctx := start("t1", "ada"); ctx.Err() == nil {
		t.Error("a task cancelled before its call started: the call runs on")
	}
	cancel("t2", "bob")
	if ctx := start("t2", "ada"); ctx.Err() != nil {
		t.Error("another session's early cancel ended the task's call")
	}
	ctx := start("t3", "ada")
	cancel("t3", "ada")
	if ctx.Err() == nil {
		t.Error("a task cancelled while its call runs: the call runs on")
	}
}

// A call's progress reaches the agent only going up: Switchboard's own
// steps while the call waits for a person first, then the server's,
// counted on from there, and a task's status steps and the server's own
// progress, each counting on its own, never make it go back.
func TestProgressOnlyIncreases(t *testing.T) {
	var got []discovery.CallProgress
	p := newAgentProgress(func(c discovery.CallProgress) { got = append(got, c) })
	p.waiting("waiting")
	p.waiting("waiting")
	for _, v := range []float64{1, 2, 1, 2, 2.5, 0, 3} {
		p.server(discovery.CallProgress{Progress: v, Total: 3})
	}
	var progress, totals []float64
	for _, c := range got {
		progress, totals = append(progress, c.Progress), append(totals, c.Total)
	}
	if want := []float64{1, 2, 3, 4, 4.5, 5}; !slices.Equal(progress, want) {
		t.Errorf("relayed progress %v; want %v", progress, want)
	}
	if want := []float64{0, 0, 5, 5, 5, 5}; !slices.Equal(totals, want) {
		t.Errorf("relayed totals %v; want %v (the server's, after Switchboard's two steps)", totals, want)
	}
}
