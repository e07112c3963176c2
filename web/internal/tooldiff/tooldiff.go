// Package tooldiff shows a person what changed in a tool's definition
// (or a resource's, resource template's or prompt's) since it was
// approved: the definition split into the parts a person reviews, each
// compared line by line.
package tooldiff

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// toolField is one reviewable part of a tool definition, as text.
type toolField struct {
	name string
	text string
}

// shownFields are the tool object's keys that have a field of their own
// in a diff; the rest are compared together as "other fields".
var shownFields = map[string]bool{"name": true, "title": true, "description": true, "inputSchema": true, "outputSchema": true, "annotations": true}

// toolFields splits a tool definition into the parts a person reviews.
// JSON parts are indented, so that a diff shows the lines that changed.
func toolFields(t store.Tool) []toolField {
	fields := []toolField{
		{"title", t.Title},
		{"description", t.Description},
		{"input schema", indentJSON(t.InputSchema)},
		{"output schema", indentJSON(t.OutputSchema)},
		{"annotations", indentJSON(t.Annotations)},
	}
	var obj map[string]json.RawMessage
	other := ""
	if json.Unmarshal(t.Raw, &obj) == nil {
		for k := range obj {
			if shownFields[k] {
				delete(obj, k)
			}
		}
		if len(obj) > 0 {
			data, _ := json.Marshal(obj) // keys sorted
			other = indentJSON(data)
		}
	}
	return append(fields, toolField{"other fields", other})
}

func indentJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}

// Diff compares the approved definition with the current one, field
// by field, and returns the fields that differ (every field of the
// current one when the approved definition is unknown).
func Diff(approved *store.Tool, current store.Tool) []views.FieldDiff {
	var old []toolField
	if approved != nil {
		old = toolFields(*approved)
	}
	return diffFields(old, toolFields(current))
}

// firstKeys are the keys of a listed entry's object (a resource, resource
// template or prompt) that lead its diff, in this order; the others
// follow by name.
var firstKeys = []string{"name", "title", "uri", "uriTemplate", "description", "mimeType", "size", "arguments", "annotations"}

// Objects is Diff for two definitions sent as JSON objects (a resource,
// resource template or prompt): each key is a field, a string shown as
// it is, any other value as indented JSON. approved nil means unknown.
func Objects(approved, current json.RawMessage) []views.FieldDiff {
	var a, c map[string]json.RawMessage
	json.Unmarshal(current, &c) // not an object: no fields
	if approved != nil && json.Unmarshal(approved, &a) != nil {
		a = map[string]json.RawMessage{}
	}
	keys := []string{}
	for _, k := range firstKeys {
		if _, ok := c[k]; ok || a[k] != nil {
			keys = append(keys, k)
		}
	}
	rest := map[string]bool{}
	for _, m := range []map[string]json.RawMessage{a, c} {
		for k := range m {
			if !slices.Contains(firstKeys, k) {
				rest[k] = true
			}
		}
	}
	keys = append(keys, slices.Sorted(maps.Keys(rest))...)
	fieldsOf := func(m map[string]json.RawMessage) []toolField {
		out := make([]toolField, 0, len(keys))
		for _, k := range keys {
			var str string
			if json.Unmarshal(m[k], &str) == nil {
				out = append(out, toolField{k, str})
			} else {
				out = append(out, toolField{k, indentJSON(m[k])})
			}
		}
		return out
	}
	var old []toolField
	if approved != nil {
		old = fieldsOf(a)
	}
	return diffFields(old, fieldsOf(c))
}

// diffFields compares the fields of two versions, by position, and
// returns those that differ (every non-empty one of cur when old is nil,
// the earlier version being unknown).
func diffFields(old, cur []toolField) []views.FieldDiff {
	var out []views.FieldDiff
	for i, f := range cur {
		before := ""
		if old != nil {
			before = old[i].text
		}
		if old != nil && before == f.text {
			continue
		}
		if old == nil && f.text == "" {
			continue
		}
		out = append(out, views.FieldDiff{Field: f.name, Rows: diffLines(splitLines(before), splitLines(f.text))})
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// maxDiffCells bounds the work of the line diff (lines before × lines
// after); past it, the two texts are shown side by side as one change.
const maxDiffCells = 4 << 20

// diffLines is a side-by-side line diff: unchanged lines pair up, and
// between them the removed lines face the added ones (as change rows
// while both sides have lines left). Every line appears, in order, on
// its side.
func diffLines(a, b []string) []views.DiffRow {
	var rows []views.DiffRow
	for _, st := range Align(a, b) {
		r := views.DiffRow{Kind: st.Kind}
		if st.I >= 0 {
			r.Left = a[st.I]
		}
		if st.J >= 0 {
			r.Right = b[st.J]
		}
		rows = append(rows, r)
	}
	return rows
}

// Step is one step of an alignment of two lists: a pair kept ("same"), a
// removed element facing an added one ("change"), a removal ("del") or an
// addition ("add"). I and J index the first and second lists, -1 where
// the step has no element of that list.
type Step struct {
	Kind string
	I, J int
}

// Align aligns a and b on their longest common subsequence: equal
// elements pair up as "same", and between them the removed elements face
// the added ones (as "change" while both sides have some left). Past
// maxDiffCells (len(a) × len(b)) it pairs the lists position by position
// as one run of changes.
func Align(a, b []string) []Step {
	if len(a)*len(b) > maxDiffCells {
		return pairRuns(nil, seq(0, len(a)), seq(0, len(b)))
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var steps []Step
	var dels, adds []int
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			steps = pairRuns(steps, dels, adds)
			dels, adds = nil, nil
			steps = append(steps, Step{Kind: "same", I: i, J: j})
			i++
			j++
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			adds = append(adds, j)
			j++
		default:
			dels = append(dels, i)
			i++
		}
	}
	return pairRuns(steps, dels, adds)
}

func seq(from, to int) []int {
	out := make([]int, 0, to-from)
	for k := from; k < to; k++ {
		out = append(out, k)
	}
	return out
}

// pairRuns appends removed elements facing added ones.
func pairRuns(steps []Step, dels, adds []int) []Step {
	for k := 0; k < max(len(dels), len(adds)); k++ {
		switch {
		case k < len(dels) && k < len(adds):
			steps = append(steps, Step{Kind: "change", I: dels[k], J: adds[k]})
		case k < len(dels):
			steps = append(steps, Step{Kind: "del", I: dels[k], J: -1})
		default:
			steps = append(steps, Step{Kind: "add", I: -1, J: adds[k]})
		}
	}
	return steps
}
