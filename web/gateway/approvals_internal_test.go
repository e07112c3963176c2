package gateway

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// A 2026-07-28 call's approval is held for its client's next call: only
// that client's same call collects it, the first answer wins (the card's
// before the client's), an unanswered one is denied at the deadline and
// written to the call log once its grace is over, and after Close the
// timers do nothing.
func TestHeldApprovals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var changes atomic.Int32
		var mu sync.Mutex // the timers log from their own goroutines
		var expired []store.Call
		a := newApprovals(func() { changes.Add(1) }, func(ap *approval) {
			mu.Lock()
			defer mu.Unlock()
			expired = append(expired, ap.call)
		})
		logged := func() []store.Call {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(expired)
		}
		held := func(args string) *approval {
			ap := &approval{Session: statelessSession, Client: "agent 1", AgentName: "s__t", ArgsHash: args, call: store.Call{AgentName: "s__t", ArgsHash: args}}
			if err := a.hold(ap, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			return ap
		}

		first := held("h1")
		for _, other := range []struct{ client, agentName, args string }{{"other 1", "s__t", "h1"}, {"agent 1", "s__u", "h1"}, {"agent 1", "s__t", "h2"}} {
			caller := &approval{Session: statelessSession, Client: other.client, AgentName: other.agentName, ArgsHash: other.args}
			if _, _, err := a.resume(first.ID, caller, AllowOnce, ""); !errors.Is(err, ErrApprovalGone) {
				t.Errorf("resume by %+v = %v; want ErrApprovalGone", other, err)
			}
		}
		same := &approval{Session: statelessSession, Client: "agent 1", AgentName: "s__t", ArgsHash: "h1"}
		if _, _, err := a.resume(first.ID, &approval{Session: statelessSession, Client: "agent 1", ConnectedAs: "Cursor", AgentName: "s__t", ArgsHash: "h1"}, AllowOnce, ""); !errors.Is(err, ErrApprovalGone) {
			t.Errorf("resume with another connected client's token = %v; want ErrApprovalGone", err)
		}
		if _, done, err := a.resume(first.ID, same, "", ""); err != nil || done {
			t.Fatalf("resume with no answer yet = %v, %v; want still waiting", done, err)
		}
		if err := a.decide(first.ID, AllowOnce, ByDashboard, ""); err != nil {
			t.Fatal(err)
		}
		if n := len(a.list()); n != 0 {
			t.Errorf("%d cards after the card was answered; want none", n)
		}
		ap, done, err := a.resume(first.ID, same, Deny, "denied in the client")
		if err != nil || !done || ap.answer != AllowOnce || ap.by != ByDashboard {
			t.Fatalf("resume after the card's answer = %+v, %v, %v; want the card's Allow once", ap, done, err)
		}
		if _, _, err := a.resume(first.ID, same, AllowOnce, ""); !errors.Is(err, ErrApprovalGone) {
			t.Errorf("collecting an answer twice = %v; want ErrApprovalGone", err)
		}

		unanswered := held("h3")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if len(a.list()) != 0 || unanswered.by != byTimeout {
			t.Errorf("after the deadline: %d cards, decided by %q; want none, by timeout", len(a.list()), unanswered.by)
		}
		if len(logged()) != 0 {
			t.Errorf("logged before the grace was over")
		}
		time.Sleep(heldGrace)
		synctest.Wait()
		if got := logged(); len(got) != 1 || got[0].ArgsHash != "h3" {
			t.Errorf("logged after the grace: %+v; want the unanswered call", got)
		}

		held("h4")
		a.closeAll()
		time.Sleep(10*time.Second + heldGrace)
		synctest.Wait()
		if got := logged(); len(got) != 1 {
			t.Errorf("a timer logged a call after Close: %+v", got)
		}
	})
}
