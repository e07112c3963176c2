package clientconfig

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestSyntaxErrorPositions pins the line and column of the errors people
// make most, counted by hand: columns are characters, not bytes.
func TestSyntaxErrorPositions(t *testing.T) {
	tests := []struct {
		name   string
		format string
		text   string
		want   Pos
		msg    string // a part of the message
	}{
		{"missing comma between entries", Claude,
			"{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n    \"b\": {\"command\": \"y\"}\n  }\n}\n",
			Pos{4, 5}, "missing comma before this member"},
		{"missing comma in an array, after unicode", Claude,
			`{"mcpServers": {"é": {"command": "x", "args": ["ü" "b"]}}}`,
			Pos{1, 52}, "missing comma before this element"},
		{"missing comma, CRLF line ends", VSCode,
			"{\r\n  \"servers\": {\r\n    \"a\": {}\r\n    \"b\": {}\r\n  }\r\n}\r\n",
			Pos{4, 5}, "missing comma"},
		{"byte order mark not counted", Claude,
			"\xef\xbb\xbf{\n \"mcpServers\": {\"a\": {\"command\": \"x\"} \"b\": {}}}",
			Pos{2, 39}, "missing comma"},
		{"string not closed on its line", Claude,
			"{\n  \"mcpServers\": {\n    \"mémo\": {\n      \"command\": \"npx,\n      \"args\": []\n    }\n  }\n}\n",
			Pos{4, 18}, "the string is not closed on its line"},
		{"string never closed", Claude,
			"{\"mcpServers\": {\n  \"mémo\": {\"command\": \"npx\n}}}",
			Pos{2, 23}, "the string is never closed"},
		{"innermost open object at the end", Cursor,
			`{"mcpServers": {"a": {"command": "x"}`,
			Pos{1, 16}, `'{' is never closed`},
		{"outer object never closed", VSCode,
			"{\n  // the closing brace is missing\n  \"servers\": {\n    \"fetch\": { \"command\": \"uvx\", },\n}\n",
			Pos{1, 1}, `'{' is never closed`},
		{"comment never closed", VSCode,
			"{\n /* note\n \"servers\": {}\n}",
			Pos{2, 2}, "the comment is never closed"},
		{"single-quoted name", Claude,
			`{'mcpServers': {}}`,
			Pos{1, 2}, "names and strings must be in double quotes"},
		{"bare word value", Claude,
			"{\"mcpServers\": {\"a\": {\"disabled\": True}}}",
			Pos{1, 35}, "invalid value True"},
		{"text after the object", Claude,
			`{"mcpServers": {}} x`,
			Pos{1, 20}, "after top-level value"},
		{"invalid UTF-8", Claude,
			"{\"mcpServers\": {\"a\xff\": {}}}",
			Pos{1, 19}, "invalid UTF-8"},
		{"nested too deeply", Claude,
			strings.Repeat("[", 200),
			Pos{1, 101}, "nest more than 100 levels"},
		{"mcpServers not an object", Claude,
			"{\n  \"mcpServers\": \"npx\"\n}",
			Pos{2, 17}, `"mcpServers" must be an object of servers, not a string`},
		{"not an object at all", Claude,
			"  [1, 2]",
			Pos{1, 3}, "must be a JSON object, not an array"},
		{"toml: missing comma in an array, after unicode", Codex,
			"[mcp_servers.a]\nargs = [\"é\" \"b\"]\n",
			Pos{2, 13}, "missing comma before this element"},
		{"toml: string not closed", Codex,
			"[mcp_servers.a]\ncommand = \"npx\nargs = []\n",
			Pos{2, 15}, "the string is not closed on its line"},
		{"toml: key defined twice", Codex,
			"[mcp_servers.a]\ncommand = \"a\"\ncommand = \"b\"\n",
			Pos{3, 1}, "already defined"},
		{"toml: unquoted string", Codex,
			"[mcp_servers.a]\ncommand = npx\n",
			Pos{2, 11}, "strings must be in quotes"},
		{"toml: unclosed table header", Codex,
			"# config\n[mcp_servers.\"ünï\"\ncommand = \"x\"\n",
			Pos{2, 19}, "expected ']'"},
		{"toml: unicode in a bare key", Codex,
			"[mcp_servers.ünï]\ncommand = \"x\"\n",
			Pos{1, 14}, "U+00FC 'ü'"},
		{"toml: mcp_servers not a table", Codex,
			"model = \"o3\"\nmcp_servers = \"npx\"\n",
			Pos{2, 1}, "mcp_servers must be a table, not a string"},
		{"toml: nested too deeply", Codex,
			"x = " + strings.Repeat("[", 150),
			Pos{1, 105}, "nest more than 100 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse(tt.format, []byte(tt.text))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q, %q) = %+v, %v; want a *SyntaxError", tt.format, tt.text, f, err)
			}
			if se.Pos != tt.want || !strings.Contains(se.Message, tt.msg) {
				t.Errorf("Parse(%q, %q) = error at %v %q; want at %v, containing %q", tt.format, tt.text, se.Pos, se.Message, tt.want, tt.msg)
			}
			if want := se.Pos.String() + ": " + se.Message; se.Error() != want {
				t.Errorf("Error() = %q; want %q", se.Error(), want)
			}
		})
	}
}

// TestProblems checks that a bad entry among good ones is a Problem at
// its key, with a message per fault, and that the others are read.
func TestProblems(t *testing.T) {
	tests := []struct {
		name     string
		format   string
		text     string
		servers  []string // names read, in order
		problems []Problem
	}{
		{"claude", Claude,
			"{\"mcpServers\": {\n  \"ok\": {\"command\": \"node\"},\n  \"bad\": {\"command\": 3, \"args\": \"x\"},\n\t\"ünï\": {\"type\": \"ws\", \"url\": \"ws://x\"},\n  \"ok2\": {\"url\": \"https://x\"}\n}}",
			[]string{"ok", "ok2"},
			[]Problem{
				{"bad", Pos{3, 3}, "command must be a string, not a number; args must be an array of strings, not a string; it has neither a command nor a url"},
				{"ünï", Pos{4, 2}, `unknown type "ws" (want stdio, http, streamable-http or sse)`},
			}},
		{"vscode", VSCode,
			"{ \"servers\": {\n  // fine\n  \"a\": {\"type\": \"stdio\", \"command\": \"x\",},\n  \"b\": {\"type\": \"stdio\", \"url\": \"https://x\"},\n  \"c\": {\"type\": \"sse\"},\n},}",
			[]string{"a"},
			[]Problem{
				{"b", Pos{4, 3}, `type "stdio" needs a command`},
				{"c", Pos{5, 3}, `type "sse" needs a url`},
			}},
		{"codex", Codex,
			"[mcp_servers.ok]\ncommand = \"x\"\n\n[mcp_servers.\"bad één\"]\ncommand = \"x\"\nargs = [\"a\", 1]\nenabled = \"no\"\n\n[mcp_servers]\nlater.url = \"https://x\"\n",
			[]string{"ok", "later"},
			[]Problem{
				{"bad één", Pos{4, 14}, "args[1] must be a string, not a number; enabled must be true or false, not a string"},
			}},
		{"claude.json projects: the first of a name wins", Claude,
			"{\"mcpServers\": {\"x\": {\"command\": \"a\"}},\n \"projects\": {\"/p\": {\"mcpServers\": {\"x\": {\"command\": \"b\"}, \"y\": {\"command\": \"c\"}}}}}",
			[]string{"x", "y"},
			[]Problem{
				{"x", Pos{2, 37}, "the name is used again: only the first entry, at line 1, column 17, is read"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse(tt.format, []byte(tt.text))
			if err != nil {
				t.Fatalf("Parse(%q) = %v", tt.format, err)
			}
			var names []string
			for _, s := range f.Servers {
				names = append(names, s.Name)
			}
			if !slices.Equal(names, tt.servers) {
				t.Errorf("Parse(%q) servers = %q; want %q", tt.format, names, tt.servers)
			}
			if !reflect.DeepEqual(f.Problems, tt.problems) {
				t.Errorf("Parse(%q) problems =\n%+v\nwant\n%+v", tt.format, f.Problems, tt.problems)
			}
		})
	}
}

// TestClaudeProjects checks the odd corners of ~/.claude.json: a project
// whose mcpServers is no object is skipped with a warning, and
// disabledMcpServers turns off only that project's own entries.
func TestClaudeProjects(t *testing.T) {
	text := `{
  "projects": {
    "/a": {"mcpServers": ["x"]},
    "/b": {"mcpServers": {"y": {"command": "y"}, "z": {"url": "https://z"}}, "disabledMcpServers": ["z", "elsewhere"]}
  }
}`
	f, err := Parse(Claude, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range f.Servers {
		got = append(got, s.Name+":"+strconv.FormatBool(s.Disabled))
	}
	if want := []string{"y:false", "z:true"}; !slices.Equal(got, want) {
		t.Errorf("Parse(claude.json) servers = %q; want %q", got, want)
	}
	wantWarn := `line 3, column 26: projects["/a"].mcpServers must be an object of servers, not an array: skipped`
	if !slices.Equal(f.Warnings, []string{wantWarn}) {
		t.Errorf("Parse(claude.json) warnings = %q; want %q", f.Warnings, wantWarn)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name, text, want, err string
	}{
		{"claude", `{"mcpServers": {}}`, Claude, ""},
		{"claude with a comment first", "// mine\n{\"mcpServers\": {}}", Claude, ""},
		{"claude.json with projects only", `{"projects": {"/p": {"mcpServers": {}}}}`, Claude, ""},
		{"vscode", `{"servers": {}, "inputs": []}`, VSCode, ""},
		{"vscode settings.json", `{"mcp": {"servers": {}}}`, VSCode, ""},
		{"codex", "[mcp_servers.x]\ncommand = \"y\"\n", Codex, ""},
		{"codex with a comment first", "# hi\nmcp_servers.x.command = \"y\"\n", Codex, ""},
		{"codex, empty table", "[mcp_servers]\n", Codex, ""},
		{"empty", " \n\t", "", "the text is empty"},
		{"json without servers", `{"name": "x"}`, "", `no "mcpServers" or "servers" object`},
		{"json array", `[{"command": "x"}]`, "", "not an object"},
		{"toml without mcp_servers", "model = \"o3\"\n", "", "no [mcp_servers] table"},
		{"broken toml table", "[mcp_servers.x\n", "", "line 1, column 15"},
		{"broken json", "{\"mcpServers\": {\"a\": 1 \"b\": 2}}", "", "line 1, column 24"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Detect([]byte(tt.text))
			errText := ""
			if err != nil {
				errText = err.Error()
			}
			if got != tt.want || (tt.err == "") != (err == nil) || !strings.Contains(errText, tt.err) {
				t.Errorf("Detect(%q) = %q, %v; want %q, error containing %q", tt.text, got, err, tt.want, tt.err)
			}
		})
	}
}

// TestParseWrongFormat checks that reading a file as another format says
// which format it is.
func TestParseWrongFormat(t *testing.T) {
	tests := []struct {
		format, text, err string
	}{
		{VSCode, `{"mcpServers": {}}`, `it has "mcpServers": read it as claude or cursor`},
		{Claude, `{"servers": {}}`, `it has "servers": read it as vscode`},
		{Cursor, `{"inputs": []}`, `no "mcpServers" object: not a cursor config`},
		{Codex, `{"mcpServers": {}}`, "the text is JSON (a claude config), not Codex TOML"},
		{Codex, "model = \"o3\"\n", "no [mcp_servers] table"},
		{"yaml", "mcpServers: {}", `unknown format "yaml"`},
		{"", "", "the text is empty"},
	}
	for _, tt := range tests {
		f, err := Parse(tt.format, []byte(tt.text))
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Parse(%q, %q) = %+v, %v; want an error containing %q", tt.format, tt.text, f, err, tt.err)
		}
		var se *SyntaxError
		if errors.As(err, &se) {
			t.Errorf("Parse(%q, %q) = %v; want a plain error, not a *SyntaxError", tt.format, tt.text, err)
		}
	}
}

// TestPos pins the position convention: lines end at "\n", columns
// count characters, a byte that is no UTF-8 counts as one, and an offset
// inside a character is that character.
func TestPos(t *testing.T) {
	data := []byte("ab\r\nçé€😀x\n\x80y\n")
	tests := []struct {
		off  int
		want Pos
	}{
		{0, Pos{1, 1}},
		{2, Pos{1, 3}},  // the \r
		{4, Pos{2, 1}},  // ç
		{6, Pos{2, 2}},  // é
		{7, Pos{2, 2}},  // inside é
		{8, Pos{2, 3}},  // €
		{10, Pos{2, 3}}, // inside €
		{11, Pos{2, 4}}, // 😀
		{14, Pos{2, 4}}, // its last byte
		{15, Pos{2, 5}}, // x
		{17, Pos{3, 1}}, // a stray continuation byte
		{18, Pos{3, 2}}, // y
		{20, Pos{4, 1}}, // the end of the text
		{99, Pos{4, 1}},
	}
	l := newLines(data)
	for _, tt := range tests {
		if got := l.pos(tt.off); got != tt.want {
			t.Errorf("pos(%d) = %v; want %v", tt.off, got, tt.want)
		}
	}
}

func TestRefsIn(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"plain", nil},
		{"${VAR}", []string{"${VAR}"}},
		{"Bearer ${input:api-key}", []string{"${input:api-key}"}},
		{"${A:-x}/${B}", []string{"${A:-x}", "${B}"}},
		{"${A:-${B}}/tail", []string{"${A:-${B}}"}},
		{"$VAR ${} ${unclosed", nil},
		{"${env:HOME}/${workspaceFolder}", []string{"${env:HOME}", "${workspaceFolder}"}},
		{"ü${ü}", []string{"${ü}"}},
	}
	for _, tt := range tests {
		if got := refsIn(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("refsIn(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// comparable is the part of a Server a round trip keeps.
func comparable(servers []Server) []Server {
	out := make([]Server, 0, len(servers))
	for _, s := range servers {
		c := Server{Name: s.Name, Transport: s.Transport, Command: s.Command, Cwd: s.Cwd, URL: s.URL, Disabled: s.Disabled}
		if len(s.Args) > 0 {
			c.Args = s.Args
		}
		if len(s.Env) > 0 {
			c.Env = s.Env
		}
		if len(s.Headers) > 0 {
			c.Headers = s.Headers
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// roundTrip exports servers, parses the result, and checks that the
// servers come back equal and that exporting them again gives the same
// bytes.
func roundTrip(t *testing.T, format string, servers []Server, inputs []Input) {
	t.Helper()
	first, err := Export(format, servers, inputs)
	if err != nil {
		t.Fatalf("Export(%q) = %v", format, err)
	}
	f, err := Parse(format, first)
	if err != nil {
		t.Fatalf("Parse(%q, Export(…)) = %v\n%s", format, err, first)
	}
	if len(f.Problems) > 0 || len(f.Warnings) > 0 {
		t.Errorf("Parse(%q, Export(…)): problems %+v, warnings %q; want none\n%s", format, f.Problems, f.Warnings, first)
	}
	if got, want := comparable(f.Servers), comparable(servers); !reflect.DeepEqual(got, want) {
		t.Errorf("Parse(%q, Export(servers)) =\n%+v\nwant\n%+v\nexported:\n%s", format, got, want, first)
	}
	if d, err := Detect(first); err != nil || (d != format && !(format == Cursor && d == Claude)) {
		t.Errorf("Detect(Export(%q)) = %q, %v", format, d, err)
	}
	second, err := Export(format, f.Servers, f.Inputs)
	if err != nil {
		t.Fatalf("Export(%q, Parse(…)) = %v", format, err)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("Export(%q) after a round trip differs:\n%s", format, lineDiff(string(first), string(second)))
	}
	if format == VSCode {
		want, _ := exportInputs(inputs)
		var got []jsonInput
		for _, in := range f.Inputs {
			got = append(got, jsonInput{Type: in.Type, ID: in.ID, Description: in.Description, Password: in.Password})
		}
		if !reflect.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) {
			t.Errorf("inputs after a round trip = %+v; want %+v", got, want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			roundTrip(t, format, exportServers(), testInputs())
		})
		t.Run(format+"/empty", func(t *testing.T) {
			roundTrip(t, format, nil, nil)
		})
	}
}

// TestRoundTripTricky puts awkward strings in every field of every
// transport, in every format.
func TestRoundTripTricky(t *testing.T) {
	tricky := []string{
		`"`, `\`, `\\server\share`, "\n", "\r\n", "\t", "\x00", "\x1f", "\x7f", "\u2028\u2029",
		"🚀 emoji", "ｆｕｌｌｗｉｄｔｈ", "${VAR}", "${input:x}", "Bearer ${TOKEN}", "'single'", "'''", `"""`,
		"#not a comment", "// not a comment", "/* x */", "key = value", "[table]", "ü", "",
		" leading and trailing ", "a.b", "mcp_servers.x", "<script>&amp;</script>", "\u202eRTL",
	}
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			var servers []Server
			for i, s := range tricky {
				name := "n" + s
				stdio := Server{Name: name + " stdio", Transport: TransportStdio, Command: "cmd" + s,
					Args: []string{s, "x" + s + "y"}, Env: map[string]string{"K" + s: s, "V": s, s: "plain"}, Cwd: "/d" + s, Disabled: i%2 == 0}
				remote := Server{Name: name + " remote", Transport: []string{TransportHTTP, TransportSSE}[i%2],
					URL: "https://x/" + s, Headers: map[string]string{"H" + s: s, "Authorization": s}, Disabled: i%3 == 0}
				servers = append(servers, stdio, remote)
			}
			roundTrip(t, format, servers, []Input{{ID: "x", Type: "promptString", Description: `"quoted" \ ${x}`}})
		})
	}
}

// TestExportOrder checks that the order of the servers given does not
// change the output.
func TestExportOrder(t *testing.T) {
	servers := exportServers()
	reversed := slices.Clone(servers)
	slices.Reverse(reversed)
	inputs := testInputs()
	revInputs := slices.Clone(inputs)
	slices.Reverse(revInputs)
	for _, format := range Formats {
		a, err1 := Export(format, servers, inputs)
		b, err2 := Export(format, reversed, revInputs)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("Export(%q) depends on the order of servers (%v, %v):\n%s", format, err1, err2, lineDiff(string(a), string(b)))
		}
		if !bytes.HasSuffix(a, []byte("\n")) || bytes.HasSuffix(a, []byte("\n\n")) {
			t.Errorf("Export(%q) does not end with exactly one newline", format)
		}
	}
}

func TestExportErrors(t *testing.T) {
	ok := Server{Name: "ok", Command: "x"}
	tests := []struct {
		name    string
		format  string
		servers []Server
		inputs  []Input
		err     string
	}{
		{"unknown format", "yaml", nil, nil, `unknown format "yaml"`},
		{"no name", Claude, []Server{{Command: "x"}}, nil, "a server has no name"},
		{"same name twice", Cursor, []Server{ok, ok}, nil, `two servers are called "ok"`},
		{"unknown transport", VSCode, []Server{{Name: "a", Transport: "ws", URL: "ws://x"}}, nil, `unknown transport "ws"`},
		{"stdio without command", Codex, []Server{{Name: "a", Transport: "stdio", URL: "https://x"}}, nil, "a stdio server needs a command"},
		{"remote without url", Claude, []Server{{Name: "a", Transport: "sse", Command: "x"}}, nil, "a remote server needs a url"},
		{"neither", Claude, []Server{{Name: "a"}}, nil, "neither a command nor a url"},
		{"invalid UTF-8", Codex, []Server{{Name: "a", Command: "x", Args: []string{"\xff"}}}, nil, "args[0] is not valid UTF-8"},
		{"input without id", VSCode, []Server{ok}, []Input{{Type: "promptString"}}, "an input has no id"},
		{"input id twice", VSCode, []Server{ok}, []Input{{ID: "a"}, {ID: "a"}}, `two inputs have the id "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Export(tt.format, tt.servers, tt.inputs)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Export(%q) = %q, %v; want an error containing %q", tt.format, out, err, tt.err)
			}
		})
	}
}

// TestExportTransportGuess checks that a server without a transport is
// written as stdio (with a command) or Streamable HTTP (with a url), and
// that the aliases clients use are understood.
func TestExportTransportGuess(t *testing.T) {
	servers := []Server{
		{Name: "a", Command: "x"},
		{Name: "b", URL: "https://b"},
		{Name: "c", Transport: "streamable-http", URL: "https://c"},
		{Name: "d", Transport: "stdio", Command: "y", Headers: map[string]string{"X": "dropped"}},
	}
	data, err := Export(VSCode, servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(VSCode, data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range f.Servers {
		got = append(got, s.Name+":"+s.Transport+":"+strings.Join(slices.Sorted(maps.Keys(s.Headers)), ","))
	}
	want := []string{"a:stdio:", "b:http:", "c:http:", "d:stdio:"}
	if !slices.Equal(got, want) {
		t.Errorf("transports after Export = %q; want %q", got, want)
	}
}

func TestWellKnown(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	write := func(dir, rel string) string {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Written out of order: WellKnown's order is its own.
	codex := write(home, ".codex/config.toml")
	vscodeProject := write(cwd, ".vscode/mcp.json")
	desktop := write(home, ".config/Claude/claude_desktop_config.json")
	mac := write(home, "Library/Application Support/Claude/claude_desktop_config.json")
	claudeJSON := write(home, ".claude.json")
	windsurf := write(home, ".codeium/windsurf/mcp_config.json")
	vscodeUser := write(home, ".config/Code/User/mcp.json")
	mcpJSON := write(cwd, ".mcp.json")
	// A directory where a file is expected is not a config.
	if err := os.MkdirAll(filepath.Join(home, ".cursor", "mcp.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := []Location{
		{desktop, Claude, "Claude Desktop"},
		{mac, Claude, "Claude Desktop"},
		{claudeJSON, Claude, "Claude Code"},
		{windsurf, Claude, "Windsurf"},
		{vscodeUser, VSCode, "VS Code"},
		{codex, Codex, "Codex"},
		{mcpJSON, Claude, "Claude Code"},
		{vscodeProject, VSCode, "VS Code"},
	}
	if got := WellKnown(home, cwd); !reflect.DeepEqual(got, want) {
		t.Errorf("WellKnown(home, cwd) =\n%+v\nwant\n%+v", got, want)
	}

	// cwd is home: a file both lists hold is listed once, where the home
	// list has it.
	cursor := write(cwd, ".cursor/mcp.json")
	want = []Location{{cursor, Cursor, "Cursor"}, {mcpJSON, Claude, "Claude Code"}, {vscodeProject, VSCode, "VS Code"}}
	if got := WellKnown(cwd, cwd); !reflect.DeepEqual(got, want) {
		t.Errorf("WellKnown(cwd, cwd) =\n%+v\nwant\n%+v", got, want)
	}
	if got := WellKnown("", ""); got != nil {
		t.Errorf(`WellKnown("", "") = %+v; want nil`, got)
	}
	if got := WellKnown(filepath.Join(home, "missing"), ""); got != nil {
		t.Errorf("WellKnown(missing home) = %+v; want nil", got)
	}
}
