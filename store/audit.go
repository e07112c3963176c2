package store

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// The audit log of tool calls routed through the MCP endpoint.

// MaxCalls is how many call records are kept; older ones are dropped.
const MaxCalls = 10000

// MaxCallArguments caps the arguments a call record keeps, in bytes.
const MaxCallArguments = 4 << 10

// Call decisions.
const (
	DecisionAllowed  = "allowed"  // allow policy
	DecisionApproved = "approved" // ask policy, a person approved
	DecisionDenied   = "denied"   // refused before reaching the server
)

// Call is one tool call routed to an upstream server, or refused.
type Call struct {
	Seq uint64    `json:"seq"`
	At  time.Time `json:"at"`
	// Session is the agent's MCP session id ("dashboard" for Try it).
	Session string `json:"session"`
	Client  string `json:"client,omitempty"` // clientInfo name and version
	// ConnectedAs names the connected client whose own token made the
	// call (see ClientToken); empty for the endpoint's token.
	ConnectedAs string `json:"connected_as,omitempty"`
	// Profile is the profile whose view the agent was offered
	// (DefaultProfile for the endpoint's token); empty for Try it.
	Profile string `json:"profile,omitempty"`
	// Method is what the agent asked for: MethodCallTool (also when
	// empty, as in records written before resources and prompts were
	// routed), MethodReadResource or MethodGetPrompt.
	Method   string `json:"method,omitempty"`
	ServerID string `json:"server_id"`
	// Tool is the tool's name on its server; for a resource read, the
	// resource's URI there, and for a prompt, its name there.
	Tool string `json:"tool"`
	// AgentName is the name (or URI) the agent asked for.
	AgentName string `json:"agent_name"`
	// ArgsHash is the SHA-256 of the arguments as received.
	ArgsHash string `json:"args_hash"`
	Pin      string `json:"pin,omitempty"`
	Policy   Policy `json:"policy,omitempty"`
	Decision string `json:"decision"`
	// DecidedBy says who let the call through or refused it: "policy",
	// "dashboard" (a person), "timeout", "pin check".
	DecidedBy  string `json:"decided_by"`
	Reason     string `json:"reason,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	// Outcome is "ok", "tool_error" (the tool said isError), "error"
	// (the call failed), or "refused".
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// Arguments is the arguments' JSON, kept only when the server records
	// them (Server.RecordArgs): the values of secret-looking keys and the
	// server's own secret values replaced by "[redacted]", cut at
	// MaxCallArguments bytes (ArgumentsTruncated then says so).
	Arguments          string `json:"arguments,omitempty"`
	ArgumentsTruncated bool   `json:"arguments_truncated,omitempty"`
}

// The methods a Call records.
const (
	MethodCallTool     = "tools/call"
	MethodReadResource = "resources/read"
	MethodGetPrompt    = "prompts/get"
)

// NewMCPToken is a new random token for the MCP endpoint.
func NewMCPToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "sbmcp_" + hex.EncodeToString(b)
}
