package views

import (
	"testing"
	"time"
)

// One chip per server, never two states side by side; a server re-checked
// only on Verify is not stale for the time passing.
func TestHealth(t *testing.T) {
	at := time.Date(2026, 11, 26, 14, 2, 0, 0, time.UTC)
	ok := ServerItem{Enabled: true, Status: "success", ToolCount: 13, VerifiedAt: at, Fresh: Freshness{State: "fresh"}}
	with := func(f func(*ServerItem)) ServerItem { s := ok; f(&s); return s }
	for _, c := range []struct {
		name        string
		s           ServerItem
		state, text string
	}{
		{"verified and fresh", ok, "ok", "OK · 13 tools"},
		{"stale by the clock, auto-refresh off", with(func(s *ServerItem) { s.Fresh = Freshness{State: "stale", Reason: "ttl"} }), "ok", "OK · 13 tools"},
		{"stale by the clock, auto-refresh on", with(func(s *ServerItem) { s.AutoRefresh, s.Fresh = true, Freshness{State: "stale", Reason: "ttl"} }), "stale", "Stale"},
		{"configuration changed", with(func(s *ServerItem) { s.Fresh = Freshness{State: "stale", Reason: "config"} }), "stale", "Stale: its configuration changed"},
		{"its session dropped", with(func(s *ServerItem) { s.Watch = &WatchView{Since: at, LastError: "connection refused"} }), "unreachable", "Unreachable since 14:02 UTC"},
		{"its calls fail since it was verified", with(func(s *ServerItem) {
			s.Calls = &CallsHealth{LastCall: at.Add(time.Hour), Failing: true, FailingSince: at.Add(time.Minute), Error: "exited"}
		}), "unreachable", "Calls failing since 14:03 UTC"},
		{"its calls failed, then it verified", with(func(s *ServerItem) {
			s.Calls = &CallsHealth{LastCall: at.Add(-time.Minute), Failing: true, FailingSince: at.Add(-time.Hour), Error: "exited"}
		}), "ok", "OK · 13 tools"},
		{"its calls answer", with(func(s *ServerItem) { s.Calls = &CallsHealth{LastCall: at.Add(time.Hour)} }), "ok", "OK · 13 tools"},
		{"its session connected", with(func(s *ServerItem) { s.Watch = &WatchView{Connected: true, Since: at} }), "ok", "OK · 13 tools"},
		{"one tool", with(func(s *ServerItem) { s.ToolCount = 1 }), "ok", "OK · 1 tool"},
		// Changes waiting, and a launch waiting, are part of the state.
		{"changed tools to review", with(func(s *ServerItem) { s.Changed = 2 }), "review", "Changes to review · 2 tools withheld"},
		{"its launch changed", with(func(s *ServerItem) { s.NeedsConfirm, s.Changed = true, 2 }), "withdrawn", "Withdrawn: confirm the changed launch"},
		{"a timeout after a success", with(func(s *ServerItem) {
			s.Status, s.Error, s.Fresh = "timeout", &ErrorView{Class: "timeout"}, Freshness{State: "failed", Since: at}
		}), "unreachable", "Unreachable since 14:02 UTC"},
		{"command not found", ServerItem{Enabled: true, Status: "failed", Error: &ErrorView{Class: "not_found"}}, "failed", "Failed: command not found"},
		{"sign-in", with(func(s *ServerItem) { s.Status = "sign_in_required" }), "sign_in", "Sign-in required"},
		{"never verified", ServerItem{Enabled: true, Status: "never"}, "never", "Not verified"},
		{"disabled", with(func(s *ServerItem) { s.Enabled = false }), "disabled", "Disabled"},
		{"verifying", with(func(s *ServerItem) { s.RunningSince, s.Phase = at, "listing" }), "running", "listing"},
	} {
		if state, text := c.s.Health(); state != c.state || text != c.text {
			t.Errorf("%s: %s %q; want %s %q", c.name, state, text, c.state, c.text)
		}
	}
}
