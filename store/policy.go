package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// The rules of policies: what a new tool starts with, what a person's
// setting and approval change, and what applies (see EffectivePolicy).

// policyRank orders policies from the loosest to the strictest.
var policyRank = map[Policy]int{PolicyAllow: 0, PolicyAsk: 1, PolicyDeny: 2}

// Stricter returns the stricter of two policies.
func Stricter(a, b Policy) Policy {
	if policyRank[b] > policyRank[a] {
		return b
	}
	return a
}

// InitialPolicy is the policy a newly discovered tool starts with: the
// server's default, made stricter (never looser) by the tool's
// annotations. Annotations are the server's own hints, so they can only
// raise caution: a tool that may destroy (destructiveHint, which the MCP
// spec takes as true unless the tool is readOnlyHint or says false) or
// reach an open world (openWorldHint, true unless false) starts at least
// at ask. reason says which applied.
func InitialPolicy(def Policy, annotations json.RawMessage) (policy Policy, reason string) {
	var ann struct {
		ReadOnly    *bool `json:"readOnlyHint"`
		Destructive *bool `json:"destructiveHint"`
		OpenWorld   *bool `json:"openWorldHint"`
	}
	_ = json.Unmarshal(annotations, &ann) // unreadable hints are no hints: the spec's defaults apply
	readOnly := ann.ReadOnly != nil && *ann.ReadOnly
	destructive := !readOnly && (ann.Destructive == nil || *ann.Destructive)
	openWorld := ann.OpenWorld == nil || *ann.OpenWorld
	policy, reason = def, "the server's default policy"
	if policyRank[def] >= policyRank[PolicyAsk] || (!destructive && !openWorld) {
		return policy, reason
	}
	switch {
	case destructive && openWorld:
		reason = "raised from " + string(def) + ": the tool may be destructive and reach outside systems (destructiveHint and openWorldHint are true or not given)"
	case destructive:
		reason = "raised from " + string(def) + ": the tool may be destructive (destructiveHint is true or not given)"
	default:
		reason = "raised from " + string(def) + ": the tool may reach outside systems (openWorldHint is true or not given)"
	}
	return Stricter(def, PolicyAsk), reason
}

// ApplyPolicy is e with a person's policy p (set by by, at now). The
// policy applies to the definition it was approved at: setting it on a
// changed tool does not approve the change (see Approve), so the tool
// stays changed, and denied, until a person approves the new version
// against the diff. A tool without a policy gets its first one at its
// current definition: first says so, and the backend then keeps e.Tool as
// the approved definition.
func ApplyPolicy(e ToolEntry, p Policy, by string, now time.Time) (out ToolEntry, first bool) {
	pin := e.Policy.Pin
	if pin == "" {
		pin, first = e.Pin, true
	}
	e.Policy = PolicySetting{Policy: p, Pin: pin, SetBy: by, SetAt: now.UTC()}
	e.Effective = EffectivePolicy(e.Tool, e.Policy)
	return e, first
}

// Approve is e with its current definition approved, at pin, the one the
// person was shown: the policy stays as it was and now applies to this
// version, and the tool becomes active; the backend keeps e.Tool as the
// approved definition. It returns ErrPinMismatch if the tool changed
// again since, and ErrNotChanged if it has no unapproved change.
func Approve(e ToolEntry, pin, by string, now time.Time) (ToolEntry, error) {
	switch {
	case e.Pin != pin:
		return e, fmt.Errorf("%w: %q", ErrPinMismatch, e.Name)
	case e.State != ToolChanged:
		return e, fmt.Errorf("%w: %q is %s", ErrNotChanged, e.Name, e.State)
	}
	e.Policy.Pin, e.Policy.SetBy, e.Policy.SetAt = e.Pin, by, now.UTC()
	e.State = ToolActive
	e.Effective = EffectivePolicy(e.Tool, e.Policy)
	return e, nil
}
