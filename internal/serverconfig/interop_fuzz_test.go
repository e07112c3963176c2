package serverconfig_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/clientconfig"
	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

// FuzzImport plans any text in each format against the store, applies
// the default choices and plans it again: a text that does not parse has
// its error inside the text; every row is counted once; and what was
// added is then identical to the text.
func FuzzImport(f *testing.F) {
	ctx := f.Context()
	db, err := bolt.Open(filepath.Join(f.TempDir(), "sb.db"), bolt.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	formats := append([]string{""}, clientconfig.Formats...)
	f.Fuzz(func(t *testing.T, format uint8, text []byte) {
		defer func() {
			sums, err := db.Summaries(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range sums {
				if err := db.DeleteServer(ctx, s.Server.ID); err != nil {
					t.Fatal(err)
				}
			}
		}()
		name := formats[int(format)%len(formats)]
		plan, err := serverconfig.PlanImport(ctx, db, name, text)
		var se *clientconfig.SyntaxError
		if errors.As(err, &se) {
			lines := strings.Split(string(text), "\n")
			if se.Pos.Line < 1 || se.Pos.Line > len(lines) {
				t.Fatalf("PlanImport(%q, %q) = error at line %d of %d", name, text, se.Pos.Line, len(lines))
			}
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("PlanImport(%q, %q) = an error without a message", name, text)
			}
			return
		}
		res := serverconfig.ApplyImport(ctx, db, plan, nil)
		if n := res.Added + res.Updated + res.Skipped + res.Invalid + res.Failed; n != len(plan.Rows) || len(res.Lines) != n {
			t.Fatalf("import of %q: %+v for %d rows", text, res, len(plan.Rows))
		}
		if res.Failed != 0 {
			t.Fatalf("import of %q into an empty store: %v", text, res.Lines)
		}
		again, err := serverconfig.PlanImport(ctx, db, name, text)
		if err != nil {
			t.Fatalf("PlanImport of %q a second time = %v", text, err)
		}
		for i, row := range plan.Rows {
			if row.Action == serverconfig.ImportAdd && again.Rows[i].Action != serverconfig.ImportSame {
				t.Fatalf("import of %q: row %q was added, then plans as %s: %+v", text, row.Name, again.Rows[i].Action, again.Rows[i].Diff)
			}
		}
	})
}
