package store

import (
	"maps"
	"slices"
	"sort"
	"time"
)

// The rules of verification records: how a verification's tools merge
// into what was known about the server's tools, and what its outcome does
// to the server's discovery record and history.

// Merged is what a successful verification's tools change among a
// server's tools (see MergeTools).
type Merged struct {
	// Tools is every tool to write: each one offered, and each one no
	// longer offered that is now missing; with its state and agent name.
	Tools []Tool
	// NewPolicies are the first policies of tools that had none, by tool
	// name; such a tool's definition is also the one its policy approves.
	NewPolicies map[string]PolicySetting
	// Hash is the tools hash (over the sorted pins of the tools offered).
	Hash string
	// Delta is what changed against the tools offered before.
	Delta Delta
	// Changed counts the server's changed tools afterwards.
	Changed int
}

// MergeTools merges offered, the tools of a successful verification of s
// finished at at, into known, everything kept about s's tools by name:
// known tools keep first_seen and their agent name, tools no longer
// offered become missing, a tool whose pin differs from the one its
// policy was approved at becomes changed (unless discovery marked it
// flagged (see ToolState.Flagged), which it stays), and every tool without a policy
// gets its default one (see InitialPolicy). Policies already present are
// never changed. Agent names are given in offered's order (see
// AgentNameFor). known is not modified.
func MergeTools(s Server, known map[string]ToolEntry, offered []Tool, at time.Time) Merged {
	at = at.UTC()
	m := Merged{Tools: make([]Tool, 0, len(offered)), NewPolicies: map[string]PolicySetting{}}
	owners := make(map[string]string, len(known)+len(offered)) // agent name → tool name
	for name, e := range known {
		if e.AgentName != "" {
			owners[e.AgentName] = name
		}
	}
	var added, removed, changed []string
	seen := make(map[string]bool, len(offered))
	pins := make([]string, 0, len(offered))
	for _, t := range offered {
		seen[t.Name] = true
		pins = append(pins, t.Pin)
		t.ServerID = s.ID
		t.FirstSeen, t.LastSeen = at, at
		t.AgentName = ""
		old, ok := known[t.Name]
		switch {
		case !ok:
			added = append(added, t.Name)
		case old.State == ToolMissing:
			added = append(added, t.Name)
		case old.Pin != t.Pin:
			changed = append(changed, t.Name)
		}
		if ok {
			t.FirstSeen, t.AgentName = old.FirstSeen, old.AgentName
		}
		p := old.Policy
		if p.Policy == "" {
			p = PolicySetting{Pin: t.Pin, SetBy: PolicySetByDefault, SetAt: at}
			p.Policy, p.Reason = NewToolPolicy(s, t.Annotations)
			if t.Marked {
				// Approved at no pin: the tool waits, changed, for a
				// person's review (with the second confirmation a flagged
				// change needs), whatever its policy.
				p.Pin = ""
			}
			m.NewPolicies[t.Name] = p
		}
		t.AgentName = AgentNameFor(s.ID, t.Name, t.AgentName, func(name string) string { return owners[name] })
		owners[t.AgentName] = t.Name
		t.State = mergedState(t.State, p, t.Pin)
		if t.State == ToolChanged {
			m.Changed++
		}
		m.Tools = append(m.Tools, t)
	}
	for _, name := range slices.Sorted(maps.Keys(known)) {
		if seen[name] {
			continue
		}
		t := known[name].Tool
		if t.State != ToolMissing {
			t.State = ToolMissing
			m.Tools = append(m.Tools, t)
			removed = append(removed, name)
		}
	}
	for _, l := range []struct {
		names []string
		list  *[]string
		n     *int
	}{{added, &m.Delta.AddedNames, &m.Delta.Added}, {removed, &m.Delta.RemovedNames, &m.Delta.Removed}, {changed, &m.Delta.ChangedNames, &m.Delta.Changed}} {
		sort.Strings(l.names)
		for _, name := range l.names {
			m.Delta.add(l.list, l.n, name)
		}
	}
	sort.Strings(pins)
	m.Hash = hashStrings(pins)
	return m
}

// mergedState is the state of a definition offered again with pin,
// which discovery found in state found, under policy p: flagged as
// discovery found it, whatever its policy; changed if p was approved at
// another pin; else active.
func mergedState(found ToolState, p PolicySetting, pin string) ToolState {
	switch {
	case found.Flagged():
		return found
	case p.Pin != pin:
		return ToolChanged
	}
	return ToolActive
}

// Outdated reports whether s's configuration changed since the
// verification started: its result is then discarded (see Discard).
func (v Verification) Outdated(s Server) bool { return s.ConfigHash() != v.ConfigHash }

// ApplySuccess makes d the discovery record of v, a successful
// verification of server id whose tools merged as m (see MergeTools), and
// returns v's history entry.
func ApplySuccess(d *Discovery, id string, v Verification, m Merged) HistoryEntry {
	entry := HistoryEntry{
		JobID: v.JobID, Trigger: v.Trigger, StartedAt: v.StartedAt, FinishedAt: v.FinishedAt,
		Outcome: StatusSuccess, Delta: &m.Delta, ToolCount: len(v.Tools),
		ServerVersion: v.ServerVersion, PreviousVersion: d.ServerVersion,
	}
	*d = Discovery{
		ServerID:        id,
		Status:          StatusSuccess,
		JobID:           v.JobID,
		LastAttemptAt:   v.StartedAt.UTC(),
		VerifiedAt:      v.FinishedAt.UTC(),
		DurationMS:      v.FinishedAt.Sub(v.StartedAt).Milliseconds(),
		Timings:         v.Timings,
		ProtocolVersion: v.ProtocolVersion,
		ListTTLMS:       v.ListTTLMS,
		CacheScope:      v.CacheScope,
		Isolation:       v.Isolation,
		ServerName:      v.ServerName,
		ServerVersion:   v.ServerVersion,
		Capabilities:    v.Capabilities,
		Instructions:    v.Instructions,
		ConfigHash:      v.ConfigHash,
		ToolsHash:       m.Hash,
		ToolCount:       len(v.Tools),
		Warnings:        v.Warnings,
		Delta:           m.Delta.Counts(),
		Changed:         m.Changed,
	}
	return entry
}

// ApplyFailure changes d as recording f, a verification of s that did
// not succeed, does: the tools and the time of the last success are kept,
// so readers keep serving them, marked stale. It returns f's history
// entry, whose outcome is OutcomeDiscarded if s's configuration changed
// since f's (see Discard).
func ApplyFailure(s Server, d *Discovery, f Failure) HistoryEntry {
	if s.ConfigHash() != f.ConfigHash {
		return Discard(d, f.JobID, f.Trigger, f.StartedAt, f.FinishedAt)
	}
	entry := HistoryEntry{JobID: f.JobID, Trigger: f.Trigger, StartedAt: f.StartedAt, FinishedAt: f.FinishedAt}
	e := f.Error
	if d.FailingSince.IsZero() || d.Status == StatusSuccess || d.Status == StatusNever || d.Status == "" {
		d.FailingSince = f.StartedAt.UTC() // the first failure since the last success
	}
	d.Status = f.Status
	d.JobID = f.JobID
	d.LastAttemptAt = f.StartedAt.UTC()
	d.DurationMS = f.FinishedAt.Sub(f.StartedAt).Milliseconds()
	d.Timings = f.Timings
	d.Error = &e
	brief := VerifyError{Class: e.Class, Phase: e.Phase, Message: e.Message, Suggestion: e.Suggestion}
	entry.Outcome, entry.Error, entry.ToolCount = f.Status, &brief, d.ToolCount
	return entry
}

// Discard records on d that job's result was discarded because the
// server's configuration changed while it ran — unless the record already
// belongs to a later job (that of the new configuration may have finished
// first) — and returns job's history entry, with the reason.
func Discard(d *Discovery, job, trigger string, started, finished time.Time) HistoryEntry {
	reason := &VerifyError{
		Class:      "cancelled",
		Message:    "the server's configuration changed while it was being verified; the result was discarded",
		Suggestion: "Verify again to check the new configuration.",
	}
	entry := HistoryEntry{JobID: job, Trigger: trigger, StartedAt: started, FinishedAt: finished, Outcome: OutcomeDiscarded, Error: reason}
	if d.JobID != "" && d.JobID != job {
		return entry
	}
	d.Status = StatusCancelled
	d.Error = reason
	if d.LastAttemptAt.IsZero() {
		d.LastAttemptAt = finished.UTC()
	}
	return entry
}
