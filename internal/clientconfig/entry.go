package clientconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// entryReader reads the fields of one server entry, whatever the format,
// collecting what is wrong with it (problems: the entry is not read) and
// what is worth saying (warnings: the entry is read).
type entryReader struct {
	format   string
	name     string
	o        *object
	isObject bool            // the entry is an object (else there is nothing more to say)
	read     map[string]bool // fields looked at
	problems []string
	warnings []string
}

func newEntryReader(format, name string, v any) *entryReader {
	r := &entryReader{format: format, name: name, read: map[string]bool{}}
	if name == "" {
		r.problem("the name is empty")
	}
	o, ok := v.(*object)
	if !ok {
		r.problem("the entry must be an object, not %s", kindOf(v))
		o = &object{vals: map[string]any{}}
	}
	r.o, r.isObject = o, ok
	for _, k := range o.dups {
		r.warn("%s is written more than once: the last one is used", k)
	}
	return r
}

func (r *entryReader) problem(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

func (r *entryReader) warn(format string, args ...any) {
	r.warnings = append(r.warnings, r.name+": "+fmt.Sprintf(format, args...))
}

// value marks key read and returns its value; null counts as absent.
func (r *entryReader) value(key string) (any, bool) {
	r.read[key] = true
	v, ok := r.o.vals[key]
	return v, ok && v != nil
}

// str reads a string field ("" if absent).
func (r *entryReader) str(key string) string {
	v, ok := r.value(key)
	if !ok {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.problem("%s must be a string, not %s", key, kindOf(v))
	}
	return s
}

// list reads an array of strings (nil if absent).
func (r *entryReader) list(key string) []string {
	v, ok := r.value(key)
	if !ok {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		r.problem("%s must be an array of strings, not %s", key, kindOf(v))
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			r.problem("%s[%d] must be a string, not %s", key, i, kindOf(e))
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// dict reads an object of strings (nil if absent or empty). With numbers
// (VS Code's env), a number is kept as written and null leaves the
// variable out.
func (r *entryReader) dict(key string, numbers bool) map[string]string {
	v, ok := r.value(key)
	if !ok {
		return nil
	}
	o, ok := v.(*object)
	if !ok {
		r.problem("%s must be an object of strings, not %s", key, kindOf(v))
		return nil
	}
	for _, k := range o.dups {
		r.warn("%s.%s is written more than once: the last one is used", key, k)
	}
	out := map[string]string{}
	for _, k := range o.keys {
		switch t := o.vals[k].(type) {
		case string:
			out[k] = t
		case number:
			if !numbers {
				r.problem("%s.%s must be a string, not a number (put its value in quotes)", key, k)
				continue
			}
			out[k] = string(t)
		case nil:
			if !numbers {
				r.problem("%s.%s must be a string, not null", key, k)
				continue
			}
			r.warn("%s.%s is null (unset): not imported", key, k)
		default:
			r.problem("%s.%s must be a string, not %s", key, k, kindOf(t))
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// boolean reads true or false; set says whether the field is there.
func (r *entryReader) boolean(key string) (val, set bool) {
	v, ok := r.value(key)
	if !ok {
		return false, false
	}
	b, ok := v.(bool)
	if !ok {
		r.problem("%s must be true or false, not %s", key, kindOf(v))
	}
	return b, true
}

// rest warns about the fields nobody read.
func (r *entryReader) rest() {
	var rest []string
	for _, k := range r.o.keys {
		if !r.read[k] {
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 {
		r.warn("not imported: %s", strings.Join(rest, ", "))
	}
}

// transport settles s.Transport from the written type (may be "") and
// the fields present, and drops the fields of the other transport.
func (r *entryReader) transport(s *Server, typ string) {
	t := ""
	if typ != "" {
		if t = normalTransport(typ); t == "" {
			r.problem("unknown type %q (want stdio, http, streamable-http or sse)", typ)
			return
		}
	}
	switch {
	case s.Command != "" && s.URL != "":
		r.problem("it has both a command and a url")
	case t == "" && s.Command != "":
		t = TransportStdio
	case t == "" && s.URL != "":
		t = TransportHTTP
	case t == "":
		r.problem("it has neither a command nor a url")
	case t == TransportStdio && s.Command == "":
		r.problem("type %q needs a command", typ)
	case t != TransportStdio && s.URL == "":
		r.problem("type %q needs a url", typ)
	}
	s.Transport = t
	switch t {
	case TransportStdio:
		if len(s.Headers) > 0 {
			r.warn("headers mean nothing to a stdio server: not imported")
			s.Headers = nil
		}
	case TransportHTTP, TransportSSE:
		var unused []string
		if len(s.Args) > 0 {
			unused = append(unused, "args")
		}
		if len(s.Env) > 0 {
			unused = append(unused, "env")
		}
		if s.Cwd != "" {
			unused = append(unused, "cwd")
		}
		if len(unused) > 0 {
			r.warn("%s mean nothing to a remote server: not imported", strings.Join(unused, ", "))
			s.Args, s.Env, s.Cwd = nil, nil, ""
		}
	}
}

// normalTransport maps the type values clients write to a Transport, or
// "" for one it does not know.
func normalTransport(typ string) string {
	switch strings.ToLower(typ) {
	case "stdio":
		return TransportStdio
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		return TransportHTTP
	case "sse":
		return TransportSSE
	}
	return ""
}

// jsonEntry reads an entry of the JSON formats.
func (r *entryReader) jsonEntry() Server {
	s := Server{Name: r.name}
	if !r.isObject {
		return s
	}
	typ := r.str("type")
	s.Command = r.str("command")
	s.Args = r.list("args")
	s.Env = r.dict("env", r.format == VSCode)
	s.Cwd = r.str("cwd")
	s.URL = r.str("url")
	if su := r.str("serverUrl"); su != "" { // Windsurf
		if s.URL != "" && s.URL != su {
			r.warn("url and serverUrl differ: url is used")
		} else {
			s.URL = su
		}
	}
	s.Headers = r.dict("headers", false)
	s.Disabled, _ = r.boolean("disabled")
	if ef := r.str("envFile"); ef != "" {
		r.warn("envFile %q is not read: set its variables in env", ef)
	}
	r.transport(&s, typ)
	r.rest()
	return s
}

// findRefs lists the ${…} references in s's values, in a fixed field
// order (command, args, env, cwd, url, headers; map keys sorted). With
// only, just the fields it holds.
func findRefs(s Server, only map[string]bool) []Ref {
	var out []Ref
	add := func(field, v string) {
		if only != nil && !only[field] {
			return
		}
		for _, ref := range refsIn(v) {
			out = append(out, Ref{Field: field, Ref: ref})
		}
	}
	add("command", s.Command)
	for i, a := range s.Args {
		add(fmt.Sprintf("args[%d]", i), a)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		add("env."+k, s.Env[k])
	}
	add("cwd", s.Cwd)
	add("url", s.URL)
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		add("headers."+k, s.Headers[k])
	}
	return out
}

// refsIn finds the ${…} references in v: ${VAR}, ${VAR:-default},
// ${env:NAME}, ${input:id}, ${workspaceFolder}… A reference may nest
// (${A:-${B}}); an unclosed one is text.
func refsIn(v string) []string {
	var out []string
	for i := 0; i < len(v); {
		j := strings.Index(v[i:], "${")
		if j < 0 {
			break
		}
		start, depth, end := i+j, 0, -1
		for k := start; k < len(v) && end < 0; k++ {
			switch {
			case strings.HasPrefix(v[k:], "${"):
				depth++
				k++
			case v[k] == '}':
				if depth--; depth == 0 {
					end = k
				}
			}
		}
		if end < 0 {
			break
		}
		if end > start+2 {
			out = append(out, v[start:end+1])
		}
		i = end + 1
	}
	return out
}
