package store

import (
	"cmp"
	"time"
)

// Freshness states of a server's stored tools.
const (
	// FreshNever: no verification of the server has succeeded yet.
	FreshNever = "never"
	// FreshFresh: the last verification succeeded, for the server's
	// current configuration, less than its TTL ago.
	FreshFresh = "fresh"
	// FreshStale: the tools come from a success that is older than the
	// TTL, or from a configuration the server no longer has.
	FreshStale = "stale"
	// FreshFailed: the latest verification did not succeed; any tools
	// come from an earlier success.
	FreshFailed = "failed"
	// FreshSignIn: the latest verification found the server wants a
	// signed-in client; any tools come from an earlier success.
	FreshSignIn = "sign_in_required"
)

// Why a server's tools are stale.
const (
	StaleTTL    = "ttl"    // older than the TTL
	StaleConfig = "config" // the configuration changed since
)

// Freshness says how far a server's stored tools can be trusted to
// describe it now. Reads always serve the stored tools; Freshness is what
// they say alongside.
type Freshness struct {
	State string
	// VerifiedAt is the time of the last success (zero if none).
	VerifiedAt time.Time
	// Until is when fresh tools turn stale (State fresh only).
	Until time.Time
	// Since is when the tools became stale, or when the failed attempt
	// was made (State stale, failed or sign_in_required).
	Since time.Time
	// Reason is StaleTTL or StaleConfig (State stale only).
	Reason string
	// Hint says the server's own list TTL (ttlMs) set Until or Since,
	// being shorter than the server's TTL here.
	Hint bool
	// Error is the failed attempt's error (State failed and
	// sign_in_required only).
	Error *VerifyError
}

// Freshness computes the summary's freshness at now, with def as the TTL
// of servers that set none. A verification in flight changes nothing:
// until it ends, the tools are as fresh as they were.
func (sum Summary) Freshness(def time.Duration, now time.Time) Freshness {
	d := sum.Discovery
	f := Freshness{VerifiedAt: d.VerifiedAt}
	switch {
	case d.Status == StatusSignIn:
		f.State, f.Since, f.Error = FreshSignIn, d.LastAttemptAt, d.Error
	case d.Status == StatusFailed || d.Status == StatusTimeout || d.Status == StatusCancelled || d.Status == StatusInterrupted:
		f.State, f.Since, f.Error = FreshFailed, cmp.Or(d.FailingSince, d.LastAttemptAt), d.Error
	case d.VerifiedAt.IsZero():
		f.State = FreshNever
	case d.ConfigHash != sum.Server.currentConfigHash():
		f.State, f.Reason, f.Since = FreshStale, StaleConfig, sum.Server.UpdatedAt
	default:
		ttl, hint := sum.TTL(def)
		f.Hint = hint
		until := d.VerifiedAt.Add(ttl)
		if now.Before(until) {
			f.State, f.Until = FreshFresh, until
		} else {
			f.State, f.Reason, f.Since = FreshStale, StaleTTL, until
		}
	}
	return f
}

// MinListTTL is the least time a server's list TTL (ttlMs) keeps its
// tools fresh: a server that says 0 ("do not cache"), as every mcp-go
// server does unless told otherwise, must not make Switchboard re-verify
// it (and add a history entry) more often than the default TTL would.
const MinListTTL = 5 * time.Minute

// TTL is how long the summary's last successful verification counts as
// fresh: the server's TTL (def if it sets none), or the TTL its tool list
// came with (2026-07-28's ttlMs, at least MinListTTL) where that is
// shorter; hint reports the latter. A list TTL never makes tools fresh
// for longer than the server's TTL here.
func (sum Summary) TTL(def time.Duration) (ttl time.Duration, hint bool) {
	ttl = sum.Server.TTL(def)
	if ms := sum.Discovery.ListTTLMS; ms != nil {
		capped := min(max(*ms, 0), int64(ttl/time.Millisecond)) // no overflow
		if list := max(time.Duration(capped)*time.Millisecond, MinListTTL); list < ttl {
			return list, true
		}
	}
	return ttl, false
}
