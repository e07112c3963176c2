package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/gowebpki/jcs"
)

// OfferedTool is a tool as the MCP offer is built from it: what deciding
// whether it is offered and listing it takes, and its definition as
// agents get it. Building the offer from these is concatenation: the
// definitions are computed when a tool is stored, not each time the offer
// is built.
type OfferedTool struct {
	ServerID    string
	Name        string
	AgentName   string
	Title       string
	Description string
	Pin         string
	State       ToolState
	Problems    []string
	Needs       []string
	// Policy is the tool's policy with the pin it was set at; only its
	// Policy and Pin are filled in.
	Policy    PolicySetting
	Effective Policy
	// Definition is AgentDefinition of the tool; nil when it has none
	// to offer (no definition kept, or one that is not canonical JSON).
	// InputSchema is the input schema in it, at SchemaAt.
	Definition  json.RawMessage
	InputSchema json.RawMessage
	SchemaAt    [2]int
}

// Entry is the tool as a ToolEntry: Raw is its agent definition, and
// what the offer does not read is left empty.
func (o OfferedTool) Entry() ToolEntry {
	return ToolEntry{
		Tool: Tool{ServerID: o.ServerID, Name: o.Name, AgentName: o.AgentName, Title: o.Title, Description: o.Description,
			Pin: o.Pin, State: o.State, Problems: o.Problems, Needs: o.Needs, Raw: o.Definition, InputSchema: o.InputSchema},
		Policy:    o.Policy,
		Effective: o.Effective,
	}
}

// AgentDefinition is the tool as agents get it through /mcp: the
// canonical JSON (RFC 8785) of the definition as received, named with the
// agent name, without icons, and with an input schema (an empty object
// schema if it had none). schema is where the input schema is inside it.
// A tool without a kept definition (an oversized one), or whose
// definition is not canonical JSON (invalid UTF-8, duplicate keys), has
// none: ErrNoDefinition or jcs's error.
func AgentDefinition(t Tool) (def json.RawMessage, schema [2]int, err error) {
	if len(t.Raw) == 0 || t.AgentName == "" {
		return nil, schema, ErrNoDefinition
	}
	canon, err := jcs.Transform(t.Raw)
	if err != nil {
		return nil, schema, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(canon, &fields); err != nil {
		return nil, schema, err
	}
	if fields == nil { // null: a definition stored as none
		return nil, schema, ErrNoDefinition
	}
	name, _ := json.Marshal(t.AgentName)
	fields["name"] = name
	delete(fields, "icons")
	if meta, ok := offeredUIMeta(t.ServerID, fields["_meta"]); ok {
		fields["_meta"] = meta
	}
	if _, ok := fields["inputSchema"]; !ok {
		fields["inputSchema"] = json.RawMessage(`{"type":"object"}`)
	}
	if def, err = json.Marshal(fields); err != nil { // sorted keys, as canonical JSON has them
		return nil, schema, err
	}
	// The schema as Marshal wrote it (compacted, HTML-escaped): any
	// place it occurs holds the same bytes.
	value, _ := json.Marshal(fields["inputSchema"])
	at := bytes.Index(def, append([]byte(`"inputSchema":`), value...))
	if at < 0 {
		return nil, schema, errors.New("store: input schema not found in the agent definition")
	}
	at += len(`"inputSchema":`)
	return def, [2]int{at, at + len(value)}, nil
}

// ErrNoDefinition is AgentDefinition's answer for a tool with nothing to
// offer: no definition kept, or no agent name.
var ErrNoDefinition = errors.New("store: the tool has no definition to offer")

// NewOfferedTool is e as an OfferedTool, its agent definition computed;
// for a store that does not keep it.
func NewOfferedTool(e ToolEntry) OfferedTool {
	o := OfferedOf(e)
	def, schema, err := AgentDefinition(e.Tool)
	if err == nil {
		o.Definition, o.InputSchema, o.SchemaAt = def, def[schema[0]:schema[1]:schema[1]], schema
	}
	return o
}

// OfferedOf is e as an OfferedTool without its agent definition.
func OfferedOf(e ToolEntry) OfferedTool {
	return OfferedTool{ServerID: e.ServerID, Name: e.Name, AgentName: e.AgentName, Title: e.Title, Description: e.Description,
		Pin: e.Pin, State: e.State, Problems: e.Problems, Needs: e.Needs,
		Policy: PolicySetting{Policy: e.Policy.Policy, Pin: e.Policy.Pin}, Effective: e.Effective}
}

// UIResourceURI is the URI agents are offered a server's MCP App
// resource (a ui:// URI: the io.modelcontextprotocol/ui extension) under:
// ui://, the server's id, and the rest of the server's URI. It keeps the
// ui:// scheme, which clients render apps from, and names its server, as
// every offered resource URI does.
func UIResourceURI(serverID, uri string) string {
	return "ui://" + serverID + "/" + strings.TrimPrefix(uri, "ui://")
}

// offeredUIMeta is a tool's _meta as agents get it: its MCP App
// resource (ui.resourceUri, and the older flat "ui/resourceUri") named
// as agents are offered it (see UIResourceURI), so that a client reads it
// back through Switchboard. ok is false when there is nothing to rename.
func offeredUIMeta(serverID string, raw json.RawMessage) (json.RawMessage, bool) {
	var meta map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &meta) != nil || meta == nil {
		return nil, false
	}
	renamed := false
	rename := func(v json.RawMessage) json.RawMessage {
		var uri string
		if json.Unmarshal(v, &uri) != nil || !strings.HasPrefix(uri, "ui://") {
			return v
		}
		renamed = true
		out, _ := json.Marshal(UIResourceURI(serverID, uri))
		return out
	}
	if v, ok := meta["ui/resourceUri"]; ok {
		meta["ui/resourceUri"] = rename(v)
	}
	var ui map[string]json.RawMessage
	if v, ok := meta["ui"]; ok && json.Unmarshal(v, &ui) == nil && ui != nil {
		if u, ok := ui["resourceUri"]; ok {
			ui["resourceUri"] = rename(u)
			meta["ui"], _ = json.Marshal(ui)
		}
	}
	if !renamed {
		return nil, false
	}
	out, err := json.Marshal(meta)
	return out, err == nil
}
