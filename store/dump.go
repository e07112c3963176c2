package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// A Dump is everything a store holds, in a form no backend owns, so that a
// catalog can move from one backend to another (switchboard migrate): a
// backend that is a Dumper writes what it holds into one, and takes one
// into a store that holds nothing yet. Secrets come along as they are
// (env and header values, OAuth client secrets, grants' tokens, the MCP
// token): a Dump is as secret as the store it came from, and is never
// shown or written anywhere but into another store.

// ErrNotEmpty is the answer of Load for a store that already holds
// something: a dump is taken only into an empty store, never merged.
var ErrNotEmpty = errors.New("store: the destination store is not empty")

// Dumper is a backend that can write out everything it holds, and take
// it in again.
type Dumper interface {
	// Dump reads everything the store holds, in one consistent read.
	// The caller owns the result.
	Dump(ctx context.Context) (*Dump, error)
	// Load writes d into the store, which must hold nothing
	// (ErrNotEmpty, naming what it holds, if it does; nothing is then
	// written), so that a later Dump of it equals d. Nobody else may
	// use the store meanwhile.
	Load(ctx context.Context, d *Dump) error
}

// Dump is everything a store holds (see above). Lists are in the order
// given at each; a backend's Dump keeps it, so that two dumps of the same
// content are equal.
type Dump struct {
	// Servers is every server with what is kept about it, by id.
	Servers []ServerDump `json:"servers"`
	// Calls is the audit, oldest first, each with its Seq.
	Calls []Call `json:"calls"`
	// CallSeq is the number of the newest call ever appended (those
	// dropped beyond MaxCalls included), from which numbering goes on.
	CallSeq uint64 `json:"call_seq"`
	// MCPToken is the MCP endpoint's token; empty if none was made yet.
	MCPToken string `json:"mcp_token,omitempty"`
	// Clients is the connected clients' tokens (their hashes), by id.
	Clients []ClientToken `json:"clients"`
	// Profiles is every stored profile (not the built-in default), by
	// id.
	Profiles []Profile `json:"profiles"`
	// Sessions is the browser sessions, expired or not, by hash.
	Sessions []BrowserSession `json:"sessions"`
	// Users is a team's people (their tokens' hashes), by id.
	Users []User `json:"users,omitempty"`
}

// ServerDump is one server with everything kept about it.
type ServerDump struct {
	// Server is the server as stored, secrets included: env and header
	// values, its OAuth client, its confirmed launch.
	Server Server `json:"server"`
	// Discovery is its discovery record (StatusNever if it was never
	// verified).
	Discovery Discovery `json:"discovery"`
	// Tools is its tools, missing ones too, each with its policy, by
	// name; each keeps its agent name.
	Tools []ToolEntry `json:"tools"`
	// Approved is the definitions its tools' policies were approved at,
	// by tool name (see Catalog.ToolVersions).
	Approved []Tool `json:"approved"`
	// Listed is its resources, resource templates and prompts with their
	// policies, by kind, then key.
	Listed []ListedEntry `json:"listed"`
	// History is the verifications kept, oldest first, each with its
	// Seq; HistorySeq is the number of the newest ever recorded, from
	// which numbering goes on.
	History    []HistoryEntry `json:"history"`
	HistorySeq uint64         `json:"history_seq"`
	// Grants is its OAuth grants, tokens included, by issuer.
	Grants []Grant `json:"grants"`
}

// DumpCounts is how much a dump holds, for a person: counts only.
type DumpCounts struct {
	Servers, Tools, Listed, History, Grants int
	Calls, Clients, Profiles, Sessions      int
	Users                                   int
	// Secrets is the secret values: env and header values, OAuth client
	// secrets, grants' access and refresh tokens and client secrets, and
	// the MCP token.
	Secrets int
}

// Counts counts what d holds.
func (d *Dump) Counts() DumpCounts {
	c := DumpCounts{Servers: len(d.Servers), Calls: len(d.Calls), Clients: len(d.Clients), Profiles: len(d.Profiles), Sessions: len(d.Sessions),
		Users: len(d.Users)}
	nonEmpty := func(ss ...string) int {
		n := 0
		for _, s := range ss {
			if s != "" {
				n++
			}
		}
		return n
	}
	for _, s := range d.Servers {
		c.Tools += len(s.Tools)
		c.Listed += len(s.Listed)
		c.History += len(s.History)
		c.Grants += len(s.Grants)
		c.Secrets += len(s.Server.Env) + len(s.Server.Headers) + nonEmpty(s.Server.OAuthSettings().ClientSecret)
		for _, g := range s.Grants {
			c.Secrets += nonEmpty(g.AccessToken, g.RefreshToken, g.ClientSecret)
		}
	}
	c.Secrets += nonEmpty(d.MCPToken)
	return c
}

// Holds says what d holds, as "2 servers, 10 calls, an MCP token"; empty
// if it holds nothing (a store it is a dump of is empty).
func (d *Dump) Holds() string {
	c := d.Counts()
	var parts []string
	for _, n := range []struct {
		n    int
		what string
	}{{c.Servers, "server"}, {c.Calls, "call"}, {c.Clients, "connected client"}, {c.Profiles, "profile"}, {c.Sessions, "browser session"}} {
		switch {
		case n.n == 1:
			parts = append(parts, "1 "+n.what)
		case n.n > 1:
			parts = append(parts, strconv.Itoa(n.n)+" "+n.what+"s")
		}
	}
	if len(d.Calls) == 0 && d.CallSeq > 0 {
		parts = append(parts, "a call sequence")
	}
	if d.MCPToken != "" {
		parts = append(parts, "an MCP token")
	}
	return strings.Join(parts, ", ")
}

// maxDiffs bounds the differences Diff names.
const maxDiffs = 20

// Diff names what differs between d and other, a dump of the store d
// was loaded into ("the copy"), one sentence each, at most a few dozen;
// nil if they are equal. It names servers, tools, entries and fields,
// never a value, so that its sentences can be shown even where the
// values are secret.
func (d *Dump) Diff(other *Dump) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	servers := func(x *Dump) map[string]ServerDump {
		m := make(map[string]ServerDump, len(x.Servers))
		for _, s := range x.Servers {
			m[s.Server.ID] = s
		}
		return m
	}
	a, b := servers(d), servers(other)
	for _, id := range sortedUnion(a, b) {
		sa, inA := a[id]
		sb, inB := b[id]
		switch {
		case !inB:
			add("server %q is missing from the copy", id)
			continue
		case !inA:
			add("the copy has server %q, which the source has not", id)
			continue
		}
		in := fmt.Sprintf("server %q: ", id)
		out = append(out, diffItem(in+"its configuration", sa.Server, sb.Server)...)
		out = append(out, diffItem(in+"its discovery record", sa.Discovery, sb.Discovery)...)
		out = append(out, diffList(in+"tool", sa.Tools, sb.Tools, func(e ToolEntry) string { return strconv.Quote(e.Name) })...)
		out = append(out, diffList(in+"approved definition of tool", sa.Approved, sb.Approved, func(t Tool) string { return strconv.Quote(t.Name) })...)
		out = append(out, diffList(in+"listed", sa.Listed, sb.Listed, func(e ListedEntry) string { return string(e.Kind) + " " + strconv.Quote(e.Key) })...)
		out = append(out, diffList(in+"history entry", sa.History, sb.History, func(e HistoryEntry) string { return strconv.FormatUint(e.Seq, 10) })...)
		if sa.HistorySeq != sb.HistorySeq {
			add("%sthe history sequence is %d in the source, %d in the copy", in, sa.HistorySeq, sb.HistorySeq)
		}
		out = append(out, diffList(in+"grant from", sa.Grants, sb.Grants, func(g Grant) string { return strconv.Quote(g.Issuer) })...)
	}
	out = append(out, diffList("call", d.Calls, other.Calls, func(c Call) string { return strconv.FormatUint(c.Seq, 10) })...)
	if d.CallSeq != other.CallSeq {
		add("the call sequence is %d in the source, %d in the copy", d.CallSeq, other.CallSeq)
	}
	if d.MCPToken != other.MCPToken {
		add("the MCP token differs")
	}
	out = append(out, diffList("connected client", d.Clients, other.Clients, func(c ClientToken) string { return strconv.Quote(c.ID) })...)
	out = append(out, diffList("profile", d.Profiles, other.Profiles, func(p Profile) string { return strconv.Quote(p.ID) })...)
	out = append(out, diffList("browser session", d.Sessions, other.Sessions, func(s BrowserSession) string { return s.Hash })...)
	out = append(out, diffList("person", d.Users, other.Users, func(u User) string { return strconv.Quote(u.Email) })...)
	if len(out) > maxDiffs {
		out = append(out[:maxDiffs], fmt.Sprintf("and %d more differences", len(out)-maxDiffs))
	}
	return out
}

// diffList compares two lists of items by key, and names each item that
// is missing from b, only in b, or different.
func diffList[T any](what string, a, b []T, key func(T) string) []string {
	byKey := func(list []T) map[string]T {
		m := make(map[string]T, len(list))
		for _, x := range list {
			m[key(x)] = x
		}
		return m
	}
	ma, mb := byKey(a), byKey(b)
	var out []string
	for _, k := range sortedUnion(ma, mb) {
		xa, inA := ma[k]
		xb, inB := mb[k]
		switch {
		case !inB:
			out = append(out, fmt.Sprintf("%s %s is missing from the copy", what, k))
		case !inA:
			out = append(out, fmt.Sprintf("the copy has %s %s, which the source has not", what, k))
		default:
			out = append(out, diffItem(what+" "+k, xa, xb)...)
		}
	}
	return out
}

// diffItem compares two values by their JSON, and names the fields (of
// an object) that differ; nil if they are equal.
func diffItem(what string, a, b any) []string {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return []string{fmt.Sprintf("%s cannot be compared: %v", what, errors.Join(errA, errB))}
	}
	if bytes.Equal(ja, jb) {
		return nil
	}
	var fa, fb map[string]json.RawMessage
	if json.Unmarshal(ja, &fa) != nil || json.Unmarshal(jb, &fb) != nil {
		return []string{what + " differs"}
	}
	var fields []string
	for _, f := range sortedUnion(fa, fb) {
		if !bytes.Equal(fa[f], fb[f]) {
			fields = append(fields, f)
		}
	}
	return []string{fmt.Sprintf("%s differs in %s", what, strings.Join(fields, ", "))}
}

// sortedUnion is the keys of a and b, sorted.
func sortedUnion[V any](a, b map[string]V) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
