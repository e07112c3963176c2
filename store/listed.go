package store

import (
	"context"
	"encoding/json"
	"time"
)

// A server's resources, resource templates and prompts (its "listed"
// entries), found by the verification beside its tools. Each is pinned,
// tracked and approved by the rules of tools: a new one takes the
// server's default policy, one whose pin differs from the pin its policy
// was approved at is changed (and denied until approved), one no longer
// listed is missing, one discovery flagged stays flagged. People set the
// policy of each resource, resource template and prompt, on the server
// page and through the API.

// ListedKind says what a listed entry is.
type ListedKind string

// The kinds.
const (
	KindResource         ListedKind = "resource"
	KindResourceTemplate ListedKind = "resource_template"
	KindPrompt           ListedKind = "prompt"
)

// Valid reports whether k is one of the kinds.
func (k ListedKind) Valid() bool {
	return k == KindResource || k == KindResourceTemplate || k == KindPrompt
}

// PromptArgument is one argument a prompt takes.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Listed is one resource (Key is its URI), resource template (Key is its
// URI template) or prompt (Key is its name) as the server described it
// (Raw is the object as received), plus what Switchboard tracks about it.
type Listed struct {
	Kind        ListedKind       `json:"kind"`
	Key         string           `json:"key"`
	Name        string           `json:"name,omitempty"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	MIMEType    string           `json:"mime_type,omitempty"`
	Size        *int64           `json:"size,omitempty"`
	Annotations json.RawMessage  `json:"annotations,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Raw         json.RawMessage  `json:"raw,omitempty"`
	// Approved is the definition (Raw) at the pin the entry's policy was
	// approved at, kept while the entry differs from it (see MergeListed)
	// so that a person reviews the two side by side; nil when the entry
	// is at its approved pin, or when the approved definition was never
	// seen by this store.
	Approved  json.RawMessage `json:"approved,omitempty"`
	Pin       string          `json:"pin"`
	State     ToolState       `json:"state"`
	Problems  []string        `json:"problems,omitempty"`
	FirstSeen time.Time       `json:"first_seen"`
	LastSeen  time.Time       `json:"last_seen"`
}

// ListedEntry is a listed entry with its policy and the policy that
// actually applies (see EffectivePolicy).
type ListedEntry struct {
	Listed
	Policy    PolicySetting `json:"policy"`
	Effective Policy        `json:"-"`
}

// ListedRef names one listed entry of one server.
type ListedRef struct {
	ServerID string
	Kind     ListedKind
	Key      string
}

// ListedPin names one listed entry of a server, and the pin of the
// version of it a person approves.
type ListedPin struct {
	Kind ListedKind
	Key  string
	Pin  string
}

// Listings reads and decides about servers' listed entries.
type Listings interface {
	// Listed is the server's listed entries (missing ones too) with
	// their policies, by kind then key: ErrNotFound if the server does
	// not exist, empty if none was ever listed.
	Listed(ctx context.Context, id string) ([]ListedEntry, error)
	// ListedCatalog calls fn with every server's listed entries, each
	// with its server and discovery record, in one read, and returns the
	// revision they were read at (see Catalog).
	ListedCatalog(ctx context.Context, fn func(*Summary, ListedEntry) error) (revision string, err error)
	// SetListedPolicy records a person's policy for one entry (see
	// ApplyPolicy); ErrNotFound, or ErrToolNotFound for no such entry.
	SetListedPolicy(ctx context.Context, ref ListedRef, p Policy, by string) (ListedEntry, error)
	// ApproveListed approves the current definition of a changed entry
	// at the pin the person was shown (see Approve).
	ApproveListed(ctx context.Context, ref ListedRef, pin, by string) (ListedEntry, error)
	// ApproveAll is ApproveChanges for changed tools (name → pin) and
	// changed listed entries of one server together, all or none: any
	// that changed again, has nothing to approve or does not exist fails
	// the whole call with an error naming it. It returns the tools by
	// name, then the entries in listed's order.
	ApproveAll(ctx context.Context, id string, tools map[string]string, listed []ListedPin, by string) ([]ToolEntry, []ListedEntry, error)
}

// asTool is e as the tool rules see it.
func (e ListedEntry) asTool() ToolEntry {
	return ToolEntry{Tool: Tool{Name: e.Key, Pin: e.Pin, State: e.State}, Policy: e.Policy, Effective: e.Effective}
}

// withTool is e with what the tool rules decided in t.
func (e ListedEntry) withTool(t ToolEntry) ListedEntry {
	e.State, e.Policy, e.Effective = t.State, t.Policy, t.Effective
	return e
}

// ApplyListedPolicy is ApplyPolicy for a listed entry.
func ApplyListedPolicy(e ListedEntry, p Policy, by string, now time.Time) ListedEntry {
	t, _ := ApplyPolicy(e.asTool(), p, "", by, now)
	return e.withTool(t)
}

// ApproveListedEntry is Approve for a listed entry: once approved, its
// current definition is the approved one, and the one approved before is
// no longer kept.
func ApproveListedEntry(e ListedEntry, pin, by string, now time.Time) (ListedEntry, error) {
	t, err := Approve(e.asTool(), pin, by, now)
	if err != nil {
		return e, err
	}
	e.Approved = nil
	return e.withTool(t), nil
}

// approvedRaw is the definition e's policy was approved at, as far as
// known: its own if it is at that pin, else the one kept (see
// Listed.Approved).
func (e ListedEntry) approvedRaw() json.RawMessage {
	if e.Pin == e.Policy.Pin {
		return e.Raw
	}
	return e.Approved
}

// ListedKey is the key of an entry among its server's listed entries.
func ListedKey(kind ListedKind, key string) string { return string(kind) + "\x00" + key }

// MergeListed merges offered, the listed entries of a successful
// verification of s finished at at, into known (by ListedKey), by the
// rules of MergeTools: it returns every entry to write. Kinds in
// unlisted (whose listing failed) are left as known. An entry offered at
// a pin other than its policy's keeps the approved definition (see
// Listed.Approved). known is not modified.
func MergeListed(s Server, known map[string]ListedEntry, offered []Listed, unlisted []ListedKind, at time.Time) []ListedEntry {
	at = at.UTC()
	skip := map[ListedKind]bool{}
	for _, k := range unlisted {
		skip[k] = true
	}
	out := make([]ListedEntry, 0, len(offered))
	seen := map[string]bool{}
	for _, l := range offered {
		if skip[l.Kind] {
			continue
		}
		k := ListedKey(l.Kind, l.Key)
		seen[k] = true
		l.FirstSeen, l.LastSeen = at, at
		old, ok := known[k]
		if ok {
			l.FirstSeen = old.FirstSeen
		}
		e := ListedEntry{Listed: l, Policy: old.Policy}
		if e.Policy.Policy == "" {
			e.Policy = PolicySetting{Policy: s.DefaultPolicy, Pin: l.Pin, SetBy: PolicySetByDefault, SetAt: at}
			if e.Policy.Policy == "" {
				e.Policy.Policy = PolicyAsk
			}
		}
		if ok && e.Policy.Pin != l.Pin {
			e.Approved = old.approvedRaw()
		}
		e.State = mergedState(l.State, e.Policy, l.Pin)
		e.Effective = EffectivePolicy(Tool{State: e.State}, e.Policy)
		out = append(out, e)
	}
	for k, e := range known {
		if seen[k] || skip[e.Kind] {
			continue
		}
		e.State = ToolMissing
		e.Effective = EffectivePolicy(Tool{State: e.State}, e.Policy)
		out = append(out, e)
	}
	return out
}
