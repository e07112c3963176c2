package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Transports a server can use.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportSSE   = "sse"
)

// Policy is what happens when an agent calls a tool: it runs, a person
// is asked first, or it is refused.
type Policy string

// Policies a person can set on a tool.
const (
	PolicyAllow Policy = "allow"
	PolicyAsk   Policy = "ask"
	PolicyDeny  Policy = "deny"
)

// Valid reports whether p is one of the three policies.
func (p Policy) Valid() bool { return p == PolicyAllow || p == PolicyAsk || p == PolicyDeny }

// Status is where a server's verifications stand.
type Status string

// Discovery statuses. Running is the only non-terminal one that is stored;
// queued and the individual phases live only in the job runner and in events.
const (
	StatusNever       Status = "never"
	StatusRunning     Status = "running"
	StatusSuccess     Status = "success"
	StatusFailed      Status = "failed"
	StatusTimeout     Status = "timeout"
	StatusCancelled   Status = "cancelled"
	StatusInterrupted Status = "interrupted"
	// StatusSignIn: the server wants a signed-in client (OAuth); not a
	// failure of the server. VerifyError.SignIn says where to sign in.
	StatusSignIn Status = "sign_in_required"
)

// ToolState is where a tool stands against what was approved.
type ToolState string

// Tool states. Oversized, invalid and unsupported tools come so from discovery (see
// Tool.Problems); the store decides the others. Only an active tool is
// offered to agents with its policy; the others are effectively denied.
const (
	ToolActive    ToolState = "active"
	ToolChanged   ToolState = "changed"
	ToolMissing   ToolState = "missing"
	ToolOversized ToolState = "oversized"
	ToolInvalid   ToolState = "invalid"
	// ToolUnsupported needs what Switchboard does not relay (MCP tasks).
	ToolUnsupported ToolState = "unsupported"
)

// Flagged reports whether discovery found the tool unfit to offer as the
// server sent it (oversized, invalid, unsupported): it is kept for
// review, and denied whatever its policy.
func (s ToolState) Flagged() bool {
	return s == ToolOversized || s == ToolInvalid || s == ToolUnsupported
}

// Triggers: what asked for a verification, as jobs and the history name
// it (Verification.Trigger, Failure.Trigger, HistoryEntry.Trigger).
const (
	TriggerManual      = "manual"       // a Verify button or the API
	TriggerVerifyAll   = "verify-all"   // "Verify all"
	TriggerEdit        = "edit"         // an edit changed the configuration hash
	TriggerTTL         = "ttl"          // the tools went stale, auto-refresh on
	TriggerVersion     = "version"      // the server reported a new serverInfo.version
	TriggerListChanged = "list-changed" // notifications/tools/list_changed
	TriggerStartup     = "startup"      // interrupted, or never verified, at start-up
	TriggerSignIn      = "sign-in"      // a sign-in completed
	TriggerTakeover    = "takeover"     // the replica verifying it stopped before it finished
	// TriggerPinMismatch: a routed call found the server offering
	// another definition of the tool than the one approved.
	TriggerPinMismatch = "pin-mismatch"
)

// Server is one registered MCP server: how to reach it and how to treat
// what it offers. Env and Headers values are secrets; they are stored here
// and masked by every reader that shows them to a person or a program.
type Server struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Transport string            `json:"transport"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	URL       string            `json:"url,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	TimeoutMS int               `json:"timeout_ms,omitempty"`
	// MemoryMB caps a stdio server's data memory (RLIMIT_DATA); 0 is no
	// cap.
	MemoryMB      int    `json:"memory_mb,omitempty"`
	DefaultPolicy Policy `json:"default_policy"`
	// Preset, when a person chose one, decides the policy of the
	// server's new tools instead of DefaultPolicy (see PresetPolicy).
	Preset    Preset    `json:"preset,omitempty"`
	Enabled   bool      `json:"enabled"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// UpdatedBy is who last added or changed the server (a person's
	// email, "dashboard" or "api"); no part of ConfigHash.
	UpdatedBy string `json:"updated_by,omitempty"`
	// LaunchConfirmed is the LaunchHash a person last confirmed (see
	// Servers.ConfirmLaunch). The store keeps it across updates; callers never
	// set it.
	LaunchConfirmed string `json:"launch_confirmed,omitempty"`
	// ConfirmedLaunch is what the person confirmed with LaunchConfirmed
	// (see LaunchOf), kept to show what changed when the launch must be
	// confirmed again; nil if none was, or if it was confirmed before
	// Switchboard kept it. The store sets and keeps it like
	// LaunchConfirmed.
	ConfirmedLaunch *Launch `json:"confirmed_launch,omitempty"`
	// TTLSeconds is how long a successful verification counts as fresh;
	// 0 means the global default.
	TTLSeconds int `json:"ttl_seconds,omitempty"`
	// AutoRefresh says whether Switchboard re-verifies the server by
	// itself when its tools go stale (and holds a session to hear its
	// list changes); nil means the default, see AutoRefreshOn.
	AutoRefresh *bool `json:"auto_refresh,omitempty"`
	// SavedConfigHash is ConfigHash as the store last wrote the server
	// (it sets it), so that readers of many servers need not hash each.
	SavedConfigHash string `json:"config_hash,omitempty"`
	// OAuth is the client a person registered with the server's
	// authorization server, and the scopes to ask for; nil for none (a
	// sign-in then registers a client by itself where it can). It does
	// not change what the server is (no part of ConfigHash).
	OAuth *OAuthClient `json:"oauth,omitempty"`
	// RecordArgs says whether the call log keeps the arguments of the
	// server's calls (redacted and capped, see Call.Arguments), not just
	// their hash. Off unless a person turns it on; no part of ConfigHash.
	RecordArgs bool `json:"record_arguments,omitempty"`
	// Asks is what the server may ask, during a call, of the agent that
	// made it (sampling, elicitation, roots): allow by default.
	Asks ServerAsks `json:"asks,omitzero"`
	// Sandbox is a stdio server's permission profile: what it may read,
	// write and reach, and its limits. Nil is the default profile for its
	// command. It is part of LaunchHash (a person confirms it with the
	// command), not of ConfigHash.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	// From is the registry entry the server was added from (nil: added
	// by hand); an edit keeps it.
	From *RegistrySource `json:"from_registry,omitempty"`
}

// RegistrySource is the MCP Registry entry a server was added from: the
// registry, the server's name there, the exact version, and the package
// (its registry type and identifier) or remote its launch runs.
type RegistrySource struct {
	Registry string `json:"registry"`
	Name     string `json:"name"`
	Version  string `json:"version"`
	Kind     string `json:"kind"` // npm, pypi, oci, remote
	Package  string `json:"package,omitempty"`
	// Choice is the index of the package (or, for Kind remote, of the
	// remote) that runs; Arguments the arguments and URL variables given
	// (not secret: they are in the command line or URL anyway). An
	// update runs the same choice of the new version with them and the
	// server's environment and headers.
	Choice    int               `json:"choice,omitempty"`
	Arguments map[string]string `json:"arguments,omitempty"`
	// Artifact is what the launch really ran, recorded at its first
	// verification (npm: the package's resolved version and integrity);
	// Held another that a later verification found under the same
	// launch (a republished version, a tampered cache), which holds the
	// server until a person confirms its launch again.
	Artifact string `json:"artifact,omitempty"`
	Held     string `json:"held,omitempty"`
}

// Sandbox is a stdio server's permission profile, as stored; the walls
// (discovery/sandbox.Profile, which has the same fields) say what each
// field means.
type Sandbox struct {
	Files        string   `json:"files,omitempty"`
	Read         []string `json:"read,omitempty"`
	Write        []string `json:"write,omitempty"`
	Deny         []string `json:"deny,omitempty"`
	Network      string   `json:"network,omitempty"`
	Allow        []string `json:"allow,omitempty"`
	CPUPercent   int      `json:"cpu_percent,omitempty"`
	Processes    int      `json:"processes,omitempty"`
	Runner       string   `json:"runner,omitempty"`
	SkipArgPaths []string `json:"skip_arg_paths,omitempty"`
	Weaker       bool     `json:"weaker,omitempty"`
	Off          bool     `json:"off,omitempty"`
}

// OAuthClient is a remote server's sign-in client, as a person entered
// it. ClientSecret is a secret, masked like env values.
type OAuthClient struct {
	// ClientID and ClientSecret are a client pre-registered with the
	// authorization server (both empty: none; the secret empty for a
	// public client).
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	// Scopes replace the scopes a sign-in would ask for by default.
	Scopes []string `json:"scopes,omitempty"`
}

// OAuthSettings returns the server's sign-in client settings (zero if
// none).
func (s Server) OAuthSettings() OAuthClient {
	if s.OAuth == nil {
		return OAuthClient{}
	}
	return *s.OAuth
}

// currentConfigHash is ConfigHash, from SavedConfigHash when the store set
// it.
func (s Server) currentConfigHash() string {
	if s.SavedConfigHash != "" {
		return s.SavedConfigHash
	}
	return s.ConfigHash()
}

// AutoRefreshOn reports whether the server is re-verified without a
// person asking: as set, or by default for remote servers only (a stdio
// server is a process Switchboard would spawn).
func (s Server) AutoRefreshOn() bool {
	if s.AutoRefresh != nil {
		return *s.AutoRefresh
	}
	return s.Transport != TransportStdio
}

// TTL is how long a successful verification of the server counts as
// fresh, given the global default.
func (s Server) TTL(def time.Duration) time.Duration {
	if s.TTLSeconds > 0 {
		return time.Duration(s.TTLSeconds) * time.Second
	}
	return def
}

// LaunchHash returns the SHA-256 over what a person must see and confirm
// before Switchboard first starts or contacts the server: for a stdio
// server the transport, command, args, env keys (not values: they are
// secrets, and a rotated key needs no new confirmation) and cwd; for a
// remote one the transport and URL.
func (s Server) LaunchHash() string {
	var h fieldHash
	h.field(s.Transport)
	if s.Transport != TransportStdio {
		h.field(s.URL)
		return h.sum()
	}
	h.field(s.Command)
	h.field(strconv.Itoa(len(s.Args)))
	for _, a := range s.Args {
		h.field(a)
	}
	keys := slices.Sorted(maps.Keys(s.Env))
	h.field(strconv.Itoa(len(keys)))
	for _, k := range keys {
		h.field(k)
	}
	h.field(s.Cwd)
	if s.Sandbox != nil {
		b, _ := json.Marshal(s.Sandbox)
		h.field(string(b))
	}
	if f := s.From; f != nil && f.Held != "" {
		// Another artifact ran under the launch: the launch a person
		// confirmed is not this one (see RecordArtifact).
		h.field("artifact " + f.Held)
	}
	return h.sum()
}

// AcceptHeldArtifact makes the artifact held (another than the one
// recorded ran under the same launch) the one recorded: a person
// confirmed the launch with it shown (ConfirmLaunch calls it).
func (s *Server) AcceptHeldArtifact() {
	if f := s.From; f != nil && f.Held != "" {
		from := *f
		from.Artifact, from.Held = f.Held, ""
		s.From = &from
	}
}

// Launch describes a server's launch as a person confirmed it: what
// runs or is contacted, without secret values. Env and Headers map each
// name to the SHA-256 of its value (hex), enough to tell that a value
// changed, never what it is.
type Launch struct {
	Transport string            `json:"transport"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	URL       string            `json:"url,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	Sandbox   *Sandbox          `json:"sandbox,omitempty"`
	// ConfirmedBy and ConfirmedAt are who confirmed it, and when (see
	// Servers.ConfirmLaunch); no part of what is compared.
	ConfirmedBy string    `json:"confirmed_by,omitempty"`
	ConfirmedAt time.Time `json:"confirmed_at,omitzero"`
}

// LaunchOf is s's launch as a confirmation keeps it.
func LaunchOf(s Server) Launch {
	return Launch{
		Transport: s.Transport, Command: s.Command, Args: slices.Clone(s.Args), Cwd: s.Cwd,
		Env: valueHashes(s.Env), URL: s.URL, Headers: valueHashes(s.Headers), Sandbox: s.Sandbox,
	}
}

func valueHashes(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = ValueHash(v)
	}
	return out
}

// LaunchConfirmedNow reports whether a person confirmed the server's
// current launch configuration.
func (s Server) LaunchConfirmedNow() bool { return s.LaunchConfirmed == s.LaunchHash() }

// fieldHash hashes length-prefixed fields, so that no two different field
// lists hash alike. The fields are gathered and hashed once: every list
// row and live update hashes its server's configuration.
type fieldHash struct{ b []byte }

func (h *fieldHash) field(v string) {
	if h.b == nil {
		h.b = make([]byte, 0, 256)
	}
	h.b = strconv.AppendInt(h.b, int64(len(v)), 10)
	h.b = append(h.b, ':')
	h.b = append(h.b, v...)
}

func (h *fieldHash) sum() string {
	sum := sha256.Sum256(h.b)
	return hex.EncodeToString(sum[:])
}

// ConfigHash returns the SHA-256 over everything that changes what the
// server is: transport, command, args, cwd, env keys with hashed values, URL
// and header keys with hashed values. Name, policy and timeout edits do not
// change it.
func (s Server) ConfigHash() string {
	var h fieldHash
	secrets := func(m map[string]string) {
		h.field(strconv.Itoa(len(m)))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			h.field(k)
			h.field(ValueHash(m[k]))
		}
	}
	h.field(s.Transport)
	h.field(s.Command)
	h.field(strconv.Itoa(len(s.Args)))
	for _, a := range s.Args {
		h.field(a)
	}
	h.field(s.Cwd)
	secrets(s.Env)
	h.field(s.URL)
	secrets(s.Headers)
	return h.sum()
}

// PhaseTiming is how long one verification phase took.
type PhaseTiming struct {
	Phase string `json:"phase"`
	MS    int64  `json:"ms"`
}

// VerifyError describes why a verification did not succeed. Message and
// StderrTail are already redacted by whoever produced them.
type VerifyError struct {
	Class      string `json:"class"`
	Phase      string `json:"phase,omitempty"`
	Message    string `json:"message"`
	Suggestion string `json:"suggestion,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
	// SignIn says where to sign in (Class auth_required only).
	SignIn *SignInNeed `json:"sign_in,omitempty"`
	// Lasting is set when the failure will not pass by itself (see
	// discovery's Error.Lasting): the server's tools are not offered
	// until it verifies again.
	Lasting bool `json:"lasting,omitempty"`
	// Refused is what the server's walls refused it during the run
	// (learn mode), nil if nothing was.
	Refused *Refused `json:"refused,omitempty"`
}

// Refused is what a stdio server's walls refused it during one run: the
// hosts its egress proxy refused, and the paths its stderr named next to
// a permission error.
type Refused struct {
	Hosts []RefusedHost `json:"hosts,omitempty"`
	Paths []string      `json:"paths,omitempty"`
}

// RefusedHost is a host:port the egress proxy refused, and why.
type RefusedHost struct {
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Reason string `json:"reason"`
}

// Entry is the host as an allow-list entry ("host" for the web's ports,
// else "host:port"; IPv6 in brackets).
func (h RefusedHost) Entry() string {
	host := h.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if h.Port == 80 || h.Port == 443 {
		return strings.Trim(host, "[]")
	}
	return host + ":" + strconv.Itoa(h.Port)
}

// SignInNeed is what a server that wants a signed-in client said (its
// Bearer challenge) and what Switchboard found about signing in to it.
// None of it is secret.
type SignInNeed struct {
	// Status is the HTTP status of the challenge: 401, or 403 for a
	// token without the scopes asked (Error insufficient_scope).
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
	// Scope is the challenge's scope parameter; ResourceMetadata its
	// protected resource metadata URL.
	Scope            string `json:"scope,omitempty"`
	ResourceMetadata string `json:"resource_metadata,omitempty"`
	// Issuer is the authorization server, Scopes what a sign-in asks
	// for; both empty if finding them failed, Problem saying why.
	Issuer  string   `json:"issuer,omitempty"`
	Scopes  []string `json:"scopes,omitempty"`
	Problem string   `json:"problem,omitempty"`
}

// Discovery is what Switchboard knows about a server's last verifications.
// VerifiedAt is the time of the last successful one; a later failure keeps
// it (and the tools) and sets Status and Error instead.
type Discovery struct {
	ServerID      string    `json:"server_id"`
	Status        Status    `json:"status"`
	JobID         string    `json:"job_id,omitempty"`
	LastAttemptAt time.Time `json:"last_attempt_at,omitzero"`
	// FailingSince is when the verifications began to fail: the start of
	// the first failed one since the last success, kept across retries
	// (zero while they succeed).
	FailingSince    time.Time     `json:"failing_since,omitzero"`
	VerifiedAt      time.Time     `json:"verified_at,omitzero"`
	DurationMS      int64         `json:"duration_ms,omitempty"`
	Timings         []PhaseTiming `json:"timings,omitempty"`
	ProtocolVersion string        `json:"protocol_version,omitempty"`
	// ListTTLMS is how long the server said its tool list may be cached
	// (ttlMs of 2026-07-28), nil if it did not say; CacheScope is the
	// scope it gave. See Freshness.
	ListTTLMS     *int64          `json:"list_ttl_ms,omitempty"`
	CacheScope    string          `json:"cache_scope,omitempty"`
	Isolation     string          `json:"isolation,omitempty"`
	ServerName    string          `json:"server_name,omitempty"`
	ServerVersion string          `json:"server_version,omitempty"`
	Capabilities  json.RawMessage `json:"capabilities,omitempty"`
	Instructions  string          `json:"instructions,omitempty"`
	ConfigHash    string          `json:"config_hash,omitempty"`
	ToolsHash     string          `json:"tools_hash,omitempty"`
	ToolCount     int             `json:"tool_count"`
	Error         *VerifyError    `json:"error,omitempty"`
	Warnings      []string        `json:"warnings,omitempty"`
	// Delta is what the last successful verification changed, in counts
	// (its history entry names the tools).
	Delta *Delta `json:"delta,omitempty"`
	// Changed is how many tools and listed entries (resources, resource
	// templates, prompts) are changed, awaiting a person's approval of
	// their new definition.
	Changed int `json:"changed,omitempty"`
}

// Stale reports whether the stored tools may no longer describe the server:
// they come from an earlier success and the latest attempt did not succeed.
func (d Discovery) Stale() bool {
	if d.VerifiedAt.IsZero() {
		return false
	}
	switch d.Status {
	case StatusFailed, StatusTimeout, StatusCancelled, StatusInterrupted, StatusSignIn:
		return true
	}
	return false
}

// Summary is a server together with its discovery record, as one
// consistent read.
type Summary struct {
	Server    Server
	Discovery Discovery
}

// Tool is one tool as the server described it (Raw is the whole object as
// received), plus what Switchboard tracks about it.
type Tool struct {
	ServerID     string          `json:"server_id"`
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Raw          json.RawMessage `json:"raw"`
	Pin          string          `json:"pin"`
	// AgentName is the name agents call the tool by (see agentname.go);
	// the store gives it and keeps it.
	AgentName string    `json:"agent_name,omitempty"`
	State     ToolState `json:"state"`
	// Problems says why a flagged tool (see ToolState.Flagged) cannot be offered as
	// the server sent it, one sentence each.
	Problems []string `json:"problems,omitempty"`
	// Needs is set for a tool the server lists only to a client that
	// declares what the tool asks of it (see discovery.Tool.Needs): the
	// alternatives, each one or more of "sampling", "elicitation",
	// "url-elicitation" and "roots" joined by "+", of which an agent
	// must declare one for the tool to be offered to it.
	Needs []string `json:"needs,omitempty"`
	// Marked is set by a verification for a tool whose name, title or
	// description holds possible prompt injection or hidden characters
	// (views.DefinitionFlags): a new tool so marked is offered only once
	// a person reviewed it (see MergeTools). It is not stored: the
	// definition says it again.
	Marked    bool      `json:"-"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
}

// PolicySetting is a person's decision about one tool, and the pin of the
// tool definition it was made for. SetBy is "default" until a person sets
// it.
type PolicySetting struct {
	Policy Policy    `json:"policy"`
	Pin    string    `json:"pin"`
	SetBy  string    `json:"set_by"`
	SetAt  time.Time `json:"set_at"`
	// Reason says in a few words why the policy is what it is: "ask:
	// may be destructive", "allow: preset read-only" (see InitialPolicy
	// and PresetPolicy); empty for a person's own setting.
	Reason string `json:"reason,omitempty"`
}

// PolicyChange is one tool's new policy in a SetPolicies, and why.
type PolicyChange struct {
	Tool   string
	Policy Policy
	Reason string
}

// PolicySetByDefault marks a policy that came from the server's default.
const PolicySetByDefault = "default"

// ToolEntry is a tool with its policy and the policy that actually applies.
type ToolEntry struct {
	Tool
	Policy PolicySetting
	// Effective is Policy.Policy, except that a tool whose definition
	// changed since it was approved is denied until a person approves it,
	// and a flagged tool (see ToolState.Flagged) is always denied.
	Effective Policy
}

// Ref is the tool's reference.
func (t Tool) Ref() ToolRef { return ToolRef{ServerID: t.ServerID, Tool: t.Name} }

// ToolRef names one tool of one server.
type ToolRef struct {
	ServerID string
	Tool     string
}

// EffectivePolicy is the policy that applies to t under p: p's, except
// that a tool whose definition changed since it was approved is denied
// until a person approves it, and a flagged tool (oversized, invalid,
// unsupported) is always denied.
func EffectivePolicy(t Tool, p PolicySetting) Policy {
	if t.State == ToolChanged || t.State.Flagged() {
		return PolicyDeny
	}
	return p.Policy
}

// Verification is the outcome of one successful verification, as the store
// records it.
type Verification struct {
	JobID string
	// Trigger says what started the verification (for the history).
	Trigger         string
	ConfigHash      string
	StartedAt       time.Time
	FinishedAt      time.Time
	Timings         []PhaseTiming
	ProtocolVersion string
	ListTTLMS       *int64
	CacheScope      string
	Isolation       string
	ServerName      string
	ServerVersion   string
	Capabilities    json.RawMessage
	Instructions    string
	Warnings        []string
	Tools           []Tool
	// Listed is the server's resources, resource templates and prompts;
	// Unlisted the kinds whose listing failed (what was known of them is
	// kept). See MergeListed.
	Listed   []Listed
	Unlisted []ListedKind
}

// Failure is the outcome of one verification that did not succeed.
type Failure struct {
	JobID      string
	Trigger    string
	ConfigHash string
	Status     Status // StatusFailed, StatusTimeout, StatusCancelled or StatusSignIn
	StartedAt  time.Time
	FinishedAt time.Time
	Timings    []PhaseTiming
	Error      VerifyError
}

// hashStrings returns the hex SHA-256 over the length-prefixed strings.
func hashStrings(ss []string) string {
	h := sha256.New()
	for _, s := range ss {
		io.WriteString(h, strconv.Itoa(len(s))+":"+s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// The kinds of what a server may ask, during a call, of the agent that
// made it (MCP's client features), as ServerAsks and the call log name
// them.
const (
	AskSampling    = "sampling"    // sampling/createMessage: the agent's model
	AskElicitation = "elicitation" // elicitation/create: the person, a form or a URL
	AskRoots       = "roots"       // roots/list: the agent's roots
)

// AskKinds are the kinds of ServerAsks, in the order pages show them.
var AskKinds = []string{AskSampling, AskElicitation, AskRoots}

// ServerAsks is a server's policy on what it may ask of the agents whose
// calls it serves, per kind: allow (also when empty: the agent's own
// client keeps a person in the loop for these, as MCP has it), ask (a
// person on the dashboard first) or deny.
type ServerAsks struct {
	Sampling    Policy `json:"sampling,omitempty"`
	Elicitation Policy `json:"elicitation,omitempty"`
	Roots       Policy `json:"roots,omitempty"`
}

// Of is the policy for the kind (allow if unset or unknown).
func (a ServerAsks) Of(kind string) Policy {
	var p Policy
	switch kind {
	case AskSampling:
		p = a.Sampling
	case AskElicitation:
		p = a.Elicitation
	case AskRoots:
		p = a.Roots
	}
	if p == "" {
		return PolicyAllow
	}
	return p
}

// Set sets the policy for the kind; it reports whether the kind is one.
func (a *ServerAsks) Set(kind string, p Policy) bool {
	if p == PolicyAllow {
		p = "" // the default, kept as such
	}
	switch kind {
	case AskSampling:
		a.Sampling = p
	case AskElicitation:
		a.Elicitation = p
	case AskRoots:
		a.Roots = p
	default:
		return false
	}
	return true
}
