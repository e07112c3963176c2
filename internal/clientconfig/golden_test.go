package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// parseGolden is what a golden file of testdata/parse holds for one input.
type parseGolden struct {
	Detect      string       // Detect's answer (or "error: …")
	File        *File        `json:",omitempty"`
	SyntaxError *SyntaxError `json:",omitempty"`
	Error       string       `json:",omitempty"` // an error that is no *SyntaxError
}

// formatOf is the format a testdata/parse file is read as: the part of
// its name before the first "_" ("detect" means Detect's guess).
func formatOf(name string) string {
	f, _, _ := strings.Cut(name, "_")
	if f == "detect" {
		return ""
	}
	return f
}

// TestParseGolden reads every file of testdata/parse and compares the
// result (or the error) with NAME.golden.json. Run with -update to
// rewrite the golden files after a deliberate change; read the diff.
func TestParseGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/parse/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden.json") {
			continue
		}
		n++
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var g parseGolden
			if d, err := Detect(data); err != nil {
				g.Detect = "error: " + err.Error()
			} else {
				g.Detect = d
			}
			f, err := Parse(formatOf(name), data)
			var se *SyntaxError
			switch {
			case errors.As(err, &se):
				g.SyntaxError = se
			case err != nil:
				g.Error = err.Error()
			default:
				g.File = f
			}
			got, err := json.MarshalIndent(g, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			goldenPath := strings.TrimSuffix(in, filepath.Ext(in)) + ".golden.json"
			if !compareGolden(t, goldenPath, got, fmt.Sprintf("Parse(%q, %s)", formatOf(name), in)) {
				return
			}
			if f != nil {
				checkPositions(t, data, f)
			}
		})
	}
	if n == 0 {
		t.Fatal("no inputs in testdata/parse")
	}
}

// checkPositions checks that each entry's position points at its name in
// the text: the quoted key (JSON, TOML) or the bare key (TOML).
func checkPositions(t *testing.T, data []byte, f *File) {
	t.Helper()
	lines := strings.Split(string(bytes.TrimPrefix(data, utf8BOM)), "\n")
	at := func(p Pos) string {
		if p.Line < 1 || p.Line > len(lines) {
			return ""
		}
		r := []rune(lines[p.Line-1])
		if p.Col < 1 || p.Col > len(r) {
			return ""
		}
		return string(r[p.Col-1:])
	}
	check := func(name string, p Pos) {
		rest := at(p)
		if name == "" {
			return
		}
		if !strings.HasPrefix(rest, `"`+name+`"`) && !strings.HasPrefix(rest, `'`+name+`'`) && !strings.HasPrefix(rest, name) {
			t.Errorf("entry %q at %v: the text there is %q", name, p, rest)
		}
	}
	for _, s := range f.Servers {
		check(s.Name, s.Pos)
	}
	for _, p := range f.Problems {
		check(p.Name, p.Pos)
	}
}

// TestExportGolden writes one fixed list of servers in every format and
// compares the result with testdata/export/FORMAT.golden.*.
func TestExportGolden(t *testing.T) {
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			got, err := Export(format, exportServers(), testInputs())
			if err != nil {
				t.Fatalf("Export(%q) = %v", format, err)
			}
			ext := ".json"
			if format == Codex {
				ext = ".toml"
			}
			path := filepath.Join("testdata", "export", format+".golden"+ext)
			compareGolden(t, path, got, fmt.Sprintf("Export(%q)", format))
		})
	}
}

// compareGolden compares got, the result of what, with the golden file at
// path, or with -update rewrites the file and returns false (nothing more
// to check).
func compareGolden(t *testing.T, path string, got []byte, what string) bool {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return false
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\n%s", what, path, lineDiff(string(want), string(got)))
	}
	return true
}

// exportServers is the fixed list the export golden files and the round
// trip tests start from: every transport, unicode, disabled entries,
// references, and values with quotes, backslashes and newlines.
func exportServers() []Server {
	return []Server{
		{Name: "github", Transport: TransportHTTP, URL: "https://api.githubcopilot.com/mcp/",
			Headers: map[string]string{"Authorization": "Bearer ${GITHUB_TOKEN}", "X-MCP-Toolsets": "repos,issues"}},
		{Name: "filesystem", Transport: TransportStdio, Command: "npx",
			Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/zoë/Desktop"},
			Env:  map[string]string{"LOG_LEVEL": "debug"}, Cwd: "/srv/mcp"},
		{Name: "legacy-events", Transport: TransportSSE, URL: "http://localhost:8931/sse",
			Headers: map[string]string{"X-Api-Key": "${LEGACY_KEY}"}, Disabled: true},
		{Name: "mémoire ✨", Transport: TransportStdio, Command: `C:\Program Files\nodejs\node.exe`,
			Args: []string{"server.js", `--greeting="héllo"`, "line one\nline two", "tab\there", "<&>", ""},
			Env:  map[string]string{"API_KEY": "${API_KEY}", "QUOTE": `she said "hi" \o/`, "EMPTY": "", "clé unicode": "значение"}},
		{Name: "search", Transport: TransportStdio, Command: "uvx", Args: []string{"mcp-server-fetch"}, Disabled: true,
			Env: map[string]string{"TOKEN": "${input:switchboard-search-TOKEN}"}},
		{Name: "docs", Transport: TransportHTTP, URL: "https://docs.example.com/mcp",
			Headers: map[string]string{"Authorization": "${DOCS_AUTH}", "X-Literal": "${NOT-A-NAME}"}},
	}
}

func testInputs() []Input {
	return []Input{
		{ID: "switchboard-search-TOKEN", Type: "promptString", Description: "TOKEN of search", Password: true},
		{ID: "region", Description: "Région"},
	}
}

// lineDiff shows the first lines where want and got differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 12; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + itoa(i+1) + ":\n  want " + wl + "\n  got  " + gl + "\n")
			shown++
		}
	}
	return b.String()
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
