package clientconfig

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// Editing one entry of a person's config in place: SetEntry and RemoveEntry
// change the text of that entry and keep the rest of the file as written
// (comments, spacing, key order, trailing commas, unknown keys, the other
// entries, a byte order mark, CRLF line ends).
//
// The JSON formats are edited through hujson's syntax tree, members added
// and removed and the tree packed again, never reformatted. Codex TOML is
// edited as text: the spans of the entry's tables come from go-toml's
// parser (see tomlSections in edit_toml.go).

// SetEntry returns data with the entry named name set to s: replaced in
// place if there is one, else added as the last entry of the servers
// object (created if the file has none; an empty or whitespace-only data is
// a new file, written as Export writes it). Everything else in data is
// kept byte for byte.
//
// The entry is written the way Export writes it for format, s.Name
// aside (the entry is called name). New JSON text is indented like the
// entries around it (2 spaces if there are none) and ends its lines as
// the file does; an entry replaced in place keeps its name as written,
// and keeps to one line if it was on one. For claude, the servers object
// is the top-level "mcpServers" (Claude Desktop's file, Claude Code's
// user scope in ~/.claude.json); the projects' own mcpServers are left
// alone. For vscode it is "servers" (at the top, or under "mcp" in a
// settings.json). Later entries with the same name (which clients read
// differently) are removed.
//
// Errors: an unknown format (""), a server Export refuses, a text that
// does not parse (a *SyntaxError with its position), a JSON config whose
// top level or servers object is no object (a *SyntaxError), a JSON
// config of the other JSON shape ("servers" for claude, "mcpServers" for
// vscode), and a Codex entry written in a form that only a person can
// change safely (an inline table, dotted keys outside its own tables, an
// array of tables).
func SetEntry(format string, data []byte, name string, s Server) ([]byte, error) {
	if !slices.Contains(Formats, format) {
		return nil, unknownFormat(format)
	}
	s.Name = name
	list, err := exportable([]Server{s})
	if err != nil {
		return nil, err
	}
	bom, text := cutBOM(data)
	var out []byte
	switch {
	case len(bytes.TrimSpace(text)) == 0:
		out, err = Export(format, list, nil)
	case format == Codex:
		out, err = setCodex(text, list[0])
	default:
		out, err = setJSON(format, text, list[0])
	}
	if err != nil {
		return nil, err
	}
	return slices.Concat(bom, out), nil
}

// RemoveEntry returns data without the entry named name, and the entry as
// it was (parsed, like Parse's), or ok false (data unchanged) if there is
// none. An entry Parse cannot read (one of File.Problems) comes back with
// only its Name and Pos.
//
// Comments inside the entry go with it; those before its name (or its
// table's header) stay. An entry on lines of its own takes those lines with
// it (a comment after it on its last line included), so removing an entry
// SetEntry added gives the text back as it was in the usual layouts
// (entries on lines of their own, Codex tables a blank line apart), but for
// a servers object SetEntry had to create: a JSON one stays, empty; a Codex
// file whose last entry goes has no mcp_servers left, which Parse refuses.
// Later entries with the same name go too. For claude, only the top-level
// "mcpServers" is looked at. Errors as SetEntry's.
func RemoveEntry(format string, data []byte, name string) (out []byte, removed Server, ok bool, err error) {
	if !slices.Contains(Formats, format) {
		return nil, Server{}, false, unknownFormat(format)
	}
	bom, text := cutBOM(data)
	if len(bytes.TrimSpace(text)) == 0 {
		return data, Server{}, false, nil
	}
	if format == Codex {
		out, ok, err = removeCodex(text, name)
	} else {
		out, ok, err = removeJSON(format, text, name)
	}
	if err != nil {
		return nil, Server{}, false, err
	}
	if !ok {
		return data, Server{}, false, nil
	}
	f, err := Parse(format, text)
	if err != nil {
		return nil, Server{}, false, err
	}
	return slices.Concat(bom, out), entryOf(f, name), true, nil
}

// entryOf is the first entry of f called name: the server Parse read, or
// the name and position of the problem.
func entryOf(f *File, name string) Server {
	for _, s := range f.Servers {
		if s.Name == name {
			return s
		}
	}
	for _, p := range f.Problems {
		if p.Name == name {
			return Server{Name: name, Pos: p.Pos}
		}
	}
	return Server{Name: name}
}

// cutBOM splits a UTF-8 byte order mark off data.
func cutBOM(data []byte) (bom, text []byte) {
	if bytes.HasPrefix(data, utf8BOM) {
		return data[:len(utf8BOM)], data[len(utf8BOM):]
	}
	return nil, data
}

// lineEnding is "\r\n" if data's first line ends so, else "\n".
func lineEnding(data []byte) string {
	if i := bytes.IndexByte(data, '\n'); i > 0 && data[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// withEOL turns the "\n" line ends of text into eol.
func withEOL(text []byte, eol string) []byte {
	if eol == "\n" {
		return text
	}
	return bytes.ReplaceAll(text, []byte("\n"), []byte(eol))
}

func setJSON(format string, data []byte, s Server) ([]byte, error) {
	c, err := openJSON(format, data)
	if err != nil {
		return nil, err
	}
	e := newJSONEntry(format, s)
	if c.servers == nil {
		err = c.add(c.top, lineIndent(data, c.root.StartOffset), c.key, map[string]jsonEntry{s.Name: e})
	} else if at := c.find(s.Name); len(at) == 0 {
		err = c.add(c.servers, c.serversIndent, s.Name, e)
	} else {
		for _, i := range slices.Backward(at[1:]) {
			removeMember(c.servers, i)
		}
		err = c.replace(c.servers, at[0], e)
	}
	if err != nil {
		return nil, err
	}
	return c.pack()
}

func removeJSON(format string, data []byte, name string) ([]byte, bool, error) {
	c, err := openJSON(format, data)
	if err != nil {
		return nil, false, err
	}
	if c.servers == nil {
		return nil, false, nil
	}
	at := c.find(name)
	if len(at) == 0 {
		return nil, false, nil
	}
	for _, i := range slices.Backward(at) {
		removeMember(c.servers, i)
	}
	out, err := c.pack()
	return out, err == nil, err
}

// jsonConfig is a JSON config opened for an edit.
type jsonConfig struct {
	data          []byte // the text as read (no byte order mark)
	root          hujson.Value
	top           *hujson.Object // the top-level object
	servers       *hujson.Object // the servers object, nil if there is none
	serversIndent string         // the indentation of the line the servers object starts on
	key           string         // what the servers object is called: "mcpServers" or "servers"
	unit          string         // one level of indentation
	eol           string
}

// openJSON reads data and finds its servers object.
func openJSON(format string, data []byte) (*jsonConfig, error) {
	root, err := readJSON(data)
	if err != nil {
		return nil, err
	}
	ls := newLines(data)
	top, ok := root.Value.(*hujson.Object)
	if !ok {
		return nil, notAnObject(ls, root)
	}
	c := &jsonConfig{data: data, root: root, top: top, key: "mcpServers", unit: indentUnit(top), eol: lineEnding(data)}
	var v *hujson.Value
	if format == VSCode {
		c.key = "servers"
		v, _, _ = vscodeSections(top)
		if v == nil && member(top, "mcpServers") != nil {
			return nil, errors.New(`no "servers" object, but "mcpServers": not a VS Code config (write it as claude or cursor)`)
		}
	} else {
		v = member(top, "mcpServers")
		if _, _, vs := vscodeSections(top); v == nil && vs && len(projectServers(top)) == 0 {
			return nil, fmt.Errorf(`no "mcpServers" object, but "servers": not a %s config (write it as vscode)`, format)
		}
	}
	if v != nil {
		obj, ok := v.Value.(*hujson.Object)
		if !ok {
			return nil, notServers(ls, *v, `"`+c.key+`"`)
		}
		c.servers, c.serversIndent = obj, lineIndent(data, v.StartOffset)
	}
	return c, nil
}

// pack writes the edited tree out, checking that it still reads.
func (c *jsonConfig) pack() ([]byte, error) {
	out := c.root.Pack()
	if _, err := readJSON(out); err != nil {
		return nil, fmt.Errorf("the edit would break the file (%v): edit it by hand", err)
	}
	return out, nil
}

// find lists the indexes of the servers called name.
func (c *jsonConfig) find(name string) []int {
	var at []int
	for i, m := range c.servers.Members {
		if memberName(m) == name {
			at = append(at, i)
		}
	}
	return at
}

// value encodes v as JSON: on lines of its own indented from indent by
// unit, or on one line (unit "").
func (c *jsonConfig) value(v any, indent, unit string) (hujson.ValueTrimmed, error) {
	text, err := encodeJSONIndent(v, "", "")
	if unit != "" {
		text, err = encodeJSONIndent(v, indent, unit)
	}
	if err != nil {
		return nil, err
	}
	val, err := hujson.Parse(withEOL(bytes.TrimSuffix(text, []byte("\n")), c.eol))
	if err != nil {
		return nil, err
	}
	return val.Value, nil
}

// add appends the member key: v to obj, whose line is indented by
// objIndent: on a line of its own, indented like the members before it,
// unless obj is written on one line. A trailing comma stays last.
func (c *jsonConfig) add(obj *hujson.Object, objIndent, key string, v any) error {
	n := len(obj.Members)
	indent, unit, multiline := objIndent+c.unit, c.unit, true
	if n > 0 {
		own := false
		for _, m := range obj.Members {
			if in, ok := ownLine(m.Name.BeforeExtra); ok {
				indent, unit, own = in, c.unitIn(m), true
			}
		}
		multiline = own || hasNewline(obj.AfterExtra)
	}
	if !multiline {
		unit = ""
	}
	val, err := c.value(v, indent, unit)
	if err != nil {
		return err
	}
	m := hujson.ObjectMember{
		Name:  hujson.Value{BeforeExtra: hujson.Extra(" "), Value: hujson.String(key)},
		Value: hujson.Value{BeforeExtra: hujson.Extra(" "), Value: val},
	}
	if multiline {
		// What was after the last member (a comment on its line, say) stays
		// there; the new member goes on the line after it.
		head, tail := cutTail(obj.AfterExtra)
		if tail == nil { // (a stray "\r" would make the line end "\r\n")
			head, tail = bytes.TrimRight(head, " \t\r"), []byte(c.eol+objIndent)
		}
		m.Name.BeforeExtra = slices.Concat(head, []byte(c.eol+indent))
		obj.AfterExtra = tail
	}
	if n > 0 && obj.Members[n-1].Value.AfterExtra != nil {
		m.Value.AfterExtra = hujson.Extra{} // a trailing comma
	}
	obj.Members = append(obj.Members, m)
	return nil
}

// replace sets the value of obj's member i to v, indented from the line of
// its name, or on one line if the old value was. Comments inside the
// member (between its name and the comma) go.
func (c *jsonConfig) replace(obj *hujson.Object, i int, v any) error {
	m := &obj.Members[i]
	unit := ""
	if hasNewline(c.data[m.Value.StartOffset:m.Value.EndOffset]) {
		unit = c.unitIn(*m)
	}
	val, err := c.value(v, lineIndent(c.data, m.Name.StartOffset), unit)
	if err != nil {
		return err
	}
	m.Value.Value = val
	if !onlySpace(m.Name.AfterExtra) {
		m.Name.AfterExtra = nil
	}
	if !onlySpace(m.Value.BeforeExtra) {
		m.Value.BeforeExtra = hujson.Extra(" ")
	}
	if m.Value.AfterExtra != nil && !onlySpace(m.Value.AfterExtra) {
		m.Value.AfterExtra = hujson.Extra{}
	}
	return nil
}

// removeMember removes obj's member i and its comma; see joinAround for
// the text around it. An object left with only spaces inside becomes {}.
func removeMember(obj *hujson.Object, i int) {
	ms := obj.Members
	before := ms[i].Name.BeforeExtra
	switch {
	case i+1 < len(ms):
		ms[i+1].Name.BeforeExtra = joinAround(before, ms[i+1].Name.BeforeExtra)
	case i == 0:
		obj.AfterExtra = joinAround(before, obj.AfterExtra)
		if onlySpace(obj.AfterExtra) {
			obj.AfterExtra = nil
		}
	default:
		// The one before becomes the last: it keeps a comma only if the
		// removed member had a trailing one.
		prev := &ms[i-1].Value
		after := joinAround(before, obj.AfterExtra)
		if ms[i].Value.AfterExtra == nil {
			after = slices.Concat(prev.AfterExtra, after)
			prev.AfterExtra = nil
		} else if prev.AfterExtra == nil {
			prev.AfterExtra = hujson.Extra{}
		}
		obj.AfterExtra = after
	}
	obj.Members = slices.Delete(ms, i, i+1)
}

// joinAround is the text left between a removed member and its
// neighbours, from before (the text before its name, after the previous
// comma or the brace) and after (the text after its comma, or after it if
// it was last). A member on lines of its own takes them with it: the
// indentation before it, and the rest of its last line if that is space
// or one comment. Else what is only spaces goes (the shorter side if both
// are).
func joinAround(before, after []byte) []byte {
	if _, own := ownLine(before); own {
		if k := restOfLine(after); k >= 0 {
			return slices.Concat(before[:bytes.LastIndexByte(before, '\n')+1], after[k:])
		}
	}
	switch {
	case onlySpace(before) && onlySpace(after) && len(after) < len(before):
		return after
	case onlySpace(after):
		return before
	case onlySpace(before):
		return after
	}
	return slices.Concat(before, after)
}

// restOfLine is the offset after the first line end of extra (comments and
// spaces) if its first line holds nothing but spaces and at most one
// comment, else -1.
func restOfLine(extra []byte) int {
	i := skipBlanks(extra, 0)
	switch {
	case bytes.HasPrefix(extra[i:], []byte("//")):
		j := bytes.IndexByte(extra[i:], '\n')
		if j < 0 {
			return -1
		}
		return i + j + 1
	case bytes.HasPrefix(extra[i:], []byte("/*")):
		j := bytes.Index(extra[i:], []byte("*/"))
		if j < 0 || bytes.IndexByte(extra[i:i+j], '\n') >= 0 {
			return -1
		}
		i = skipBlanks(extra, i+j+2)
	}
	if bytes.HasPrefix(extra[i:], []byte("\r\n")) {
		return i + 2
	}
	if i < len(extra) && extra[i] == '\n' {
		return i + 1
	}
	return -1
}

// skipBlanks is the offset of the first byte from i on that is no space or
// tab.
func skipBlanks(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return i
}

// ownLine says whether extra (the text before a member's name) ends a
// line, and returns the indentation after that line end.
func ownLine(extra []byte) (string, bool) {
	i := len(extra)
	for i > 0 && (extra[i-1] == ' ' || extra[i-1] == '\t') {
		i--
	}
	if i == 0 || extra[i-1] != '\n' {
		return "", false
	}
	return string(extra[i:]), true
}

// cutTail splits extra into what comes before its last line end and the
// line end with the indentation after it (tail nil if extra does not end
// so).
func cutTail(extra []byte) (head, tail []byte) {
	if _, ok := ownLine(extra); !ok {
		return extra, nil
	}
	i := bytes.LastIndexByte(extra, '\n')
	if i > 0 && extra[i-1] == '\r' {
		i--
	}
	return extra[:i], extra[i:]
}

// unitIn is the indentation the value of m adds to its name's line on its
// second line, or c.unit.
func (c *jsonConfig) unitIn(m hujson.ObjectMember) string {
	val := c.data[m.Value.StartOffset:m.Value.EndOffset]
	nl := bytes.IndexByte(val, '\n')
	if nl < 0 {
		return c.unit
	}
	outer, inner := lineIndent(c.data, m.Name.StartOffset), lineIndent(c.data, m.Value.StartOffset+nl+1)
	if len(inner) > len(outer) && strings.HasPrefix(inner, outer) {
		return inner[len(outer):]
	}
	return c.unit
}

// lineIndent is the indentation of the line that holds offset off.
func lineIndent(data []byte, off int) string {
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return string(data[start:skipBlanks(data, start)])
}

// indentUnit is the indentation of the first member of the top-level
// object that starts a line, or 2 spaces.
func indentUnit(top *hujson.Object) string {
	for _, m := range top.Members {
		if in, ok := ownLine(m.Name.BeforeExtra); ok && in != "" {
			return in
		}
	}
	return "  "
}

func onlySpace(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

func hasNewline(b []byte) bool { return bytes.IndexByte(b, '\n') >= 0 }
