// Package store is Switchboard's domain: the servers a person registered,
// what verifying them found, the policies set on their tools, the calls
// agents made, and the credentials kept for them — the types, the rules
// that change them, and the contract a storage backend fulfils.
//
// The rules (merging a verification's tools into what was known, approving
// a changed tool, the policy that applies, agent names, freshness) are
// plain functions over these types, so that every backend applies the
// same ones: a backend reads the records a rule needs, applies it, and
// writes what it returns, in one transaction. The contract is a handful of
// small interfaces by role (Catalog, Servers, Verifications, Policies,
// Audit, Credentials, Profiles, Sessions, Changes); Store is all of them.
// store/bolt is the embedded backend; store/storetest is the suite every
// backend passes.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Errors returned by every backend.
var (
	ErrNotFound      = errors.New("store: server not found")
	ErrToolNotFound  = errors.New("store: tool not found")
	ErrExists        = errors.New("store: a server with this id already exists")
	ErrConfigChanged = errors.New("store: server configuration changed while verifying; result discarded")
	ErrLaunchChanged = errors.New("store: the server's command or URL changed since it was shown for confirmation")
	// ErrOtherJob: the discovery record is of another verification than
	// the one a late write names.
	ErrOtherJob = errors.New("store: the discovery record is of another verification")
	// ErrPinMismatch is the answer to an approval of a tool version that
	// is not the tool's current one (it changed again since it was shown).
	ErrPinMismatch = errors.New("store: the tool changed again since this version was shown")
	// ErrNotChanged is the answer to an approval of a tool that has no
	// unapproved change.
	ErrNotChanged = errors.New("store: the tool has no unapproved change")
	// ErrAgentNameUnknown is the answer to a lookup of an agent name no
	// tool has.
	ErrAgentNameUnknown = errors.New("store: no tool has this agent name")
	// ErrInUse: the storage is held by another Switchboard.
	ErrInUse = errors.New("store: database is in use")
	// ErrUnavailable: the storage cannot be reached now (a team's etcd
	// cluster out of reach); nothing was changed, unless it is an
	// ErrOutcomeUnknown.
	ErrUnavailable = errors.New("store: unavailable")
	// ErrOutcomeUnknown is a change sent to the store whose commit was
	// not confirmed in time: it may or may not have been made (it is an
	// ErrUnavailable too).
	ErrOutcomeUnknown = fmt.Errorf("%w: the change was sent but its commit was not confirmed in time, so it may or may not have been made", ErrUnavailable)
	// ErrDamaged: the storage is damaged or not Switchboard's.
	ErrDamaged = errors.New("store: database file is damaged or not a switchboard database")
	// ErrArtifactHeld is a verification that ran another artifact than
	// the one recorded under the same launch: the server's tools are held
	// until a person confirms its launch again, with both shown.
	ErrArtifactHeld = errors.New("store: another artifact ran under the server's launch than the one recorded; its launch waits for a person to confirm it again")
	// ErrFenced is a write made under a cluster claim (cluster.WithFence)
	// that this replica no longer holds: it lost the store for longer
	// than its lease, and the claim may be another replica's now. Nothing
	// was written.
	ErrFenced = errors.New("store: this replica's claim on the work ended (it lost etcd for longer than its lease); nothing was written, and another replica may be doing the work")
)

// Catalog reads servers and their tools. Reads are consistent: one call
// sees one committed state.
type Catalog interface {
	Server(ctx context.Context, id string) (Server, error)
	// Summary is the server with its discovery record; ErrNotFound if
	// there is no such server.
	Summary(ctx context.Context, id string) (Summary, error)
	// Summaries is every server, ordered by id; empty, not nil, if none.
	Summaries(ctx context.Context) ([]Summary, error)
	// Tools is the server's tools (missing ones too) with their
	// policies, ordered by name: ErrNotFound if the server does not
	// exist, empty if it was never verified.
	Tools(ctx context.Context, id string) ([]ToolEntry, error)
	// Catalog calls fn with every tool, grouped by server in id order,
	// tools by name, with its server and discovery record, all read at
	// one revision, which it returns. It holds one tool at a time. An
	// error from fn stops the walk and is returned.
	Catalog(ctx context.Context, fn func(*Summary, ToolEntry) error) (revision string, err error)
	// Offer is Catalog as the MCP offer needs it: each tool an
	// OfferedTool, with its agent definition (see AgentDefinition).
	// fn must not keep the Definition or InputSchema it is given once it
	// returns (a store may lend them from its own memory): it copies
	// what it keeps.
	Offer(ctx context.Context, fn func(*Summary, OfferedTool) error) (revision string, err error)
	// ToolVersions is a tool with its policy, and the definition its
	// policy was approved at (nil if none was kept). For a changed tool,
	// the two are the diff a person reviews.
	ToolVersions(ctx context.Context, ref ToolRef) (ToolEntry, *Tool, error)
	// ToolByAgentName is ToolVersions for the tool an agent name names;
	// ErrAgentNameUnknown if none has it.
	ToolByAgentName(ctx context.Context, agentName string) (ToolEntry, *Tool, error)
	// Revision identifies the newest committed state: it changes with
	// every change, and differs between two stores.
	Revision() string
}

// Servers edits the servers a person registered.
type Servers interface {
	// CreateServer stores a new server (ErrExists if the id is taken),
	// its launch not confirmed whatever s says.
	CreateServer(ctx context.Context, s Server) error
	// UpdateServer replaces a server's settings, keeping its creation
	// time and confirmed launch, and its preset unless s has one;
	// ErrNotFound if there is no such server.
	UpdateServer(ctx context.Context, s Server) error
	// DeleteServer removes a server and everything kept about it.
	DeleteServer(ctx context.Context, id string) error
	// ConfirmLaunch records that a person (by) confirmed the server's
	// launch as launchHash, and keeps that launch with who and when
	// (Server.ConfirmedLaunch); ErrLaunchChanged if it is no longer the
	// current one.
	ConfirmLaunch(ctx context.Context, id, launchHash, by string) error
}

// Verifications records verifications and their history.
type Verifications interface {
	// MarkRunning records that job started verifying the server.
	MarkRunning(ctx context.Context, id, jobID string, at time.Time) error
	// RecordSuccess stores a successful verification (see MergeTools);
	// ErrConfigChanged if the server's configuration changed since
	// v.ConfigHash, in which case only the record's status and the
	// history change.
	RecordSuccess(ctx context.Context, id string, v Verification) error
	// RecordFailure stores a verification that did not succeed, keeping
	// the tools of the last success (see ApplyFailure).
	RecordFailure(ctx context.Context, id string, f Failure) error
	// AddLateWarnings adds warnings to job's record (ErrOtherJob if the
	// record is of another job).
	AddLateWarnings(ctx context.Context, id, jobID string, warnings []string) error
	// RecordArtifact records what a verification of a server added from
	// a registry really ran (RegistrySource.Artifact): the first time as
	// it is; another one afterwards as Held, which holds the server
	// (ErrArtifactHeld) until its launch is confirmed again.
	RecordArtifact(ctx context.Context, id, artifact string) error
	// History is the server's newest verifications first, at most limit,
	// and how many are kept.
	History(ctx context.Context, id string, limit int) ([]HistoryEntry, int, error)
	// JobHistory is one verification's history entry.
	JobHistory(ctx context.Context, id, jobID string) (HistoryEntry, error)
	// ShortenAgentNames gives every tool whose agent name is longer than
	// MaxAgentName (one given under an earlier, larger budget) a name
	// within it (AgentNameFor), and reports how many it renamed. Each
	// server it changed is a change with Tools set, so agents hear that
	// their list changed; with nothing to rename, nothing is written.
	ShortenAgentNames(ctx context.Context) (int, error)
}

// Policies records what a person decided about tools.
type Policies interface {
	// SetPolicy records a person's policy for one tool (see
	// ApplyPolicy); ErrNotFound or ErrToolNotFound.
	SetPolicy(ctx context.Context, ref ToolRef, p Policy, by string) (ToolEntry, error)
	// SetPolicies records policies for several tools of one server, all
	// or none (ErrNotFound, ErrToolNotFound naming the tool), and returns
	// the updated entries in changes' order.
	SetPolicies(ctx context.Context, id string, changes []PolicyChange, by string) ([]ToolEntry, error)
	// ApproveTool approves the current definition of a changed tool at
	// the pin the person was shown (see Approve).
	ApproveTool(ctx context.Context, ref ToolRef, pin, by string) (ToolEntry, error)
	// ApproveChanges approves several changed tools of one server (tool
	// name → pin), all or none.
	ApproveChanges(ctx context.Context, id string, pins map[string]string, by string) ([]ToolEntry, error)
}

// Audit keeps the calls agents made through Switchboard.
type Audit interface {
	// AppendCalls records calls in order, numbering them; the oldest are
	// dropped beyond MaxCalls.
	AppendCalls(ctx context.Context, calls []Call) error
	// Calls is the newest calls first, at most limit, and how many are
	// kept.
	Calls(ctx context.Context, limit int) ([]Call, int, error)
}

// Credentials keeps the secrets Switchboard holds for others: the MCP
// endpoint's token, the connected clients' tokens and the OAuth grants of
// remote servers.
type Credentials interface {
	// MCPToken is the MCP endpoint's bearer token, created the first
	// time.
	MCPToken(ctx context.Context) (string, error)
	// RotateMCPToken replaces it with a new random one.
	RotateMCPToken(ctx context.Context) (string, error)
	// SaveGrant keeps a server's grant from g.Issuer, replacing the one
	// from that issuer; ErrNotFound if there is no such server.
	SaveGrant(ctx context.Context, id string, g Grant) error
	// Grant is the server's grant from issuer (ok false if none).
	Grant(ctx context.Context, id, issuer string) (g Grant, ok bool, err error)
	// LatestGrant is the server's most recently obtained grant.
	LatestGrant(ctx context.Context, id string) (g Grant, ok bool, err error)
	// DeleteGrants forgets every grant of the server.
	DeleteGrants(ctx context.Context, id string) error
	// AddClientToken keeps a connected client's token (its hash);
	// ErrProfileNotFound if it belongs to a profile there is none of.
	AddClientToken(ctx context.Context, ct ClientToken) error
	// ClientTokens is the connected clients' tokens, oldest first.
	ClientTokens(ctx context.Context) ([]ClientToken, error)
	// RevokeClientToken forgets one; ErrNotFound if there is none by id.
	RevokeClientToken(ctx context.Context, id string) error
	// UpdateClientToken changes the client token with the id by fn, in
	// one transaction (fn may run more than once, so it must only change
	// its argument), and returns it as saved: ErrNotFound if there is
	// none by id, fn's error if it fails. Its ID, Hash, Name, Profile and
	// CreatedAt stay as they were, whatever fn does.
	UpdateClientToken(ctx context.Context, id string, fn func(*ClientToken) error) (ClientToken, error)
}

// Profiles keeps the profiles agents' tokens belong to (see Profile).
// Their changes move the revision, and subscribers hear of them as a
// Change with Profile set.
type Profiles interface {
	// Profile is the profile with the id; the built-in Default for
	// DefaultProfile; ErrProfileNotFound if there is none.
	Profile(ctx context.Context, id string) (Profile, error)
	// Profiles is every profile, Default first, then the others by id.
	Profiles(ctx context.Context) ([]Profile, error)
	// CreateProfile stores a new profile (ErrProfileExists if the id is
	// taken, ErrProfileBuiltIn for DefaultProfile); its UpdatedAt is its
	// CreatedAt.
	CreateProfile(ctx context.Context, p Profile) error
	// UpdateProfile replaces a profile, keeping its CreatedAt;
	// ErrProfileNotFound, or ErrProfileBuiltIn.
	UpdateProfile(ctx context.Context, p Profile) error
	// DeleteProfile removes a profile no connected client's token
	// belongs to: ErrProfileInUse if one does, ErrProfileBuiltIn for the
	// default, ErrProfileNotFound if there is none.
	DeleteProfile(ctx context.Context, id string) error
}

// Sessions keeps the dashboard's browser sessions by the hash of their
// secret (see BrowserSession). They are not changes of the catalog:
// they do not move the revision, and subscribers do not hear of them.
type Sessions interface {
	// CreateSession keeps a new session, and forgets every session that
	// has expired by s.CreatedAt.
	CreateSession(ctx context.Context, s BrowserSession) error
	// Session is the session kept under hash, expired or not;
	// ErrSessionNotFound if there is none.
	Session(ctx context.Context, hash string) (BrowserSession, error)
	// TouchSession records that the session was used at at;
	// ErrSessionNotFound if there is none.
	TouchSession(ctx context.Context, hash string, at time.Time) error
	// DeleteSession forgets one session; forgetting one that is not
	// kept is not an error.
	DeleteSession(ctx context.Context, hash string) error
	// DeleteSessions forgets every session ("log out everywhere") and
	// returns how many there were.
	DeleteSessions(ctx context.Context) (int, error)
}

// Changes announces committed changes.
type Changes interface {
	// Subscribe calls fn with every change after it committed, in
	// commit order, on the goroutine that made it: fn must not block or
	// write to the store. cancel stops the calls; it returns once no call
	// is running.
	Subscribe(fn func(Change)) (cancel func())
}

// Store is the whole contract of a backend.
type Store interface {
	Catalog
	Servers
	Verifications
	Policies
	Listings
	Audit
	Credentials
	Profiles
	Sessions
	MCPSessions
	People
	Decisions
	RegistryCopies
	Changes
	Close() error
}

// Backuper is a backend that can write a consistent copy of itself, which
// can be opened as it is.
type Backuper interface {
	Backup(ctx context.Context, w io.Writer) (int64, error)
}

// Change tells subscribers what a committed transaction touched.
type Change struct {
	ServerID string
	// Revision is the store's revision once the change committed (see
	// Catalog.Revision); changes of one transaction share it.
	Revision string
	// Created is set when the server is new.
	Created bool
	// Deleted is set when the server is gone.
	Deleted bool
	// Tools is set when the server's tools or policies changed.
	Tools bool
	// History is set when a verification was added to its history.
	History bool
	// Profile names the profile a change of profiles touched (ServerID
	// is then empty).
	Profile string
}
