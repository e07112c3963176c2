package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/toolsearch"
)

// Tools offered only to agents that can answer what they ask. A server
// may list a tool only to a client that declares sampling, elicitation or
// roots (server-everything's trigger-sampling-request and others), and
// its verification finds what each such tool needs (see
// discovery.Tool.Needs). Switchboard's session to the server declares
// what the calling agent declared (see call.go), so such a tool exists
// upstream only for an agent that declared what it needs: it is listed,
// found by search_tools and called only by such an agent, and any other
// agent is told why its call is refused.

// askingTool is a tool of a view that needs what its agent must declare.
type askingTool struct {
	name  string
	def   []byte
	needs []string
}

// offersTo reports whether v offers the tool named name to an agent that
// declared a.
func (v *view) offersTo(name string, a discovery.Asks) bool {
	if _, ok := v.tools[name]; !ok {
		return false
	}
	return v.serves(name, a)
}

// serves reports whether an agent that declared a can be offered the
// tool named name of v, as far as what it needs goes.
func (v *view) serves(name string, a discovery.Asks) bool {
	needs, gated := v.needs[name]
	return !gated || a.Serves(needs)
}

// toolList is v's tools/list for an agent that declared a: the list of
// every tool that needs nothing, with those a serves added.
func (v *view) toolList(a discovery.Asks) []byte {
	var add [][]byte
	for _, t := range v.asking {
		if a.Serves(t.needs) {
			add = append(add, t.def)
		}
	}
	if len(add) == 0 {
		return v.list
	}
	list := bytes.TrimSuffix(v.list, []byte("]"))
	out := make([]byte, 0, len(v.list)+len(add)*256)
	out = append(out, list...)
	for _, d := range add {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, d...)
	}
	return append(out, ']')
}

// searchHits drops from hits the tools v does not offer to an agent that
// declared a.
func (v *view) searchHits(hits []toolsearch.Hit, a discovery.Asks) []toolsearch.Hit {
	if len(v.needs) == 0 {
		return hits
	}
	return slices.DeleteFunc(hits, func(h toolsearch.Hit) bool { return !v.serves(h.AgentName, a) })
}

// asks are what the agent of session id declared it answers.
func (m *mcpSessions) asks(id string) discovery.Asks {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.live[id]; ok {
		return s.asks
	}
	return discovery.Asks{}
}

// asks are what a 2026-07-28 request's client declares it answers, in
// its _meta.
func (req rpcRequest) asks() discovery.Asks {
	if caps := req.Params.Meta.ClientCapabilities(); caps != nil {
		return asksOf(*caps, "")
	}
	return discovery.Asks{}
}

// callerAsks are what the agent of an mcp-go handler's request declared
// it answers: a 2026-07-28 request's own capabilities, or its session's.
func (e *Endpoint) callerAsks(ctx context.Context) discovery.Asks {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		if info.ClientCapabilities == nil {
			return discovery.Asks{}
		}
		return asksOf(*info.ClientCapabilities, "")
	}
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return e.sessions.asks(cs.SessionID())
	}
	return discovery.Asks{}
}

// listHash is the hash of a view's lists: list, and the tools offered
// only to some agents with what each needs.
func listHash(list []byte, asking []askingTool) string {
	h := sha256.New()
	h.Write(list)
	for _, t := range asking {
		h.Write([]byte{0})
		h.Write(t.def)
		for _, n := range t.needs {
			h.Write([]byte{0})
			h.Write([]byte(n))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
