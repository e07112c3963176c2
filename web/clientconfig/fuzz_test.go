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
