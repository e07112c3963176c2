// Package views renders Switchboard's pages and the fragments htmx swaps
// in, from plain view models. It knows neither Echo nor the store. Every
// value a server sent is rendered escaped; none is used in an attribute
// that htmx interprets, an id or a URL.
package views

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

// Page is what the layout needs.
type Page struct {
	Title string
	CSRF  string
	// Flash is a one-line notice shown at the top, e.g. after a delete.
	Flash string
	// Revision is the store revision the page was read at; the live
	// stream catches up on anything newer when it connects.
	Revision string
	// Role is the role of who looks ("admin", "approver", "viewer").
	Role string
}

// ServerItem is one server with its live status, as the list row and the
// detail page's status panel show it.
type ServerItem struct {
	ID        string
	Name      string
	Transport string
	// Target is the exact command line or the URL.
	Target  string
	Enabled bool
	// NeedsConfirm says a person must confirm the launch before the next
	// Verify (see Launch).
	NeedsConfirm bool

	// Status is the job status while a job is in flight, otherwise the
	// stored discovery status.
	Status       string
	Phase        string
	Page         int
	RunningSince time.Time // zero unless a job is in flight
	JobID        string
	Elapsed      time.Duration // of the last finished job

	ToolCount     int
	VerifiedAt    time.Time
	LastAttemptAt time.Time
	// Stale says the stored tools may no longer describe the server
	// (Fresh says why); they are still what readers get.
	Stale bool
	Fresh Freshness
	// Delta is what the last successful verification changed, e.g.
	// "+2 −1 ~1" ("" before the first).
	Delta string
	// AutoRefresh says Switchboard re-verifies the server by itself.
	AutoRefresh bool
	// Changed is how many tools, prompts, resources and resource templates
	// have a change awaiting approval.
	Changed         int
	ProtocolVersion string
	// Isolation says how the last verification isolated the server's
	// process (stdio only).
	Isolation     string
	ServerName    string
	ServerVersion string
	Timings       []Timing
	Error         *ErrorView
	Warnings      []string
	// SignIn is the server's OAuth sign-in (remote servers only).
	SignIn *SignInView
	// From and UpdateTo: the registry version it runs, and a newer one
	// the registry has ("" if none).
	From, UpdateTo string
	// Watch is the session held to hear the server's changes (nil if none).
	Watch *WatchView
	// Calls is what the calls routed to the server say (nil if none was
	// since Switchboard started).
	Calls *CallsHealth
}

// CallsHealth is what the routed calls say of a server: when the latest
// started, and whether calls fail, since when, with the latest error.
type CallsHealth struct {
	LastCall     time.Time
	Failing      bool
	FailingSince time.Time
	Error        string
}

// CallsFailing says calls fail since the server's latest successful
// verification: an older failure is older news than that verification.
func (s ServerItem) CallsFailing() bool {
	return s.Calls != nil && s.Calls.Failing && s.Calls.LastCall.After(s.VerifiedAt)
}

// WatchView is a held session: connected, or not and why, since when.
type WatchView struct {
	Connected bool
	Since     time.Time
	LastError string
}

// SignInView is a remote server's OAuth sign-in: what the server asked
// for, the grant held, and what went wrong. It holds no token.
type SignInView struct {
	// Needed: the last verification found the server wants a signed-in
	// client; Issuer and Scopes say where and what, if they were found.
	Needed bool
	Issuer string
	Scopes []string
	// StepUp: the server refused the token held for lack of scopes.
	StepUp bool
	// Problem is why signing in cannot start or did not finish;
	// NeedsClient says the server's form must name a registered client.
	Problem     string
	NeedsClient bool
	Grant       *GrantView
}

// GrantView is the sign-in held for a server.
type GrantView struct {
	Issuer    string
	Scope     string
	ExpiresAt time.Time // zero: the server gave no lifetime
	Refresh   bool      // a refresh token is held
	// Problem says why the grant no longer serves (sign in again).
	Problem string
	// By signed in, at At (empty, zero: a sign-in from before people
	// were named).
	By string
	At time.Time
}

// SignInLabel is the sign-in button's text.
func (v SignInView) SignInLabel() string {
	if v.Grant != nil {
		return "Sign in again"
	}
	return "Sign in"
}

// Freshness is how far the stored tools can be trusted to describe the
// server now (see store.Freshness).
type Freshness struct {
	State      string // fresh, stale, failed, sign_in_required or never
	VerifiedAt time.Time
	Until      time.Time // fresh: when it turns stale
	// Hint: the server's list TTL (ttlMs) set Until or Since.
	Hint   bool
	Since  time.Time // stale: since when; failed: when it failed
	Reason string    // stale: ttl or config
	// Idle: stale by the clock for a server nothing re-checks by itself
	// (auto-refresh off), which is no fault: it is verified on Verify.
	Idle       bool
	ErrorClass string // failed
	ErrorPhase string // failed
}

// Timing is one phase's duration.
type Timing struct {
	Phase string
	MS    int64
}

// ErrorView is a failed verification's error.
type ErrorView struct {
	Class      string
	Phase      string
	Message    string
	Suggestion string
	StderrTail string
	// Lasting: the failure will not pass by itself, so the server's
	// tools are not offered until it verifies again.
	Lasting bool
	// RefusedHosts are what the server's egress proxy refused it, as
	// allow-list entries with why; RefusedPaths the paths its stderr
	// named next to a permission error (learn mode).
	RefusedHosts []RefusedHost
	RefusedPaths []string
}

// RefusedHost is a host the walls refused, as an allow-list entry.
type RefusedHost struct {
	Entry  string
	Reason string
	// Allowable: refused only for not being on the allow-list, so
	// "Allow and verify again" may add it.
	Allowable bool
}

// AllowableHosts counts the refused hosts learn mode may allow.
func (e ErrorView) AllowableHosts() int {
	n := 0
	for _, h := range e.RefusedHosts {
		if h.Allowable {
			n++
		}
	}
	return n
}

// SandboxView is a stdio server's permission profile as pages show it.
type SandboxView struct {
	Files, Network           string
	Allow, Read, Write, Deny []string
	// ArgDirs and ArgFiles are the paths named in the arguments, granted
	// read-write and read-only; Skipped those the person removed.
	ArgDirs, ArgFiles, Skipped []string
	MemoryMB                   int
	CPUPercent, Processes      int
	Runner, RunnerNote         string
	Off, Weaker                bool
	// Expected is the tier this machine builds for the profile; Missing
	// what it cannot build.
	Expected string
	Missing  []string
	// HomeWritten: a write grant holds the home, and with it what runs
	// when the person logs in.
	HomeWritten bool
	// Choose: the person may take the paths named in the arguments out of
	// the grants, and put them back (the launch confirmation), for the
	// server ServerID.
	Choose   bool
	ServerID string
}

// Running reports whether a job is queued or running.
func (s ServerItem) Running() bool { return !s.RunningSince.IsZero() }

// PhaseLabel is the human label of the current phase.
func (s ServerItem) PhaseLabel() string {
	switch {
	case s.Phase == discovery.PhaseListing && s.Page > 0:
		return fmt.Sprintf("listing page %d", s.Page)
	case s.Phase != "":
		return s.Phase
	}
	return s.Status
}

// StatusLabel is the badge text.
func (s ServerItem) StatusLabel() string {
	if s.Running() {
		return s.PhaseLabel()
	}
	switch store.Status(s.Status) {
	case store.StatusNever:
		return "not verified"
	case store.StatusSignIn:
		return "Sign-in required"
	}
	return s.Status
}

// ServerDetail is the detail page.
type ServerDetail struct {
	Item          ServerItem
	Command       string
	Args          []string
	EnvKeys       []string
	Cwd           string
	URL           string
	HeaderKeys    []string
	DefaultPolicy string
	TimeoutMS     int
	MemoryMB      int // 0: no cap
	Instructions  string
	Tools         []ToolItem
	// Listed is the server's resources, resource templates and prompts.
	Listed []ListedItem
	// ListedAsOf, when set, says the latest verification did not succeed:
	// Listed is as of the last one that did, at this time.
	ListedAsOf time.Time
	// Preset is the server's policy preset ("" for none: new tools start
	// at DefaultPolicy); Presets and Selections are the choices of the
	// preset and bulk policy forms.
	Preset       string
	Presets      []Option
	Selections   []Option
	History      []HistoryItem
	HistoryTotal int
	// RecordArgs says the call log keeps the arguments of the server's
	// calls (see RecordArguments).
	RecordArgs bool
	// Asks is what the server may ask of the calling agents: each kind
	// (store.AskKinds) with its policy.
	Asks []AskRow
	// Sandbox is the walls of a stdio server (nil for a remote one).
	Sandbox *SandboxView
}

// ToolItem is one tool row. Key is an opaque per-page index used for
// element ids; the tool name is data only.
type ToolItem struct {
	Key         string
	ServerID    string
	Name        string
	Title       string
	Description string
	InputSchema string // pretty-printed JSON
	Annotations []Annotation
	State       string
	Problems    []string // why a flagged tool (oversized, invalid, unsupported) is not offered
	// Needs, if set, says which agents alone are offered the tool, which
	// the server lists only to a client that answers what it asks: "an
	// agent that answers sampling".
	Needs  string
	Policy string
	// PolicyReason says why the policy is what it is, if it was not a
	// person's own setting; PolicySetBy who or what set it.
	PolicyReason, PolicySetBy string
	Effective                 string
	// AgentName is the name agents call the tool by ("" if it is never
	// offered as it is).
	AgentName string
}

// Annotation is one tool annotation.
type Annotation struct {
	Key   string
	Value string
}

// ServerForm is the add/edit form's values, exactly as typed.
type ServerForm struct {
	ID            string
	Name          string
	Transport     string
	Command       string
	Args          string // one per line
	Env           []KV
	Cwd           string
	URL           string
	Headers       []KV
	TimeoutS      string // seconds, as typed
	MemoryMB      string // MiB
	TTLSeconds    string
	AutoRefresh   string // "", "on" or "off"
	DefaultPolicy string
	Enabled       bool
	// The sign-in client (remote servers): OAuthClientSecretSet says a
	// secret is stored (an empty input keeps it), OAuthClientSecretRetype
	// that one was typed and must be typed again.
	OAuthClientID           string
	OAuthClientSecretSet    bool
	OAuthClientSecretRetype bool
	OAuthScopes             string
	// The walls (stdio servers), as typed: lists one entry per line.
	SandboxFiles, SandboxNetwork, SandboxRunner          string
	SandboxAllow, SandboxRead, SandboxWrite, SandboxDeny string
	SandboxSkip, SandboxCPU, SandboxProcesses            string
	SandboxWeaker, SandboxOff                            bool
}

// KV is one env or header row. Secret values are never rendered back:
// Set says a value is stored, and an empty value keeps it.
// KV is one env or header row of the form. Values are secrets and
// write-only: a form never carries one back. Set means the saved server
// has a value for Key (an empty input keeps it); Retype means the person
// typed a value that this re-rendered form could not send back.
type KV struct {
	Key    string
	Set    bool
	Retype bool
}

// FormErrors maps a field name to its message.
type FormErrors map[string]string

// FormView is the add/edit form page.
type FormView struct {
	Form   ServerForm
	Errors FormErrors
	Edit   bool
	// CallbackURL is the sign-in callback a client registered by hand
	// must allow.
	CallbackURL string
}

// hasOAuthError reports whether a sign-in client field is invalid.
func hasOAuthError(f FormView) bool {
	for _, k := range []string{"oauth_client_id", "oauth_client_secret", "oauth_scopes"} {
		if _, ok := f.Errors[k]; ok {
			return true
		}
	}
	return false
}

// advancedOpen reports whether the form's advanced settings start open:
// one of them is set or invalid.
func advancedOpen(f FormView) bool {
	for _, k := range []string{"timeout_s", "timeout_ms", "memory_mb", "ttl_seconds", "auto_refresh"} {
		if _, ok := f.Errors[k]; ok {
			return true
		}
	}
	v := f.Form
	return v.TimeoutS != "" || v.MemoryMB != "" || v.TTLSeconds != "" || v.AutoRefresh != ""
}

// removeLabel names what a row's Remove button removes.
func removeLabel(noun, key string) string {
	if key == "" {
		return "Remove this " + noun
	}
	return "Remove " + key
}

// secretPlaceholder is the placeholder of a write-only secret input.
func secretPlaceholder(set, retype bool) string {
	return valuePlaceholder(KV{Set: set, Retype: retype})
}

func itoa(i int) string { return strconv.Itoa(i) }

// absTime is the absolute form of a time a page shows.
func absTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// ago renders a time relative to now ("3 min ago", "in 4 min"); app.js
// keeps it current.
func ago(t time.Time) string {
	d := time.Since(t)
	if d < 0 {
		return "in " + span(-d)
	}
	return span(d) + " ago"
}

func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d d", int(d.Hours()/24))
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func formAction(f FormView) templ.SafeURL {
	if f.Edit {
		return templ.SafeURL("/servers/" + f.Form.ID)
	}
	return "/servers"
}

func invalid(f FormView, name string) string {
	if _, ok := f.Errors[name]; ok {
		return "invalid"
	}
	return ""
}

func valuePlaceholder(r KV) string {
	switch {
	case r.Retype && r.Set:
		return "enter the new value again, or leave empty to keep the saved one"
	case r.Retype:
		return "enter the value again (not sent back)"
	case r.Set:
		return "set; leave empty to keep"
	}
	return "value"
}

// Launch is what a person confirms before Switchboard first runs a
// server's command or contacts its URL: all of it, untruncated, secret
// values left out.
// Option is one choice of a select or radio group: what is sent, and
// what the person reads.
type Option struct{ Value, Title string }

type Launch struct {
	ServerID    string
	Name        string
	Transport   string
	CommandLine string // command and args, shell-quoted
	Command     string
	Args        []string
	Cwd         string
	EnvKeys     []string
	MemoryMB    int
	URL         string
	HeaderKeys  []string
	// Hash identifies this launch; the form sends it back so that only
	// the launch shown is confirmed.
	Hash string
	// Changed says an earlier launch of this server was confirmed, and
	// this one is not. Changes are the differences from that one, when
	// Switchboard knows them (ChangesKnown).
	Changed      bool
	Changes      []LaunchChange
	ChangesKnown bool
	// Presets are the policy presets to choose from with the
	// confirmation, Preset the one chosen beforehand ("" for none: new
	// tools start at DefaultPolicy).
	Presets       []Option
	Preset        string
	DefaultPolicy string
	// Sandbox is the walls the server will run in (stdio).
	Sandbox *SandboxView
}

// LaunchChange is one difference between a launch and the one a person
// last confirmed. Old and New are what a reader must see in full (an
// argument, a directory, a URL); a secret value is never either.
type LaunchChange struct {
	What   string // "Program", "Argument 3", "Environment variable", …
	Name   string // the variable's or header's name
	Change string // "added", "removed", "changed" or "value changed"
	Old    string
	New    string
}

// changeClass is a LaunchChange's kind as a class name.
func changeClass(change string) string {
	if change == "value changed" {
		return "value"
	}
	return change
}

// BatchView is the progress of a "Verify all".
type BatchView struct {
	ID        string // opaque, made by the server
	Total     int
	Queued    int
	Running   int
	Succeeded int
	Failed    int // also timed out
	Cancelled int
	Skipped   []Skipped
	// Stopped says a person cancelled the batch, Dismissed that a person
	// put its panel away.
	Stopped, Dismissed bool
}

// Done is how many verifications of the batch have finished.
func (b BatchView) Done() int { return b.Succeeded + b.Failed + b.Cancelled }

// Finished reports whether every verification of the batch has finished.
func (b BatchView) Finished() bool { return b.Done() == b.Total }

// Skipped is a server a "Verify all" left out, and why.
type Skipped struct {
	ServerID string
	Reason   string
}

func boolString(b bool) string { return strconv.FormatBool(b) }

// HistoryItem is one verification in a server's history.
type HistoryItem struct {
	FinishedAt      time.Time
	Trigger         string
	Outcome         string
	DurationMS      int64
	Delta           string
	Added           NameList
	Removed         NameList
	Changed         NameList
	ServerVersion   string
	PreviousVersion string
	ErrorClass      string
	ErrorPhase      string
	ErrorMessage    string
}

// NameList is some tool names of a delta, and how many there were in all.
type NameList struct {
	Names []string
	Total int
}

// More is how many names the list leaves out.
func (n NameList) More() int { return n.Total - len(n.Names) }

// ToolChange is one changed tool on the review page: what was approved
// against what the server offers now, field by field.
type ToolChange struct {
	Key string // opaque, for element ids
	// Kind is "" for a tool, else the kind of listed entry (see
	// ListedItem), whose Name is then its key (URI, URI template or
	// prompt name).
	Kind   string
	Name   string
	Pin    string // the version shown, which an approval approves
	Policy string // the policy it keeps
	// ApprovedKnown is false when the approved definition predates
	// Switchboard keeping them: only the current one can be shown.
	ApprovedKnown bool
	Fields        []FieldDiff
	// Markers and Hidden flag the current version (see present.Flags):
	// its approval then needs a second, explicit confirmation.
	Markers []string
	Hidden  bool
}

// Flagged reports whether the change needs the second confirmation.
func (c ToolChange) Flagged() bool { return len(c.Markers) > 0 || c.Hidden }

// FieldDiff is one differing field of a tool, side by side.
type FieldDiff struct {
	Field string
	Rows  []DiffRow
}

// DiffRow is one line of a side-by-side diff. Kind is same, del (only
// on the left), add (only on the right) or change (both, different).
type DiffRow struct {
	Kind  string
	Left  string
	Right string
}

// PresetTitle is the title of the server's preset, "" if it has none.
func (d ServerDetail) PresetTitle() string {
	for _, o := range d.Presets {
		if o.Value == d.Preset {
			return o.Title
		}
	}
	return ""
}

// concat is the tools' changes, then the listed entries' (a new slice).
func concat(tools, listed []ToolChange) []ToolChange {
	return append(slices.Clip(tools), listed...)
}

// unflagged is the changes that need no second confirmation.
func unflagged(changes []ToolChange) []ToolChange {
	var out []ToolChange
	for _, c := range changes {
		if !c.Flagged() {
			out = append(out, c)
		}
	}
	return out
}

// The health states Health gives that pages test for.
const (
	HealthOK    = "ok"
	HealthStale = "stale"
	HealthNever = "never"
	// HealthReview: verified, with changed tools withheld from agents
	// until a person reviews them.
	HealthReview = "review"
	// HealthWithdrawn: its launch changed since a person confirmed it,
	// and nothing of it is offered until they confirm the new one.
	HealthWithdrawn = "withdrawn"
)

// Health is the one chip a server's state comes down to: its
// verification, its freshness and the session held to it, in a few
// words ("OK · 13 tools", "Unreachable since 14:02 UTC", "Failed: command
// not found"), never two states side by side. A server re-checked only
// when a person presses Verify (auto-refresh off) is not called stale
// for the time passing.
func (s ServerItem) Health() (state, text string) {
	since := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return " since " + t.UTC().Format("15:04") + " UTC"
	}
	switch {
	case s.Running():
		return "running", s.PhaseLabel()
	case !s.Enabled:
		return "disabled", "Disabled"
	case s.Status == string(store.StatusNever):
		return HealthNever, "Not verified"
	case s.Status == string(store.StatusSignIn):
		return "sign_in", "Sign-in required"
	case s.Status == string(store.StatusSuccess) && s.Watch != nil && !s.Watch.Connected && s.Watch.LastError != "":
		return "unreachable", "Unreachable" + since(s.Watch.Since)
	case s.Status == string(store.StatusSuccess) && s.CallsFailing():
		return "unreachable", "Calls failing" + since(s.Calls.FailingSince)
	case s.Status == string(store.StatusSuccess) && s.NeedsConfirm:
		// Its launch changed since a person confirmed it: nothing of it
		// is offered until they confirm the new one.
		return HealthWithdrawn, "Withdrawn: confirm the changed launch"
	case s.Status == string(store.StatusSuccess) && s.Fresh.State == store.FreshStale && s.Fresh.Reason == store.StaleConfig:
		return HealthStale, "Stale: its configuration changed"
	case s.Status == string(store.StatusSuccess) && s.Fresh.State == store.FreshStale && s.AutoRefresh:
		return HealthStale, "Stale"
	case s.Status == string(store.StatusSuccess) && s.Changed > 0:
		// Changes waiting are part of its state: never a green OK beside
		// them.
		return HealthReview, "Changes to review · " + itoa(s.Changed) + " " + plural(s.Changed, "tool", "tools") + " withheld"
	case s.Status == string(store.StatusSuccess):
		return HealthOK, "OK · " + itoa(s.ToolCount) + " " + plural(s.ToolCount, "tool", "tools")
	case s.Error != nil && (s.Error.Class == discovery.ClassTimeout || s.Error.Class == discovery.ClassNetwork) && !s.VerifiedAt.IsZero():
		return "unreachable", "Unreachable" + since(s.Fresh.Since)
	case s.Error != nil:
		return "failed", "Failed: " + failureWords(s.Error.Class)
	}
	return s.Status, s.StatusLabel()
}

// failureWords says an error class as people say it.
func failureWords(class string) string {
	switch class {
	case discovery.ClassNotFound:
		return "command not found"
	case discovery.ClassPermission:
		return "the command cannot be run"
	case discovery.ClassExited:
		return "the server exited"
	case discovery.ClassTimeout:
		return "no answer in time"
	case discovery.ClassNetwork:
		return "not reachable"
	case discovery.ClassProtocol:
		return "not an MCP server as expected"
	case discovery.ClassTooLarge:
		return "over a limit"
	case discovery.ClassHTTPStatus:
		return "the server refused the request"
	case discovery.ClassCancelled:
		return "cancelled"
	}
	return strings.ReplaceAll(class, "_", " ")
}

// AskRow is one kind of what a server may ask of the calling agents, with
// its policy (see ServerAsks).
type AskRow struct {
	Kind, Policy string
}

// ReplicasView is the Replicas page: the replicas heard of, and this
// replica's readiness checks.
type ReplicasView struct {
	// Team says the replicas share etcd (else this is the only one).
	Team     bool
	Replicas []ReplicaRow
	Ready    bool
	Checks   []ReadyCheck
}

// ReplicaRow is one replica as this one last heard of it.
type ReplicaRow struct {
	ID       string
	Self     bool
	Leader   bool
	Revision string
	// Behind is how many revisions it is behind the newest seen.
	Behind   int64
	Waiting  int
	LastSeen time.Time
}

// ReadyCheck is one readiness check: ok, or why not.
type ReadyCheck struct {
	Name   string
	OK     bool
	Detail string
}

// RegistryView is the Registry page: the registries' servers found, the
// copies they came from (their age), and an error with its fields.
type RegistryView struct {
	Query      string
	Copies     []RegistryCopy
	Servers    []RegistryServer
	NextCursor string
	Error      string
	Fields     map[string]string
}

// RegistryCopy is what the page says of one registry's copy.
type RegistryCopy struct {
	Registry    string
	PulledAt    time.Time
	Entries     int
	ReadThrough bool
	Error       string
}

// RegistryServer is one server of a registry, as the page lists it:
// everything is the registry's, shown as text (never fetched).
type RegistryServer struct {
	Registry, Name, Title, Description string
	Status, Latest                     string
	Versions                           []string
	Packages                           []RegistryPackage
	Remotes                            []string
	Repository, WebsiteURL             string
	// Added are the ids of the servers added from it here.
	Added  []string
	CanAdd bool
}

// RegistryPackage is one package of a registry server.
type RegistryPackage struct {
	Type, Identifier, Version string
	Runs                      bool // Switchboard runs packages of its type
}

// RegistryAddView is the form that adds a registry server: what it runs
// and the values its launch asks for.
type RegistryAddView struct {
	Registry, Name, Version, Title, Description string
	Runs                                        string // what the launch runs, in words
	Inputs                                      []RegistryInput
	Error                                       string
	Fields                                      map[string]string
}

// RegistryInput is one value the launch asks for.
type RegistryInput struct {
	Key, Label, Description, Default, Value string
	Required, Secret                        bool
	Choices                                 []string
}
