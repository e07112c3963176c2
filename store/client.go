package store

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"
)

// ClientToken is the MCP token of one agent client a person connected
// (its own, so it can be revoked alone and its calls are named in the
// call log). The store keeps its hash, never the token.
type ClientToken struct {
	ID   string `json:"id"`   // random, short; names it in URLs
	Name string `json:"name"` // the client, as the person knows it: "Claude Desktop"
	Hash string `json:"hash"` // see HashToken
	// Profile is the id of the profile whose view the client is offered;
	// empty for DefaultProfile.
	Profile string `json:"profile,omitempty"`
	// Approvals says where a call of this client to an ask tool may be
	// answered: ApprovalsInClient, ApprovalsOnDashboard, or "" for what
	// its profile says (see InClientApprovals).
	Approvals string `json:"approvals,omitempty"`
	// Allowed are the tools a person answered "Always allow" for in this
	// client: they run for this token without asking, at the pin they
	// had then, and for no other token (see Allows).
	Allowed   []ClientAllowance `json:"allowed,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	// CreatedBy names who made the token (an email, or the shared
	// token's "dashboard" or "api").
	CreatedBy string `json:"created_by,omitempty"`
}

// ClientAllowance is one tool a connected client's person always allows
// (ClientToken.Allowed).
type ClientAllowance struct {
	ServerID string `json:"server_id"`
	Tool     string `json:"tool"`
	// Pin is the tool's pin when it was allowed: a changed tool asks
	// again.
	Pin string    `json:"pin"`
	At  time.Time `json:"at"`
}

// Where approvals of ask tools may be answered (ClientToken.Approvals,
// Profile.Approvals).
const (
	// ApprovalsInClient: in the agent's own client (MCP elicitation) as
	// well as on the dashboard.
	ApprovalsInClient = "client"
	// ApprovalsOnDashboard: on the dashboard only; the agent's client is
	// never asked, so an agent that answers its own questions cannot
	// approve anything.
	ApprovalsOnDashboard = "dashboard"
)

// ValidApprovals reports whether a is a setting of where approvals are
// answered ("" is: the default).
func ValidApprovals(a string) bool {
	return a == "" || a == ApprovalsInClient || a == ApprovalsOnDashboard
}

// InClientApprovals reports whether a call made with ct, whose profile is
// p, may be approved in the agent's client. The token's own setting
// decides, then the profile's; with neither, a profile that narrows the
// view (chosen servers or tools, or stricter overrides) keeps approvals
// on the dashboard, since it was made to give an agent less than
// everything, and the default profile asks in the client too.
func InClientApprovals(ct ClientToken, p Profile) bool {
	if len(p.Approvers) > 0 {
		return false // only the named people answer
	}
	switch cmp.Or(ct.Approvals, p.Approvals) {
	case ApprovalsInClient:
		return true
	case ApprovalsOnDashboard:
		return false
	}
	return !p.Narrows()
}

// Allows reports whether the client always allows the tool at pin.
func (ct ClientToken) Allows(ref ToolRef, pin string) bool {
	return slices.ContainsFunc(ct.Allowed, func(a ClientAllowance) bool {
		return a.ServerID == ref.ServerID && a.Tool == ref.Tool && a.Pin == pin
	})
}

// Allow records that the client always allows the tool at pin (replacing
// an allowance of it at another pin).
func (ct *ClientToken) Allow(ref ToolRef, pin string, at time.Time) {
	ct.Disallow(ref)
	ct.Allowed = append(ct.Allowed, ClientAllowance{ServerID: ref.ServerID, Tool: ref.Tool, Pin: pin, At: at.UTC()})
}

// Disallow forgets the client's allowance of the tool; it reports whether
// there was one.
func (ct *ClientToken) Disallow(ref ToolRef) bool {
	n := len(ct.Allowed)
	ct.Allowed = slices.DeleteFunc(ct.Allowed, func(a ClientAllowance) bool { return a.ServerID == ref.ServerID && a.Tool == ref.Tool })
	return len(ct.Allowed) != n
}

// NewClientToken makes a token for the client named name: the token to
// hand out once, and what the store keeps of it.
func NewClientToken(name string, now time.Time) (token string, ct ClientToken) {
	b := make([]byte, 32)
	rand.Read(b)
	token = "sbc_" + hex.EncodeToString(b)
	id := make([]byte, 6)
	rand.Read(id)
	return token, ClientToken{ID: hex.EncodeToString(id), Name: name, Hash: HashToken(token), CreatedAt: now.UTC()}
}

// HashToken is the SHA-256 of a token, in hex: what is kept and compared.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// KeepIdentity restores in ct what UpdateClientToken never changes, from
// was.
func (ct *ClientToken) KeepIdentity(was ClientToken) {
	ct.ID, ct.Hash, ct.Name, ct.Profile, ct.CreatedAt = was.ID, was.Hash, was.Name, was.Profile, was.CreatedAt
}
