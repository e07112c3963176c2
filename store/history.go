package store

import (
	"strconv"
	"strings"
	"time"
)

// HistoryKeep is how many verifications a server's history keeps; older
// entries are dropped as new ones arrive (History says how many were).
const HistoryKeep = 200

// DeltaNames bounds the tool names a Delta lists per kind; the counts are
// always complete.
const DeltaNames = 20

// Delta is what a successful verification changed in the set of tools a
// server offers: tools added (new, or back after missing), removed (now
// missing) and changed (offered both times, with a different pin). The
// counts are complete; the name lists hold the first few, by name.
type Delta struct {
	Added        int      `json:"added"`
	Removed      int      `json:"removed"`
	Changed      int      `json:"changed"`
	AddedNames   []string `json:"added_names,omitempty"`
	RemovedNames []string `json:"removed_names,omitempty"`
	ChangedNames []string `json:"changed_names,omitempty"`
}

// Counts is the delta without its names, as the discovery record keeps
// it: the record is read for every list and live update, and the history
// has the names.
func (d Delta) Counts() *Delta {
	return &Delta{Added: d.Added, Removed: d.Removed, Changed: d.Changed}
}

// Empty reports whether nothing changed.
func (d Delta) Empty() bool { return d.Added == 0 && d.Removed == 0 && d.Changed == 0 }

// String is the short form, e.g. "+2 −1 ~1", or "no changes".
func (d Delta) String() string {
	if d.Empty() {
		return "no changes"
	}
	var parts []string
	if d.Added > 0 {
		parts = append(parts, "+"+strconv.Itoa(d.Added))
	}
	if d.Removed > 0 {
		parts = append(parts, "−"+strconv.Itoa(d.Removed))
	}
	if d.Changed > 0 {
		parts = append(parts, "~"+strconv.Itoa(d.Changed))
	}
	return strings.Join(parts, " ")
}

func (d *Delta) add(list *[]string, n *int, name string) {
	*n++
	if len(*list) < DeltaNames {
		*list = append(*list, name)
	}
}

// Verification outcomes in the history besides the job statuses
// (StatusSuccess, StatusFailed, StatusTimeout, StatusCancelled).
const (
	// OutcomeDiscarded: the server's configuration changed while it was
	// verified, so the result was not used.
	OutcomeDiscarded Status = "discarded"
)

// HistoryEntry is one verification of a server, as its history keeps it.
type HistoryEntry struct {
	Seq        uint64    `json:"seq"`
	JobID      string    `json:"job_id"`
	Trigger    string    `json:"trigger,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	DurationMS int64     `json:"duration_ms"`
	// Outcome is StatusSuccess, StatusFailed, StatusTimeout,
	// StatusCancelled or OutcomeDiscarded.
	Outcome Status       `json:"outcome"`
	Error   *VerifyError `json:"error,omitempty"`
	// Delta, ToolCount and the versions are set on success.
	Delta           *Delta `json:"delta,omitempty"`
	ToolCount       int    `json:"tool_count"`
	ServerVersion   string `json:"server_version,omitempty"`
	PreviousVersion string `json:"previous_version,omitempty"`
}
