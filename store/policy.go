package store

import (
	"encoding/json"
	"fmt"
	"slices"
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
	h := hintsOf(annotations)
	policy, reason = def, string(def)+": the server's default policy"
	if policyRank[def] >= policyRank[PolicyAsk] || (!h.destructive && !h.openWorld) {
		return policy, reason
	}
	switch {
	case h.destructive && h.openWorld:
		reason = "ask: may be destructive and reach outside systems (raised from " + string(def) + ")"
	case h.destructive:
		reason = "ask: may be destructive (raised from " + string(def) + ")"
	default:
		reason = "ask: may reach outside systems (raised from " + string(def) + ")"
	}
	return Stricter(def, PolicyAsk), reason
}

// ApplyPolicy is e with a person's policy p (set by by, at now, for
// reason, if not their own choice: a preset they applied). The
// policy applies to the definition it was approved at: setting it on a
// changed tool does not approve the change (see Approve), so the tool
// stays changed, and denied, until a person approves the new version
// against the diff. A tool without a policy gets its first one at its
// current definition: first says so, and the backend then keeps e.Tool as
// the approved definition.
func ApplyPolicy(e ToolEntry, p Policy, reason, by string, now time.Time) (out ToolEntry, first bool) {
	pin := e.Policy.Pin
	if pin == "" {
		first = true
		if e.State != ToolChanged { // a new tool waiting for review is approved by Approve only
			pin = e.Pin
		}
	}
	e.Policy = PolicySetting{Policy: p, Pin: pin, SetBy: by, SetAt: now.UTC(), Reason: reason}
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

// Preset is a person's choice of how a server's new tools start, made
// when they confirm its launch.
type Preset string

// The presets.
const (
	PresetAskAll   Preset = "ask_all"   // ask for everything
	PresetReadOnly Preset = "read_only" // allow what declares itself read-only and closed-world, ask the rest
	PresetAllowAll Preset = "allow_all" // allow everything
)

// Presets lists them, as the pages offer them.
var Presets = []Preset{PresetAskAll, PresetReadOnly, PresetAllowAll}

// Valid reports whether p is one of the presets.
func (p Preset) Valid() bool { return p == PresetAskAll || p == PresetReadOnly || p == PresetAllowAll }

// Title is how the pages name the preset.
func (p Preset) Title() string {
	switch p {
	case PresetAskAll:
		return "Ask for everything"
	case PresetReadOnly:
		return "Allow tools that declare themselves read-only and closed-world, ask the rest"
	case PresetAllowAll:
		return "Allow all"
	}
	return string(p)
}

// hints are a tool's annotations as MCP defines their defaults: a tool is
// destructive unless it says it is read-only or not destructive, and
// reaches an open world unless it says it does not.
type hints struct{ readOnly, destructive, openWorld bool }

func hintsOf(annotations json.RawMessage) hints {
	var ann struct {
		ReadOnly    *bool `json:"readOnlyHint"`
		Destructive *bool `json:"destructiveHint"`
		OpenWorld   *bool `json:"openWorldHint"`
	}
	_ = json.Unmarshal(annotations, &ann) // unreadable hints are no hints: the spec's defaults apply
	readOnly := ann.ReadOnly != nil && *ann.ReadOnly
	return hints{
		readOnly:    readOnly,
		destructive: !readOnly && (ann.Destructive == nil || *ann.Destructive),
		openWorld:   ann.OpenWorld == nil || *ann.OpenWorld,
	}
}

// PresetPolicy is the policy a tool gets under preset p, and why, in a
// few words. Annotations are the server's claims about its tools: under
// the read-only preset only a tool that claims both readOnlyHint and a
// closed world (openWorldHint false) is allowed; nothing else is.
func PresetPolicy(p Preset, annotations json.RawMessage) (Policy, string) {
	switch p {
	case PresetAllowAll:
		return PolicyAllow, "allow: preset allow all"
	case PresetReadOnly:
		h := hintsOf(annotations)
		switch {
		case !h.readOnly && h.destructive:
			return PolicyAsk, "ask: may be destructive (preset read-only)"
		case !h.readOnly:
			return PolicyAsk, "ask: not declared read-only (preset read-only)"
		case h.openWorld:
			return PolicyAsk, "ask: may reach outside systems (preset read-only)"
		}
		return PolicyAllow, "allow: preset read-only (declared read-only and closed-world)"
	}
	return PolicyAsk, "ask: preset ask for everything"
}

// NewToolPolicy is the policy a server's newly discovered tool starts
// with: its preset's, if a person chose one, else InitialPolicy's.
func NewToolPolicy(s Server, annotations json.RawMessage) (Policy, string) {
	if s.Preset.Valid() {
		return PresetPolicy(s.Preset, annotations)
	}
	return InitialPolicy(s.DefaultPolicy, annotations)
}

// Selection picks a server's tools for one policy change, by what they
// claim in their annotations.
type Selection string

// The selections.
const (
	SelectAll       Selection = "all"
	SelectReadOnly  Selection = "read_only"  // declared read-only and closed-world
	SelectMayChange Selection = "may_change" // not declared read-only
	SelectOpenWorld Selection = "open_world" // not declared closed-world
)

// Selections lists them, as the pages offer them.
var Selections = []Selection{SelectAll, SelectReadOnly, SelectMayChange, SelectOpenWorld}

// Valid reports whether s is one of the selections.
func (s Selection) Valid() bool { return slices.Contains(Selections, s) }

// Title is how the pages name the selection.
func (s Selection) Title() string {
	switch s {
	case SelectAll:
		return "all tools"
	case SelectReadOnly:
		return "tools declared read-only and closed-world"
	case SelectMayChange:
		return "tools not declared read-only"
	case SelectOpenWorld:
		return "tools not declared closed-world"
	}
	return string(s)
}

// Matches reports whether s picks t.
func (s Selection) Matches(t Tool) bool {
	h := hintsOf(t.Annotations)
	switch s {
	case SelectAll:
		return true
	case SelectReadOnly:
		return h.readOnly && !h.openWorld
	case SelectMayChange:
		return !h.readOnly
	case SelectOpenWorld:
		return h.openWorld
	}
	return false
}

// PresetChanges is what applying preset p to a server's tools sets: each
// tool's preset policy, with its reason (see PresetPolicy). Missing tools
// are left as they are.
func PresetChanges(p Preset, tools []ToolEntry) []PolicyChange {
	var out []PolicyChange
	for _, t := range tools {
		if t.State == ToolMissing {
			continue
		}
		policy, reason := PresetPolicy(p, t.Annotations)
		out = append(out, PolicyChange{Tool: t.Name, Policy: policy, Reason: reason})
	}
	return out
}

// BulkPolicy is one policy for several tools: those named, or those Select
// picks (one or the other).
type BulkPolicy struct {
	Policy Policy
	Tools  []string
	Select Selection
}

// Check says what is wrong with b, by field ("policy", "tools",
// "select"); nil if nothing.
func (b BulkPolicy) Check() map[string]string {
	fields := map[string]string{}
	if !b.Policy.Valid() {
		fields["policy"] = "must be allow, ask or deny"
	}
	switch {
	case b.Select == "" && len(b.Tools) == 0:
		fields["tools"] = "name the tools, or choose a selection"
	case b.Select != "" && len(b.Tools) > 0:
		fields["select"] = "name the tools or choose a selection, not both"
	case b.Select != "" && !b.Select.Valid():
		fields["select"] = "must be all, read_only, may_change or open_world"
	}
	if len(fields) == 0 {
		return nil
	}
	return fields
}

// Changes is what b sets among a server's tools (see SetPolicies).
func (b BulkPolicy) Changes(tools []ToolEntry) []PolicyChange {
	names := b.Tools
	if b.Select != "" {
		for _, t := range tools {
			if b.Select.Matches(t.Tool) {
				names = append(names, t.Name)
			}
		}
	}
	out := make([]PolicyChange, 0, len(names))
	for _, n := range names {
		out = append(out, PolicyChange{Tool: n, Policy: b.Policy})
	}
	return out
}
