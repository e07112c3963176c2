package authlimit

import (
	"strconv"
	"testing"
	"time"
)

// TestLimiterWindow: a client is blocked at the tenth failure in a
// window, for the rest of that window only, and the table stays bounded
// however many addresses fail.
func TestLimiterWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New()
	l.now = func() time.Time { return now }
	for i := range Failures {
		if _, blocked := l.Blocked("a"); blocked {
			t.Fatalf("blocked after %d failures; want only after %d", i, Failures)
		}
		l.Failed("a")
	}
	now = now.Add(Window / 2)
	retry, blocked := l.Blocked("a")
	if !blocked || retry != Window/2 {
		t.Fatalf("blocked = %v, retry %v; want blocked for the %v left", blocked, retry, Window/2)
	}
	now = now.Add(Window / 2)
	if _, blocked := l.Blocked("a"); blocked {
		t.Fatal("still blocked after the window ended")
	}
	for i := range 3 * maxClients {
		l.Failed("client-" + strconv.Itoa(i))
	}
	if n := len(l.clients); n > maxClients {
		t.Errorf("%d clients tracked; want at most %d", n, maxClients)
	}
}
