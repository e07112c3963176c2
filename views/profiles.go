package views

import (
	"strings"

	"github.com/a-h/templ"
)

// ProfilesView is the Profiles page: each profile with how many tools
// it offers now and how many connected clients belong to it.
type ProfilesView struct {
	Profiles []ProfileRow
}

// ProfileRow is one profile in the list.
type ProfileRow struct {
	ID, Name, Mode string
	BuiltIn        bool
	Offered        int
	Clients        int
}

// ProfileFormView is a profile's form (new, or editing ID) with what it
// offers now (Preview, when saved) and the person's input and its
// errors by field when saving failed.
type ProfileFormView struct {
	Edit     bool
	ID, Name string
	Mode     string
	// Search is search mode (see store.Profile.Search).
	Search bool
	// Approvals is where its clients' calls to ask tools are answered
	// (see store.Profile.Approvals).
	Approvals string
	// Approvers are the emails of the only people who answer its calls
	// ("" for anyone who may), as typed.
	Approvers string
	Servers   []ProfileServer
	Errors    map[string]string
	Preview   []ProfileTool
	// PreviewListed is the resources, resource templates and prompts it
	// offers now.
	PreviewListed []ProfileEntry
}

// ProfileEntry is a resource, resource template or prompt a profile
// offers, under Name.
type ProfileEntry struct {
	Kind, Name, ServerID, Policy string
}

// ProfileServer is a server in the form's picker, with its tools.
type ProfileServer struct {
	ID, Name string
	Chosen   bool
	Tools    []ProfileToolChoice
}

// Picked reports whether a tool of the server is chosen or has an
// override: its tools are shown open.
func (s ProfileServer) Picked() bool {
	for _, t := range s.Tools {
		if t.Chosen || t.Pinned || t.Override != "" {
			return true
		}
	}
	return false
}

// ProfileToolChoice is a tool in the picker: Key names it in the form
// (server id, a space, tool name); Policy is its effective policy now,
// Override the profile's ("" for none); Pinned is listed in search mode.
type ProfileToolChoice struct {
	Name, Key        string
	Chosen, Pinned   bool
	Policy, Override string
}

// ProfileTool is a tool a profile offers now, as its agents see it.
type ProfileTool struct {
	AgentName, ServerID, Tool, Policy string
	// Pinned is listed in search mode (the other tools are found with
	// search_tools).
	Pinned bool
}

// profileModes are the form's modes with their titles.
var profileModes = []Option{
	{Value: "all", Title: "Everything offered"},
	{Value: "servers", Title: "The tools of chosen servers"},
	{Value: "tools", Title: "Chosen tools"},
}

// pinnedNote names the pinned tools of a search-mode preview, as the end
// of a sentence ("" if none).
func pinnedNote(tools []ProfileTool) string {
	var names []string
	for _, t := range tools {
		if t.Pinned {
			names = append(names, t.AgentName)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return ", and the pinned " + strings.Join(names, ", ")
}

func modeTitle(mode string) string {
	for _, m := range profileModes {
		if m.Value == mode {
			return m.Title
		}
	}
	return mode
}

func profileAction(f ProfileFormView) templ.SafeURL {
	if f.Edit {
		return templ.SafeURL("/profiles/" + f.ID)
	}
	return "/profiles"
}
