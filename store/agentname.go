package store

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// Agent names: the names agents call tools by through Switchboard's MCP
// endpoint. Clients accept only [a-zA-Z0-9_-], and tools of different
// servers must not clash, so a tool is offered as server__tool, at most
// MaxAgentName characters; a name that had to be changed for that
// (characters replaced by '_', cut) also gets a short hash of the tool's own
// name, so two tools of one server that come out alike (a.b and a_b; two
// long names cut alike) stay apart, the same in
// any order and on any machine. A name, once given, is stored with the
// tool and kept for as long as the tool is known, so it never moves to
// another tool when tools come and go; a backend keeps a map from agent
// name to tool name to turn a call back into its tool.

// MaxAgentName is the longest agent name. Clients call a tool by a name
// of their own that holds it: Claude Code as mcp__<entry>__<name>, which
// it refuses beyond 64 characters (one such name breaks tool search for
// the whole session), and Cursor drops names beyond 60. With the entry
// `switchboard connect` writes, "switchboard", Claude Code's name takes
// 18 characters before the agent name: 46 are left.
const MaxAgentName = 46

// AgentSeparator joins a server id and a tool name in an agent name.
// Server ids never contain it (see the id rules), so the first one in an
// agent name ends the server id.
const AgentSeparator = "__"

// agentNameBase is server__tool with every character outside
// [a-zA-Z0-9_-] replaced by '_', cut to MaxAgentName; changed says it is
// not exactly server__tool.
func agentNameBase(serverID, tool string) (base string, changed bool) {
	var b strings.Builder
	b.Grow(len(serverID) + len(AgentSeparator) + len(tool))
	b.WriteString(serverID)
	b.WriteString(AgentSeparator)
	for i := 0; i < len(tool); i++ {
		if b.Len() == MaxAgentName {
			return b.String(), true
		}
		c := tool[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
			changed = true
		}
	}
	return b.String(), changed
}

// withSuffix cuts base so that base+suffix fits MaxAgentName.
func withSuffix(base, suffix string) string {
	if len(base)+len(suffix) > MaxAgentName {
		base = base[:MaxAgentName-len(suffix)]
	}
	return base + suffix
}

// AgentName is the agent name a tool gets from its names alone: server__tool
// if that is safe as it is, else the safe form with a short hash of the
// tool's name, so that a.b and a_b, or two long names cut alike,
// never meet, whatever order they come in.
func AgentName(serverID, tool string) string {
	base, changed := agentNameBase(serverID, tool)
	if !changed {
		return base
	}
	sum := sha256.Sum256([]byte(tool))
	return withSuffix(base, "_"+hex.EncodeToString(sum[:])[:8])
}

// AgentNameFor is the agent name of a server's tool: old, the name it
// was given before, if it has one; else AgentName, or (if another tool of
// the server holds that, which takes a name built to look like another's
// hash) that with a counter. owner says which tool of the server holds an
// agent name ("" for none).
func AgentNameFor(serverID, tool, old string, owner func(agentName string) string) string {
	if old != "" && len(old) <= MaxAgentName { // one given under a larger budget is given again
		return old
	}
	free := func(name string) bool {
		o := owner(name)
		return o == "" || o == tool
	}
	first := AgentName(serverID, tool)
	name := first
	for n := 2; !free(name); n++ {
		name = withSuffix(first, "_"+strconv.Itoa(n))
	}
	return name
}
