package web

import (
	"time"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// tooOld reports whether stored tools exist that may no longer describe
// their server: the "stale" flag of the list and the API.
func tooOld(f store.Freshness) bool {
	return !f.VerifiedAt.IsZero() && (f.State == store.FreshStale || f.State == store.FreshFailed)
}

func freshnessView(f store.Freshness) views.Freshness {
	v := views.Freshness{State: f.State, VerifiedAt: f.VerifiedAt, Until: f.Until, Since: f.Since, Reason: f.Reason, Hint: f.Hint}
	if f.Error != nil {
		v.ErrorClass, v.ErrorPhase = f.Error.Class, f.Error.Phase
	}
	return v
}

// freshJSON is a server's freshness in API answers.
type freshJSON struct {
	State      string     `json:"state"`
	VerifiedAt *time.Time `json:"verified_at,omitempty"`
	// FreshUntil is when fresh tools turn stale.
	FreshUntil *time.Time `json:"fresh_until,omitempty"`
	// StaleSince is when the tools became stale (state stale), or when
	// the failed verification was (state failed).
	StaleSince *time.Time `json:"stale_since,omitempty"`
	// Reason is ttl or config (state stale).
	Reason string `json:"reason,omitempty"`
	// ListTTLHint says the server's list TTL (2026-07-28's ttlMs, at
	// least a minute) set fresh_until or stale_since, being shorter than
	// the server's fresh-for time.
	ListTTLHint bool `json:"list_ttl_hint,omitempty"`
	// Error is the failed verification's class and phase (state failed).
	Error *errorJSON `json:"error,omitempty"`
}

func freshToJSON(f store.Freshness) freshJSON {
	out := freshJSON{State: f.State, VerifiedAt: timePtr(f.VerifiedAt), FreshUntil: timePtr(f.Until),
		StaleSince: timePtr(f.Since), Reason: f.Reason, ListTTLHint: f.Hint}
	if e := f.Error; e != nil {
		out.Error = &errorJSON{Class: e.Class, Phase: e.Phase, Message: e.Message}
	}
	return out
}

// deltaJSON is what a verification changed in the tools a server offers.
type deltaJSON struct {
	Added        int      `json:"added"`
	Removed      int      `json:"removed"`
	Changed      int      `json:"changed"`
	AddedNames   []string `json:"added_names,omitempty"`
	RemovedNames []string `json:"removed_names,omitempty"`
	ChangedNames []string `json:"changed_names,omitempty"`
	// Text is the short form, e.g. "+2 −1 ~1".
	Text string `json:"text"`
}

func deltaToJSON(d *store.Delta) *deltaJSON {
	if d == nil {
		return nil
	}
	return &deltaJSON{Added: d.Added, Removed: d.Removed, Changed: d.Changed, AddedNames: d.AddedNames,
		RemovedNames: d.RemovedNames, ChangedNames: d.ChangedNames, Text: d.String()}
}
