package discovery

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// A server's tools: the walk of tools/list, and how each tool is
// decoded, pinned and checked against the limits and the spec.

// ToolState says why a tool cannot be offered to agents as the server
// sent it; a sound tool's is empty. The store keeps it as its own state
// of the same meaning (the web layer maps one to the other).
type ToolState string

// The states discovery decides.
const (
	// ToolOversized: a part of the tool is over a limit (schema size or
	// depth, description, the whole object). The part over the limit is
	// not kept (a description is cut), nor is Raw.
	ToolOversized ToolState = "oversized"
	// ToolInvalid: the tool is ambiguous or outside the spec (invalid
	// UTF-8, duplicate keys, a name outside the tool name charset, two
	// definitions under one name). It is kept as decoded, for review.
	ToolInvalid ToolState = "invalid"
	// ToolUnsupported: the tool needs what Switchboard does not relay:
	// every call through Switchboard would fail, so it is listed for
	// review but not offered. Tools that require MCP tasks were, before
	// Switchboard ran them as tasks (see tasks.go); nothing is now, and
	// a stored tool keeps the state until its server is verified again.
	ToolUnsupported ToolState = "unsupported"
)

// ToolStates lists them.
var ToolStates = []ToolState{ToolOversized, ToolInvalid, ToolUnsupported}

// Tool is one tool exactly as the server sent it (Raw), with the fields
// Switchboard shows decoded from it.
type Tool struct {
	Name         string
	Title        string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  json.RawMessage
	Raw          json.RawMessage
	// Pin is the SHA-256 of the RFC 8785 canonical form of Raw, or of
	// the bytes as received when they have none (invalid UTF-8, duplicate
	// keys) or the tool object is over Limits.ToolBytes.
	Pin string
	// State is empty, ToolOversized or ToolInvalid; Problems says why,
	// one sentence each.
	State    ToolState
	Problems []string
	// Needs is set for a tool the server lists only to a client that
	// declares a feature (see features.go): the alternatives, each one
	// or more features joined by "+", of which an agent must declare one
	// for the tool to be offered to it.
	Needs []string
}

// listTools walks tools/list page by page, stopping at a repeated cursor
// or the page cap with a warning, and refusing more than MaxTools. A page
// that lists more entries than MaxTools leaves room for is refused before
// any of them is decoded, so the work is bounded by MaxTools a page, and
// entries that are skipped or repeat a tool are counted into one warning
// for each kind, however many there are.
func (r *verification) listTools(ctx context.Context, c *client.Client, res *Result) error {
	seen := map[string]bool{"": true}
	cursor := ""
	byName := map[string]int{} // index in res.Tools
	var odd oddEntries
	// The secrets as they are when quoted: a token handed out meanwhile
	// is one.
	defer func() { res.Warnings = append(res.Warnings, odd.warnings(r.target.secrets())...) }()
	for page := 1; ; page++ {
		if page > r.limits.MaxPages {
			res.Warnings = append(res.Warnings, fmt.Sprintf("stopped after %d pages of tools/list (page limit); more tools may exist", r.limits.MaxPages))
			return nil
		}
		r.enter(PhaseListing, page)
		req := mcp.ListToolsRequest{}
		req.Params.Cursor = mcp.Cursor(cursor)
		if _, err := c.ListToolsByPage(ctx, req); err != nil {
			return err
		}
		res.Pages = page
		var raw struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
			TTLMs      *int64            `json:"ttlMs"`
			CacheScope string            `json:"cacheScope"`
		}
		if err := json.Unmarshal(r.rec.take(), &raw); err != nil {
			return fmt.Errorf("tools/list page %d is not a valid result: %w", page, err)
		}
		if ttl := listTTL(raw.TTLMs); ttl != nil && (res.ListTTL == nil || *ttl < *res.ListTTL) {
			res.ListTTL = ttl
		}
		if raw.CacheScope == "public" || raw.CacheScope == "private" {
			res.CacheScope = raw.CacheScope
		}
		if len(res.Tools)+len(raw.Tools) > r.limits.MaxTools {
			msg := fmt.Sprintf("server offers more than %d tools (page %d lists %d", r.limits.MaxTools, page, len(raw.Tools))
			if len(res.Tools) > 0 {
				msg += fmt.Sprintf(" after %d on earlier pages", len(res.Tools))
			}
			return errTooLarge{msg + ")"}
		}
		for _, rt := range raw.Tools {
			tool, err := decodeTool(rt, r.limits)
			if err != nil {
				odd.skipped(page, tool.Name, err)
				continue
			}
			if i, ok := byName[tool.Name]; ok {
				if mergeDuplicate(&res.Tools[i], tool) {
					odd.repeated(i, tool.Name)
				}
				continue
			}
			byName[tool.Name] = len(res.Tools)
			res.Tools = append(res.Tools, tool)
		}
		if raw.NextCursor == "" {
			return nil
		}
		if seen[raw.NextCursor] {
			res.Warnings = append(res.Warnings, fmt.Sprintf("tools/list repeated cursor %q on page %d; stopped the walk", sample([]byte(raw.NextCursor), r.target.secrets()), page))
			return nil
		}
		seen[raw.NextCursor] = true
		cursor = raw.NextCursor
	}
}

// oddEntries counts the tools/list entries of one verification that were
// skipped or repeated a tool, by kind, with the first of each kind as an
// example.
type oddEntries struct {
	notObject, noName, longName entryCount
	// repeats of a tool with an identical definition: entries, and the
	// tools they repeat (by index in Result.Tools)
	repeats   entryCount
	repeatsOf map[int]bool
}

// entryCount counts entries of one kind; the first is the example.
type entryCount struct {
	n      int
	page   int
	name   string
	detail string
}

func (c *entryCount) add(page int, name, detail string) {
	if c.n == 0 {
		c.page, c.name, c.detail = page, name, detail
	}
	c.n++
}

// skipped counts an entry decodeTool refused with err.
func (o *oddEntries) skipped(page int, name string, err error) {
	switch {
	case errors.Is(err, errNoName):
		o.noName.add(page, "", "")
	case errors.Is(err, errLongName):
		o.longName.add(page, name, "")
	default:
		o.notObject.add(page, "", strings.TrimPrefix(err.Error(), errNotTool.Error()+": "))
	}
}

// repeated counts an entry that repeats the tool at index i of
// Result.Tools, with the same definition.
func (o *oddEntries) repeated(i int, name string) {
	if o.repeatsOf == nil {
		o.repeatsOf = map[int]bool{}
	}
	o.repeatsOf[i] = true
	o.repeats.add(0, name, "")
}

// warnings returns one warning for each kind of entry counted, names
// redacted of the secrets before they are quoted.
func (o *oddEntries) warnings(secrets []string) []string {
	var ws []string
	if c := o.notObject; c.n > 0 {
		ws = append(ws, fmt.Sprintf("skipped %s of tools/list that %s not tool objects, e.g. on page %d: %s",
			count(c.n, "entry", "entries"), isAre(c.n), c.page, c.detail))
	}
	if c := o.noName; c.n > 0 {
		ws = append(ws, fmt.Sprintf("skipped %s without a name", count(c.n, "tool", "tools")))
	}
	if c := o.longName; c.n > 0 {
		ws = append(ws, fmt.Sprintf("skipped %s named with more than %d bytes, e.g. %q (%d bytes)",
			count(c.n, "tool", "tools"), maxNameBytes, sample([]byte(c.name), secrets), len(c.name)))
	}
	if c := o.repeats; c.n > 0 {
		if len(o.repeatsOf) == 1 {
			ws = append(ws, fmt.Sprintf("tool %q is listed more than once, with identical definitions (%s)",
				sample([]byte(c.name), secrets), count(c.n, "extra entry", "extra entries")))
		} else {
			ws = append(ws, fmt.Sprintf("%d tools are listed more than once, with identical definitions (%s), e.g. %q",
				len(o.repeatsOf), count(c.n, "extra entry", "extra entries"), sample([]byte(c.name), secrets)))
		}
	}
	return ws
}

// count returns "1 tool", "2 tools".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// isAre returns the verb for n things.
func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// maxNameBytes bounds a tool name Switchboard keeps at all (it becomes a
// store key); a longer one is skipped with a warning. Names over the
// spec's 128 characters but within this are kept, flagged invalid.
const maxNameBytes = 16 << 10

// toolName is the tool name charset of the MCP specification
// (2025-11-25): 1 to 128 ASCII letters, digits, '_', '-' and '.'.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Why decodeTool skips an entry.
var (
	errNotTool  = errors.New("not a tool object")
	errNoName   = errors.New("tool without a name")
	errLongName = errors.New("tool name too long to keep")
)

// decodeTool reads the fields Switchboard shows, computes the pin, and
// flags what cannot be offered to agents as sent (see Tool.State). It
// returns an error only for what cannot be kept at all: not an object
// (errNotTool), no name (errNoName), a name over maxNameBytes
// (errLongName, with the name, only, in the Tool returned).
func decodeTool(raw json.RawMessage, l Limits) (Tool, error) {
	var f struct {
		Name         string          `json:"name"`
		Title        string          `json:"title"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
		Annotations  json.RawMessage `json:"annotations"`
		Execution    json.RawMessage `json:"execution"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case !errors.As(err, &typeErr):
			return Tool{}, fmt.Errorf("%w: %w", errNotTool, err)
		case typeErr.Field == "":
			return Tool{}, fmt.Errorf("%w: a JSON %s", errNotTool, typeErr.Value)
		}
		return Tool{}, fmt.Errorf("%w: its %s is a JSON %s", errNotTool, typeErr.Field, typeErr.Value)
	}
	switch {
	case f.Name == "":
		return Tool{}, errNoName
	case len(f.Name) > maxNameBytes:
		return Tool{Name: f.Name}, fmt.Errorf("%w: %d bytes (kept up to %d)", errLongName, len(f.Name), maxNameBytes)
	}
	t := Tool{Name: f.Name, Title: f.Title, Description: f.Description, InputSchema: f.InputSchema,
		OutputSchema: f.OutputSchema, Annotations: f.Annotations}
	flag := func(state ToolState, problem string) {
		if t.State != ToolOversized { // oversized wins: its parts are gone
			t.State = state
		}
		t.Problems = append(t.Problems, problem)
	}

	// A tool too big to keep is never offered, so its pin only has to
	// notice a change: the bytes received do, without canonicalising
	// megabytes.
	var err error
	t.Pin, err = pinOf(raw, l.ToolBytes)
	t.Raw = raw
	switch {
	case !utf8.Valid(raw):
		flag(ToolInvalid, "holds invalid UTF-8 (shown as U+FFFD)")
		// Stored and shown repaired; the pin is of what was received.
		t.Raw = bytes.ToValidUTF8(raw, []byte("\uFFFD"))
		t.InputSchema = bytes.ToValidUTF8(t.InputSchema, []byte("\uFFFD"))
		t.OutputSchema = bytes.ToValidUTF8(t.OutputSchema, []byte("\uFFFD"))
		t.Annotations = bytes.ToValidUTF8(t.Annotations, []byte("\uFFFD"))
	case err != nil && len(raw) <= l.ToolBytes:
		flag(ToolInvalid, "is ambiguous: "+strings.ToLower(err.Error()[:1])+err.Error()[1:])
	}
	if !toolName.MatchString(t.Name) {
		flag(ToolInvalid, "its name is outside the MCP tool name charset (1 to 128 of A-Z a-z 0-9 _ - .)")
	}
	for _, problem := range shapeProblems(raw) {
		flag(ToolInvalid, problem)
	}
	if problem := headerProblem(t); problem != "" {
		flag(ToolInvalid, problem)
	}

	for _, s := range []struct {
		what string
		v    *json.RawMessage
	}{{"input schema", &t.InputSchema}, {"output schema", &t.OutputSchema}} {
		switch d := jsonDepth(*s.v); {
		case len(*s.v) > l.SchemaBytes:
			flag(ToolOversized, fmt.Sprintf("its %s is %d bytes (limit %d); not kept", s.what, len(*s.v), l.SchemaBytes))
			*s.v = nil
		case d > l.SchemaDepth:
			flag(ToolOversized, fmt.Sprintf("its %s nests %d levels (limit %d); not kept", s.what, d, l.SchemaDepth))
			*s.v = nil
		}
	}
	if n := len(t.Description); n > l.DescriptionBytes {
		t.Description = cutText(t.Description, l.DescriptionBytes)
		flag(ToolOversized, fmt.Sprintf("its description is %d bytes; the first %d are kept", n, len(t.Description)))
	}
	if n := len(t.Title); n > l.TitleBytes {
		t.Title = cutText(t.Title, l.TitleBytes)
		flag(ToolOversized, fmt.Sprintf("its title is %d bytes; the first %d are kept", n, len(t.Title)))
	}
	if n := len(t.Annotations); n > l.AnnotationsBytes {
		flag(ToolOversized, fmt.Sprintf("its annotations are %d bytes (limit %d); not kept", n, l.AnnotationsBytes))
		t.Annotations = nil
	}
	if len(raw) > l.ToolBytes {
		flag(ToolOversized, fmt.Sprintf("the tool object is %d bytes (limit %d)", len(raw), l.ToolBytes))
	}
	if t.State == ToolOversized {
		t.Raw = nil // what an agent would get is not what the server sent
	} else {
		t.Raw = append(json.RawMessage(nil), t.Raw...)
	}
	return t, nil
}

// shapeProblems checks a tool object against the shape MCP's Tool schema
// gives it, which clients check a whole tools/list against: one tool
// outside it can fail an agent's list of every server's tools.
// inputSchema is required and, like outputSchema, must be an object
// schema of type "object"; title and description are strings; annotations
// and _meta are objects.
func shapeProblems(raw json.RawMessage) []string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil // reported elsewhere
	}
	var out []string
	objectSchema := func(key string, required bool) {
		v, ok := fields[key]
		if !ok {
			if required {
				out = append(out, "it has no "+key+" (MCP requires one)")
			}
			return
		}
		var schema struct {
			Type json.RawMessage `json:"type"`
		}
		if kind(v) != '{' || json.Unmarshal(v, &schema) != nil || string(schema.Type) != `"object"` {
			out = append(out, "its "+key+` is not a JSON Schema object of type "object" (MCP requires one)`)
		}
	}
	objectSchema("inputSchema", true)
	objectSchema("outputSchema", false)
	for _, key := range []string{"title", "description"} {
		if v, ok := fields[key]; ok && kind(v) != '"' {
			out = append(out, "its "+key+" is not a string")
		}
	}
	if v, ok := fields["annotations"]; ok && kind(v) != '{' {
		out = append(out, "its annotations are not an object")
	}
	if v, ok := fields["_meta"]; ok && kind(v) != '{' {
		out = append(out, "its _meta is not an object")
	}
	return out
}

// kind is the first byte of a JSON value: '{', '[', '"', 'n', 't', 'f' or
// a digit or '-'.
func kind(v json.RawMessage) byte {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return 0
	}
	return v[0]
}

// jsonDepth returns how deeply objects and arrays nest in b, counting
// brackets (so deep input cannot exhaust the stack).
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		case '"':
			if end := stringEnd(b, i); end >= 0 {
				i = end
			} else {
				return deepest
			}
		}
	}
	return deepest
}

// mergeDuplicate handles a second tool under kept's name. Two different
// definitions under one name make the tool ambiguous: it is flagged
// invalid, and its pin covers every definition, so a policy set while it
// was ambiguous never carries over to one of them. An identical repeat
// changes nothing; mergeDuplicate reports it, for a warning.
func mergeDuplicate(kept *Tool, dup Tool) (identical bool) {
	if dup.Pin == kept.Pin {
		return true
	}
	const problem = "the server lists different definitions under this name"
	if !slices.Contains(kept.Problems, problem) {
		if kept.State != ToolOversized {
			kept.State = ToolInvalid
		}
		kept.Problems = append(kept.Problems, problem)
	}
	sum := sha256.Sum256([]byte(kept.Pin + dup.Pin))
	kept.Pin = hex.EncodeToString(sum[:])
	return false
}
