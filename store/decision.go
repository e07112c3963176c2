package store

import (
	"context"
	"time"
)

// Decision is the answer to a call waiting for a person that counts: the
// first one given, on whichever replica. The others are refused, naming
// it.
type Decision struct {
	// ID is the waiting call's (the approval's) id.
	ID     string    `json:"id"`
	By     string    `json:"by"`
	Answer string    `json:"answer"`
	At     time.Time `json:"at"`
}

// Decisions keeps the answers to calls waiting for a person, so that
// exactly one answer wins however many people answer at once. They are
// not changes of the catalog.
type Decisions interface {
	// ClaimDecision records d as the answer to the call d.ID unless one
	// is recorded already, and returns the one that counts: d and true if
	// it won, else the first and false. Decisions made before
	// forgetBefore are forgotten.
	ClaimDecision(ctx context.Context, d Decision, forgetBefore time.Time) (Decision, bool, error)
}
