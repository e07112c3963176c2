package web

import (
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
