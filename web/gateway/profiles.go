package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/toolsearch"
	"github.com/switchboard-dev/switchboard/store"
)

// Each connected client's token belongs to a profile (store.Profile): a
// view of the offer. The offer holds one view per profile, built with
// it: the tools the profile takes, each under the stricter of its
// effective policy and the profile's override, those denied left out.
// tools/list answers with the view of the request's token, a call of a
// tool outside the view is refused as a call of an unknown tool, and a
// notifications/tools/list_changed reaches a session or listen stream
// only when the view of its token changed (see viewChanged).

// view is what one profile's agents are offered.
type view struct {
	profile store.Profile
	list    []byte // the JSON array of tool objects
	hash    string // of list
	tools   map[string]json.RawMessage
	offered []OfferedTool
	// asking are its listed tools offered only to an agent that declares
	// what they need (see needs.go): in tools, not in list; needs is what
	// each of its tools that needs something needs, listed or (in search
	// mode) found by search.
	asking []askingTool
	needs  map[string][]string
	// In search mode (see search.go), list and tools are what is listed,
	// entries every tool of the view by agent name, allHash the hash of
	// their list and searcher the profile's index of them.
	entries  map[string]offeredTool
	allHash  string
	searcher *toolsearch.Searcher
	// listing is its resources, resource templates and prompts (see
	// listed.go).
	listing *listing
}

// viewHashes are the hashes of a view's lists, by the method of the
// notification that tells of a change of each.
type viewHashes map[string]string

// listChangedMethods are the notifications of a change of a list.
var listChangedMethods = []string{string(mcp.MethodNotificationToolsListChanged),
	mcp.MethodNotificationResourcesListChanged, mcp.MethodNotificationPromptsListChanged}

// hashes is the hashes of v's lists.
func (v *view) hashes() viewHashes {
	return viewHashes{listChangedMethods[0]: v.hash, listChangedMethods[1]: v.listing.resourcesHash, listChangedMethods[2]: v.listing.promptsHash}
}

// OfferedTool is a tool as a profile offers it (see Endpoint.Preview).
type OfferedTool struct {
	AgentName string       `json:"agent_name"`
	ServerID  string       `json:"server_id"`
	Tool      string       `json:"tool"`
	Title     string       `json:"title,omitempty"`
	Policy    store.Policy `json:"effective_policy"`
}

// offerEntry is one offered tool, as the build found it.
type offerEntry struct {
	tool  OfferedTool
	def   offeredTool
	needs []string // see store.Tool.Needs
}

// buildView is the view of profile p of the offered entries.
func buildView(p store.Profile, entries []offerEntry) *view { return buildViewOf(p, entries, nil, "") }

// buildViewOf is buildView given all, the list of every entry (or nil),
// and its hash: a view of every entry shares them rather than copy and
// hash it again.
func buildViewOf(p store.Profile, entries []offerEntry, all []byte, allHash string) *view {
	v := &view{profile: p, tools: map[string]json.RawMessage{}, offered: []OfferedTool{}, listing: buildListing(p, nil)}
	var defs [][]byte
	for _, en := range entries {
		ref := store.ToolRef{ServerID: en.tool.ServerID, Tool: en.tool.Tool}
		pol := p.Policy(ref, en.tool.Policy)
		if !p.Includes(ref) || pol == store.PolicyDeny {
			continue
		}
		if en.needs != nil {
			v.asking = append(v.asking, askingTool{name: en.tool.AgentName, def: en.def.def, needs: en.needs})
			if v.needs == nil {
				v.needs = map[string][]string{}
			}
			v.needs[en.tool.AgentName] = en.needs
		} else {
			defs = append(defs, en.def.def)
		}
		v.tools[en.tool.AgentName] = en.def.inputSchema
		t := en.tool
		t.Policy = pol
		v.offered = append(v.offered, t)
	}
	if len(defs) == len(entries) && all != nil {
		v.list, v.hash = all, allHash
	} else {
		v.list = append(append([]byte{'['}, joinDefs(defs)...), ']')
		v.hash = listHash(v.list, v.asking)
	}
	if p.Search {
		v.allHash, v.entries = v.hash, map[string]offeredTool{}
		var in []offerEntry
		v.asking = nil // searchList keeps those pinned
		for _, en := range entries {
			if _, ok := v.tools[en.tool.AgentName]; ok {
				v.entries[en.tool.AgentName] = en.def
				in = append(in, en)
			}
		}
		searchList(v, in)
	}
	return v
}

// view is the view of the profile with the id ("" is the default): one
// that offers nothing if there is no such profile (a token's profile
// cannot be deleted, so only until the tokens are read again).
func (o *offer) view(id string) *view {
	if v, ok := o.views[cmp.Or(id, store.DefaultProfile)]; ok {
		return v
	}
	p := store.Profile{ID: id, Mode: store.ProfileTools}
	return &view{profile: p, list: []byte("[]"), tools: map[string]json.RawMessage{}, offered: []OfferedTool{}, listing: buildListing(p, nil)}
}

// viewsChanged reports whether a profile's list that the notification
// method tells of differs between two offers.
func viewsChanged(old, o *offer, method string) bool {
	if len(old.views) != len(o.views) {
		return true
	}
	for id, v := range o.views {
		if ov, ok := old.views[id]; !ok || ov.hashes()[method] != v.hashes()[method] {
			return true
		}
	}
	return false
}

// profileOf is the id of the profile of the token that made the request
// in ctx: the connected client's, or the default.
func profileOf(ctx context.Context) string {
	ct, _ := connectedClient(ctx)
	return cmp.Or(ct.Profile, store.DefaultProfile)
}

// profile is the profile with the id as the current offer has it; the
// default for "" (Try it).
func (e *Endpoint) profile(id string) (store.Profile, error) {
	o, err := e.current()
	if err != nil {
		return store.Profile{}, err
	}
	return o.view(id).profile, nil
}

// viewHashes is the hashes of the current view of the profile (none if
// the store cannot be read).
func (e *Endpoint) viewHashes(profile string) viewHashes {
	o, err := e.current()
	if err != nil {
		return nil
	}
	return o.view(profile).hashes()
}

// Preview is what the profile with the id offers now, in the offer's
// order (by server, then tool); ok false if there is no such profile.
func (e *Endpoint) Preview(id string) (tools []OfferedTool, ok bool, err error) {
	v, err := e.savedView(id)
	if v == nil {
		return nil, false, err
	}
	return v.offered, true, nil
}

// savedView is the current view of the profile with the id; nil if there
// is no such profile, or (with the error) if the store cannot be read.
func (e *Endpoint) savedView(id string) (*view, error) {
	o, err := e.current()
	if err != nil {
		return nil, err
	}
	return o.views[id], nil
}

// viewSeen is the hashes of the lists a session or listen stream's agent
// was last told of (or that were current when it came).
type viewSeen struct {
	mu   sync.Mutex
	last viewHashes
}

// changed reports, for a list_changed event of method to write, whether
// the agent is to be told, its view's hashes being now.
func (s *viewSeen) changed(method string, now viewHashes) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last.changed(method, now)
}

// changed reports whether an agent last told of the lists *h is to be
// told of a list_changed of method, the hashes being now, and records
// that it was.
func (h *viewHashes) changed(method string, now viewHashes) bool {
	if *h == nil {
		*h = viewHashes{}
	}
	if last, ok := (*h)[method]; ok && last == now[method] {
		return false
	}
	(*h)[method] = now[method]
	return true
}

// Profile input limits.
const maxProfileName = 100

// CheckProfile checks a profile a person wrote against the catalog now,
// and returns what is wrong with it by field (id, name, mode, servers,
// tools, overrides, pinned), or nil: a slug id, a name, a known mode; chosen
// servers and tools that exist; overrides of ask or deny, each of a tool
// of the view and stricter than its effective policy now; pinned tools of
// the view.
func (e *Endpoint) CheckProfile(ctx context.Context, p store.Profile) (map[string]string, error) {
	bad := map[string]string{}
	if !store.ValidApprovals(p.Approvals) {
		bad["approvals"] = `must be "client", "dashboard" or "" (dashboard only when the profile narrows the view)`
	}
	switch {
	case p.ID == store.DefaultProfile:
		bad["id"] = "the default profile is built in; choose another id"
	case !store.ValidProfileID(p.ID):
		bad["id"] = "an id is 1 to 32 of a-z, 0-9 and -, starting with a letter or digit"
	}
	if name := strings.TrimSpace(p.Name); name == "" || utf8.RuneCountInString(name) > maxProfileName || !utf8.ValidString(name) {
		bad["name"] = "a profile needs a name of 1 to 100 characters"
	}
	servers := map[string]bool{}
	effective := map[store.ToolRef]store.Policy{}
	if _, err := e.st.Catalog(ctx, func(sum *store.Summary, t store.ToolEntry) error {
		servers[sum.Server.ID] = true
		effective[store.ToolRef{ServerID: t.ServerID, Tool: t.Name}] = t.Effective
		return nil
	}); err != nil {
		return nil, err
	}
	sums, err := e.st.Summaries(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range sums {
		servers[s.Server.ID] = true
	}
	switch p.Mode {
	case store.ProfileAll:
	case store.ProfileServers:
		if len(p.Servers) == 0 {
			bad["servers"] = "choose at least one server"
		}
		for _, id := range p.Servers {
			if !servers[id] {
				bad["servers"] = fmt.Sprintf("there is no server %q", id)
				break
			}
		}
	case store.ProfileTools:
		if len(p.Tools) == 0 {
			bad["tools"] = "choose at least one tool"
		}
		for _, ref := range p.Tools {
			if _, ok := effective[ref]; !ok {
				bad["tools"] = fmt.Sprintf("there is no tool %q on server %q", ref.Tool, ref.ServerID)
				break
			}
		}
	default:
		bad["mode"] = `the mode is "all", "servers" or "tools"`
	}
	for _, ref := range p.Pinned {
		if _, ok := effective[ref]; !ok || !p.Includes(ref) || p.Policy(ref, effective[ref]) == store.PolicyDeny {
			bad["pinned"] = fmt.Sprintf("%s/%s is not in the profile's view; a pinned tool must be", ref.ServerID, ref.Tool)
			break
		}
	}
	refs := make([]store.ToolRef, 0, len(p.Overrides))
	for ref := range p.Overrides {
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, func(a, b store.ToolRef) int {
		return cmp.Or(strings.Compare(a.ServerID, b.ServerID), strings.Compare(a.Tool, b.Tool))
	})
	for _, ref := range refs {
		pol := p.Overrides[ref]
		now, ok := effective[ref]
		switch {
		case pol != store.PolicyAsk && pol != store.PolicyDeny:
			bad["overrides"] = fmt.Sprintf("the override of %s/%s is %q; an override is ask or deny", ref.ServerID, ref.Tool, pol)
		case !ok:
			bad["overrides"] = fmt.Sprintf("there is no tool %q on server %q", ref.Tool, ref.ServerID)
		case !p.Includes(ref):
			bad["overrides"] = fmt.Sprintf("%s/%s is not in the profile's view", ref.ServerID, ref.Tool)
		case store.Stricter(now, pol) == now:
			bad["overrides"] = fmt.Sprintf("the override of %s/%s (%s) is not stricter than its policy now (%s)", ref.ServerID, ref.Tool, pol, now)
		default:
			continue
		}
		break
	}
	if len(bad) == 0 {
		return nil, nil
	}
	return bad, nil
}
