package views

import (
	"context"
	"html"
	"io"
	"slices"
	"strings"

	"github.com/a-h/templ"
)

// hint is one tool annotation a person can filter on: the annotation
// key, the value that counts, and the words a person reads.
type hint struct {
	key, value string
	Option
}

// hints are the behaviour hints of the MCP spec, as the server states
// them (true or false): only explicit values count, no defaults assumed.
var hints = []hint{
	{"readOnlyHint", "true", Option{Value: "read-only", Title: "read-only"}},
	{"readOnlyHint", "false", Option{Value: "writes", Title: "writes"}},
	{"destructiveHint", "true", Option{Value: "destructive", Title: "destructive"}},
	{"idempotentHint", "true", Option{Value: "idempotent", Title: "idempotent"}},
	{"openWorldHint", "true", Option{Value: "open-world", Title: "open world"}},
	{"openWorldHint", "false", Option{Value: "closed-world", Title: "closed world"}},
}

// hintChipHTML is each hint's chip, rendered once: its words are ours,
// never a server's, and a 500-tool page draws up to four per row.
var hintChipHTML = func() map[string]string {
	m := map[string]string{}
	for _, h := range hints {
		m[h.Value] = `<span class="chip" data-hint="` + html.EscapeString(h.Value) + `" title="The server's own claim">` + html.EscapeString(h.Title) + `</span>`
	}
	return m
}()

// hintChip is the chip of one of HintChips' options.
func hintChip(o Option) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, hintChipHTML[o.Value])
		return err
	})
}

// HintFilters are the annotation filters above the tools table.
var HintFilters = func() []Option {
	out := make([]Option, len(hints))
	for i, h := range hints {
		out[i] = h.Option
	}
	return out
}()

// HintChips are the hints the tool's server states, in a fixed order.
func (t ToolItem) HintChips() []Option {
	var out []Option
	for _, h := range hints {
		for _, a := range t.Annotations {
			if a.Key == h.key && a.Value == h.value {
				out = append(out, h.Option)
			}
		}
	}
	return out
}

// Hints is HintChips as the row's data-hints attribute: the values,
// space-separated, which the filter matches.
func (t ToolItem) Hints() string { return hintValues(t.HintChips()) }

func hintValues(chips []Option) string {
	var b strings.Builder
	for i, c := range chips {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.Value)
	}
	return b.String()
}

// ToolStates are the states the server's tools are in, for the state
// filter: only those present.
func (d ServerDetail) ToolStates() []string {
	var out []string
	for _, t := range d.Tools {
		if !slices.Contains(out, t.State) {
			out = append(out, t.State)
		}
	}
	slices.Sort(out)
	return out
}

func lineCount(s string) int {
	return strings.Count(strings.TrimRight(s, "\n"), "\n") + 1
}

func hasHidden(s string) bool {
	_, hidden := Reveal(s)
	return hidden
}
