package clientconfig

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tailscale/hujson"
)

// editName is the entry the edit tests write, as Switchboard does.
const editName = "switchboard"

// editServers are what the edit tests set: first, then second in its
// place (another transport, so every field changes).
func editServers() (first, second Server) {
	first = Server{Transport: TransportStdio, Command: "/usr/local/bin/switchboard",
		Args: []string{"mcp", "--profile", "work"}, Env: map[string]string{"SWITCHBOARD_TOKEN": "${SWITCHBOARD_TOKEN}"}}
	second = Server{Transport: TransportHTTP, URL: "http://127.0.0.1:7777/mcp",
		Headers: map[string]string{"Authorization": "Bearer ${SWITCHBOARD_TOKEN}", "X-Client": "café <&>"}}
	return first, second
}

// TestEditGolden takes every file of testdata/edit through three edits:
// set the entry "switchboard" (added, or replaced if the file has one),
// set it again with other values (replaced in place), and remove it. Each
// result is compared with NAME.STEP.golden.EXT (go test -update rewrites
// them) and checked by checkEdit.
func TestEditGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/edit/*")
	if err != nil {
		t.Fatal(err)
	}
	first, second := editServers()
	steps := []struct {
		name string
		want *Server // nil: removed
	}{{"1-set", &first}, {"2-reset", &second}, {"3-remove", nil}}
	n := 0
	for _, in := range inputs {
		base := filepath.Base(in)
		if strings.HasPrefix(base, ".") || strings.Contains(base, ".golden.") {
			continue
		}
		n++
		format := formatOf(base)
		t.Run(base, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			checkStripped(t, format, data)
			ext := filepath.Ext(base)
			for _, step := range steps {
				var out []byte
				if step.want != nil {
					out, err = SetEntry(format, data, editName, *step.want)
				} else {
					var removed Server
					var ok bool
					out, removed, ok, err = RemoveEntry(format, data, editName)
					if err == nil && (!ok || !reflect.DeepEqual(comparable([]Server{removed}), comparable([]Server{named(second)}))) {
						t.Errorf("RemoveEntry(%s) removed %+v, %v; want %+v, true", step.name, removed, ok, second)
					}
				}
				if err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				checkEdit(t, format, data, out, editName, step.want)
				path := strings.TrimSuffix(in, ext) + "." + step.name + ".golden" + ext
				compareGolden(t, path, out, step.name)
				data = out
			}
		})
	}
	if n == 0 {
		t.Fatal("no inputs in testdata/edit")
	}
}

// named is s called editName.
func named(s Server) Server {
	s.Name = editName
	return s
}

// checkEdit checks an edit of before into after that set the entry name to
// want (or removed it, want nil):
//   - after parses (but for a Codex file left without entries), with the
//     same entries as before but for name, and name is want (or gone: a
//     second RemoveEntry finds nothing);
//   - outside the entry the text is the same: byte for byte when one entry
//     was replaced, but for spaces, line ends and a comma when one was
//     added or removed (a removal takes a comment on its last line too);
//   - setting the same entry again changes nothing.
func checkEdit(t *testing.T, format string, before, after []byte, name string, want *Server) {
	t.Helper()
	if got, wantOthers := others(t, format, after, name), others(t, format, before, name); !reflect.DeepEqual(got, wantOthers) {
		t.Errorf("the other entries after the edit =\n%+v\nwant\n%+v\n%s", got, wantOthers, after)
	}
	spansBefore, hadServers := entrySpans(t, format, before, name)
	if want == nil {
		// Removing a Codex file's last entry leaves no mcp_servers at all.
		if _, err := Parse(format, after); err != nil && (format != Codex || len(others(t, format, after, name)) > 0 || !strings.Contains(err.Error(), "no [mcp_servers]")) {
			t.Errorf("Parse(after removing %q) = %v\n%s", name, err, after)
		}
		if _, _, ok, err := RemoveEntry(format, after, name); ok || err != nil {
			t.Errorf("RemoveEntry(RemoveEntry(…)) = %v, %v; want false, nil", ok, err)
		}
		if rest := cut(before, spansBefore, true); len(spansBefore) == 0 || !bytes.Equal(squeeze(rest), squeeze(after)) {
			t.Errorf("removing %q from\n%s\ngave\n%s\nwant, but for spaces and commas,\n%s", name, before, after, rest)
		}
		return
	}
	f, err := Parse(format, after)
	if err != nil {
		t.Fatalf("Parse(after the edit) = %v\n%s", err, after)
	}
	w := *want
	w.Name = name
	wantList, err := exportable([]Server{w})
	if err != nil {
		t.Fatal(err)
	}
	if got := comparable([]Server{entryOf(f, name)}); !reflect.DeepEqual(got, comparable(wantList)) {
		t.Errorf("the entry after the edit = %+v; want %+v\n%s", got[0], wantList[0], after)
	}
	spansAfter, _ := entrySpans(t, format, after, name)
	restBefore, restAfter := cut(before, spansBefore, false), cut(after, spansAfter, false)
	blank := len(bytes.TrimSpace(bytes.TrimPrefix(before, utf8BOM))) == 0
	if !hadServers && !blank { // an empty servers object, last in the top-level one
		end := bytes.LastIndexByte(restBefore, '}')
		restBefore = slices.Concat(restBefore[:end], []byte(`,"`+jsonServersKey(format)+`":{}`), restBefore[end:])
	}
	switch {
	case len(spansAfter) == 0:
		t.Errorf("after the edit, no entry %q\n%s", name, after)
	case blank:
	case len(spansBefore) == 1 && len(spansAfter) == 1 && !bytes.Equal(restBefore, restAfter):
		t.Errorf("replacing %q changed the text around it:\n%s", name, lineDiff(string(restBefore), string(restAfter)))
	case !bytes.Equal(squeeze(restBefore), squeeze(restAfter)):
		t.Errorf("setting %q changed more than spaces and commas around it:\n%s", name, lineDiff(string(restBefore), string(restAfter)))
	}
	if again, err := SetEntry(format, after, name, *want); err != nil || !bytes.Equal(again, after) {
		t.Errorf("setting the entry again = %v and\n%s\nwant it unchanged:\n%s", err, again, after)
	}
}

// checkStripped checks that setting the entry and removing it changes
// nothing but the entry: the text is the same as removing it alone (or as
// the text, if it had none). A file without a servers object gets one,
// which stays.
func checkStripped(t *testing.T, format string, data []byte) {
	t.Helper()
	if format != Codex {
		if c, err := openJSON(format, bytes.TrimPrefix(data, utf8BOM)); err != nil || c.servers == nil {
			return
		}
	}
	strip := func(data []byte) []byte {
		out, _, _, err := RemoveEntry(format, data, editName)
		if err != nil {
			t.Fatalf("RemoveEntry = %v", err)
		}
		return out
	}
	first, _ := editServers()
	set, err := SetEntry(format, data, editName, first)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strip(set), strip(data); !bytes.Equal(got, want) {
		t.Errorf("RemoveEntry(SetEntry(text)) differs from RemoveEntry(text):\n%s", lineDiff(string(want), string(got)))
	}
}

// others is what Parse reads of data but the entries called name (none
// for a text that is no config yet).
func others(t *testing.T, format string, data []byte, name string) []Server {
	t.Helper()
	if len(bytes.TrimSpace(bytes.TrimPrefix(data, utf8BOM))) == 0 {
		return comparable(nil)
	}
	f, err := Parse(format, data)
	var se *SyntaxError
	if errors.As(err, &se) {
		t.Fatalf("Parse = %v\n%s", err, data)
	}
	if err != nil {
		return comparable(nil)
	}
	var out []Server
	for _, s := range f.Servers {
		if s.Name != name {
			out = append(out, s)
		}
	}
	return comparable(out)
}

// cut is data without the spans; with lineComment, a span takes the
// commas, spaces and // comment after it on its line too.
func cut(data []byte, spans [][2]int, lineComment bool) []byte {
	var out []byte
	prev := 0
	for _, sp := range spans {
		end := sp[1]
		if lineComment {
			rest := data[end:]
			if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
				rest = rest[:nl]
			}
			if trimmed := bytes.TrimLeft(rest, " \t,"); len(trimmed) == 0 || bytes.HasPrefix(trimmed, []byte("//")) {
				end += len(bytes.TrimRight(rest, "\r"))
			}
		}
		out = append(append(out, data[prev:sp[0]]...), "\x00"...) // a mark: two texts cut in different places differ
		prev = end
	}
	return append(out, data[prev:]...)
}

// squeeze is data without spaces, line ends, commas and cut's marks.
func squeeze(data []byte) []byte {
	return bytes.Map(func(r rune) rune {
		if strings.ContainsRune(" \t\r\n,\x00", r) {
			return -1
		}
		return r
	}, data)
}

// entrySpans finds the entry called name in data without the edit code:
// the JSON members (name, value and what is before its comma) in the
// servers object, or in TOML the entry's tables, each from its header to
// the next table or the comments right above its header. hasServers says
// whether a JSON config has its servers object.
func entrySpans(t *testing.T, format string, data []byte, name string) (spans [][2]int, hasServers bool) {
	t.Helper()
	bom := 0
	if bytes.HasPrefix(data, utf8BOM) {
		bom = len(utf8BOM)
	}
	if format == Codex {
		lines := bytes.SplitAfter(data, []byte("\n"))
		header := "[mcp_servers." + tomlKey(name)
		off, start, in := 0, 0, false
		lead := -1 // the start of the comments above the line, or -1
		for _, l := range lines {
			trimmed := bytes.TrimSpace(l)
			if bytes.HasPrefix(trimmed, []byte("[")) {
				if end := off; in {
					if lead >= 0 {
						end = lead
					}
					spans = appendSpan(spans, start, end)
				}
				in = bytes.HasPrefix(trimmed, []byte(header+"]")) || bytes.HasPrefix(trimmed, []byte(header+"."))
				start = off
			}
			switch {
			case bytes.HasPrefix(trimmed, []byte("#")) && lead < 0:
				lead = off
			case !bytes.HasPrefix(trimmed, []byte("#")):
				lead = -1
			}
			off += len(l)
		}
		if in {
			spans = appendSpan(spans, start, len(data))
		}
		return spans, true
	}
	v, err := hujson.Parse(data[bom:])
	if err != nil {
		return nil, false
	}
	top, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil, false
	}
	servers := member(top, "mcpServers")
	if format == VSCode {
		servers, _, _ = vscodeSections(top)
	}
	if servers == nil {
		return nil, false
	}
	for _, m := range servers.Value.(*hujson.Object).Members {
		if memberName(m) == name {
			spans = append(spans, [2]int{bom + m.Name.StartOffset, bom + m.Value.EndOffset + len(m.Value.AfterExtra)})
		}
	}
	return spans, true
}

// appendSpan adds [start, end) to spans, joined to the last one if it
// ends there.
func appendSpan(spans [][2]int, start, end int) [][2]int {
	if n := len(spans); n > 0 && spans[n-1][1] == start {
		spans[n-1][1] = end
		return spans
	}
	return append(spans, [2]int{start, end})
}

func jsonServersKey(format string) string {
	if format == VSCode {
		return "servers"
	}
	return "mcpServers"
}

// TestEditShapes covers the shapes the golden files do not: a new file,
// one-line objects, an empty servers object, duplicates, a settings.json,
// a byte order mark, the end of a file without a line end.
func TestEditShapes(t *testing.T) {
	first, _ := editServers()
	stdio := Server{Command: "sb"}
	tests := []struct {
		name, format, text string
		remove             bool
		want               string
	}{
		{"new claude file", Claude, " \n", false,
			"{\n  \"mcpServers\": {\n    \"switchboard\": {\n      \"command\": \"sb\"\n    }\n  }\n}\n"},
		{"new codex file", Codex, "", false,
			"[mcp_servers.switchboard]\ncommand = \"sb\"\n"},
		{"remove from an empty file", Claude, "", true, ""},
		{"one-line object", Cursor, `{"mcpServers": {"a": {"url": "https://a"}}}`, false,
			`{"mcpServers": {"a": {"url": "https://a"}, "switchboard": {"command":"sb"}}}`},
		{"one-line object, replaced", Cursor, `{"mcpServers": {"switchboard": {"url": "https://a"}, "b": {"command": "b"}}}`, false,
			`{"mcpServers": {"switchboard": {"command":"sb"}, "b": {"command": "b"}}}`},
		{"one-line object, removed first", Cursor, `{"mcpServers": {"switchboard": {"url": "https://a"}, "b": {"command": "b"}}}`, true,
			`{"mcpServers": {"b": {"command": "b"}}}`},
		{"one-line object, removed last", Cursor, `{"mcpServers": {"b": {"command": "b"}, "switchboard": {"url": "https://a"}}}`, true,
			`{"mcpServers": {"b": {"command": "b"}}}`},
		{"removed the only one", Claude, "{\n  \"mcpServers\": {\n    \"switchboard\": {\"command\": \"sb\"}\n  }\n}\n", true,
			"{\n  \"mcpServers\": {}\n}\n"},
		{"empty servers object", Claude, "{\n\t\"mcpServers\": {}\n}", false,
			"{\n\t\"mcpServers\": {\n\t\t\"switchboard\": {\n\t\t\t\"command\": \"sb\"\n\t\t}\n\t}\n}"},
		{"servers object with a comment only", VSCode, "{\n  \"servers\": { // none yet\n  }\n}\n", false,
			"{\n  \"servers\": { // none yet\n    \"switchboard\": {\n      \"type\": \"stdio\",\n      \"command\": \"sb\"\n    }\n  }\n}\n"},
		{"duplicates: the first replaced, the others gone", Claude,
			"{\"mcpServers\": {\n  \"switchboard\": {\"url\": \"https://1\"},\n  \"a\": {\"command\": \"a\"},\n  \"switchboard\": {\"url\": \"https://2\"}\n}}", false,
			"{\"mcpServers\": {\n  \"switchboard\": {\"command\":\"sb\"},\n  \"a\": {\"command\": \"a\"}\n}}"},
		{"duplicates removed", Claude,
			"{\"mcpServers\": {\n  \"switchboard\": {\"url\": \"https://1\"},\n  \"a\": {\"command\": \"a\"},\n  \"switchboard\": {\"url\": \"https://2\"},\n}}", true,
			"{\"mcpServers\": {\n  \"a\": {\"command\": \"a\"},\n}}"},
		{"vscode settings.json", VSCode, "{\n  \"editor.tabSize\": 2,\n  \"mcp\": {\n    \"servers\": {}\n  }\n}\n", false,
			"{\n  \"editor.tabSize\": 2,\n  \"mcp\": {\n    \"servers\": {\n      \"switchboard\": {\n        \"type\": \"stdio\",\n        \"command\": \"sb\"\n      }\n    }\n  }\n}\n"},
		{"byte order mark", Claude, "\xef\xbb\xbf{\"mcpServers\": {}}", false,
			"\xef\xbb\xbf{\"mcpServers\": {\n  \"switchboard\": {\n    \"command\": \"sb\"\n  }\n}}"},
		{"codex without a line end", Codex, "[mcp_servers.a]\ncommand = \"a\"", false,
			"[mcp_servers.a]\ncommand = \"a\"\n\n[mcp_servers.switchboard]\ncommand = \"sb\"\n"},
		{"codex without mcp_servers", Codex, "model = \"o3\"\n", false,
			"model = \"o3\"\n\n[mcp_servers.switchboard]\ncommand = \"sb\"\n"},
		{"codex, the last table removed", Codex, "model = \"o3\"\n\n[mcp_servers.switchboard]\ncommand = \"sb\"\n\n[mcp_servers.switchboard.env]\nA = \"1\"\n\n", true,
			"model = \"o3\"\n"},
		{"codex, after dotted keys at the top", Codex, "mcp_servers.a.command = \"a\"\n", false,
			"mcp_servers.a.command = \"a\"\n\n[mcp_servers.switchboard]\ncommand = \"sb\"\n"},
		{"codex, the comments inside the table go with it", Codex, "[mcp_servers.switchboard] # old\ncommand = \"old\"\n# the end\n", false,
			"[mcp_servers.switchboard]\ncommand = \"sb\"\n"},
		{"codex, the comments above the next table stay", Codex, "[mcp_servers.switchboard]\ncommand = \"old\"\n# about b\n[b]\nx = 1\n", true,
			"# about b\n[b]\nx = 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []byte
			var err error
			if tt.remove {
				got, _, _, err = RemoveEntry(tt.format, []byte(tt.text), editName)
			} else {
				got, err = SetEntry(tt.format, []byte(tt.text), editName, stdio)
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("edit(%q, %q) = %v and\n%s\nwant\n%s", tt.format, tt.text, err, got, tt.want)
			}
			if tt.remove {
				if strings.TrimSpace(tt.text) != "" {
					checkEdit(t, tt.format, []byte(tt.text), got, editName, nil)
				}
				return
			}
			checkEdit(t, tt.format, []byte(tt.text), got, editName, &stdio)
			if set, err := SetEntry(tt.format, got, editName, first); err != nil {
				t.Errorf("SetEntry(%q, %q) = %v", tt.format, got, err)
			} else {
				checkEdit(t, tt.format, got, set, editName, &first)
			}
		})
	}
}

// TestEditNames sets and removes entries whose names need quoting or
// escaping, in every format.
func TestEditNames(t *testing.T) {
	names := []string{"switch board", `quote " and \ backslash`, "mémoire ✨", "a.b", "[x]", "line\nbreak", "'single'", "#hash", "</script>"}
	texts := map[string]string{
		Claude: "{\n  \"mcpServers\": {\n    \"a.b.c\": {\"command\": \"x\"}\n  }\n}\n",
		Cursor: "{\"mcpServers\": {}}",
		VSCode: "{\n  \"servers\": {\n    \"a\": {\"type\": \"stdio\", \"command\": \"x\"},\n  },\n}\n",
		Codex:  "[mcp_servers.a]\ncommand = \"x\"\n\n[mcp_servers.\"a\".env]\nK = \"v\"\n",
	}
	first, second := editServers()
	for _, format := range Formats {
		for _, name := range names {
			t.Run(format+" "+name, func(t *testing.T) {
				text := []byte(texts[format])
				set, err := SetEntry(format, text, name, first)
				if err != nil {
					t.Fatalf("SetEntry(%q, %q) = %v", format, name, err)
				}
				checkEdit(t, format, text, set, name, &first)
				reset, err := SetEntry(format, set, name, second)
				if err != nil {
					t.Fatalf("SetEntry(%q, %q) again = %v", format, name, err)
				}
				checkEdit(t, format, set, reset, name, &second)
				out, removed, ok, err := RemoveEntry(format, reset, name)
				if err != nil || !ok || removed.Name != name {
					t.Fatalf("RemoveEntry(%q, %q) = %+v, %v, %v", format, name, removed, ok, err)
				}
				checkEdit(t, format, reset, out, name, nil)
				if !bytes.Equal(out, text) {
					t.Errorf("RemoveEntry(SetEntry(text)) =\n%s\nwant the text back:\n%s", out, text)
				}
			})
		}
	}
}

// TestEditErrors checks that what cannot be edited safely is an error,
// with nothing returned: a text that does not parse (a *SyntaxError at the
// fault), a config of the wrong shape, and Codex entries written in a form
// only a person should change.
func TestEditErrors(t *testing.T) {
	tests := []struct {
		name, format, text string
		pos                Pos // for a *SyntaxError
		err                string
	}{
		{"no format", "", `{"mcpServers": {}}`, Pos{}, `unknown format ""`},
		{"json does not parse", Claude, "{\"mcpServers\": {\"a\": 1 \"b\": 2}}", Pos{1, 24}, "missing comma"},
		{"json comment never closed", VSCode, "{\n /* note\n \"servers\": {}\n}", Pos{2, 2}, "the comment is never closed"},
		{"json not an object", Cursor, `[{"command": "x"}]`, Pos{1, 1}, "the config must be a JSON object, not an array"},
		{"mcpServers not an object", Claude, "{\n  \"mcpServers\": [\"x\"]\n}", Pos{2, 17}, `"mcpServers" must be an object of servers, not an array`},
		{"servers not an object", VSCode, `{"servers": "x"}`, Pos{1, 13}, `"servers" must be an object of servers, not a string`},
		{"vscode file as claude", Claude, `{"servers": {}}`, Pos{}, `write it as vscode`},
		{"claude file as vscode", VSCode, `{"mcpServers": {}}`, Pos{}, `write it as claude or cursor`},
		{"toml does not parse", Codex, "[mcp_servers.x\n", Pos{1, 15}, ""},
		{"json as codex", Codex, `{"mcpServers": {}}`, Pos{}, "the text is JSON (a claude config), not Codex TOML"},
		{"mcp_servers not a table", Codex, "mcp_servers = 1\n", Pos{1, 1}, "mcp_servers must be a table, not a number"},
		{"codex inline table", Codex, "[mcp_servers]\nswitchboard = { command = \"x\" }\n", Pos{}, "line 2, column 1: the codex entry \"switchboard\" is written as an inline table or with dotted keys"},
		{"codex dotted keys at the top", Codex, "mcp_servers.switchboard.command = \"x\"\n", Pos{}, "edit the file by hand"},
		{"codex dotted keys and a table", Codex, "mcp_servers.switchboard.args = [\"a\"]\n\n[mcp_servers.switchboard.env]\nA = \"1\"\n", Pos{}, "edit the file by hand"},
		{"codex array of tables", Codex, "[[mcp_servers.switchboard]]\ncommand = \"x\"\n", Pos{}, "as an array of tables"},
	}
	s := Server{URL: "https://sb.example/mcp"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(what string, out []byte, err error) {
				t.Helper()
				var se *SyntaxError
				switch {
				case err == nil || out != nil:
					t.Errorf("%s(%q, %q) = %q, %v; want an error and no text", what, tt.format, tt.text, out, err)
				case !strings.Contains(err.Error(), tt.err):
					t.Errorf("%s(%q, %q) = %v; want an error containing %q", what, tt.format, tt.text, err, tt.err)
				case tt.pos != (Pos{}) && (!errors.As(err, &se) || se.Pos != tt.pos):
					t.Errorf("%s(%q, %q) = %v; want a *SyntaxError at %v", what, tt.format, tt.text, err, tt.pos)
				}
			}
			out, err := SetEntry(tt.format, []byte(tt.text), editName, s)
			check("SetEntry", out, err)
			if tt.name == "vscode file as claude" || tt.name == "claude file as vscode" {
				return // nothing to remove: not an error
			}
			out, _, _, err = RemoveEntry(tt.format, []byte(tt.text), editName)
			check("RemoveEntry", out, err)
		})
	}
	t.Run("codex inline mcp_servers", func(t *testing.T) {
		text := "mcp_servers = { a = { command = \"a\" } }\n"
		out, err := SetEntry(Codex, []byte(text), editName, s)
		if err == nil || !strings.Contains(err.Error(), "edit it by hand") {
			t.Errorf("SetEntry(codex, %q) = %q, %v; want an error saying to edit by hand", text, out, err)
		}
	})
	t.Run("servers Export refuses", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			s    Server
			err  string
		}{{"", s, "a server has no name"}, {editName, Server{}, "neither a command nor a url"}} {
			if out, err := SetEntry(Claude, []byte(`{"mcpServers": {}}`), tc.name, tc.s); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("SetEntry(claude, %q, %+v) = %q, %v; want an error containing %q", tc.name, tc.s, out, err, tc.err)
			}
		}
	})
}

// TestRemoveEntryMissing checks that removing an entry a file does not
// have returns the text as it was, and that a project's entry of that
// name in ~/.claude.json is not the top-level one.
func TestRemoveEntryMissing(t *testing.T) {
	for _, tt := range []struct{ format, text string }{
		{Claude, `{"projects": {"/p": {"mcpServers": {"switchboard": {"command": "sb"}}}}}`},
		{Claude, `{"mcpServers": {"a": {"command": "a"}}}`},
		{VSCode, `{"servers": {}}`},
		{Codex, "[mcp_servers.a]\ncommand = \"a\"\n"},
		{Codex, "model = \"o3\"\n"},
	} {
		out, removed, ok, err := RemoveEntry(tt.format, []byte(tt.text), editName)
		if err != nil || ok || string(out) != tt.text || !reflect.DeepEqual(removed, Server{}) {
			t.Errorf("RemoveEntry(%q, %q) = %q, %+v, %v, %v; want the text, false", tt.format, tt.text, out, removed, ok, err)
		}
	}
	text := `{"mcpServers": {"switchboard": {"command": 1}}}`
	_, removed, ok, err := RemoveEntry(Claude, []byte(text), editName)
	if want := (Server{Name: editName, Pos: Pos{1, 17}}); err != nil || !ok || !reflect.DeepEqual(removed, want) {
		t.Errorf("RemoveEntry(claude, %q) = %+v, %v, %v; want %+v, true", text, removed, ok, err, want)
	}
}
