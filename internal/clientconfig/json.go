package clientconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"
)

// Reading the JSON formats: claude and cursor ("mcpServers") and vscode
// ("servers" + "inputs"). All three accept comments and trailing commas
// (hujson's JWCC), since people paste what their editor shows them.

// readJSON parses data as JSON with comments and trailing commas. Its
// error is a *SyntaxError.
func readJSON(data []byte) (hujson.Value, error) {
	if err := checkUTF8(data); err != nil {
		return hujson.Value{}, err
	}
	sc := scanJSON(data)
	if sc.tooDeep >= 0 {
		return hujson.Value{}, &SyntaxError{Pos: newLines(data).pos(sc.tooDeep),
			Message: fmt.Sprintf("objects and arrays nest more than %d levels deep", maxDepth)}
	}
	v, err := hujson.Parse(data)
	if err != nil {
		return hujson.Value{}, jsonSyntaxError(data, err, sc)
	}
	return v, nil
}

// jsonScan is what a quick pass over the text saw: where it nests too
// deeply, and what is still open when the text ends (for errors at the
// end of the text, which point best at what was never closed).
type jsonScan struct {
	tooDeep int   // offset of the opener past maxDepth, or -1
	openStr int   // offset of the quote of a string open at the end, or -1
	openers []int // offsets of the { and [ open at the end
}

// scanJSON follows strings and comments the way hujson does.
func scanJSON(data []byte) jsonScan {
	sc := jsonScan{tooDeep: -1, openStr: -1}
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			start := i
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			if i >= len(data) {
				sc.openStr = start
				return sc
			}
		case '/':
			switch {
			case bytes.HasPrefix(data[i:], []byte("//")):
				j := bytes.IndexByte(data[i:], '\n')
				if j < 0 {
					return sc
				}
				i += j
			case bytes.HasPrefix(data[i:], []byte("/*")):
				j := bytes.Index(data[i+2:], []byte("*/"))
				if j < 0 {
					return sc
				}
				i += 2 + j + 1
			}
		case '{', '[':
			sc.openers = append(sc.openers, i)
			if len(sc.openers) > maxDepth {
				sc.tooDeep = i
				return sc
			}
		case '}', ']':
			if len(sc.openers) > 0 {
				sc.openers = sc.openers[:len(sc.openers)-1]
			}
		}
	}
	return sc
}

var hujsonError = regexp.MustCompile(`(?s)^hujson: line (\d+), column (\d+): (.*)$`)

// jsonSyntaxError turns hujson's error (line and byte column in its text)
// into a *SyntaxError with a character column and a plainer message.
func jsonSyntaxError(data []byte, err error, sc jsonScan) error {
	m := hujsonError.FindStringSubmatch(err.Error())
	if m == nil {
		return &SyntaxError{Pos: Pos{1, 1}, Message: err.Error()}
	}
	ls := newLines(data)
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	off, msg := ls.offset(line, col), m[3]
	const afterMember = "after object value (expecting ',' or '}')"
	const afterElement = "after array value (expecting ',' or ']')"
	switch {
	case strings.HasPrefix(msg, "parsing comment"):
		msg = "the comment is never closed (no */)"
	case errors.Is(err, io.ErrUnexpectedEOF):
		switch {
		case sc.openStr >= 0:
			off, msg = sc.openStr, "the string is never closed"
		case len(sc.openers) > 0:
			off = sc.openers[len(sc.openers)-1]
			msg = fmt.Sprintf("this %q is never closed (the text ends first)", data[off])
		default:
			msg = "the text ends too early"
		}
	case strings.HasPrefix(msg, "invalid literal: "):
		lit := strings.TrimPrefix(msg, "invalid literal: ")
		switch {
		case !strings.HasPrefix(lit, `"`):
			msg = fmt.Sprintf("invalid value %s (JSON has true, false, null, numbers and \"strings\")", lit)
		case strings.ContainsAny(lit, "\r\n"):
			msg = "the string is not closed on its line"
		case strings.ContainsFunc(lit, func(r rune) bool { return r < 0x20 }):
			msg = "a control character (a tab, say) in a string must be escaped"
		default:
			msg = "invalid escape in a string (a backslash must be written \\\\)"
		}
	case strings.HasSuffix(msg, afterMember) && off < len(data) && data[off] == '"':
		msg = "missing comma before this member (expected ',' or '}')"
	case strings.HasSuffix(msg, afterElement) && off < len(data) && strings.IndexByte(`"{[-0123456789tfn`, data[off]) >= 0:
		msg = "missing comma before this element (expected ',' or ']')"
	case strings.HasSuffix(msg, "at start of object name") || strings.HasPrefix(msg, `invalid character '\''`):
		msg += " (names and strings must be in double quotes)"
	}
	return &SyntaxError{Pos: ls.pos(off), Message: msg}
}

// detectJSON says which JSON format root is.
func detectJSON(root hujson.Value) (string, error) {
	obj, ok := root.Value.(*hujson.Object)
	if !ok {
		return "", errors.New("the text is JSON but not an object: not an MCP client config")
	}
	if _, _, ok := vscodeSections(obj); ok {
		return VSCode, nil
	}
	if member(obj, "mcpServers") != nil || len(projectServers(obj)) > 0 {
		return Claude, nil
	}
	return "", errors.New(`no "mcpServers" or "servers" object: not an MCP client config`)
}

// member is the value of obj's first member called name, or nil.
func member(obj *hujson.Object, name string) *hujson.Value {
	for i := range obj.Members {
		if memberName(obj.Members[i]) == name {
			return &obj.Members[i].Value
		}
	}
	return nil
}

func memberName(m hujson.ObjectMember) string {
	if lit, ok := m.Name.Value.(hujson.Literal); ok {
		return lit.String()
	}
	return ""
}

// vscodeSections finds "servers" and "inputs" at the top of obj (mcp.json)
// or under "mcp" (a VS Code settings.json).
func vscodeSections(obj *hujson.Object) (servers, inputs *hujson.Value, ok bool) {
	if s := member(obj, "servers"); s != nil {
		return s, member(obj, "inputs"), true
	}
	if m := member(obj, "mcp"); m != nil {
		if mo, isObj := m.Value.(*hujson.Object); isObj {
			if s := member(mo, "servers"); s != nil {
				return s, member(mo, "inputs"), true
			}
		}
	}
	return nil, nil, false
}

// projectServers lists the projects of a ~/.claude.json that have
// "mcpServers", in file order.
func projectServers(obj *hujson.Object) []hujson.ObjectMember {
	p := member(obj, "projects")
	if p == nil {
		return nil
	}
	po, ok := p.Value.(*hujson.Object)
	if !ok {
		return nil
	}
	var out []hujson.ObjectMember
	for _, m := range po.Members {
		if o, ok := m.Value.Value.(*hujson.Object); ok && member(o, "mcpServers") != nil {
			out = append(out, m)
		}
	}
	return out
}

// jsonParser collects the entries of one JSON file.
type jsonParser struct {
	format string
	lines  *lines
	file   *File
	seen   map[string]Pos // names already read, and where
}

func parseJSON(format string, data []byte) (*File, error) {
	root, err := readJSON(data)
	if err != nil {
		return nil, err
	}
	p := &jsonParser{format: format, lines: newLines(data), file: &File{Format: format}, seen: map[string]Pos{}}
	obj, ok := root.Value.(*hujson.Object)
	if !ok {
		return nil, notAnObject(p.lines, root)
	}
	if format == VSCode {
		servers, inputs, ok := vscodeSections(obj)
		if !ok {
			msg := `no "servers" object: not a VS Code MCP config`
			if member(obj, "mcpServers") != nil {
				msg += ` (it has "mcpServers": read it as claude or cursor)`
			}
			return nil, errors.New(msg)
		}
		if err := p.servers(servers, `"servers"`, nil); err != nil {
			return nil, err
		}
		p.inputs(inputs)
		p.checkInputRefs()
		return p.file, nil
	}
	top, projects := member(obj, "mcpServers"), projectServers(obj)
	if top == nil && len(projects) == 0 {
		msg := `no "mcpServers" object: not a ` + format + ` config`
		if _, _, ok := vscodeSections(obj); ok {
			msg += ` (it has "servers": read it as vscode)`
		}
		return nil, errors.New(msg)
	}
	if top != nil {
		if err := p.servers(top, `"mcpServers"`, nil); err != nil {
			return nil, err
		}
	}
	for _, pm := range projects {
		po := pm.Value.Value.(*hujson.Object)
		where := fmt.Sprintf("projects[%q].mcpServers", memberName(pm))
		if err := p.servers(member(po, "mcpServers"), where, disabledIn(po)); err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				return nil, err
			}
			p.file.Warnings = append(p.file.Warnings, fmt.Sprintf("%s: %s: skipped", se.Pos, se.Message))
		}
	}
	return p.file, nil
}

// notAnObject is the error about a config whose top level (root) is not
// an object.
func notAnObject(ls *lines, root hujson.Value) error {
	return &SyntaxError{Pos: ls.pos(root.StartOffset),
		Message: fmt.Sprintf("the config must be a JSON object, not %s", kindOf(toValue(root)))}
}

// notServers is the error about a servers object (called where) that is
// not an object.
func notServers(ls *lines, v hujson.Value, where string) error {
	return &SyntaxError{Pos: ls.pos(v.StartOffset),
		Message: fmt.Sprintf("%s must be an object of servers, not %s", where, kindOf(toValue(v)))}
}

// disabledIn is the set of names a ~/.claude.json project lists in
// "disabledMcpServers" (the servers /mcp turned off there).
func disabledIn(project *hujson.Object) map[string]bool {
	v := member(project, "disabledMcpServers")
	if v == nil {
		return nil
	}
	arr, ok := v.Value.(*hujson.Array)
	if !ok {
		return nil
	}
	out := map[string]bool{}
	for _, e := range arr.Elements {
		if lit, ok := e.Value.(hujson.Literal); ok && lit.Kind() == '"' {
			out[lit.String()] = true
		}
	}
	return out
}

// servers reads the entries of the object v (called where, for errors).
// Names in disabled are read as disabled.
func (p *jsonParser) servers(v *hujson.Value, where string, disabled map[string]bool) error {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return notServers(p.lines, *v, where)
	}
	for _, m := range obj.Members {
		name := memberName(m)
		pos := p.lines.pos(m.Name.StartOffset)
		if first, dup := p.seen[name]; dup {
			p.file.Problems = append(p.file.Problems, Problem{Name: name, Pos: pos,
				Message: fmt.Sprintf("the name is used again: only the first entry, at %s, is read", first)})
			continue
		}
		p.seen[name] = pos
		r := newEntryReader(p.format, name, toValue(m.Value))
		s := r.jsonEntry()
		if disabled[name] {
			s.Disabled = true
		}
		p.add(r, s, pos)
	}
	return nil
}

// add records what r read: the server, or a Problem, and its warnings.
func (p *jsonParser) add(r *entryReader, s Server, pos Pos) {
	p.file.Warnings = append(p.file.Warnings, r.warnings...)
	if len(r.problems) > 0 {
		p.file.Problems = append(p.file.Problems, Problem{Name: r.name, Pos: pos, Message: strings.Join(r.problems, "; ")})
		return
	}
	s.Pos = pos
	s.Refs = findRefs(s, nil)
	p.file.Servers = append(p.file.Servers, s)
}

// inputs reads VS Code's "inputs" array; an input without an id is
// skipped with a warning.
func (p *jsonParser) inputs(v *hujson.Value) {
	if v == nil {
		return
	}
	arr, ok := toValue(*v).([]any)
	if !ok {
		p.file.Warnings = append(p.file.Warnings, fmt.Sprintf(`%s: "inputs" is not an array: skipped`, p.lines.pos(v.StartOffset)))
		return
	}
	for i, e := range arr {
		o, ok := e.(*object)
		if !ok {
			p.file.Warnings = append(p.file.Warnings, fmt.Sprintf("inputs[%d] is not an object: skipped", i))
			continue
		}
		in := Input{}
		read := map[string]bool{}
		str := func(k string) string {
			read[k] = true
			s, _ := o.vals[k].(string)
			return s
		}
		in.ID, in.Type, in.Description = str("id"), str("type"), str("description")
		read["password"] = true
		in.Password, _ = o.vals["password"].(bool)
		if in.ID == "" {
			p.file.Warnings = append(p.file.Warnings, fmt.Sprintf("inputs[%d] has no id: skipped", i))
			continue
		}
		var rest []string
		for _, k := range o.keys {
			if !read[k] {
				rest = append(rest, k)
			}
		}
		if len(rest) > 0 {
			p.file.Warnings = append(p.file.Warnings, fmt.Sprintf("input %q: not imported: %s", in.ID, strings.Join(rest, ", ")))
		}
		p.file.Inputs = append(p.file.Inputs, in)
	}
}

var inputRef = regexp.MustCompile(`^\$\{input:([^}]*)\}$`)

// checkInputRefs warns about ${input:id} references no input declares.
func (p *jsonParser) checkInputRefs() {
	declared := map[string]bool{}
	for _, in := range p.file.Inputs {
		declared[in.ID] = true
	}
	for _, s := range p.file.Servers {
		for _, r := range s.Refs {
			if m := inputRef.FindStringSubmatch(r.Ref); m != nil && !declared[m[1]] {
				p.file.Warnings = append(p.file.Warnings,
					fmt.Sprintf("%s: %s uses %s, which no input declares", s.Name, r.Field, r.Ref))
			}
		}
	}
}

// object is a JSON object or TOML table: its keys in file order (the
// first time each appears) and its values (the last one written, as
// JSON.parse does).
type object struct {
	keys []string
	vals map[string]any
	dups []string // keys written more than once
}

// number is a JSON or TOML number, as written.
type number string

// toValue turns a hujson value into string, bool, number, nil, []any or
// *object.
func toValue(v hujson.Value) any {
	switch t := v.Value.(type) {
	case *hujson.Object:
		o := &object{vals: map[string]any{}}
		for _, m := range t.Members {
			k := memberName(m)
			if _, dup := o.vals[k]; dup {
				o.dups = append(o.dups, k)
			} else {
				o.keys = append(o.keys, k)
			}
			o.vals[k] = toValue(m.Value)
		}
		return o
	case *hujson.Array:
		out := make([]any, 0, len(t.Elements))
		for _, e := range t.Elements {
			out = append(out, toValue(e))
		}
		return out
	case hujson.Literal:
		switch t.Kind() {
		case '"':
			return t.String()
		case 't', 'f':
			return t.Bool()
		case 'n':
			return nil
		}
		return number(t)
	}
	return nil
}

// kindOf names a value's kind for messages.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "true or false"
	case number, int64, float64:
		return "a number"
	case nil:
		return "null"
	case []any:
		return "an array"
	case *object, map[string]any:
		return "an object"
	}
	return "a date or time" // TOML's other kinds of value
}
