package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gowebpki/jcs"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/switchboard-dev/switchboard/store"
)

// Resources and prompts are offered beside the tools, by the same rules:
// an entry (a resource, resource template or prompt, see store.Listed) is
// offered when its server's tools would be (enabled, launch confirmed, no
// lasting failure) and it is active at its approved pin with an effective
// policy of allow or ask. Each is offered under a name of its own, so that
// entries of different servers never meet:
//
//   - a prompt as an agent name, server__prompt (store.AgentName);
//   - a resource, or resource template, under switchboard://<server id>/
//     followed by its URI (or URI template) on the server, which an agent
//     expands as the server's own (the prefix has no expressions).
//
// Agents also reach an entry by its own name or URI when exactly one
// server of their view offers it: the URIs in tool results and prompt
// messages are the servers' own, and a client reads them as they are.
// resources/read and prompts/get go through the pool to the server, after
// the profile, the policy (a person is asked on ask) and the call log, as
// a tool call does. The lists come from the offer, never from a server.
//
// A profile's view takes the entries of the servers it takes: all of them
// for "all", those of its servers for "servers", and none for "tools" (a
// profile of chosen tools is exactly those tools).

// uriPrefix starts every resource URI and URI template offered.
const uriPrefix = "switchboard://"

// NamespacedURI is the URI (or URI template) agents are offered a
// server's resource (or template) under; an MCP App's ui:// resource
// keeps its scheme (see store.UIResourceURI), as tools' _meta name it.
func NamespacedURI(serverID, uri string) string {
	if strings.HasPrefix(uri, uiPrefix) {
		return store.UIResourceURI(serverID, uri)
	}
	return uriPrefix + serverID + "/" + uri
}

// uiPrefix starts an MCP App's resource URI.
const uiPrefix = "ui://"

// splitURI reverses NamespacedURI; ok is false for a URI that is not one.
// (A ui:// URI may also be a server's own, which an agent may name too:
// see resource.)
func splitURI(u string) (serverID, uri string, ok bool) {
	if rest, isUI := strings.CutPrefix(u, uiPrefix); isUI {
		serverID, rest, ok = strings.Cut(rest, "/")
		return serverID, uiPrefix + rest, ok && serverID != "" && rest != ""
	}
	rest, ok := strings.CutPrefix(u, uriPrefix)
	if !ok {
		return "", "", false
	}
	serverID, uri, ok = strings.Cut(rest, "/")
	return serverID, uri, ok && serverID != "" && uri != ""
}

// offeredListed is a listed entry as the offer holds it.
type offeredListed struct {
	ref     store.ListedRef
	offered string // the name or URI (template) agents are offered it under
	def     []byte // its object in its list, named as offered
	policy  store.Policy
	tmpl    *uritemplate.Template // a template's, matching its server's URIs
	// withheld, for a resource the server lists that is not offered, is
	// why (see listedRefusal): it is no entry of the lists, but a read of
	// its URI is refused with that reason rather than through a template
	// that matches it.
	withheld string
}

// listedMethods are the methods that list entries, with their kinds and
// the keys of their lists in a result.
var listedMethods = []struct {
	method mcp.MCPMethod
	kind   store.ListedKind
	key    string
}{
	{mcp.MethodResourcesList, store.KindResource, "resources"},
	{mcp.MethodResourcesTemplatesList, store.KindResourceTemplate, "resourceTemplates"},
	{mcp.MethodPromptsList, store.KindPrompt, "prompts"},
}

// listing is one view's resources, resource templates and prompts.
type listing struct {
	lists map[mcp.MCPMethod][]byte // each list's JSON array, by method
	// resourcesHash and promptsHash change when the resources (with the
	// templates) or the prompts offered do.
	resourcesHash, promptsHash string
	// offered has the entries by ListedKey of their kind and the name or
	// URI they are offered under; bare by ListedKey of their kind and
	// their key on their server (for the names of several servers, all).
	offered   map[string]*offeredListed
	bare      map[string][]*offeredListed
	templates []*offeredListed
	entries   []*offeredListed // in the offer's order, for Preview
	// withheld are the resources not offered, by offered URI and by URI
	// on their server: why each is not (see offeredListed.withheld).
	withheld map[string]string
}

// listedDefinition is the entry of server as agents get it: the canonical
// JSON (RFC 8785) of the definition approved, named as offered, without
// icons (they are URLs).
func listedDefinition(serverID string, e store.ListedEntry) (*offeredListed, error) {
	canon, err := jcs.Transform(e.Raw)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(canon, &fields); err != nil {
		return nil, err
	}
	ol := &offeredListed{ref: store.ListedRef{ServerID: serverID, Kind: e.Kind, Key: e.Key}, policy: e.Effective}
	field := "uri"
	switch e.Kind {
	case store.KindPrompt:
		ol.offered, field = store.AgentName(serverID, e.Key), "name"
	case store.KindResourceTemplate:
		if ol.tmpl, err = uritemplate.New(e.Key); err != nil {
			return nil, fmt.Errorf("its URI template: %w", err)
		}
		ol.offered, field = NamespacedURI(serverID, e.Key), "uriTemplate"
	default:
		ol.offered = NamespacedURI(serverID, e.Key)
	}
	fields[field], _ = json.Marshal(ol.offered)
	delete(fields, "icons")
	ol.def, err = json.Marshal(fields) // sorted keys, as canonical JSON has them
	return ol, err
}

// listedRefusal says why an entry is not offered (who decides, and
// why), or "" if it is (see refusal).
func listedRefusal(sum *store.Summary, e store.ListedEntry) (by, reason string) {
	if by, reason = serverRefusal(sum); reason != "" {
		return by, reason
	}
	noun := strings.ReplaceAll(string(e.Kind), "_", " ")
	switch {
	case e.State == store.ToolChanged || e.State == store.ToolActive && e.Pin != e.Policy.Pin:
		return bySwitch, "the " + noun + "'s definition changed since it was approved; a person must review the change"
	case e.State.Flagged():
		return bySwitch, "the " + noun + " is " + string(e.State) + ": it " + strings.Join(e.Problems, "; it ")
	case e.State != store.ToolActive:
		return bySwitch, "the " + noun + " is " + string(e.State)
	case e.Effective != store.PolicyAllow && e.Effective != store.PolicyAsk:
		return byPolicy, "the " + noun + "'s policy is deny"
	case len(e.Raw) == 0:
		return bySwitch, "the " + noun + " has no definition to offer"
	}
	return "", ""
}

// buildListed reads the entries offered, in the store's order (by
// server, then kind, then key).
func (e *Endpoint) buildListed(ctx context.Context) ([]*offeredListed, error) {
	var out []*offeredListed
	_, err := e.st.ListedCatalog(ctx, func(sum *store.Summary, en store.ListedEntry) error {
		if _, reason := listedRefusal(sum, en); reason != "" {
			if en.Kind == store.KindResource {
				ref := store.ListedRef{ServerID: sum.Server.ID, Kind: en.Kind, Key: en.Key}
				out = append(out, &offeredListed{ref: ref, offered: NamespacedURI(sum.Server.ID, en.Key), withheld: reason})
			}
			return nil
		}
		ol, err := listedDefinition(sum.Server.ID, en)
		if err != nil {
			e.log.Warn("entry left out of the MCP offer", "server", sum.Server.ID, "kind", en.Kind, "key", en.Key, "err", err)
			return nil
		}
		out = append(out, ol)
		return nil
	})
	return out, err
}

// buildListing is the listing of profile p of the entries offered.
func buildListing(p store.Profile, entries []*offeredListed) *listing {
	l := &listing{lists: map[mcp.MCPMethod][]byte{}, offered: map[string]*offeredListed{}, bare: map[string][]*offeredListed{}, withheld: map[string]string{}}
	lists := map[store.ListedKind]*bytes.Buffer{}
	for _, m := range listedMethods {
		lists[m.kind] = bytes.NewBufferString("[")
	}
	for _, ol := range entries {
		if !p.IncludesServer(ol.ref.ServerID) {
			continue
		}
		if ol.withheld != "" {
			l.withheld[ol.offered] = ol.withheld
			l.withheld[ol.ref.Key] = ol.withheld
			continue
		}
		buf := lists[ol.ref.Kind]
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		buf.Write(ol.def)
		l.entries = append(l.entries, ol)
		l.offered[store.ListedKey(ol.ref.Kind, ol.offered)] = ol
		bare := store.ListedKey(ol.ref.Kind, ol.ref.Key)
		l.bare[bare] = append(l.bare[bare], ol)
		if ol.tmpl != nil {
			l.templates = append(l.templates, ol)
		}
	}
	for _, m := range listedMethods {
		l.lists[m.method] = append(lists[m.kind].Bytes(), ']')
	}
	l.resourcesHash = hashOf(l.lists[mcp.MethodResourcesList], l.lists[mcp.MethodResourcesTemplatesList])
	l.promptsHash = hashOf(l.lists[mcp.MethodPromptsList])
	return l
}

func hashOf(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// notOffered is a name or URI no entry of the view answers to.
type notOffered struct{ message string }

func (e *notOffered) Error() string { return e.message }

// prompt is the prompt an agent asked for by name: the one offered under
// it, or the one of that name on its server if only one server of the
// view offers one.
func (l *listing) prompt(name string) (*offeredListed, error) {
	if ol, ok := l.offered[store.ListedKey(store.KindPrompt, name)]; ok {
		return ol, nil
	}
	return one(l.bare[store.ListedKey(store.KindPrompt, name)], fmt.Sprintf("no prompt is offered as %q", name))
}

// resource is the entry a resources/read of uri reads, and the URI to
// read on its server: the resource offered under uri, or one whose
// template of the same server matches it; for a URI that is not
// namespaced, the resource of that URI, or the template matching it, of
// the only server of the view that has one.
func (l *listing) resource(uri string) (*offeredListed, string, error) {
	missing := fmt.Sprintf("no resource is offered at %q", uri)
	if serverID, upstream, ok := splitURI(uri); ok {
		if ol, ok := l.offered[store.ListedKey(store.KindResource, uri)]; ok {
			return ol, upstream, nil
		}
		if reason, ok := l.withheld[uri]; ok { // never through a template
			return nil, "", &notOffered{"not offered: " + reason}
		}
		for _, ol := range l.templates {
			if ol.ref.ServerID == serverID && ol.tmpl.Regexp().MatchString(upstream) {
				return ol, upstream, nil
			}
		}
		// A ui:// URI that names no server of the view may be a server's
		// own; one that names one is that server's, or nothing: never
		// another server's page under its name.
		if !strings.HasPrefix(uri, uiPrefix) || slices.ContainsFunc(l.entries, func(ol *offeredListed) bool { return ol.ref.ServerID == serverID }) {
			return nil, "", &notOffered{missing}
		}
	}
	if found := l.bare[store.ListedKey(store.KindResource, uri)]; len(found) > 0 {
		ol, err := one(found, missing)
		return ol, uri, err
	}
	if reason, ok := l.withheld[uri]; ok {
		return nil, "", &notOffered{"not offered: " + reason}
	}
	var matched []*offeredListed
	for _, ol := range l.templates {
		if ol.tmpl.Regexp().MatchString(uri) && !slices.ContainsFunc(matched, func(m *offeredListed) bool { return m.ref.ServerID == ol.ref.ServerID }) {
			matched = append(matched, ol) // a server's first template that matches
		}
	}
	ol, err := one(matched, missing)
	return ol, uri, err
}

// template is the resource template an agent named by its URI template:
// the one offered under it, or the one of that template on its server if
// only one server of the view has it.
func (l *listing) template(uri string) (*offeredListed, error) {
	if ol, ok := l.offered[store.ListedKey(store.KindResourceTemplate, uri)]; ok {
		return ol, nil
	}
	return one(l.bare[store.ListedKey(store.KindResourceTemplate, uri)], fmt.Sprintf("no resource template is offered as %q", uri))
}

// one is the only entry of found; for none, a notOffered of missing; for
// several (of several servers), a notOffered naming each as offered.
func one(found []*offeredListed, missing string) (*offeredListed, error) {
	switch len(found) {
	case 0:
		return nil, &notOffered{missing}
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, ol := range found {
		names[i] = ol.offered
	}
	return nil, &notOffered{fmt.Sprintf("several servers offer it; ask for one of %s", strings.Join(names, ", "))}
}

// OfferedEntry is a resource, resource template or prompt as a profile
// offers it (see Endpoint.PreviewListed): Name is the name or URI (or URI
// template) agents are offered it under, Key its own on its server.
type OfferedEntry struct {
	Kind     store.ListedKind `json:"kind"`
	Name     string           `json:"name"`
	ServerID string           `json:"server_id"`
	Key      string           `json:"key"`
	Policy   store.Policy     `json:"effective_policy"`
}

// PreviewListed is the resources, resource templates and prompts the
// profile with the id offers now, by server, then kind, then key; ok
// false if there is no such profile.
func (e *Endpoint) PreviewListed(id string) (entries []OfferedEntry, ok bool, err error) {
	v, err := e.savedView(id)
	if v == nil {
		return nil, false, err
	}
	entries = []OfferedEntry{}
	for _, ol := range v.listing.entries {
		entries = append(entries, OfferedEntry{Kind: ol.ref.Kind, Name: ol.offered, ServerID: ol.ref.ServerID, Key: ol.ref.Key, Policy: ol.policy})
	}
	return entries, true, nil
}
