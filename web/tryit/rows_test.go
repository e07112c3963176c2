package tryit

import (
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/views"
)

const tripSchema = `{"type":"object","properties":{
	"traveller":{"type":"string","minLength":2},
	"stops":{"type":"array","minItems":1,"items":{"$ref":"#/$defs/Stop"}},
	"tags":{"type":"array","items":{"type":"string"},"default":["a","<b>"]},
	"flags":{"type":"array","items":{"type":"boolean"}},
	"matrix":{"type":"array","items":{"type":"array","items":{"type":"number"}}}
},"required":["traveller","stops"],
"$defs":{"Stop":{"type":"object","properties":{
	"city":{"type":"string"},
	"nights":{"type":"integer","minimum":1},
	"by":{"enum":["train","bus"]},
	"booked":{"type":"boolean"},
	"meta":{"type":"object","properties":{"x":{"type":"string"}}}
},"required":["city","booked"]}}}`

// Arrays of scalars and of objects are rows; the template of a row is
// named with the row mark; a required array starts with one empty row;
// a default fills rows; arrays of arrays stay JSON.
func TestFormRows(t *testing.T) {
	f := Form(json.RawMessage(tripSchema))
	if len(f.Fields) != 5 {
		t.Fatalf("Form(trip) has %d fields; want 5: %+v", len(f.Fields), f.Fields)
	}
	stops, tags, flags, matrix := f.Fields[1], f.Fields[2], f.Fields[3], f.Fields[4]
	if stops.Kind != "array" || len(stops.Item) != 5 || len(stops.Rows) != 1 {
		t.Fatalf("stops = %+v; want an array of 5-field rows, one row", stops)
	}
	var kinds, names []string
	for _, c := range stops.Item {
		kinds, names = append(kinds, c.Kind), append(names, c.Name)
	}
	if want := []string{"string", "integer", "enum", "boolean", "json"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("stops item kinds = %q; want %q (an object in a row is JSON)", kinds, want)
	}
	if want := []string{"f2-" + views.RowMark, "f3-" + views.RowMark, "f4-" + views.RowMark, "f5-" + views.RowMark, "f6-" + views.RowMark}; !reflect.DeepEqual(names, want) {
		t.Errorf("stops item names = %q; want %q", names, want)
	}
	if got := stops.Rows[0].Fields[0].Name; got != "f2-0" || stops.Rows[0].Index != "0" {
		t.Errorf("stops row 0 = %+v; want index 0, fields f2-0…", stops.Rows[0])
	}
	if tags.Kind != "array" || len(tags.Rows) != 2 || tags.Rows[1].Fields[0].Value != "<b>" || tags.Rows[1].Fields[0].Name != "f8-1" {
		t.Errorf("tags = %+v; want rows from the default", tags)
	}
	if flags.Kind != "array" || len(flags.Rows) != 0 || flags.Item[0].Kind != "boolean" {
		t.Errorf("flags = %+v; want an optional array of booleans, no rows", flags)
	}
	if matrix.Kind != "json" {
		t.Errorf("matrix kind = %q; want json", matrix.Kind)
	}
}

// Rows come back in the page's order whatever their numbers; empty rows
// are left out; the schema's own rules give per-field errors, kept with
// the input.
func TestCheckRows(t *testing.T) {
	schema := json.RawMessage(tripSchema)
	form := url.Values{
		"f0":   {"Ann"},
		"f1":   {"7", "2", "9"}, // rows in page order: 7, 2, 9 (9 left empty)
		"f2-7": {"Oslo"}, "f3-7": {"2"}, "f4-7": {"0"}, "f5-7": {"true"},
		"f2-2": {"Bergen"}, "f5-2": {"false"},
		"f7": {"0", "1"}, "f8-0": {"x"}, "f8-1": {""},
	}
	args, f, problems, ok := Check(schema, form)
	want := map[string]any{
		"traveller": "Ann",
		"stops":     []any{map[string]any{"city": "Oslo", "nights": int64(2), "by": "train", "booked": true}, map[string]any{"city": "Bergen", "booked": false}},
		"tags":      []any{"x"},
	}
	if !ok || !reflect.DeepEqual(args, want) {
		t.Fatalf("Check(rows) = %#v, %v, problems %q, errors %v; want %#v", args, ok, problems, sfErrors(f.Fields), want)
	}
	if rows := f.Fields[1].Rows; len(rows) != 3 || rows[1].Fields[0].Value != "Bergen" || rows[1].Fields[0].Name != "f2-1" {
		t.Errorf("stops rows after Check = %+v; want 3 rows renumbered in page order", rows)
	}

	// The schema's rules: minLength, minimum, and an error in a row goes
	// to that row's field.
	form.Set("f0", "A")
	form.Set("f3-2", "0")
	args, f, _, ok = Check(schema, form)
	if ok || args != nil {
		t.Fatalf("Check(bad) = %v, %v; want refused", args, ok)
	}
	errs := sfErrors(f.Fields)
	if !strings.Contains(errs["f0"], "minLength") && !strings.Contains(errs["f0"], "length") {
		t.Errorf("traveller error = %q; want the minLength rule", errs["f0"])
	}
	if !strings.Contains(errs["f3-1"], "minimum") && !strings.Contains(errs["f3-1"], "1") {
		t.Errorf("nights of row 1 error = %q (all %v); want the minimum rule", errs["f3-1"], errs)
	}
	if f.Fields[0].Value != "A" || f.Fields[1].Rows[1].Fields[1].Value != "0" {
		t.Errorf("the input is not kept: %+v", f.Fields)
	}

	// A required array with no rows filled is [], which minItems refuses.
	_, f, _, ok = Check(schema, url.Values{"f0": {"Ann"}, "f1": {"0"}})
	if errs := sfErrors(f.Fields); ok || errs["f1"] == "" {
		t.Errorf("Check(no stops) ok=%v errors %v; want an error on stops", ok, errs)
	}
}

// A schema that refers outside itself is not loaded: the arguments go
// unchecked, with a note.
func TestCheckRefusesRemoteRefs(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"},"b":{"$ref":"https://example.com/s.json"}}}`)
	args, f, problems, ok := Check(schema, url.Values{"f0": {"x"}})
	if !ok || args["a"] != "x" || len(problems) != 0 {
		t.Fatalf("Check(remote ref) = %v, %v, %q; want the form's arguments", args, ok, problems)
	}
	if len(f.Notes) == 0 || !strings.Contains(f.Notes[len(f.Notes)-1], "not checked") {
		t.Errorf("notes = %q; want one saying the arguments were not checked", f.Notes)
	}
}
