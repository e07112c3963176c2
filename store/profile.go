package store

import (
	"cmp"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A profile is a named view of the catalog that agents are offered: all
// of it, the tools of chosen servers, or chosen tools, with policy
// overrides that can only make a tool stricter. Each connected client's
// token belongs to one profile (ClientToken.Profile); the endpoint's own
// token, and a token of no profile, see DefaultProfile.

// DefaultProfile is the id of the built-in profile: everything offered,
// no overrides. It is not stored, and cannot be changed or deleted.
const DefaultProfile = "default"

// Profile modes: what of the catalog a profile takes.
const (
	ProfileAll     = "all"     // every offered tool
	ProfileServers = "servers" // the offered tools of Servers
	ProfileTools   = "tools"   // the offered tools among Tools
)

// Errors about profiles.
var (
	ErrProfileNotFound = errors.New("store: profile not found")
	ErrProfileExists   = errors.New("store: a profile with this id already exists")
	// ErrProfileInUse: a profile that connected clients' tokens belong
	// to is not deleted; revoke or reconnect them first.
	ErrProfileInUse = errors.New("store: connected clients use this profile; disconnect them first")
	// ErrProfileBuiltIn: the default profile cannot be changed or
	// deleted.
	ErrProfileBuiltIn = errors.New("store: the default profile is built in and cannot be changed")
)

// Profile is a named view of the catalog (see above).
type Profile struct {
	ID      string    `json:"id"` // a slug, as a server id
	Name    string    `json:"name"`
	Mode    string    `json:"mode"`              // ProfileAll, ProfileServers or ProfileTools
	Servers []string  `json:"servers,omitempty"` // for ProfileServers
	Tools   []ToolRef `json:"tools,omitempty"`   // for ProfileTools
	// Overrides make tools of the view stricter: ask or deny. The policy
	// that applies is the stricter of the override and the tool's
	// effective policy at the time of use (see Policy).
	Overrides map[ToolRef]Policy `json:"overrides,omitempty"`
	// Search is search mode: the agent is offered search_tools and
	// call_tool (and the Pinned tools) instead of the view's tools, which
	// it finds with search_tools and calls through call_tool.
	Search bool `json:"search,omitempty"`
	// Pinned are tools of the view listed as well in search mode.
	Pinned []ToolRef `json:"pinned,omitempty"`
	// Approvals says where its clients' calls to ask tools may be
	// answered, unless a client's token says (see InClientApprovals).
	Approvals string `json:"approvals,omitempty"`
	// Approvers, if any, are the only people (by email) who may answer
	// its clients' calls that wait for a person; their calls are then
	// never answered in the agent's own client.
	Approvers []string  `json:"approvers,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// profileSlug is the syntax of a profile id (that of a server id).
var profileSlug = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// ValidProfileID reports whether id is a profile id's syntax.
func ValidProfileID(id string) bool { return profileSlug.MatchString(id) }

// Default is the built-in profile (see DefaultProfile).
func Default() Profile {
	return Profile{ID: DefaultProfile, Name: "Everything offered", Mode: ProfileAll}
}

// Includes reports whether the profile's view takes the tool ref (an
// offered one: the profile does not make a tool offered).
func (p Profile) Includes(ref ToolRef) bool {
	switch p.Mode {
	case ProfileServers:
		return slices.Contains(p.Servers, ref.ServerID)
	case ProfileTools:
		return slices.Contains(p.Tools, ref)
	}
	return true // ProfileAll, and the zero Profile
}

// IncludesServer reports whether the profile's view takes the
// resources and prompts of the server with the id: every server's for
// ProfileAll, its servers' for ProfileServers, and none for ProfileTools
// (a view of chosen tools is exactly those tools).
func (p Profile) IncludesServer(id string) bool {
	switch p.Mode {
	case ProfileServers:
		return slices.Contains(p.Servers, id)
	case ProfileTools:
		return false
	}
	return true
}

// Narrows reports whether the profile gives less than everything
// offered: chosen servers or tools, or overrides that make tools
// stricter.
func (p Profile) Narrows() bool { return p.Mode != ProfileAll || len(p.Overrides) > 0 }

// Policy is the policy that applies to ref under the profile, when its
// effective policy is effective: the stricter of the two.
func (p Profile) Policy(ref ToolRef, effective Policy) Policy {
	if o, ok := p.Overrides[ref]; ok {
		return Stricter(effective, o)
	}
	return effective
}

// profileOverride is one override as JSON has it (a map cannot have a
// ToolRef key there).
type profileOverride struct {
	ServerID string `json:"server_id"`
	Tool     string `json:"tool"`
	Policy   Policy `json:"policy"`
}

// profileJSON is Profile with its overrides as a list, sorted.
type profileJSON struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Mode      string            `json:"mode"`
	Servers   []string          `json:"servers"`
	Tools     []toolRefJSON     `json:"tools"`
	Overrides []profileOverride `json:"overrides"`
	Search    bool              `json:"search"`
	Pinned    []toolRefJSON     `json:"pinned"`
	Approvals string            `json:"approvals,omitempty"`
	Approvers []string          `json:"approvers,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
}

type toolRefJSON struct {
	ServerID string `json:"server_id"`
	Tool     string `json:"tool"`
}

// MarshalJSON encodes the profile with its tools and overrides as lists
// of {server_id, tool[, policy]}, overrides in (server, tool) order.
func (p Profile) MarshalJSON() ([]byte, error) {
	j := profileJSON{ID: p.ID, Name: p.Name, Mode: p.Mode, Servers: p.Servers, Tools: []toolRefJSON{}, Overrides: []profileOverride{},
		Search: p.Search, Pinned: []toolRefJSON{}, Approvals: p.Approvals, Approvers: p.Approvers, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	if j.Servers == nil {
		j.Servers = []string{}
	}
	for _, r := range p.Tools {
		j.Tools = append(j.Tools, toolRefJSON(r))
	}
	for _, r := range p.Pinned {
		j.Pinned = append(j.Pinned, toolRefJSON(r))
	}
	for r, pol := range p.Overrides {
		j.Overrides = append(j.Overrides, profileOverride{ServerID: r.ServerID, Tool: r.Tool, Policy: pol})
	}
	slices.SortFunc(j.Overrides, func(a, b profileOverride) int {
		return cmp.Or(strings.Compare(a.ServerID, b.ServerID), strings.Compare(a.Tool, b.Tool))
	})
	return json.Marshal(j)
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (p *Profile) UnmarshalJSON(b []byte) error {
	var j profileJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = Profile{ID: j.ID, Name: j.Name, Mode: j.Mode, Search: j.Search, Approvals: j.Approvals, Approvers: j.Approvers, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt}
	if len(j.Servers) > 0 {
		p.Servers = j.Servers
	}
	for _, r := range j.Tools {
		p.Tools = append(p.Tools, ToolRef(r))
	}
	for _, r := range j.Pinned {
		p.Pinned = append(p.Pinned, ToolRef(r))
	}
	if len(j.Overrides) > 0 {
		p.Overrides = make(map[ToolRef]Policy, len(j.Overrides))
		for _, o := range j.Overrides {
			p.Overrides[ToolRef{ServerID: o.ServerID, Tool: o.Tool}] = o.Policy
		}
	}
	return nil
}
