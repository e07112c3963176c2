package web_test

import (
	"sync"
	"sync/atomic"
	"testing"
)

// 500 concurrent routed tools/call from one client (all of loopback is
// one) are all answered, right: a connection limit sheds stalled or idle
// connections, never an authenticated request (issue 34, H1). The
// slow-body attack still holds off (TestSlowBodiesCannotHoldTheServer).
func TestConcurrentCallsAllAnswered(t *testing.T) {
	m := newMCPSetup(t)
	c := connectMCP(t, m.base, testMCPToken)
	const calls = 500
	var ok atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan string, calls)
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.call("alpha__read", map[string]any{})
			switch {
			case err != nil:
				errs <- err.Error()
			case res.IsError:
				errs <- text(res)
			default:
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if n := ok.Load(); n != calls {
		var first []string
		for e := range errs {
			if len(first) < 5 {
				first = append(first, e)
			}
		}
		t.Errorf("%d of %d concurrent calls answered; first failures: %q", n, calls, first)
	}
}
