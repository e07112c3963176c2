// Package apijson holds the shapes of the JSON API's answers
// (docs/architecture.md "Web, API and CLI") and their conversions from the domain:
// jobs, batches, freshness, deltas, errors and launches; and the refusals
// (Refusal) and strict request decoding the handlers share. Nothing in it
// reads or writes the store.
package apijson

import (
	"cmp"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/verify"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/gateway"
	"github.com/switchboard-dev/switchboard/web/internal/batch"
)

// Fresh is a server's freshness in API answers.
type Fresh struct {
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
	Error *Error `json:"error,omitempty"`
}

// FreshOf is f as API answers give it.
func FreshOf(f store.Freshness) Fresh {
	out := Fresh{State: f.State, VerifiedAt: TimePtr(f.VerifiedAt), FreshUntil: TimePtr(f.Until),
		StaleSince: TimePtr(f.Since), Reason: f.Reason, ListTTLHint: f.Hint}
	if e := f.Error; e != nil {
		out.Error = &Error{Class: e.Class, Phase: e.Phase, Message: e.Message}
	}
	return out
}

// Delta is what a verification changed in the tools a server offers.
type Delta struct {
	Added        int      `json:"added"`
	Removed      int      `json:"removed"`
	Changed      int      `json:"changed"`
	AddedNames   []string `json:"added_names,omitempty"`
	RemovedNames []string `json:"removed_names,omitempty"`
	ChangedNames []string `json:"changed_names,omitempty"`
	// Text is the short form, e.g. "+2 −1 ~1".
	Text string `json:"text"`
}

// DeltaOf is d as API answers give it (nil for none).
func DeltaOf(d *store.Delta) *Delta {
	if d == nil {
		return nil
	}
	return &Delta{Added: d.Added, Removed: d.Removed, Changed: d.Changed, AddedNames: d.AddedNames,
		RemovedNames: d.RemovedNames, ChangedNames: d.ChangedNames, Text: d.String()}
}

// Error is a verification's failure as API answers give it.
type Error struct {
	Class      string            `json:"class"`
	Phase      string            `json:"phase,omitempty"`
	Message    string            `json:"message"`
	Suggestion string            `json:"suggestion,omitempty"`
	StderrTail string            `json:"stderr_tail,omitempty"`
	SignIn     *store.SignInNeed `json:"sign_in,omitempty"`
	Lasting    bool              `json:"lasting,omitempty"` // its server's tools are not offered until it verifies
	// Refused is what the server's walls refused it (learn mode).
	Refused *store.Refused `json:"refused,omitempty"`
}

// TimePtr is t, or nil for the zero time (left out of answers).
func TimePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Job is a verification job (GET /api/v1/jobs/:id).
type Job struct {
	ID         string     `json:"id"`
	ServerID   string     `json:"server_id"`
	Status     string     `json:"status"`
	Phase      string     `json:"phase"`
	Page       int        `json:"page,omitempty"`
	QueuedAt   time.Time  `json:"queued_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Timings    []Timing   `json:"timings"`
	ToolCount  int        `json:"tool_count"`
	Error      *Error     `json:"error"`
	Trigger    string     `json:"trigger,omitempty"`
	// Delta is what the job's verification changed (once it succeeded).
	Delta *Delta `json:"delta,omitempty"`
}

// Timing is how long one phase of a job took.
type Timing struct {
	Phase string `json:"phase"`
	MS    int64  `json:"ms"`
}

// Timings are a job's phase timings.
func Timings(ts []discovery.Timing) []Timing {
	out := make([]Timing, 0, len(ts))
	for _, t := range ts {
		out = append(out, Timing{Phase: t.Phase, MS: t.Duration.Milliseconds()})
	}
	return out
}

// JobOf is j as API answers give it.
func JobOf(j discovery.Job) Job {
	out := Job{
		ID: j.ID, ServerID: j.ServerID, Status: j.Status, Phase: j.Phase, Page: j.Page,
		QueuedAt: j.QueuedAt, StartedAt: TimePtr(j.StartedAt), FinishedAt: TimePtr(j.FinishedAt),
		Timings: Timings(j.Timings), ToolCount: j.ToolCount, Trigger: j.Trigger,
	}
	if e := j.Error; e != nil {
		out.Error = &Error{Class: e.Class, Phase: e.Phase, Message: e.Message, Suggestion: e.Suggestion, StderrTail: e.StderrTail}
	}
	return out
}

// Watch is a server's watch as the API shows it.
type Watch struct {
	Connected bool       `json:"connected"`
	Since     *time.Time `json:"since,omitempty"`
	LastError string     `json:"last_error,omitempty"`
}

// WatchOf is w as API answers give it (nil for none).
func WatchOf(w *verify.WatchState) *Watch {
	if w == nil {
		return nil
	}
	return &Watch{Connected: w.Connected, Since: TimePtr(w.Since), LastError: w.LastError}
}

// Batch is a "Verify all" (GET /api/v1/batches/:id).
type Batch struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	Total     int       `json:"total"`
	Queued    int       `json:"queued"`
	Running   int       `json:"running"`
	Succeeded int       `json:"succeeded"`
	Failed    int       `json:"failed"`    // failed or timed out
	Cancelled int       `json:"cancelled"` // verifications cancelled
	// Stopped says a person cancelled the batch.
	Stopped bool       `json:"stopped"`
	Done    bool       `json:"done"`
	Jobs    []BatchJob `json:"jobs"`
	Skipped []Skipped  `json:"skipped"`
}

// BatchJob is one job of a batch.
type BatchJob struct {
	ServerID string `json:"server_id"`
	JobID    string `json:"job_id"`
	Status   string `json:"status"`
}

// Skipped is a server a batch left out, with the reason.
type Skipped struct {
	ServerID string `json:"server_id"`
	Reason   string `json:"reason"`
}

// BatchOf is b as API answers give it.
func BatchOf(b batch.Batch) Batch {
	v := b.View()
	out := Batch{ID: b.ID, CreatedAt: b.Created, Total: v.Total, Queued: v.Queued, Running: v.Running,
		Succeeded: v.Succeeded, Failed: v.Failed, Cancelled: v.Cancelled, Stopped: b.Cancelled, Done: v.Finished(),
		Jobs: []BatchJob{}, Skipped: []Skipped{}}
	for _, j := range b.Jobs {
		out.Jobs = append(out.Jobs, BatchJob(j))
	}
	for _, sk := range b.Skipped {
		out.Skipped = append(out.Skipped, Skipped(sk))
	}
	return out
}

// Launch is a launch waiting for confirmation, as the 409 of a Verify
// and GET /api/v1/launches give it.
type Launch struct {
	ServerID    string   `json:"server_id"`
	Transport   string   `json:"transport"`
	CommandLine string   `json:"command_line,omitempty"`
	Command     string   `json:"command,omitempty"`
	Args        []string `json:"args,omitempty"`
	Cwd         string   `json:"cwd,omitempty"`
	EnvKeys     []string `json:"env_keys,omitempty"`
	URL         string   `json:"url,omitempty"`
	HeaderKeys  []string `json:"header_keys,omitempty"`
	Hash        string   `json:"launch_hash"`
	// Changes are the differences from the launch last confirmed, if
	// one was and Switchboard kept it (see views.LaunchChange).
	Changes []LaunchChange `json:"changes,omitempty"`
}

// LaunchChange is one difference from the launch last confirmed; old
// and new are never a secret value.
type LaunchChange struct {
	What   string `json:"what"`
	Name   string `json:"name,omitempty"`
	Change string `json:"change"`
	Old    string `json:"old,omitempty"`
	New    string `json:"new,omitempty"`
}

// LaunchOf is l as API answers give it.
func LaunchOf(l views.Launch) Launch {
	out := Launch{
		ServerID: l.ServerID, Transport: l.Transport, CommandLine: l.CommandLine, Command: l.Command, Args: l.Args,
		Cwd: l.Cwd, EnvKeys: l.EnvKeys, URL: l.URL, HeaderKeys: l.HeaderKeys, Hash: l.Hash,
	}
	for _, c := range l.Changes {
		out.Changes = append(out.Changes, LaunchChange(c))
	}
	return out
}

// Client is a connected client (GET /api/v1/clients): its token's
// fingerprint, never the token, and whether an agent uses it (since
// Switchboard started: see gateway.ClientUse).
type Client struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by,omitempty"`
	// Profile is the id of the profile whose view the client is offered.
	Profile string `json:"profile"`
	// Fingerprint is the start of the token's SHA-256, by which a program
	// holding the token finds its client (see `switchboard disconnect`).
	Fingerprint string `json:"fingerprint"`
	// State is connected (now), seen or never.
	State      string    `json:"state"`
	LastSeenAt time.Time `json:"last_seen_at,omitzero"`
	// ProtocolVersion and ClientInfo are what the agent declared with the
	// token last (clientInfo as "name version", self-declared).
	ProtocolVersion string `json:"protocol_version,omitempty"`
	ClientInfo      string `json:"client_info,omitempty"`
	Sessions        int    `json:"sessions"`
	// Approvals is where its calls to ask tools may be answered as set on
	// the token: "client", "dashboard" or "" (its profile decides);
	// ApprovalsInClient is the outcome: whether its person is asked in
	// the agent's client as well as on the dashboard.
	Approvals         string `json:"approvals"`
	ApprovalsInClient bool   `json:"approvals_in_client"`
	// Allowed are the tools its person always allows, answering in the
	// client: for this token only, at the pin they had.
	Allowed []store.ClientAllowance `json:"allowed"`
}

// ClientOf is ct, of profile p, used as u says, as API answers give it.
func ClientOf(ct store.ClientToken, p store.Profile, u gateway.ClientUse) Client {
	return Client{ID: ct.ID, Name: ct.Name, CreatedAt: ct.CreatedAt, CreatedBy: ct.CreatedBy, Profile: cmp.Or(ct.Profile, store.DefaultProfile), Fingerprint: ct.Hash[:12], State: u.State,
		LastSeenAt: u.LastSeen, ProtocolVersion: u.Protocol, ClientInfo: u.Client, Sessions: u.Sessions,
		Approvals: ct.Approvals, ApprovalsInClient: store.InClientApprovals(ct, p), Allowed: append([]store.ClientAllowance{}, ct.Allowed...)}
}

// Upstream is a server running for calls (GET /api/v1/upstreams).
type Upstream struct {
	ServerID string    `json:"server_id"`
	Started  time.Time `json:"started_at,omitzero"`
	LastUsed time.Time `json:"last_used_at"`
	Calls    int       `json:"calls"`
	InFlight int       `json:"in_flight"`
	Opening  bool      `json:"opening"`
	// Isolation says how the server's process is isolated (stdio).
	Isolation string `json:"isolation,omitempty"`
}

// UpstreamOf is r as API answers give it.
func UpstreamOf(r discovery.Running) Upstream {
	return Upstream{ServerID: r.ServerID, Started: r.Started, LastUsed: r.LastUsed,
		Calls: r.Calls, InFlight: r.InFlight, Opening: r.Opening, Isolation: r.Isolation}
}
