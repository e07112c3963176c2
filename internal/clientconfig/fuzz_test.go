package clientconfig

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks, for any text, that Parse does not panic, that a
// *SyntaxError points inside the text, and that whatever it reads
// survives an export and a parse in its own format.
func FuzzParse(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/parse/*")
	for _, in := range inputs {
		if data, err := os.ReadFile(in); err == nil && !strings.HasSuffix(in, ".golden.json") {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("", data)
		var se *SyntaxError
		if errors.As(err, &se) {
			lines := bytes.Split(bytes.TrimPrefix(data, utf8BOM), []byte("\n"))
			if se.Pos.Line < 1 || se.Pos.Line > len(lines) || se.Pos.Col < 1 || se.Pos.Col > len([]rune(string(lines[se.Pos.Line-1])))+1 {
				t.Fatalf("Parse(%q) = error at %v, outside the text", data, se.Pos)
			}
		}
		if err != nil {
			return
		}
		out, err := Export(file.Format, file.Servers, file.Inputs)
		if err != nil {
			t.Fatalf("Export(Parse(%q)) = %v", data, err)
		}
		again, err := Parse(file.Format, out)
		if err != nil {
			t.Fatalf("Parse(Export(Parse(%q))) = %v\n%s", data, err, out)
		}
		if got, want := comparable(again.Servers), comparable(file.Servers); !reflect.DeepEqual(got, want) {
			t.Fatalf("Parse(Export(Parse(%q))) =\n%+v\nwant\n%+v", data, got, want)
		}
	})
}

// FuzzEdit checks, for any text, entry name and format, that SetEntry and
// RemoveEntry do not panic, and that whatever they return passes
// checkEdit: it parses, the other entries are the same, the text outside
// the entry is kept, and the edit is done once.
func FuzzEdit(f *testing.F) {
	for _, dir := range []string{"testdata/edit/*", "testdata/parse/*"} {
		inputs, _ := filepath.Glob(dir)
		for i, in := range inputs {
			if data, err := os.ReadFile(in); err == nil && !strings.Contains(in, ".golden.") && !strings.HasPrefix(filepath.Base(in), ".") {
				f.Add(data, editName, uint8(i))
				f.Add(data, "mémoire ✨", uint8(i+5))
			}
		}
	}
	f.Add([]byte("{\"mcpServers\": {\"a\": {\"command\": \"a\"} /* c */, \"a\": 1,}}"), "a", uint8(0))
	f.Add([]byte("[mcp_servers.a]\ncommand = \"a\"\n[mcp_servers.b]\n[mcp_servers.a.env]\nA = \"1\""), "a", uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, name string, sel uint8) {
		format := Formats[int(sel)%len(Formats)]
		s, _ := editServers()
		if sel&4 != 0 {
			_, s = editServers()
		}
		if out, err := SetEntry(format, data, name, s); err == nil {
			checkEdit(t, format, data, out, name, &s)
		}
		if out, _, ok, err := RemoveEntry(format, data, name); err == nil && ok {
			checkEdit(t, format, data, out, name, nil)
		}
	})
}
