package views

import "strings"

// ListedItem is one resource, resource template or prompt row of the
// server page. Kind is "resource", "resource_template" or "prompt"; Key
// is its URI, URI template or name (data only, never an id or selector).
type ListedItem struct {
	Kind        string
	Key         string
	Name        string
	Title       string
	Description string
	MIMEType    string
	Size        string
	Arguments   []ListedArgument
	State       string
	Problems    []string
	Policy      string
	Effective   string
	// Pin is the version listed; a changed entry's review is at
	// ChangeAnchor(Pin) on the server's changes page.
	Pin string
}

// ChangeAnchor is the element id of the review of a listed entry's
// version pin on the changes page. A pin is Switchboard's own hex digest,
// never text a server sent.
func ChangeAnchor(pin string) string { return "change-" + pin }

// ListedArgument is one argument of a prompt.
type ListedArgument struct {
	Name        string
	Description string
	Required    bool
}

// HasHidden reports whether the entry's key, name, title, description or
// arguments hold characters a reader would not see.
func (l ListedItem) HasHidden() bool {
	for _, s := range append([]string{l.Key, l.Name, l.Title, l.Description, l.MIMEType}, l.argTexts()...) {
		if hasHidden(s) {
			return true
		}
	}
	return false
}

// InjectionMarkers returns the prompt-injection markers in the entry's
// texts.
func (l ListedItem) InjectionMarkers() []string {
	return InjectionMarkers(strings.Join(append([]string{l.Title, l.Description}, l.argTexts()...), "\n"))
}

func (l ListedItem) argTexts() []string {
	var out []string
	for _, a := range l.Arguments {
		out = append(out, a.Name, a.Description)
	}
	return out
}

// listedOf returns the items of one kind.
func listedOf(items []ListedItem, kind string) []ListedItem {
	var out []ListedItem
	for _, l := range items {
		if l.Kind == kind {
			out = append(out, l)
		}
	}
	return out
}

// KindTitle names a kind of listed entry, as the review names it.
func KindTitle(kind string) string {
	for _, sec := range listedSections {
		if sec.Kind == kind {
			return strings.ToLower(sec.Title[:1]) + sec.Title[1:len(sec.Title)-1]
		}
	}
	return kind
}

// listedSection is one of the server page's sections of listed entries.
type listedSection struct {
	Kind, Title, TestID, KeyLabel string
	// Policy says people set the entries' policies here.
	Policy bool
}

// listedSections are the sections, in page order.
var listedSections = []listedSection{
	{"resource", "Resources", "resources", "URI", true},
	{"resource_template", "Resource templates", "resource-templates", "URI template", true},
	{"prompt", "Prompts", "prompts", "Name", true},
}
