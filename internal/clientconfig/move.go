package clientconfig

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// Moving entries out of a config and back: when a client is connected to
// Switchboard, the entries of the servers Switchboard now fronts are taken
// out of the client's file (TakeEntries) and kept as written (Moved), so
// that disconnecting puts them back (PutBack) where they were.

// Moved is an entry TakeEntries took out of a config, as it was written.
type Moved struct {
	// Project is the ~/.claude.json project whose "mcpServers" held the
	// entry; "" for the file's own servers object.
	Project string `json:"project,omitempty"`
	Name    string `json:"name"`
	// After is the name of the entry before it in its servers object ("" if
	// it was the first), so that PutBack puts it back in its place.
	After string `json:"after,omitempty"`
	First bool   `json:"first,omitempty"`
	// Indent is the indentation of the line its name was on (JSON).
	Indent string `json:"indent,omitempty"`
	// Text is the entry as written: its value (JSON, comments included) or
	// its tables (Codex TOML).
	Text string `json:"text"`
	// Comment is a comment after the entry on its last line (JSON), which
	// goes and comes back with it.
	Comment string `json:"comment,omitempty"`
	// Server is the entry as Parse reads it (Pos aside).
	Server Server `json:"-"`
}

// Entries lists every entry of a config with the project it belongs to
// ("" for the file's own servers object): unlike Parse, an entry whose
// name another project uses too is listed in each. Entries Parse cannot
// read are left out.
func Entries(format string, data []byte) ([]Moved, error) {
	_, moved, err := TakeEntries(format, data, func(string, Server) bool { return true })
	return moved, err
}

// TakeEntries returns data without the entries for which take says yes,
// and those entries as they were written, in file order. For claude, the
// projects' "mcpServers" of a ~/.claude.json are looked at as well as the
// top-level one. What is left of the text is kept as written (see
// RemoveEntry). An entry Parse cannot read is never taken.
func TakeEntries(format string, data []byte, take func(project string, s Server) bool) (out []byte, moved []Moved, err error) {
	if !slices.Contains(Formats, format) {
		return nil, nil, unknownFormat(format)
	}
	bom, text := cutBOM(data)
	if len(bytes.TrimSpace(text)) == 0 {
		return data, nil, nil
	}
	if format == Codex {
		out, moved, err = takeCodex(text, take)
	} else {
		out, moved, err = takeJSON(format, text, take)
	}
	if err != nil {
		return nil, nil, err
	}
	return slices.Concat(bom, out), moved, nil
}

// jsonScope is one servers object of a JSON config.
type jsonScope struct {
	project string
	obj     *hujson.Object
}

// scopes lists c's servers objects: its own, then (claude) its projects'.
func (c *jsonConfig) scopes(format string) []jsonScope {
	var out []jsonScope
	if c.servers != nil {
		out = append(out, jsonScope{"", c.servers})
	}
	if format == Claude {
		for _, pm := range projectServers(c.top) {
			if obj, ok := member(pm.Value.Value.(*hujson.Object), "mcpServers").Value.(*hujson.Object); ok {
				out = append(out, jsonScope{memberName(pm), obj})
			}
		}
	}
	return out
}

func takeJSON(format string, data []byte, take func(string, Server) bool) ([]byte, []Moved, error) {
	c, err := openJSON(format, data)
	if err != nil {
		return nil, nil, err
	}
	var moved []Moved
	for _, sc := range c.scopes(format) {
		var drop []int
		for i, m := range sc.obj.Members {
			name := memberName(m)
			r := newEntryReader(format, name, toValue(m.Value))
			s := r.jsonEntry()
			if len(r.problems) > 0 || !take(sc.project, s) {
				continue
			}
			s.Refs = findRefs(s, nil)
			mv := Moved{Project: sc.project, Name: name, First: i == 0,
				Indent: lineIndent(data, m.Name.StartOffset),
				Text:   string(data[m.Value.StartOffset:m.Value.EndOffset]), Server: s}
			if i > 0 {
				mv.After = memberName(sc.obj.Members[i-1])
			}
			// The rest of its last line goes with it (see joinAround):
			// a comment there is the entry's.
			after := sc.obj.AfterExtra
			if i+1 < len(sc.obj.Members) {
				after = sc.obj.Members[i+1].Name.BeforeExtra
			}
			if _, own := ownLine(m.Name.BeforeExtra); own {
				if k := restOfLine(after); k > 0 {
					if c := strings.TrimRight(string(after[:k]), "\r\n"); strings.TrimSpace(c) != "" {
						mv.Comment = c
					}
				}
			}
			moved = append(moved, mv)
			drop = append(drop, i)
		}
		for _, i := range slices.Backward(drop) {
			removeMember(sc.obj, i)
		}
	}
	if len(moved) == 0 {
		return data, nil, nil
	}
	out, err := c.pack()
	return out, moved, err
}

func takeCodex(data []byte, take func(string, Server) bool) ([]byte, []Moved, error) {
	if tbl, err := readCodex(data); err != nil || tbl == nil {
		return data, nil, err // no servers: nothing to take
	}
	f, err := parseCodex(data)
	if err != nil {
		return nil, nil, err
	}
	var moved []Moved
	out := data
	for _, s := range f.Servers {
		if !take("", s) {
			continue
		}
		secs, entry, err := codexEntry(out, s.Name)
		if err != nil {
			continue // written in a form only a person edits safely: it stays
		}
		mv := Moved{Name: s.Name, First: true}
		for i := entry[0] - 1; i >= 0; i-- {
			if p := secs[i].path; len(p) >= 2 && p[0] == "mcp_servers" {
				mv.After, mv.First = p[1], false
				break
			}
		}
		// Its tables as written: one span if they are together.
		var text []byte
		for k, i := range entry {
			if k > 0 && secs[i].header != secs[entry[k-1]].end {
				text = append(bytes.TrimRight(text, " \t\r\n"), lineEnding(out)+lineEnding(out)...)
			}
			text = append(text, out[secs[i].header:secs[i].end]...)
		}
		mv.Text = string(text)
		if out, err = applyCodex(out, removals(out, secs, entry)); err != nil {
			return nil, nil, err
		}
		s.Pos = Pos{}
		mv.Server = s
		moved = append(moved, mv)
	}
	return out, moved, nil
}

// ErrNameTaken says an entry of the same name is in the moved entry's
// place now: PutBack leaves that one as it is.
var ErrNameTaken = errors.New("an entry of that name is there now")

// PutBack returns data with the moved entries back where TakeEntries took
// them from: after the entry that was before each (first if it was
// first, else last), in its project (created if it is gone). An entry
// whose name is taken now stays out and is returned in skipped, as is one
// whose project is gone from the file.
func PutBack(format string, data []byte, moved []Moved) (out []byte, skipped []Moved, err error) {
	if !slices.Contains(Formats, format) {
		return nil, nil, unknownFormat(format)
	}
	bom, text := cutBOM(data)
	if format == Codex {
		out, skipped, err = putBackCodex(text, moved)
	} else {
		out, skipped, err = putBackJSON(format, text, moved)
	}
	if err != nil {
		return nil, nil, err
	}
	return slices.Concat(bom, out), skipped, nil
}

func putBackJSON(format string, data []byte, moved []Moved) ([]byte, []Moved, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}\n")
	}
	var skipped []Moved
	for _, mv := range moved {
		c, err := openJSON(format, data)
		if err != nil {
			return nil, nil, err
		}
		obj, indent, err := c.scopeFor(format, mv.Project)
		if err != nil {
			return nil, nil, err
		}
		if obj == nil {
			skipped = append(skipped, mv)
			continue
		}
		if slices.ContainsFunc(obj.Members, func(m hujson.ObjectMember) bool { return memberName(m) == mv.Name }) {
			skipped = append(skipped, mv)
			continue
		}
		if err := c.insert(obj, indent, mv); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", mv.Name, err)
		}
		if data, err = c.pack(); err != nil {
			return nil, nil, err
		}
	}
	return data, skipped, nil
}

// scopeFor is the servers object of project ("" for the file's own),
// created if the file (or the project) has none, and the indentation of
// its line; nil if the project is gone from the file.
func (c *jsonConfig) scopeFor(format, project string) (*hujson.Object, string, error) {
	if project == "" {
		if c.servers == nil {
			if err := c.add(c.top, lineIndent(c.data, c.root.StartOffset), c.key, map[string]any{}); err != nil {
				return nil, "", err
			}
			c.servers = c.top.Members[len(c.top.Members)-1].Value.Value.(*hujson.Object)
			c.serversIndent = lineIndent(c.data, c.root.StartOffset) + c.unit
		}
		return c.servers, c.serversIndent, nil
	}
	p := member(c.top, "projects")
	if p == nil {
		return nil, "", nil
	}
	po, ok := p.Value.(*hujson.Object)
	if !ok {
		return nil, "", nil
	}
	pv := member(po, project)
	if pv == nil {
		return nil, "", nil
	}
	proj, ok := pv.Value.(*hujson.Object)
	if !ok {
		return nil, "", nil
	}
	if v := member(proj, "mcpServers"); v != nil {
		obj, ok := v.Value.(*hujson.Object)
		if !ok {
			return nil, "", fmt.Errorf(`project %q: "mcpServers" is not an object`, project)
		}
		return obj, lineIndent(c.data, v.StartOffset), nil
	}
	projIndent := lineIndent(c.data, pv.StartOffset)
	if err := c.add(proj, projIndent, "mcpServers", map[string]any{}); err != nil {
		return nil, "", err
	}
	return proj.Members[len(proj.Members)-1].Value.Value.(*hujson.Object), projIndent + c.unit, nil
}

// insert puts mv back into obj (whose line is indented by objIndent):
// after the member it followed, first if it was first, else last. Its
// text is re-indented if its new line is indented otherwise.
func (c *jsonConfig) insert(obj *hujson.Object, objIndent string, mv Moved) error {
	at := len(obj.Members)
	switch {
	case mv.First:
		at = 0
	case mv.After != "":
		if i := slices.IndexFunc(obj.Members, func(m hujson.ObjectMember) bool { return memberName(m) == mv.After }); i >= 0 {
			at = i + 1
		}
	}
	if at == len(obj.Members) || len(obj.Members) == 0 {
		// Last: as add writes a new member, with the text as it was.
		text, indent := mv.Text, mv.Indent
		want := objIndent + c.unit
		for _, m := range obj.Members {
			if in, ok := ownLine(m.Name.BeforeExtra); ok {
				want = in
			}
		}
		val, err := hujson.Parse([]byte(reindent(text, indent, want)))
		if err != nil {
			return err
		}
		if err := c.add(obj, objIndent, mv.Name, nil); err != nil {
			return err
		}
		obj.Members[len(obj.Members)-1].Value.Value = val.Value
		if mv.Comment != "" {
			obj.AfterExtra = slices.Concat([]byte(mv.Comment), obj.AfterExtra)
		}
		return nil
	}
	next := obj.Members[at]
	before := hujson.Extra(" ")
	want := mv.Indent
	if _, tail := cutTail(next.Name.BeforeExtra); tail != nil {
		before = slices.Clone(tail)
		want, _ = ownLine(tail)
	}
	val, err := hujson.Parse([]byte(reindent(mv.Text, mv.Indent, want)))
	if err != nil {
		return err
	}
	m := hujson.ObjectMember{
		Name:  hujson.Value{BeforeExtra: before, Value: hujson.String(mv.Name)},
		Value: hujson.Value{BeforeExtra: hujson.Extra(" "), Value: val.Value},
	}
	obj.Members = slices.Insert(obj.Members, at, m)
	if mv.Comment != "" { // after its comma, before the next member's line
		next := &obj.Members[at+1].Name
		next.BeforeExtra = slices.Concat([]byte(mv.Comment), next.BeforeExtra)
	}
	return nil
}

// reindent moves the lines after the first of text from indentation from
// to indentation to.
func reindent(text, from, to string) string {
	if from == to {
		return text
	}
	lines := strings.Split(text, "\n")
	for i := 1; i < len(lines); i++ {
		if rest, ok := strings.CutPrefix(lines[i], from); ok {
			lines[i] = to + rest
		}
	}
	return strings.Join(lines, "\n")
}

func putBackCodex(data []byte, moved []Moved) ([]byte, []Moved, error) {
	var skipped []Moved
	for _, mv := range moved {
		tbl, err := readCodex(data)
		if err != nil {
			return nil, nil, err
		}
		if _, taken := tbl[mv.Name]; taken {
			skipped = append(skipped, mv)
			continue
		}
		secs, err := tomlSections(data)
		if err != nil {
			return nil, nil, err
		}
		eol := "\n"
		if len(data) > 0 {
			eol = lineEnding(data)
		}
		// Where it was: after the entry before it, or before the first
		// entry; else after the last.
		at, first, last := -1, -1, len(data)
		for _, sec := range secs {
			if p := sec.path; len(p) >= 2 && p[0] == "mcp_servers" {
				if first < 0 {
					first = sec.header
				}
				if p[1] == mv.After {
					at = sec.end
				}
				last = sec.contentEnd
			}
		}
		switch {
		case mv.First && first >= 0:
			at = first
		case at < 0:
			at = last
		}
		text := withEOL([]byte(strings.ReplaceAll(mv.Text, "\r\n", "\n")), eol)
		if !bytes.HasSuffix(text, []byte(eol)) {
			text = append(text, eol...)
		}
		var pre, post string
		switch {
		case at == 0:
		case data[at-1] != '\n':
			pre = eol + eol
		case !blankLineBefore(data, at):
			pre = eol
		}
		if at < len(data) && !bytes.HasSuffix(text, []byte(eol+eol)) {
			post = eol
		}
		if data, err = applyCodex(data, []textEdit{{at, at, slices.Concat([]byte(pre), text, []byte(post))}}); err != nil {
			return nil, nil, err
		}
	}
	return data, skipped, nil
}
