package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/web/internal/reclaim"
)

// What agents are offered, and what the endpoint answers from it itself,
// without mcp-go: the lists (tools, resources, resource templates,
// prompts), and reads, gets and completions (dispatched by answer to
// fetch.go), and calls of tools not offered (refuseCall).
//
// tools/list is answered from an offer built from the store, never by
// contacting an upstream server. The offer holds every tool that is
// active (its pin is the approved one), whose effective policy is allow
// or ask, of a server that is enabled and whose launch a person
// confirmed; each under its agent name, as the canonical JSON of the
// definition that was approved (icons left out: they are URLs). The
// offer is rebuilt when the store changes, and agents hear
// notifications/tools/list_changed when the offer does: in their session
// (2025-11-25 and earlier), or on a subscriptions/listen stream
// (2026-07-28).
//
// mcp-go's own tools/list encodes each tool through a map, which costs
// ~65 ms for 10 000 tools; the offer keeps the whole list encoded, so a
// tools/list is written from those bytes, for a live session or a valid
// 2026-07-28 request. mcp-go knows two tools only, search_tools and the
// route tool, and every other tools/call reaches the call path through
// the route tool (see routeCall): it holds nothing per offered tool.

// offerTTL and offerScope are the caching fields of a 2026-07-28
// tools/list result (SEP-2549). The offer changes the moment a person
// changes a policy or a verification finds a tool changed, which nothing
// can schedule, so no time can be promised: a client should list again
// before relying on the list, or keep a subscriptions/listen stream open
// and list again on tools/list_changed. The list is what the holder of
// this endpoint's token is offered, so it is private: no shared cache
// may hand it to anyone else.
const (
	offerTTL   = 0
	offerScope = mcp.CacheScopePrivate
)

// offer is what agents are offered at one store revision.
type offer struct {
	revision string
	hash     string // of the JSON array of every offered tool
	// tools is what a call of each offered tool needs, by agent name,
	// and servers the servers they are of, by id: a call of a tool
	// offered reads nothing else (see find).
	tools   map[string]offeredCall
	servers map[string]offeredServer
	// views is each profile's view of it, by profile id (see
	// profiles.go).
	views map[string]*view
}

// offeredServer is a server of offered tools, with its configuration's
// hash (see store.Server.ConfigHash), which each call names.
type offeredServer struct {
	srv    store.Server
	config string
}

// offeredCall is what a call of an offered tool needs of it.
type offeredCall struct {
	serverID, name, pin string
	policy, effective   store.Policy
	needs               []string // see store.Tool.Needs
	// taskSupport is the tool's execution.taskSupport (optional or
	// required: see modern_tasks.go), or "".
	taskSupport mcp.TaskSupport
}

// offeredTool is a tool as the offer holds it: its definition for the
// list and its inputSchema.
type offeredTool struct {
	def         []byte
	inputSchema json.RawMessage
	description string // for search (see search.go)
}

// current returns the offer for the store's current revision, building
// it if the store moved on.
func (e *Endpoint) current() (*offer, error) {
	if o := e.offer.Load(); o != nil && o.revision == e.st.Revision() {
		return o, nil
	}
	e.buildMu.Lock()
	defer e.buildMu.Unlock()
	if o := e.offer.Load(); o != nil && o.revision == e.st.Revision() {
		return o, nil
	}
	o, err := e.build()
	if err != nil {
		return nil, err
	}
	old := e.offer.Swap(o)
	// Tells every agent whose view changed that its list did: each
	// session, and each subscriptions/listen stream that asked for that
	// list (see viewChanged, which passes on only the notifications of a
	// view that changed).
	for i, n := range listChangedMethods { // tools, resources, prompts
		// The first offer's tools are news to a session that initialized
		// before it (one whose view it could not read then).
		if old == nil && i == 0 || old != nil && viewsChanged(old, o, n) {
			e.srv.SendNotificationToAllClients(n, nil)
		}
	}
	return o, nil
}

// build reads the catalog and encodes the offer (buildMu held). The
// agent definitions come from the store as they are offered (see
// store.AgentDefinition), so the list is their concatenation, and every
// tool's definition and input schema are parts of it: the definitions
// are held once, however many views share them.
func (e *Endpoint) build() (*offer, error) {
	ctx := context.Background()
	listed, err := e.buildListed(ctx) // first: a change after it moves the revision read next
	if err != nil {
		return nil, err
	}
	o := &offer{tools: map[string]offeredCall{}, servers: map[string]offeredServer{}}
	list := make([]byte, 0, e.lastListSize) // sized like the last: no growing copies
	list = append(list, '[')
	type span struct{ def, schema [2]int } // where a tool's parts are in list
	var (
		entries []offerEntry
		spans   []span
		// The server of the tools at hand, and whether it offers them
		// (see serverRefusal): the store gives a server's tools one
		// after the other.
		server    string
		servesNow bool
	)
	rev, err := e.st.Offer(ctx, func(sum *store.Summary, t store.OfferedTool) error {
		if sum.Server.ID != server {
			_, reason := serverRefusal(sum)
			server, servesNow = sum.Server.ID, reason == ""
		}
		if !servesNow {
			return nil
		}
		// A tool is offered as its agent definition (see refusal).
		if _, reason := toolRefusal(t.Entry()); reason != "" {
			return nil
		}
		if len(entries) > 0 {
			list = append(list, ',')
		}
		if len(list)+len(t.Definition)+1 > cap(list) {
			// Twice the size, not append's quarter more for a large
			// slice: the first build, sized by no earlier one, would
			// copy the list a dozen times over.
			list = slices.Grow(list, max(cap(list), len(t.Definition)+1))
		}
		at := len(list)
		list = append(list, t.Definition...)
		spans = append(spans, span{def: [2]int{at, len(list)}, schema: [2]int{at + t.SchemaAt[0], at + t.SchemaAt[1]}})
		entries = append(entries, offerEntry{
			tool:  OfferedTool{AgentName: t.AgentName, ServerID: t.ServerID, Tool: t.Name, Title: t.Title, Policy: t.Effective},
			def:   offeredTool{description: t.Description},
			needs: slices.Clip(t.Needs),
		})
		o.tools[t.AgentName] = offeredCall{serverID: t.ServerID, name: t.Name, pin: t.Policy.Pin, policy: t.Policy.Policy, effective: t.Effective, needs: slices.Clip(t.Needs),
			taskSupport: taskSupportOf(t.Definition)}
		if _, ok := o.servers[t.ServerID]; !ok {
			o.servers[t.ServerID] = offeredServer{sum.Server, sum.Server.ConfigHash()}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	list = append(list, ']')
	if cap(list)-len(list) > len(list)/4 { // the list is kept: not its room to grow
		list = bytes.Clone(list)
	}
	e.lastListSize = len(list)
	for i := range entries {
		d, s := spans[i].def, spans[i].schema
		entries[i].def.def = list[d[0]:d[1]:d[1]]
		entries[i].def.inputSchema = list[s[0]:s[1]:s[1]]
	}
	profiles, err := e.st.Profiles(ctx)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(list)
	o.hash = hex.EncodeToString(sum[:])
	o.views = make(map[string]*view, len(profiles))
	for _, p := range profiles {
		o.views[p.ID] = buildViewOf(p, entries, list, o.hash)
		o.views[p.ID].listing = buildListing(p, listed)
	}
	e.indexViews(o.views)
	o.revision = rev
	reclaim.After(2 * len(list)) // the build's garbage: what the store lent was copied, and its records decoded
	return o, nil
}

// answer answers a valid request here if it is a tools/list or a call of
// a tool not offered, and reports whether it did.
func (e *Endpoint) answer(w http.ResponseWriter, r *http.Request, req rpcRequest, from agent) (bool, error) {
	switch req.Method {
	case string(mcp.MethodToolsList):
		if req.Params.Cursor != "" { // the offer is one page: no cursor was ever given
			return true, writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_PARAMS,
				Message: "invalid cursor: Switchboard lists every tool in one page"})
		}
		return true, e.writeList(w, req.ID, from, profileOf(r.Context()), mcp.MethodToolsList)
	case string(mcp.MethodToolsCall):
		if bad := req.badArguments(); bad != "" {
			return true, writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: bad})
		}
		if o, err := e.current(); err == nil {
			if !o.view(profileOf(r.Context())).offersTo(req.Params.Name, from.asks) {
				return true, e.refuseCall(w, r, req, from)
			}
		}
	case string(mcp.MethodResourcesList), string(mcp.MethodResourcesTemplatesList), string(mcp.MethodPromptsList):
		if req.Params.Cursor != "" {
			return true, writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_PARAMS,
				Message: "invalid cursor: Switchboard lists everything in one page"})
		}
		return true, e.writeList(w, req.ID, from, profileOf(r.Context()), mcp.MCPMethod(req.Method))
	case string(mcp.MethodResourcesRead), string(mcp.MethodPromptsGet):
		return true, e.answerFetch(w, r, req, from)
	case string(mcp.MethodResourcesSubscribe), string(mcp.MethodResourcesUnsubscribe):
		return true, e.answerSubscribe(w, r, req, from)
	case string(mcp.MethodCompletionComplete):
		return true, e.answerComplete(w, r, req, from)
	}
	return false, nil
}

// offeredCall reports whether body is, at a glance (see peekCall), a
// session's tools/call of a tool its view offers: one mcp-go routes to
// the call path with nothing for this endpoint to answer first (see
// answer), so it is not parsed here too.
func (e *Endpoint) offeredCall(r *http.Request, body []byte) bool {
	name, ok := sessionCall(r.Header, body)
	sid := r.Header.Get(server.HeaderKeySessionID)
	if !ok || !e.sessions.touch(sid) {
		return false
	}
	if req, ok := parseRequest(r, body); ok && req.badArguments() != "" {
		return false // answered with the reason (see answer)
	}
	o, err := e.current()
	if err != nil {
		return false
	}
	return o.view(profileOf(r.Context())).offersTo(name, e.sessions.asks(sid))
}

// refuseCall answers a tools/call of a tool that is not offered: the
// call path says why (and audits it), as an invalid-params error, which
// is what MCP answers for an unknown tool.
func (e *Endpoint) refuseCall(w http.ResponseWriter, r *http.Request, req rpcRequest, from agent) error {
	client := from.client
	if !from.modern {
		client = e.sessions.client(from.session)
	}
	ct, _ := connectedClient(r.Context())
	res, err := e.call(r.Context(), callRequest{Session: from.session, Client: client, ConnectedAs: ct.Name, TokenID: ct.ID, Profile: profileOf(r.Context()),
		AgentName: req.Params.Name, Args: req.arguments()})
	if err != nil {
		return writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: err.Error()})
	}
	// Offered since the offer was read: answered as mcp-go would.
	if from.modern {
		res.SetResultType(mcp.ResultTypeComplete)
		res.EnsureResultMeta().SetServerInfo(serverInfo)
	}
	return writeJSON(w, r, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": res})
}

// listHeads are the JSON of each list method's result up to its list,
// for a session ([0]) and a 2026-07-28 request ([1]).
var listHeads = map[mcp.MCPMethod][2][]byte{
	mcp.MethodToolsList:     listHeadsOf(func() mcp.ResultMetadata { return &mcp.ListToolsResult{Tools: []mcp.Tool{}} }, "tools"),
	mcp.MethodResourcesList: listHeadsOf(func() mcp.ResultMetadata { return &mcp.ListResourcesResult{Resources: []mcp.Resource{}} }, "resources"),
	mcp.MethodResourcesTemplatesList: listHeadsOf(func() mcp.ResultMetadata {
		return &mcp.ListResourceTemplatesResult{ResourceTemplates: []mcp.ResourceTemplate{}}
	}, "resourceTemplates"),
	mcp.MethodPromptsList: listHeadsOf(func() mcp.ResultMetadata { return &mcp.ListPromptsResult{Prompts: []mcp.Prompt{}} }, "prompts"),
}

// writeList answers a list request of method from the agent from with the
// profile's view of the offer, writing its encoded list as it is.
func (e *Endpoint) writeList(w http.ResponseWriter, id json.RawMessage, from agent, profile string, method mcp.MCPMethod) error {
	modern := from.modern
	o, err := e.current()
	if err != nil {
		return err
	}
	v := o.view(profile)
	list := v.toolList(from.asks)
	if method != mcp.MethodToolsList {
		list = v.listing.lists[method]
	}
	head := append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":`...)
	result := listHeads[method][0]
	if modern {
		result = listHeads[method][1]
	}
	tail := []byte(`}}`)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(result)+len(list)+len(tail)))
	w.WriteHeader(http.StatusOK)
	for _, b := range [][]byte{head, result, list, tail} {
		if _, err := w.Write(b); err != nil {
			return nil // the agent went away
		}
	}
	return nil
}

// Offered is how many tools agents are offered now.
func (e *Endpoint) Offered() (int, error) {
	o, err := e.current()
	if err != nil {
		return 0, err
	}
	return len(o.tools), nil
}
