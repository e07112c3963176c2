package clientconfig

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Reading Codex's config.toml: [mcp_servers.NAME] tables.
//
// Codex has no ${…} expansion; what it reads from the environment it
// names in fields of its own. Those become references here, so they
// survive an import and an export to any format:
//
//	env_vars = ["K"]                      → env.K = "${K}"
//	env_http_headers = { H = "VAR" }      → headers.H = "${VAR}"
//	bearer_token_env_var = "VAR"          → headers.Authorization = "Bearer ${VAR}"
//
// Codex speaks stdio and Streamable HTTP only. A `type` field (which
// Codex ignores) says "sse" for a legacy SSE server; Export writes one so
// that an SSE server survives a round trip.

// readTOML parses data as TOML. Its error is a *SyntaxError.
func readTOML(data []byte) (map[string]any, error) {
	if err := checkUTF8(data); err != nil {
		return nil, err
	}
	if off := scanTOML(data); off >= 0 {
		return nil, &SyntaxError{Pos: newLines(data).pos(off),
			Message: fmt.Sprintf("arrays and tables nest more than %d levels deep", maxDepth)}
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		var de *toml.DecodeError
		if !errors.As(err, &de) {
			return nil, err
		}
		ls := newLines(data)
		line, col := de.Position()
		off := ls.offset(line, col)
		return nil, &SyntaxError{Pos: ls.pos(off), Message: tomlMessage(strings.TrimPrefix(de.Error(), "toml: "), data, off)}
	}
	return doc, nil
}

// tomlMessage makes a few of go-toml's messages (about data at off)
// plainer.
func tomlMessage(msg string, data []byte, off int) string {
	if r, n := utf8.DecodeRune(data[min(off, len(data)):]); n > 1 {
		// go-toml names the first byte of a multi-byte character.
		msg = tomlRune.ReplaceAllLiteralString(msg, fmt.Sprintf("U+%04X %q", r, r))
	}
	switch {
	case msg == "expected ',' or ']' after array value" && off < len(data) && strings.IndexByte(`"'[{-+0123456789tfin`, data[off]) >= 0:
		return "missing comma before this element (expected ',' or ']')"
	case strings.HasSuffix(msg, "strings cannot have new lines"):
		return "the string is not closed on its line"
	case strings.HasPrefix(msg, "expected keyword"):
		return "invalid value (strings must be in quotes)"
	}
	return msg
}

// scanTOML returns the offset of the first [ or { nested deeper than
// maxDepth, or -1. It skips comments and strings.
func scanTOML(data []byte) int {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case '"', '\'':
			delim := string(c)
			if strings.HasPrefix(string(data[i:min(i+3, len(data))]), strings.Repeat(delim, 3)) {
				delim = strings.Repeat(delim, 3)
			}
			for i += len(delim); i < len(data); i++ {
				if c == '"' && data[i] == '\\' {
					i++
					continue
				}
				if len(delim) == 1 && data[i] == '\n' {
					break
				}
				if strings.HasPrefix(string(data[i:min(i+len(delim), len(data))]), delim) {
					i += len(delim) - 1
					break
				}
			}
		case '[', '{':
			if depth++; depth > maxDepth {
				return i
			}
		case ']', '}':
			depth = max(0, depth-1)
		}
	}
	return -1
}

func parseCodex(data []byte) (*File, error) {
	tbl, err := readCodex(data)
	if err != nil {
		return nil, err
	}
	if tbl == nil {
		return nil, errors.New("no [mcp_servers] table: not a codex config")
	}
	ls := newLines(data)
	names, at, _ := tomlEntries(data)
	// Every name is in names (the walk sees what Unmarshal saw); the
	// sorted rest is a safety net.
	var rest []string
	for n := range tbl {
		if _, ok := at[n]; !ok {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	f := &File{Format: Codex}
	for _, name := range append(names, rest...) {
		v, ok := tbl[name]
		if !ok {
			continue
		}
		r := newEntryReader(Codex, name, fromTOML(v))
		s, refFields := r.codexEntry()
		pos := ls.pos(at[name])
		f.Warnings = append(f.Warnings, r.warnings...)
		if len(r.problems) > 0 {
			f.Problems = append(f.Problems, Problem{Name: name, Pos: pos, Message: strings.Join(r.problems, "; ")})
			continue
		}
		s.Pos = pos
		s.Refs = findRefs(s, refFields)
		f.Servers = append(f.Servers, s)
	}
	return f, nil
}

// readCodex reads data as Codex TOML and returns its mcp_servers table
// (nil if it has none). A JSON config, or an mcp_servers that is no
// table, is an error.
func readCodex(data []byte) (map[string]any, error) {
	if looksJSON(data) {
		if root, err := readJSON(data); err == nil {
			if f, err := detectJSON(root); err == nil {
				return nil, fmt.Errorf("the text is JSON (a %s config), not Codex TOML", f)
			}
		}
	}
	doc, err := readTOML(data)
	if err != nil {
		return nil, err
	}
	ms, ok := doc["mcp_servers"]
	if !ok {
		return nil, nil
	}
	tbl, ok := ms.(map[string]any)
	if !ok {
		_, _, top := tomlEntries(data)
		return nil, &SyntaxError{Pos: newLines(data).pos(top), Message: fmt.Sprintf("mcp_servers must be a table, not %s", kindOf(fromTOML(ms)))}
	}
	return tbl, nil
}

var tomlRune = regexp.MustCompile(`U\+[0-9A-F]{4,} '.+'`)

// envName is what Codex's environment-variable fields may name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// codexEntry reads a [mcp_servers.NAME] table. refFields are the fields
// whose value is a reference made from Codex's own environment fields.
func (r *entryReader) codexEntry() (Server, map[string]bool) {
	s := Server{Name: r.name}
	refFields := map[string]bool{}
	if !r.isObject {
		return s, refFields
	}
	typ := r.str("type")
	s.Command = r.str("command")
	s.Args = r.list("args")
	s.Env = r.dict("env", false)
	s.Cwd = r.str("cwd")
	for _, name := range r.envVars() {
		if _, ok := s.Env[name]; ok {
			r.warn("env_vars names %s, which env sets too: the env value is used", name)
			continue
		}
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[name] = "${" + name + "}"
		refFields["env."+name] = true
	}
	s.URL = r.str("url")
	s.Headers = r.dict("http_headers", false)
	setHeader := func(k, v, from string) {
		if _, ok := s.Headers[k]; ok {
			r.warn("%s sets header %s, which http_headers sets too: the http_headers value is used", from, k)
			return
		}
		if s.Headers == nil {
			s.Headers = map[string]string{}
		}
		s.Headers[k] = v
	}
	envHeaders := r.dict("env_http_headers", false)
	for _, k := range slices.Sorted(maps.Keys(envHeaders)) {
		setHeader(k, "${"+envHeaders[k]+"}", "env_http_headers")
		refFields["headers."+k] = true
	}
	if v := r.str("bearer_token_env_var"); v != "" {
		setHeader("Authorization", "Bearer ${"+v+"}", "bearer_token_env_var")
		refFields["headers.Authorization"] = true
	}
	if v := r.str("bearer_token"); v != "" {
		r.warn("bearer_token: Codex refuses a token written in config.toml; imported as the Authorization header")
		setHeader("Authorization", "Bearer "+v, "bearer_token")
	}
	if en, set := r.boolean("enabled"); set {
		s.Disabled = !en
	}
	if _, ok := r.value("headers"); ok {
		r.warn("headers is ignored by Codex (it reads http_headers): not imported")
	}
	r.transport(&s, typ)
	r.rest()
	return s, refFields
}

// envVars reads Codex's env_vars: names, or tables with a name.
func (r *entryReader) envVars() []string {
	v, ok := r.value("env_vars")
	if !ok {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		r.problem("env_vars must be an array of names, not %s", kindOf(v))
		return nil
	}
	var out []string
	for i, e := range arr {
		name, _ := e.(string)
		if o, ok := e.(*object); ok {
			name, _ = o.vals["name"].(string)
		}
		if !envName.MatchString(name) {
			r.problem("env_vars[%d] must be the name of an environment variable", i)
			continue
		}
		out = append(out, name)
	}
	return out
}

// fromTOML turns go-toml's values into the shapes toValue makes from
// JSON (tables as *object with sorted keys, numbers as written).
func fromTOML(v any) any {
	switch t := v.(type) {
	case map[string]any:
		o := &object{vals: make(map[string]any, len(t))}
		for k, e := range t {
			o.keys = append(o.keys, k)
			o.vals[k] = fromTOML(e)
		}
		sort.Strings(o.keys)
		return o
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = fromTOML(e)
		}
		return out
	case int64:
		return number(strconv.FormatInt(t, 10))
	case float64:
		return number(strconv.FormatFloat(t, 'g', -1, 64))
	}
	return v
}

// tomlEntries walks the TOML syntax for the keys under mcp_servers:
// names in the order they first appear, the offset of each name's first
// appearance, and the offset of the first mcp_servers key (-1 if none).
func tomlEntries(data []byte) (names []string, at map[string]int, top int) {
	at, top = map[string]int{}, -1
	record := func(path []string, offs []int) {
		if len(path) == 0 || path[0] != "mcp_servers" {
			return
		}
		if top < 0 {
			top = offs[0]
		}
		if len(path) >= 2 {
			if _, ok := at[path[1]]; !ok {
				at[path[1]] = offs[1]
				names = append(names, path[1])
			}
		}
	}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	var tableOffs []int
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table, tableOffs = keyPath(e.Key())
			record(table, tableOffs)
		case unstable.KeyValue:
			walkKeys(table, tableOffs, e, record)
		}
	}
	return names, at, top
}

// walkKeys calls f with the full path of the key-value kv in the table
// path (and the offsets of the path's parts), then with those of every
// key of the inline tables in its value.
func walkKeys(path []string, offs []int, kv *unstable.Node, f func(path []string, offs []int)) {
	p, o := keyPath(kv.Key())
	path, offs = append(path[:len(path):len(path)], p...), append(offs[:len(offs):len(offs)], o...)
	f(path, offs)
	if v := kv.Value(); v.Kind == unstable.InlineTable {
		it := v.Children()
		for it.Next() {
			walkKeys(path, offs, it.Node(), f)
		}
	}
}

// keyPath is a (dotted) key's parts and their offsets.
func keyPath(it unstable.Iterator) ([]string, []int) {
	var parts []string
	var offs []int
	for it.Next() {
		n := it.Node()
		parts = append(parts, string(n.Data))
		offs = append(offs, int(n.Raw.Offset))
	}
	return parts, offs
}
