package repotest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// module is the module's path: its packages' import paths start with it.
const module = "github.com/switchboard-dev/switchboard"

// The program is wired in cmd (docs/architecture.md "Layout"): the
// commands and the bench build what web serves, and hand it to web.New;
// nothing under web/ but web itself is theirs to import.
func TestCommandsImportOnlyTheWebFace(t *testing.T) {
	for _, dir := range []string{"cmd/switchboard", "cmd/bench"} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s (%v)", dir, err)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(path, module+"/web/") {
					t.Errorf("%s imports %s: only %s/web is the commands' to import", filepath.Join(dir, filepath.Base(f)), path, module)
				}
			}
		}
	}
}
