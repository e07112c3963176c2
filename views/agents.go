package views

import (
	"strconv"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// Approval is a call to an ask tool waiting for a person.
type Approval struct {
	ID       string // opaque
	At       time.Time
	Deadline time.Time
	Session  string
	// Stateless is a call from a 2026-07-28 client, which has no session.
	Stateless bool
	Client    string
	// ConnectedAs names the connected client whose token made the call.
	ConnectedAs string
	ServerID    string
	ServerName  string
	Tool        string
	// Verb is what the agent asks to do: "call" (a tool), "read the
	// resource", "get the prompt".
	Verb string
	// Request is set when the server asks the agent something during
	// the call of Tool (sampling, elicitation, roots), which its policy
	// has a person allow first.
	Request   string
	AgentName string
	Args      string // pretty JSON
	// InClient is set when the person is asked in the agent's client
	// too (MCP elicitation): the first answer wins.
	InClient bool
	// Profile is the profile of the token that made the call ("" for the
	// default).
	Profile string
}

// AgentsView is the Agents page: how to connect, who is connected, what
// runs, and the recent calls.
type AgentsView struct {
	URL        string
	Token      string
	FixedToken bool // set by configuration: not rotatable here
	Sessions   []AgentSession
	Stateless  []StatelessAgent
	Upstreams  []Upstream
	Offered    int // tools offered to agents
	Calls      CallsView
	AskTimeout time.Duration
	IdleAfter  time.Duration
	MaxRunning int
	// Clients are the connected clients with their own tokens; NewToken
	// is one just made for NewTokenFor, shown this once. ClientError and
	// ClientName are the new-client form's error and input.
	Clients                 []ConnectedClient
	NewToken, NewTokenFor   string
	ClientError, ClientName string
	// Profiles are the profiles a new token can belong to.
	Profiles []Option
	// ConnectClients are the clients Switchboard writes itself into;
	// Connect is a previewed change, Connected one written.
	ConnectClients     []Option
	Connect, Connected *ConnectView
	// Gates say, per client whose config is on this machine, what reaches
	// its agent around Switchboard.
	Gates []ClientGate
}

// ClientGate is what reaches one client's agent: Switchboard's entry
// (Connected) and the entries around it.
type ClientGate struct {
	Key, Name, Path string
	Connected       bool
	Around          []AroundEntry
	Error           string
}

// AroundEntry is an entry of a client's config other than Switchboard's;
// ServerID is the server Switchboard has that it launches ("" if none).
type AroundEntry struct {
	Name, Project, File, ServerID string
	Disabled                      bool
}

// State is "gated" (only Switchboard reaches the agent), "around" (it is
// connected and other servers reach it too), "direct" (it is not
// connected) or "error".
func (g ClientGate) State() string {
	switch {
	case g.Error != "":
		return "error"
	case !g.Connected:
		return "direct"
	case len(g.Around) == 0:
		return "gated"
	}
	return "around"
}

// Movable counts the entries around the gate of servers Switchboard has:
// connecting (again) moves them behind it.
func (g ClientGate) Movable() int {
	n := 0
	for _, e := range g.Around {
		if e.ServerID != "" {
			n++
		}
	}
	return n
}

// ConnectView is a change to a client's config file: previewed (Diff,
// and Before, the hash of the file as it was) or written (Backup).
type ConnectView struct {
	Client, Path, Diff, Before, Backup, Error string
	// Moved are the client's entries of servers Switchboard has, which
	// connecting moves behind it; MovesPath is where they are kept.
	Moved     []MovedEntry
	MovesPath string
}

// MovedEntry is an entry of a client's config that connecting moves
// behind Switchboard (Project: the Claude Code project that holds it).
type MovedEntry struct{ Name, Project string }

// ConnectedClient is a client with its own MCP token, and how agents use
// it (since Switchboard started).
type ConnectedClient struct {
	ID, Name string
	Profile  string // its profile's id
	Created  time.Time
	By       string // who made its token
	// State is "connected" (now), "seen" (at LastSeen) or "never".
	State    string
	LastSeen time.Time
	// Protocol and Agent are what the agent declared with the token last:
	// its MCP protocol version and its clientInfo (self-declared).
	Protocol, Agent string
	Sessions        int // live sessions
	// Approvals is where its calls to ask tools may be answered, as set
	// on its token ("client", "dashboard", "" for its profile's);
	// InClient is the outcome.
	Approvals string
	InClient  bool
	// Allowed are the tools its person always allows, answering in it.
	Allowed []ClientAllowed
}

// ClientAllowed is a tool a connected client's person always allows.
type ClientAllowed struct {
	ServerID, Tool string
	At             time.Time
}

// AgentSession is one connected agent.
type AgentSession struct {
	ID      string
	Client  string
	Started time.Time
}

// StatelessAgent is a 2026-07-28 client, known by the name its requests
// give (clientInfo, "" if none).
type StatelessAgent struct {
	Client    string
	LastUsed  time.Time
	Requests  int
	Listening int // open subscriptions/listen streams
}

// Upstream is one server session open for calls.
type Upstream struct {
	ServerID string
	Started  time.Time
	LastUsed time.Time
	Calls    int
	InFlight int
	Opening  bool
	// Isolation says how the server's process is isolated (stdio).
	Isolation string
}

// CallsView is the recent calls table.
type CallsView struct {
	Calls []CallRow
	Total int
	// Filter is what the calls shown are narrowed to; Options are the
	// values each filter offers, from the calls kept.
	Filter  CallFilter
	Options CallFilterOptions
}

// CallFilter narrows the call log: each field empty, or the value a call
// must have (Client: its client's name, or the connected client whose
// token made it).
type CallFilter struct {
	Server, Client, Decision, Outcome string
	// By is who decided the call: a person's email, "dashboard", "api",
	// "client" or "policy".
	By string
}

// Any reports whether f narrows anything.
func (f CallFilter) Any() bool { return f != CallFilter{} }

// Matches reports whether c is one of the calls f keeps.
func (f CallFilter) Matches(c CallRow) bool {
	return (f.Server == "" || c.ServerID == f.Server) && (f.Client == "" || c.Client == f.Client || c.ConnectedAs == f.Client) &&
		(f.Decision == "" || c.Decision == f.Decision) && (f.Outcome == "" || c.Outcome == f.Outcome) &&
		(f.By == "" || c.DecidedBy == f.By)
}

// CallFilterOptions are the values of the call log's filters.
type CallFilterOptions struct {
	Servers, Clients, Decisions, Outcomes, People []string
}

// CallRow is one audited call.
type CallRow struct {
	At          time.Time
	Session     string
	Client      string
	ConnectedAs string // the connected client whose token made the call
	// Method is resources/read or prompts/get for a read or a get; empty
	// or tools/call for a tool call.
	Method     string
	ServerID   string
	Tool       string
	AgentName  string
	ArgsHash   string
	Decision   string
	DecidedBy  string
	Reason     string
	DurationMS int64
	Outcome    string
	Error      string
	// Arguments are the call's arguments as recorded (redacted JSON),
	// if its server records them; Truncated says they were cut.
	Arguments string
	Truncated bool
}

func msString(n int64) string { return strconv.FormatInt(n, 10) + " ms" }

func short(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// requestPhrase is what a server asks of an agent, of the kind (see
// store.AskKinds), as a card says it.
func requestPhrase(kind string) string {
	switch kind {
	case store.AskSampling:
		return "a message from its model (sampling)"
	case store.AskElicitation:
		return "the person's input (elicitation)"
	case store.AskRoots:
		return "its roots"
	}
	return kind
}

// askLabel names a kind of question on the server page.
func askLabel(kind string) string {
	switch kind {
	case store.AskSampling:
		return "Its model (sampling)"
	case store.AskElicitation:
		return "The person (elicitation)"
	case store.AskRoots:
		return "Its roots"
	}
	return kind
}
