package clientconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Export writes servers in the format: deterministic (servers sorted by
// Name, keys in a fixed order), 2-space indented JSON or TOML, a trailing
// newline. inputs are written for vscode only (sorted by ID). Values are
// written as they are, references included.
//
// Per format:
//   - claude: {"mcpServers": …}; stdio entries without "type" (as Claude
//     Desktop and Windsurf expect), remote ones with "type": "http" or "sse".
//   - cursor: the same, except that Streamable HTTP entries have no "type"
//     (Cursor's own shape); SSE ones say "type": "sse".
//   - vscode: {"inputs": […], "servers": …}, every entry with its "type".
//   - codex: [mcp_servers.NAME] tables; see toml.go for how references
//     become env_vars, env_http_headers and bearer_token_env_var, and how
//     an SSE server is marked.
//
// A disabled server is written "disabled": true in the JSON formats
// (Claude Code, Windsurf and Cline read it; Cursor and VS Code ignore it,
// and VS Code's schema flags it) and enabled = false in codex. Only the
// fields of the server's transport are written. A server without a name,
// two servers with one name, an unknown transport, a stdio server without
// a command, a remote one without a url, or a value that is not UTF-8 is
// an error.
func Export(format string, servers []Server, inputs []Input) ([]byte, error) {
	list, err := exportable(servers)
	if err != nil {
		return nil, err
	}
	switch format {
	case Claude, Cursor:
		entries := map[string]jsonEntry{}
		for _, s := range list {
			entries[s.Name] = newJSONEntry(format, s)
		}
		return encodeJSON(struct {
			MCPServers map[string]jsonEntry `json:"mcpServers"`
		}{entries})
	case VSCode:
		entries := map[string]jsonEntry{}
		for _, s := range list {
			entries[s.Name] = newJSONEntry(format, s)
		}
		ins, err := exportInputs(inputs)
		if err != nil {
			return nil, err
		}
		return encodeJSON(struct {
			Inputs  []jsonInput          `json:"inputs,omitempty"`
			Servers map[string]jsonEntry `json:"servers"`
		}{ins, entries})
	case Codex:
		return exportCodex(list), nil
	}
	return nil, unknownFormat(format)
}

// exportable checks servers and returns copies sorted by name, each with
// its transport settled and only that transport's fields.
func exportable(servers []Server) ([]Server, error) {
	out := make([]Server, 0, len(servers))
	seen := map[string]bool{}
	for _, s := range servers {
		if s.Name == "" {
			return nil, fmt.Errorf("a server has no name")
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("two servers are called %q", s.Name)
		}
		seen[s.Name] = true
		t := s.Transport
		switch {
		case t == "" && s.Command != "":
			t = TransportStdio
		case t == "" && s.URL != "":
			t = TransportHTTP
		case t != "":
			if t = normalTransport(t); t == "" {
				return nil, fmt.Errorf("server %q: unknown transport %q", s.Name, s.Transport)
			}
		}
		c := Server{Name: s.Name, Transport: t, Disabled: s.Disabled}
		switch t {
		case TransportStdio:
			if s.Command == "" {
				return nil, fmt.Errorf("server %q: a stdio server needs a command", s.Name)
			}
			c.Command, c.Args, c.Env, c.Cwd = s.Command, s.Args, s.Env, s.Cwd
		case TransportHTTP, TransportSSE:
			if s.URL == "" {
				return nil, fmt.Errorf("server %q: a remote server needs a url", s.Name)
			}
			c.URL, c.Headers = s.URL, s.Headers
		default:
			return nil, fmt.Errorf("server %q: neither a command nor a url", s.Name)
		}
		if field, ok := invalidUTF8(c); !ok {
			return nil, fmt.Errorf("server %q: %s is not valid UTF-8", s.Name, field)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// invalidUTF8 names the first field of s that is not valid UTF-8.
func invalidUTF8(s Server) (string, bool) {
	check := []struct{ field, v string }{{"name", s.Name}, {"command", s.Command}, {"cwd", s.Cwd}, {"url", s.URL}}
	for i, a := range s.Args {
		check = append(check, struct{ field, v string }{fmt.Sprintf("args[%d]", i), a})
	}
	for what, m := range map[string]map[string]string{"env": s.Env, "headers": s.Headers} {
		for k, v := range m {
			check = append(check, struct{ field, v string }{what + " name " + k, k}, struct{ field, v string }{what + "." + k, v})
		}
	}
	for _, c := range check {
		if !utf8.ValidString(c.v) {
			return c.field, false
		}
	}
	return "", true
}

// jsonEntry is one entry of the JSON formats, its keys in the order
// written.
type jsonEntry struct {
	Type     string            `json:"type,omitempty"`
	Command  string            `json:"command,omitempty"`
	Args     []string          `json:"args,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	URL      string            `json:"url,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	Disabled bool              `json:"disabled,omitempty"`
}

func newJSONEntry(format string, s Server) jsonEntry {
	e := jsonEntry{Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd, URL: s.URL, Headers: s.Headers, Disabled: s.Disabled}
	switch {
	case format == VSCode:
		e.Type = s.Transport
	case s.Transport == TransportSSE:
		e.Type = TransportSSE
	case s.Transport == TransportHTTP && format == Claude:
		e.Type = TransportHTTP
	}
	return e
}

// jsonInput is a VS Code input as written.
type jsonInput struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	Password    bool   `json:"password,omitempty"`
}

func exportInputs(inputs []Input) ([]jsonInput, error) {
	out := make([]jsonInput, 0, len(inputs))
	seen := map[string]bool{}
	for _, in := range inputs {
		if in.ID == "" {
			return nil, fmt.Errorf("an input has no id")
		}
		if seen[in.ID] {
			return nil, fmt.Errorf("two inputs have the id %q", in.ID)
		}
		seen[in.ID] = true
		if !utf8.ValidString(in.ID) || !utf8.ValidString(in.Type) || !utf8.ValidString(in.Description) {
			return nil, fmt.Errorf("input %q is not valid UTF-8", in.ID)
		}
		t := in.Type
		if t == "" {
			t = "promptString"
		}
		out = append(out, jsonInput{Type: t, ID: in.ID, Description: in.Description, Password: in.Password})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// encodeJSON writes v with 2-space indents, <, > and & as they are, and a
// trailing newline. Map keys come out sorted.
func encodeJSON(v any) ([]byte, error) {
	return encodeJSONIndent(v, "", "  ")
}

// encodeJSONIndent is encodeJSON with the prefix and indent of
// json.Encoder.SetIndent; with both empty, v is written on one line.
func encodeJSONIndent(v any, prefix, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var (
	// bareKey is a TOML key that needs no quotes.
	bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	// wholeRef is a value that is one ${NAME} reference and nothing else.
	wholeRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)
	// bearerRef is an Authorization value Codex's bearer_token_env_var makes.
	bearerRef = regexp.MustCompile(`^Bearer \$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)
)

// exportCodex writes [mcp_servers.NAME] tables, a blank line between
// two entries.
func exportCodex(list []Server) []byte {
	var b strings.Builder
	if len(list) == 0 {
		b.WriteString("[mcp_servers]\n")
	}
	for i, s := range list {
		if i > 0 {
			b.WriteString("\n")
		}
		writeCodexEntry(&b, s)
	}
	return []byte(b.String())
}

// writeCodexEntry writes s as a [mcp_servers.NAME] table and its
// sub-tables, each line ended by "\n". An env value that is "${KEY}" for
// its own KEY becomes env_vars (Codex passes the variable through); a
// header value "${VAR}" becomes env_http_headers; an Authorization header
// "Bearer ${VAR}" becomes bearer_token_env_var. Reading the table back
// gives the same values.
func writeCodexEntry(b *strings.Builder, s Server) {
	table := "mcp_servers." + tomlKey(s.Name)
	fmt.Fprintf(b, "[%s]\n", table)
	env := map[string]string{}
	var envVars []string
	for k, v := range s.Env {
		if m := wholeRef.FindStringSubmatch(v); m != nil && m[1] == k {
			envVars = append(envVars, k)
		} else {
			env[k] = v
		}
	}
	sort.Strings(envVars)
	headers, envHeaders, bearer := map[string]string{}, map[string]string{}, ""
	for k, v := range s.Headers {
		if m := bearerRef.FindStringSubmatch(v); m != nil && k == "Authorization" {
			bearer = m[1]
		} else if m := wholeRef.FindStringSubmatch(v); m != nil {
			envHeaders[k] = m[1]
		} else {
			headers[k] = v
		}
	}
	if s.Transport == TransportStdio {
		fmt.Fprintf(b, "command = %s\n", tomlString(s.Command))
		if len(s.Args) > 0 {
			fmt.Fprintf(b, "args = %s\n", tomlArray(s.Args))
		}
		if s.Cwd != "" {
			fmt.Fprintf(b, "cwd = %s\n", tomlString(s.Cwd))
		}
		if len(envVars) > 0 {
			fmt.Fprintf(b, "env_vars = %s\n", tomlArray(envVars))
		}
	} else {
		fmt.Fprintf(b, "url = %s\n", tomlString(s.URL))
		if bearer != "" {
			fmt.Fprintf(b, "bearer_token_env_var = %s\n", tomlString(bearer))
		}
		if s.Transport == TransportSSE {
			b.WriteString("# A legacy SSE server: Codex itself connects over Streamable HTTP only.\n")
			b.WriteString("type = \"sse\"\n")
		}
	}
	if s.Disabled {
		b.WriteString("enabled = false\n")
	}
	for _, sub := range []struct {
		name string
		m    map[string]string
	}{{"env", env}, {"http_headers", headers}, {"env_http_headers", envHeaders}} {
		if len(sub.m) == 0 {
			continue
		}
		fmt.Fprintf(b, "\n[%s.%s]\n", table, sub.name)
		for _, k := range slices.Sorted(maps.Keys(sub.m)) {
			fmt.Fprintf(b, "%s = %s\n", tomlKey(k), tomlString(sub.m[k]))
		}
	}
}

func tomlKey(k string) string {
	if bareKey.MatchString(k) {
		return k
	}
	return tomlString(k)
}

func tomlArray(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = tomlString(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// tomlString writes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
