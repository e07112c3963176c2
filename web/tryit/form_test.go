package tryit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/switchboard-dev/switchboard/views"
)

// sfJSON shows a value in a failure message.
func sfJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// sfWhole is the form of a top-level schema that is edited as JSON.
func sfWhole(note string) views.TryForm {
	return views.TryForm{
		Fields: []views.TryField{{Name: "f0", Label: "arguments", Kind: "json", Description: "All the arguments, as one JSON object."}},
		Notes:  []string{note},
	}
}

func TestSchemaForm(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   views.TryForm
	}{
		{
			name:   "no arguments",
			schema: `{"type":"object"}`,
			want:   views.TryForm{},
		},
		{
			name:   "no arguments, empty properties",
			schema: `{"type":"object","properties":{},"additionalProperties":false}`,
			want:   views.TryForm{},
		},
		{
			name: "scalar kinds, schema order, required, descriptions and defaults",
			schema: `{"type":"object","properties":{
				"zeta":{"type":"string","description":"Zeta <b>text</b>","default":"hello"},
				"alpha":{"type":"integer","default":3},
				"mid":{"type":"number","title":"A title","default":1.50},
				"flag":{"type":"boolean","default":true},
				"must":{"type":"boolean"},
				"wrongdefault":{"type":"integer","default":"x"},
				"halfint":{"type":"integer","default":1.5}
			},"required":["alpha","must",7,"missing"]}`,
			want: views.TryForm{Fields: []views.TryField{
				{Name: "f0", Label: "zeta", Kind: "string", Description: "Zeta <b>text</b>", Value: "hello"},
				{Name: "f1", Label: "alpha", Kind: "integer", Required: true, Value: "3"},
				{Name: "f2", Label: "mid", Kind: "number", Description: "A title", Value: "1.50"},
				{Name: "f3", Label: "flag", Kind: "boolean", Value: "true"},
				{Name: "f4", Label: "must", Kind: "boolean", Required: true},
				{Name: "f5", Label: "wrongdefault", Kind: "integer"},
				{Name: "f6", Label: "halfint", Kind: "integer"},
			}},
		},
		{
			name: "enums of any JSON type, const, and defaults as option indexes",
			schema: `{"type":"object","properties":{
				"color":{"type":"string","enum":["red","green"],"default":"green"},
				"mixed":{"enum":[1.50,"a",null,true,{"k":"<v>"},[1]],"default":null},
				"clash":{"enum":["1",1]},
				"fixed":{"const":"only"},
				"empty":{"enum":[]},
				"notlist":{"enum":"red"}
			}}`,
			want: views.TryForm{Fields: []views.TryField{
				{Name: "f0", Label: "color", Kind: "enum", Options: []string{"red", "green"}, Value: "1"},
				{Name: "f1", Label: "mixed", Kind: "enum", Options: []string{"1.50", "a", "null", "true", `{"k":"<v>"}`, "[1]"}, Value: "2"},
				{Name: "f2", Label: "clash", Kind: "enum", Options: []string{`"1"`, "1"}},
				{Name: "f3", Label: "fixed", Kind: "enum", Options: []string{"only"}},
				{Name: "f4", Label: "empty", Kind: "json"},
				{Name: "f5", Label: "notlist", Kind: "json"},
			}},
		},
		{
			name: "everything else is JSON",
			schema: `{"type":"object","properties":{
				"list":{"type":"array","prefixItems":[{"type":"string"}],"default":["a","<b>"]},
				"one":{"oneOf":[{"type":"string"},{"type":"integer"}]},
				"any":{"type":"string","anyOf":[{"minLength":1}]},
				"all":{"allOf":[{"type":"string"}]},
				"types":{"type":["string","null"]},
				"free":{"type":"object","additionalProperties":{"type":"string"}},
				"nothing":{},
				"nulltype":{"type":"null"},
				"yes":true,
				"no":false
			}}`,
			want: views.TryForm{Fields: []views.TryField{
				{Name: "f0", Label: "list", Kind: "json", Value: "[\n  \"a\",\n  \"<b>\"\n]"},
				{Name: "f1", Label: "one", Kind: "json"},
				{Name: "f2", Label: "any", Kind: "json"},
				{Name: "f3", Label: "all", Kind: "json"},
				{Name: "f4", Label: "types", Kind: "json"},
				{Name: "f5", Label: "free", Kind: "json"},
				{Name: "f6", Label: "nothing", Kind: "json"},
				{Name: "f7", Label: "nulltype", Kind: "json"},
				{Name: "f8", Label: "yes", Kind: "json"},
				{Name: "f9", Label: "no", Kind: "json"},
			}},
		},
		{
			name: "nested objects are fieldsets, named in pre-order, with defaults from the enclosing default",
			schema: `{"type":"object","properties":{
				"a":{"type":"string"},
				"opts":{"description":"Options","properties":{
					"depth":{"type":"integer"},
					"inner":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}
				},"default":{"depth":2,"inner":{"x":"dx"}}},
				"b":{"type":"string"}
			},"required":["opts"]}`,
			want: views.TryForm{Fields: []views.TryField{
				{Name: "f0", Label: "a", Kind: "string"},
				{Name: "f1", Label: "opts", Kind: "object", Required: true, Description: "Options", Children: []views.TryField{
					{Name: "f2", Label: "depth", Kind: "integer", Value: "2"},
					{Name: "f3", Label: "inner", Kind: "object", Children: []views.TryField{
						{Name: "f4", Label: "x", Kind: "string", Required: true, Value: "dx"},
					}},
				}},
				{Name: "f5", Label: "b", Kind: "string"},
			}},
		},
		{
			name: "depth 4 is kept, deeper is JSON",
			schema: `{"type":"object","properties":{"l1":{"type":"object","properties":{"l2":{"type":"object","properties":{
				"l3":{"type":"object","properties":{"l4":{"type":"string"},"o4":{"type":"object","properties":{"l5":{"type":"string"}}}}}}}}}}}`,
			want: views.TryForm{
				Fields: []views.TryField{{Name: "f0", Label: "l1", Kind: "object", Children: []views.TryField{
					{Name: "f1", Label: "l2", Kind: "object", Children: []views.TryField{
						{Name: "f2", Label: "l3", Kind: "object", Children: []views.TryField{
							{Name: "f3", Label: "l4", Kind: "string"},
							{Name: "f4", Label: "o4", Kind: "json"},
						}},
					}},
				}}},
				Notes: []string{`"l1" › "l2" › "l3" › "o4": nested deeper than 4 levels: edited as JSON`},
			},
		},
		{
			name: "local refs are followed; a description next to the ref wins",
			schema: `{"$ref":"#/$defs/Args","$defs":{
				"Args":{"type":"object","properties":{
					"who":{"$ref":"#/$defs/Person","description":"The person"},
					"slash":{"$ref":"#/definitions/a~1b%20c"},
					"kind":{"$ref":"#/$defs/Kind"}
				},"required":["who"]},
				"Person":{"type":"object","description":"ignored","properties":{"name":{"type":"string"}}},
				"Kind":{"$ref":"#/$defs/KindInner"},
				"KindInner":{"enum":["a","b"],"description":"A kind"}
			},"definitions":{"a/b c":{"type":"integer"}}}`,
			want: views.TryForm{Fields: []views.TryField{
				{Name: "f0", Label: "who", Kind: "object", Required: true, Description: "The person", Children: []views.TryField{
					{Name: "f1", Label: "name", Kind: "string"},
				}},
				{Name: "f2", Label: "slash", Kind: "integer"},
				{Name: "f3", Label: "kind", Kind: "enum", Description: "A kind", Options: []string{"a", "b"}},
			}},
		},
		{
			name: "a ref already on the path, a remote ref, a missing one and a non-string one are JSON",
			schema: `{"type":"object","properties":{
				"tree":{"$ref":"#/$defs/Node"},
				"remote":{"$ref":"https://example.com/schema.json"},
				"pointer":{"$ref":"#/properties/tree"},
				"missing":{"$ref":"#/$defs/Nope"},
				"number":{"$ref":5}
			},"$defs":{"Node":{"type":"object","properties":{"value":{"type":"string"},"child":{"$ref":"#/$defs/Node"}}}}}`,
			want: views.TryForm{
				Fields: []views.TryField{
					{Name: "f0", Label: "tree", Kind: "object", Children: []views.TryField{
						{Name: "f1", Label: "value", Kind: "string"},
						{Name: "f2", Label: "child", Kind: "json"},
					}},
					{Name: "f3", Label: "remote", Kind: "json"},
					{Name: "f4", Label: "pointer", Kind: "json"},
					{Name: "f5", Label: "missing", Kind: "json"},
					{Name: "f6", Label: "number", Kind: "json"},
				},
				Notes: []string{
					`"tree" › "child": refers to itself ("#/$defs/Node"): edited as JSON`,
					`"remote": has a $ref that is not to #/$defs or #/definitions ("https://example.com/schema.json"): edited as JSON`,
					`"pointer": has a $ref that is not to #/$defs or #/definitions ("#/properties/tree"): edited as JSON`,
					`"missing": refers to a missing definition ("#/$defs/Nope"): edited as JSON`,
					`"number": has a $ref that is not a string: edited as JSON`,
				},
			},
		},
		{
			name: "non-object property schemas and properties",
			schema: `{"type":"object","properties":{
				"null":null, "num":5, "str":"string", "list":[],
				"badprops":{"type":"object","properties":[1]}
			}}`,
			want: views.TryForm{
				Fields: []views.TryField{
					{Name: "f0", Label: "null", Kind: "json"},
					{Name: "f1", Label: "num", Kind: "json"},
					{Name: "f2", Label: "str", Kind: "json"},
					{Name: "f3", Label: "list", Kind: "json"},
					{Name: "f4", Label: "badprops", Kind: "json"},
				},
				Notes: []string{
					`"null": has a schema that is not an object: edited as JSON`,
					`"num": has a schema that is not an object: edited as JSON`,
					`"str": has a schema that is not an object: edited as JSON`,
					`"list": has a schema that is not an object: edited as JSON`,
					`"badprops": has properties that are not an object: edited as JSON`,
				},
			},
		},
		{
			name:   "duplicate keys: the last value, at the first place",
			schema: `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"a":{"type":"integer"}}}`,
			want: views.TryForm{Fields: []views.TryField{
				{Name: "f0", Label: "a", Kind: "integer"},
				{Name: "f1", Label: "b", Kind: "string"},
			}},
		},
		{
			name: "a top-level default fills the fields",
			schema: `{"type":"object","properties":{"a":{"type":"string"},"o":{"type":"object","properties":{"b":{"type":"integer"}}}},
				"default":{"a":"x","o":{"b":2}}}`,
			want: views.TryForm{Fields: []views.TryField{
				{Name: "f0", Label: "a", Kind: "string", Value: "x"},
				{Name: "f1", Label: "o", Kind: "object", Children: []views.TryField{
					{Name: "f2", Label: "b", Kind: "integer", Value: "2"},
				}},
			}},
		},
		{
			name: "defaults of refs that are not followed, and defaults too long to fill in",
			schema: `{"type":"object","properties":{
				"remote":{"$ref":"https://x/s.json","default":[1,{"a":null}]},
				"long":{"type":"string","default":"` + strings.Repeat("x", tryMaxValue+1) + `"},
				"` + strings.Repeat("€", 30) + `":{"$ref":"#/$defs/x"}
			}}`,
			want: views.TryForm{
				Fields: []views.TryField{
					{Name: "f0", Label: "remote", Kind: "json", Value: "[\n  1,\n  {\n    \"a\": null\n  }\n]"},
					{Name: "f1", Label: "long", Kind: "string"},
					{Name: "f2", Label: strings.Repeat("€", 30), Kind: "json"},
				},
				Notes: []string{
					`"remote": has a $ref that is not to #/$defs or #/definitions ("https://x/s.json"): edited as JSON`,
					`"long": the default is longer than 64 KiB: not filled in`,
					`"` + strings.Repeat("€", 26) + `"…: refers to a missing definition ("#/$defs/x"): edited as JSON`,
				},
			},
		},
		{name: "unparsable", schema: `{"type":`, want: sfWhole("the input schema is not valid JSON: arguments edited as JSON")},
		{name: "empty", schema: ``, want: sfWhole("the input schema is not valid JSON: arguments edited as JSON")},
		{name: "null", schema: `null`, want: sfWhole("the input schema is not an object schema: arguments edited as JSON")},
		{name: "number", schema: `42`, want: sfWhole("the input schema is not an object schema: arguments edited as JSON")},
		{name: "array", schema: `[{"type":"object"}]`, want: sfWhole("the input schema is not an object schema: arguments edited as JSON")},
		{name: "string type", schema: `{"type":"string"}`, want: sfWhole("the input schema is not an object schema: arguments edited as JSON")},
		{name: "no type", schema: `{}`, want: sfWhole("the input schema is not an object schema: arguments edited as JSON")},
		{name: "type list", schema: `{"type":["object"],"properties":{"a":{}}}`, want: sfWhole("the input schema is not an object schema: arguments edited as JSON")},
		{name: "anyOf", schema: `{"type":"object","properties":{"a":{}},"anyOf":[{"required":["a"]}]}`, want: sfWhole("the input schema uses anyOf: arguments edited as JSON")},
		{name: "enum", schema: `{"enum":[{}]}`, want: sfWhole("the input schema is an enum, not an object schema: arguments edited as JSON")},
		{name: "free-form object", schema: `{"type":"object","additionalProperties":true}`, want: sfWhole("the input schema has no fixed properties: arguments edited as JSON")},
		{name: "pattern properties", schema: `{"type":"object","patternProperties":{"^x":{}}}`, want: sfWhole("the input schema has no fixed properties: arguments edited as JSON")},
		{name: "properties not an object", schema: `{"type":"object","properties":"a"}`, want: sfWhole("the input schema has properties that are not an object: arguments edited as JSON")},
		{name: "self ref", schema: `{"$ref":"#/$defs/A","$defs":{"A":{"$ref":"#/$defs/A"}}}`, want: sfWhole(`the input schema refers to itself ("#/$defs/A"): arguments edited as JSON`)},
		{name: "remote ref", schema: `{"$ref":"other.json"}`, want: sfWhole(`the input schema has a $ref that is not to #/$defs or #/definitions ("other.json"): arguments edited as JSON`)},
		{
			name:   "whole arguments keep an object default",
			schema: `{"type":"object","additionalProperties":true,"description":"Anything","default":{"a":1}}`,
			want: views.TryForm{
				Fields: []views.TryField{{Name: "f0", Label: "arguments", Kind: "json", Description: "Anything", Value: "{\n  \"a\": 1\n}"}},
				Notes:  []string{"the input schema has no fixed properties: arguments edited as JSON"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Form(json.RawMessage(tt.schema))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Form(%s) = %s; want %s", tt.schema, sfJSON(got), sfJSON(tt.want))
			}
		})
	}
}

func TestSchemaFormEnumLimit(t *testing.T) {
	enum := func(n int) string {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprint(i)
		}
		return `{"type":"object","properties":{"e":{"enum":[` + strings.Join(vals, ",") + `]}}}`
	}
	f := Form(json.RawMessage(enum(tryMaxOptions)))
	if len(f.Fields) != 1 || f.Fields[0].Kind != "enum" || len(f.Fields[0].Options) != tryMaxOptions || len(f.Notes) != 0 {
		t.Errorf("Form(%d values): kind %q, %d options, notes %q; want enum, %d, none", tryMaxOptions, f.Fields[0].Kind, len(f.Fields[0].Options), f.Notes, tryMaxOptions)
	}
	f = Form(json.RawMessage(enum(tryMaxOptions + 1)))
	wantNotes := []string{`"e": has 501 enum values, more than 500: edited as JSON`}
	if len(f.Fields) != 1 || f.Fields[0].Kind != "json" || f.Fields[0].Options != nil || !reflect.DeepEqual(f.Notes, wantNotes) {
		t.Errorf("Form(%d values) = %s; want one json field and notes %q", tryMaxOptions+1, sfJSON(f), wantNotes)
	}
}

// sfManyProps is an object schema with n string properties p0, p1, …;
// the first required ones are required.
func sfManyProps(n, required int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
	}
	b.WriteString(`},"required":[`)
	for i := range required {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d"`, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

func TestSchemaFormFieldLimit(t *testing.T) {
	f := Form(json.RawMessage(sfManyProps(tryMaxFields+5, tryMaxFields+2)))
	if len(f.Fields) != tryMaxFields+1 {
		t.Fatalf("Form(%d properties) has %d fields; want %d", tryMaxFields+5, len(f.Fields), tryMaxFields+1)
	}
	if got := f.Fields[tryMaxFields-1]; got.Name != "f199" || got.Label != "p199" || got.Kind != "string" {
		t.Errorf("field 199 = %+v; want f199, p199, string", got)
	}
	rest := f.Fields[tryMaxFields]
	want := views.TryField{
		Name: "f200", Label: "other arguments", Kind: "json", Required: true,
		Description: `A JSON object with any of the remaining properties: "p200", "p201", "p202", "p203", "p204"; required among them: "p200", "p201".`,
	}
	if !reflect.DeepEqual(rest, want) {
		t.Errorf("rest field = %s; want %s", sfJSON(rest), sfJSON(want))
	}
	wantNotes := []string{`5 properties beyond the limit of 200 fields: give them in "other arguments" as a JSON object`}
	if !reflect.DeepEqual(f.Notes, wantNotes) {
		t.Errorf("notes = %q; want %q", f.Notes, wantNotes)
	}

	// The limit counts nested fields too; each object being built when it
	// is reached gets its own "other arguments".
	nested := `{"type":"object","properties":{"o":{"type":"object","properties":` +
		strings.TrimPrefix(strings.TrimSuffix(sfManyProps(tryMaxFields, 0), `,"required":[]}`), `{"type":"object","properties":`) +
		`},"after":{"type":"string"}}}`
	f = Form(json.RawMessage(nested))
	if len(f.Fields) != 2 || f.Fields[0].Label != "o" || f.Fields[1].Label != "other arguments" || f.Fields[1].Name != "f201" {
		t.Fatalf("nested: top fields = %s; want o, other arguments (f201)", sfJSON(f.Fields))
	}
	o := f.Fields[0].Children
	if len(o) != tryMaxFields || o[len(o)-1].Label != "other arguments" || o[len(o)-1].Name != "f200" || o[len(o)-2].Label != "p198" {
		t.Errorf("nested: %d children ending %+v; want %d ending in p198, other arguments", len(o), o[len(o)-1], tryMaxFields)
	}
	wantNotes = []string{
		`"o": 1 property beyond the limit of 200 fields: give them in "other arguments" as a JSON object`,
		`1 property beyond the limit of 200 fields: give them in "other arguments" as a JSON object`,
	}
	if !reflect.DeepEqual(f.Notes, wantNotes) {
		t.Errorf("nested notes = %q; want %q", f.Notes, wantNotes)
	}
}

// sfArgsSchema has a field of every kind.
const sfArgsSchema = `{"type":"object","properties":{
	"s":{"type":"string"},
	"n":{"type":"number"},
	"i":{"type":"integer"},
	"b":{"type":"boolean"},
	"rb":{"type":"boolean"},
	"e":{"enum":[1.50,"a",null,{"k":[1,"x"]}]},
	"j":{"type":"array"},
	"rs":{"type":"string"},
	"opt":{"type":"object","properties":{"x":{"type":"string"},"y":{"type":"integer"}},"required":["x"]},
	"req":{"type":"object","properties":{"x":{"type":"string"}}}
},"required":["rb","rs","req"]}`

// Field names of sfArgsSchema: s f0, n f1, i f2, b f3, rb f4, e f5, j f6,
// rs f7, opt f8 (x f9, y f10), req f11 (x f12).

func TestFormArgs(t *testing.T) {
	tests := []struct {
		name     string
		form     url.Values
		wantArgs map[string]any
		wantOK   bool
		wantErrs map[string]string // by field name
	}{
		{
			name:     "only what is required",
			form:     url.Values{"f7": {"x"}},
			wantArgs: map[string]any{"rb": false, "rs": "x", "req": map[string]any{}},
			wantOK:   true,
		},
		{
			name: "every kind",
			form: url.Values{
				"f0": {" spaced "}, "f1": {" -1.25e2 "}, "f2": {"42"}, "f3": {"false"}, "f4": {"true"},
				"f5": {"3"}, "f6": {`[1, 12345678901234567890, "a"]`}, "f7": {"r"},
				"f9": {"xx"}, "f10": {"1e3"}, "f12": {"z"},
			},
			wantArgs: map[string]any{
				"s": " spaced ", "n": -125.0, "i": int64(42), "b": false, "rb": true,
				"e":  map[string]any{"k": []any{json.Number("1"), "x"}},
				"j":  []any{json.Number("1"), json.Number("12345678901234567890"), "a"},
				"rs": "r", "opt": map[string]any{"x": "xx", "y": int64(1000)}, "req": map[string]any{"x": "z"},
			},
			wantOK: true,
		},
		{
			name:     "enum values come back exactly",
			form:     url.Values{"f5": {"0"}, "f7": {"r"}},
			wantArgs: map[string]any{"e": json.Number("1.50"), "rb": false, "rs": "r", "req": map[string]any{}},
			wantOK:   true,
		},
		{
			name:     "enum null is not the same as not set",
			form:     url.Values{"f5": {"2"}, "f7": {"r"}},
			wantArgs: map[string]any{"e": nil, "rb": false, "rs": "r", "req": map[string]any{}},
			wantOK:   true,
		},
		{
			name:     "spaces in a number are not a value; whole numbers may be written 2.0",
			form:     url.Values{"f1": {"   "}, "f2": {"2.0"}, "f7": {"r"}},
			wantArgs: map[string]any{"i": int64(2), "rb": false, "rs": "r", "req": map[string]any{}},
			wantOK:   true,
		},
		{
			name:     "JSON null in a json field is a value",
			form:     url.Values{"f6": {"null"}, "f7": {"r"}},
			wantArgs: map[string]any{"j": nil, "rb": false, "rs": "r", "req": map[string]any{}},
			wantOK:   true,
		},
		{
			name:     "required fields",
			form:     url.Values{"f9": {""}, "f10": {"5"}},
			wantErrs: map[string]string{"f7": "required", "f9": "required"},
		},
		{
			name: "wrong values",
			form: url.Values{
				"f1": {"12abc"}, "f2": {"4.5"}, "f3": {"yes"}, "f5": {"9"}, "f6": {"[1,"}, "f7": {"r"},
				"f10": {"0x10"}, "f12": {"ok"},
			},
			wantErrs: map[string]string{
				"f1": "must be a number", "f2": "must be a whole number", "f3": "choose true or false",
				"f5": "choose one of the options", "f6": "not valid JSON (it ends too early)",
				"f9": "required", "f10": "must be a whole number",
			},
		},
		{
			name: "more wrong values",
			form: url.Values{
				"f1": {"1e400"}, "f2": {"99999999999999999999"}, "f4": {"on"}, "f5": {"-1"}, "f6": {"[1] [2]"},
				"f7": {strings.Repeat("x", tryMaxValue+1)},
			},
			wantErrs: map[string]string{
				"f1": "must be a number within ±1.8e308", "f2": "must be a whole number within ±9223372036854775807",
				"f4": "choose true or false", "f5": "choose one of the options", "f6": "must be a single JSON value",
				"f7": "too long: at most 64 KiB",
			},
		},
		{
			name:     "JSON syntax error",
			form:     url.Values{"f6": {`{"a":}`}, "f7": {"r"}},
			wantErrs: map[string]string{"f6": "not valid JSON (at character 6)"},
		},
		{
			name:     "the first of repeated values",
			form:     url.Values{"f0": {"one", "two"}, "f7": {"r"}},
			wantArgs: map[string]any{"s": "one", "rb": false, "rs": "r", "req": map[string]any{}},
			wantOK:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, f, ok := Args(json.RawMessage(sfArgsSchema), tt.form)
			if ok != tt.wantOK || !reflect.DeepEqual(args, tt.wantArgs) {
				t.Errorf("Args(%v) = %#v, %v; want %#v, %v", tt.form, args, ok, tt.wantArgs, tt.wantOK)
			}
			if gotErrs := sfErrors(f.Fields); !reflect.DeepEqual(gotErrs, sfOrEmpty(tt.wantErrs)) {
				t.Errorf("Args(%v) errors = %v; want %v", tt.form, gotErrs, tt.wantErrs)
			}
			// Every field shows what was submitted, right or wrong.
			for name, v := range sfValues(f.Fields) {
				if want := formValue(tt.form, name); v != want {
					t.Errorf("Args(%v): field %s value = %q; want %q", tt.form, name, v, want)
				}
			}
			// The form is the schema's form, with values and errors.
			if got, want := sfShape(f), sfShape(Form(json.RawMessage(sfArgsSchema))); !reflect.DeepEqual(got, want) {
				t.Errorf("Args form = %s; want the shape %s", sfJSON(got), sfJSON(want))
			}
		})
	}
}

func TestFormArgsMore(t *testing.T) {
	many := json.RawMessage(sfManyProps(tryMaxFields+3, 0))
	tests := []struct {
		name     string
		schema   json.RawMessage
		form     url.Values
		wantArgs map[string]any
		wantOK   bool
		wantErrs map[string]string
	}{
		{
			name:     "other arguments are merged",
			schema:   many,
			form:     url.Values{"f0": {"a"}, "f200": {`{"p201":"b","extra":1}`}},
			wantArgs: map[string]any{"p0": "a", "p201": "b", "extra": json.Number("1")},
			wantOK:   true,
		},
		{
			name:     "other arguments may not set a field's property",
			schema:   many,
			form:     url.Values{"f0": {"a"}, "f200": {`{"p0":"b"}`}},
			wantErrs: map[string]string{"f200": `sets "p0", which has its own field`},
		},
		{
			name:     "other arguments must be an object",
			schema:   many,
			form:     url.Values{"f200": {`[1]`}},
			wantErrs: map[string]string{"f200": "must be a JSON object"},
		},
		{
			name:     "other arguments required when a remaining property is",
			schema:   json.RawMessage(sfManyProps(tryMaxFields+1, tryMaxFields+1)),
			form:     url.Values{},
			wantErrs: sfRequiredAll(tryMaxFields + 1),
		},
		{
			name:     "whole arguments",
			schema:   json.RawMessage(`[]`),
			form:     url.Values{"f0": {` {"a": [1, 2.5], "b": null} `}},
			wantArgs: map[string]any{"a": []any{json.Number("1"), json.Number("2.5")}, "b": nil},
			wantOK:   true,
		},
		{
			name:     "whole arguments empty",
			schema:   json.RawMessage(`{"type":"object","additionalProperties":{}}`),
			form:     url.Values{"f0": {"  "}},
			wantArgs: map[string]any{},
			wantOK:   true,
		},
		{
			name:     "whole arguments not an object",
			schema:   json.RawMessage(`{"type":"string"}`),
			form:     url.Values{"f0": {`"x"`}},
			wantErrs: map[string]string{"f0": "must be a JSON object"},
		},
		{
			name:     "whole arguments not JSON",
			schema:   json.RawMessage(`nonsense`),
			form:     url.Values{"f0": {`{a}`}},
			wantErrs: map[string]string{"f0": "not valid JSON (at character 2)"},
		},
		{
			name:     "an optional object is given by a field inside a nested one",
			schema:   json.RawMessage(`{"type":"object","properties":{"outer":{"type":"object","properties":{"inner":{"type":"object","properties":{"v":{"type":"string"}}},"w":{"type":"string"}}}}}`),
			form:     url.Values{"f2": {"x"}},
			wantArgs: map[string]any{"outer": map[string]any{"inner": map[string]any{"v": "x"}}},
			wantOK:   true,
		},
		{
			name:     "text must be UTF-8",
			schema:   json.RawMessage(`{"type":"object","properties":{"s":{"type":"string"}}}`),
			form:     url.Values{"f0": {"a\xffb"}},
			wantErrs: map[string]string{"f0": "not valid text (UTF-8)"},
		},
		{
			name:     "no arguments",
			schema:   json.RawMessage(`{"type":"object"}`),
			form:     url.Values{"f0": {"ignored"}},
			wantArgs: map[string]any{},
			wantOK:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, f, ok := Args(tt.schema, tt.form)
			if ok != tt.wantOK || !reflect.DeepEqual(args, tt.wantArgs) {
				t.Errorf("Args(%v) = %#v, %v; want %#v, %v", tt.form, args, ok, tt.wantArgs, tt.wantOK)
			}
			if gotErrs := sfErrors(f.Fields); !reflect.DeepEqual(gotErrs, sfOrEmpty(tt.wantErrs)) {
				t.Errorf("Args(%v) errors = %v; want %v", tt.form, gotErrs, tt.wantErrs)
			}
			if !reflect.DeepEqual(f.Notes, Form(tt.schema).Notes) {
				t.Errorf("Args notes = %q; want Form's %q", f.Notes, Form(tt.schema).Notes)
			}
		})
	}
}

// sfRequiredAll is "required" on f0…f(n-1) and on the "other arguments"
// field after them.
func sfRequiredAll(n int) map[string]string {
	m := map[string]string{}
	for i := 0; i < tryMaxFields; i++ {
		m[fmt.Sprintf("f%d", i)] = "required"
	}
	if n > tryMaxFields {
		m[fmt.Sprintf("f%d", tryMaxFields)] = "required"
	}
	return m
}

func TestSchemaFormRoundTrip(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"path":{"type":"string","description":"Where"},
		"count":{"type":"integer","default":10},
		"ratio":{"type":"number"},
		"recursive":{"type":"boolean","default":false},
		"mode":{"enum":["fast",2,{"slow":true}],"default":"fast"},
		"tags":{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"string"},"default":["a"]},
		"owner":{"$ref":"#/$defs/Person"}
	},"required":["path","recursive"],
	"$defs":{"Person":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"]}}}`)

	// The defaults, submitted unchanged, are the defaults.
	f := Form(schema)
	form := url.Values{}
	sfWalk(f.Fields, func(fl views.TryField) { form.Set(fl.Name, fl.Value) })
	form.Set(sfByLabel(t, f, "path"), "/tmp")
	args, back, ok := Args(schema, form)
	want := map[string]any{"path": "/tmp", "count": int64(10), "recursive": false, "mode": "fast", "tags": []any{"a"}}
	if !ok || !reflect.DeepEqual(args, want) {
		t.Fatalf("Args(defaults) = %#v, %v (errors %v); want %#v", args, ok, sfErrors(back.Fields), want)
	}

	// Values typed into each field come back as the values.
	fill := map[string]string{
		"path": "/srv/<data>", "count": "-3", "ratio": "0.25", "recursive": "true",
		"mode": sfOption(t, f, "mode", `{"slow":true}`), "tags": `["x","y"]`, "name": "Ann", "age": "40",
	}
	form = url.Values{}
	for label, v := range fill {
		form.Set(sfByLabel(t, f, label), v)
	}
	args, back, ok = Args(schema, form)
	want = map[string]any{
		"path": "/srv/<data>", "count": int64(-3), "ratio": 0.25, "recursive": true,
		"mode": map[string]any{"slow": true}, "tags": []any{"x", "y"},
		"owner": map[string]any{"name": "Ann", "age": int64(40)},
	}
	if !ok || !reflect.DeepEqual(args, want) {
		t.Fatalf("Args(filled) = %#v, %v (errors %v); want %#v", args, ok, sfErrors(back.Fields), want)
	}
	// The arguments are JSON the tool gets.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		t.Fatalf("encode args: %v", err)
	}
	const wantJSON = `{"count":-3,"mode":{"slow":true},"owner":{"age":40,"name":"Ann"},"path":"/srv/<data>","ratio":0.25,"recursive":true,"tags":["x","y"]}`
	if got := strings.TrimSpace(b.String()); got != wantJSON {
		t.Errorf("JSON of args = %s; want %s", got, wantJSON)
	}
	// Unchanged, the returned form has the same fields and the values.
	if !reflect.DeepEqual(sfShape(back), sfShape(f)) {
		t.Errorf("Args form shape = %s; want %s", sfJSON(sfShape(back)), sfJSON(sfShape(f)))
	}
	sfWalk(back.Fields, func(fl views.TryField) {
		if fl.Kind != "object" && fl.Value != form.Get(fl.Name) {
			t.Errorf("returned field %s (%s) value = %q; want %q", fl.Name, fl.Label, fl.Value, form.Get(fl.Name))
		}
	})
}

func TestFormArgsKeepsInputOnErrors(t *testing.T) {
	schema := json.RawMessage(sfArgsSchema)
	form := url.Values{
		"f0": {"kept <text>"}, "f1": {"one point five"}, "f2": {"1.5"}, "f3": {"true"}, "f4": {"true"},
		"f5": {"1"}, "f6": {"{broken"}, "f7": {""}, "f10": {"7"},
	}
	_, f, ok := Args(schema, form)
	if ok {
		t.Fatalf("Args(%v) ok = true; want false", form)
	}
	wantErrs := map[string]string{
		"f1": "must be a number", "f2": "must be a whole number", "f6": "not valid JSON (at character 2)",
		"f7": "required", "f9": "required",
	}
	if got := sfErrors(f.Fields); !reflect.DeepEqual(got, wantErrs) {
		t.Errorf("errors = %v; want %v", got, wantErrs)
	}
	wantValues := map[string]string{
		"f0": "kept <text>", "f1": "one point five", "f2": "1.5", "f3": "true", "f4": "true", "f5": "1",
		"f6": "{broken", "f7": "", "f9": "", "f10": "7", "f12": "",
	}
	if got := sfValues(f.Fields); !reflect.DeepEqual(got, wantValues) {
		t.Errorf("values = %v; want %v", got, wantValues)
	}
	// Rendered again, the input is there.
	doc := sfRender(t, f)
	if got := sfAttr(sfFind(t, doc, "try-f0"), "value"); got != "kept <text>" {
		t.Errorf("re-rendered f0 value = %q; want %q", got, "kept <text>")
	}
	if got := sfText(sfFind(t, doc, "try-f6")); got != "{broken" {
		t.Errorf("re-rendered f6 text = %q; want %q", got, "{broken")
	}
	if got := sfAttr(sfFind(t, doc, "try-f1"), "aria-invalid"); got != "true" {
		t.Errorf("re-rendered f1 aria-invalid = %q; want true", got)
	}
}

// TestSchemaFormHostile feeds schemas built to make a form generator
// loop, recurse, allocate or panic; each must come back fast, with a
// bounded form.
func TestSchemaFormHostile(t *testing.T) {
	refChain := func(n int, loop bool) string {
		var b strings.Builder
		b.WriteString(`{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{`)
		for i := range n {
			next := i + 1
			if loop && next == n {
				next = 0
			}
			if i > 0 {
				b.WriteByte(',')
			}
			if !loop && next == n {
				fmt.Fprintf(&b, `"d%d":{"type":"string"}`, i)
			} else {
				fmt.Fprintf(&b, `"d%d":{"$ref":"#/$defs/d%d"}`, i, next)
			}
		}
		b.WriteString(`}}`)
		return b.String()
	}
	// Each definition has ten properties referring to the next: without
	// bounds, 10^30 fields.
	fanOut := func() string {
		var b strings.Builder
		b.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
		for i := range 30 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"d%d":{"type":"object","properties":{`, i)
			for j := range 10 {
				if j > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"p%d":{"$ref":"#/$defs/d%d"}`, j, i+1)
			}
			b.WriteString(`}}`)
		}
		b.WriteString(`,"d30":{"type":"string"}}}`)
		return b.String()
	}
	nest := func(n int) string {
		return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{"type":"string"}` + strings.Repeat(`}}`, n)
	}
	hugeEnum := func() string {
		vals := make([]string, 100000)
		for i := range vals {
			vals[i] = fmt.Sprintf(`"v%d"`, i)
		}
		return `{"type":"object","properties":{"e":{"enum":[` + strings.Join(vals, ",") + `]}}}`
	}
	tests := []struct {
		name   string
		schema string
	}{
		{"self-referencing def", `{"type":"object","properties":{"x":{"$ref":"#/$defs/A"}},"$defs":{"A":{"$ref":"#/$defs/A"}}}`},
		{"mutual refs", `{"type":"object","properties":{"x":{"$ref":"#/$defs/A"}},"$defs":{"A":{"$ref":"#/definitions/B"}},"definitions":{"B":{"$ref":"#/$defs/A"}}}`},
		{"object cycle", `{"$ref":"#/$defs/A","$defs":{"A":{"type":"object","properties":{"a":{"$ref":"#/$defs/B"},"b":{"$ref":"#/$defs/A"}}},"B":{"properties":{"c":{"$ref":"#/$defs/A"}}}}}`},
		{"long ref loop", refChain(10000, true)},
		{"long ref chain", refChain(10000, false)},
		{"ref fan-out", fanOut()},
		{"100 000 properties", sfManyProps(100000, 100000)},
		{"depth bomb", nest(4000)},
		{"depth bomb beyond encoding/json", strings.Repeat(`[`, 200000) + strings.Repeat(`]`, 200000)},
		{"huge enum", hugeEnum()},
		{"null properties", `{"type":"object","properties":null,"required":null}`},
		{"number schema properties", `{"type":"object","properties":{"a":1,"b":-1e999,"c":null,"d":[{"$ref":"#"}]},"required":"a"}`},
		{"refs everywhere", `{"$ref":{"$ref":"#"},"$defs":[],"definitions":5}`},
		{"ref to root", `{"type":"object","properties":{"a":{"$ref":"#"}}}`},
		{"bad escapes in refs", `{"type":"object","properties":{"a":{"$ref":"#/$defs/%zz"},"b":{"$ref":"#/$defs/a/b"},"c":{"$ref":"#/$defs/"}},"$defs":{"":{"type":"string"}}}`},
		{"invalid UTF-8", "{\"type\":\"object\",\"properties\":{\"\xff\":{\"type\":\"string\",\"description\":\"\xfe\"}}}"},
		{"too large", `{"type":"object","description":"` + strings.Repeat("x", tryMaxSchema) + `"}`},
		{"long names", `{"type":"object","properties":{"` + strings.Repeat("é", 40000) + `":{"$ref":"#/$defs/` + strings.Repeat("é", 40000) + `"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			f := Form(json.RawMessage(tt.schema))
			// A form with every field filled in with something odd.
			form := url.Values{}
			for i := range tryMaxFields + tryMaxDepth + 1 {
				form.Set(fmt.Sprintf("f%d", i), `{"x":1}`)
			}
			_, back, _ := Args(json.RawMessage(tt.schema), form)
			// About 0.2 s for the largest (100 000 properties, 3 MB),
			// a few times that with the race detector, more on a loaded
			// machine; what this catches is work that grows faster than
			// the schema (quadratic would take hours).
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("Form and Args took %v; want well under 30 s", d)
			}
			if n, depth := sfCount(f.Fields, 1); n > tryMaxFields+tryMaxDepth || depth > tryMaxDepth {
				t.Errorf("Form made %d fields %d deep; want at most %d, %d deep", n, depth, tryMaxFields+tryMaxDepth, tryMaxDepth)
			}
			if got, want := sfShape(back), sfShape(f); !reflect.DeepEqual(got, want) {
				t.Errorf("Args form differs from Form's")
			}
			for _, n := range f.Notes {
				if len(n) > 2000 {
					t.Errorf("note of %d bytes; want short notes", len(n))
				}
			}
			var buf bytes.Buffer
			if err := views.TryItFields(f).Render(context.Background(), &buf); err != nil {
				t.Errorf("TryItFields: %v", err)
			}
		})
	}
}

func TestTryItFieldsEscapesAndLabels(t *testing.T) {
	const evilName = `<script>alert(1)</script>`
	const evilDesc = `"><img src=x onerror=alert(1)>`
	schema := json.RawMessage(`{"type":"object","properties":{
		` + sfQuote(evilName) + `:{"type":"string","description":` + sfQuote(evilDesc) + `,"default":` + sfQuote(evilDesc) + `},
		"mode":{"enum":[` + sfQuote(evilName) + `,1]},
		"opt":{"type":"boolean"},
		"must":{"type":"boolean","default":true},
		"data":{"type":"array","default":[` + sfQuote("</textarea><script>x</script>") + `]},
		"obj":{"type":"object","description":"An object","properties":{"inner":{"type":"integer"}},"required":["inner"]},
		"hidden\u202e":{"type":"string"}
	},"required":[` + sfQuote(evilName) + `,"must"]}`)
	f := Form(schema)
	f.Fields[0].Error = `bad <b>value</b>`
	var buf bytes.Buffer
	if err := views.TryItFields(f).Render(context.Background(), &buf); err != nil {
		t.Fatalf("TryItFields: %v", err)
	}
	out := buf.String()
	for _, bad := range []string{"<script", "<img", "<b>", "</textarea><script"} {
		if strings.Contains(out, bad) {
			t.Errorf("TryItFields output contains %q unescaped:\n%s", bad, out)
		}
	}
	doc := sfRenderHTML(t, out)
	if n := len(sfAll(doc, func(n *html.Node) bool { return n.Data == "script" || n.Data == "img" || n.Data == "b" })); n != 0 {
		t.Errorf("TryItFields made %d script/img/b elements; want 0", n)
	}

	// The hostile field: label for its opaque id, text escaped, required,
	// description and error linked.
	in := sfFind(t, doc, "try-f0")
	if in.Data != "input" || sfAttr(in, "type") != "text" || sfAttr(in, "name") != "f0" || sfAttr(in, "value") != evilDesc {
		t.Errorf("f0 = <%s type=%q name=%q value=%q>; want <input type=text name=f0 value=%q>", in.Data, sfAttr(in, "type"), sfAttr(in, "name"), sfAttr(in, "value"), evilDesc)
	}
	if got, want := sfAttr(in, "aria-invalid"), "true"; got != want {
		t.Errorf("f0 aria-invalid = %q; want %q", got, want)
	}
	if got, want := sfAttr(in, "aria-required"), "true"; got != want {
		t.Errorf("f0 aria-required = %q; want %q", got, want)
	}
	if got, want := sfAttr(in, "aria-describedby"), "try-f0-desc try-f0-error"; got != want {
		t.Errorf("f0 aria-describedby = %q; want %q", got, want)
	}
	label := sfOne(t, doc, func(n *html.Node) bool { return n.Data == "label" && sfAttr(n, "for") == "try-f0" })
	if got, want := sfText(label), evilName+" (required)"; got != want {
		t.Errorf("label of f0 = %q; want %q", got, want)
	}
	if got := sfText(sfFind(t, doc, "try-f0-desc")); got != evilDesc {
		t.Errorf("description of f0 = %q; want %q", got, evilDesc)
	}
	errEl := sfFind(t, doc, "try-f0-error")
	if sfAttr(errEl, "class") != "field-error" || sfText(errEl) != "bad <b>value</b>" || sfAttr(errEl, "data-testid") != "try-error-f0" {
		t.Errorf("error of f0 = class %q text %q testid %q; want field-error, the message, try-error-f0", sfAttr(errEl, "class"), sfText(errEl), sfAttr(errEl, "data-testid"))
	}

	// Enum: a select of option indexes, with a "not set" first.
	sel := sfFind(t, doc, "try-f1")
	if got, want := sfOptions(sel), []string{"=(not set)", "0=" + evilName, "1=1"}; sel.Data != "select" || !reflect.DeepEqual(got, want) {
		t.Errorf("f1 = <%s> options %q; want select %q", sel.Data, got, want)
	}
	// Optional boolean: not set / true / false.
	sel = sfFind(t, doc, "try-f2")
	if got, want := sfOptions(sel), []string{"=(not set)", "true=true", "false=false"}; sel.Data != "select" || !reflect.DeepEqual(got, want) {
		t.Errorf("f2 = <%s> options %q; want select %q", sel.Data, got, want)
	}
	// Required boolean: a checkbox, ticked by its default.
	box := sfFind(t, doc, "try-f3")
	if box.Data != "input" || sfAttr(box, "type") != "checkbox" || sfAttr(box, "value") != "true" || !sfHas(box, "checked") {
		t.Errorf("f3 = <%s type=%q value=%q checked=%v>; want a ticked checkbox of value true", box.Data, sfAttr(box, "type"), sfAttr(box, "value"), sfHas(box, "checked"))
	}
	// JSON: a textarea holding the text.
	ta := sfFind(t, doc, "try-f4")
	if want := "[\n  \"</textarea><script>x</script>\"\n]"; ta.Data != "textarea" || sfText(ta) != want {
		t.Errorf("f4 = <%s>%q; want textarea %q", ta.Data, sfText(ta), want)
	}
	// Object: a fieldset with a legend and its fields.
	fs := sfFind(t, doc, "try-f5")
	legend := sfOne(t, fs, func(n *html.Node) bool { return n.Data == "legend" })
	if fs.Data != "fieldset" || sfText(legend) != "obj" || sfFind(t, fs, "try-f6").Data != "input" || sfAttr(fs, "aria-describedby") != "try-f5-desc" {
		t.Errorf("f5 = <%s> legend %q; want a fieldset with legend obj holding f6", fs.Data, sfText(legend))
	}
	// Hidden characters in a name are shown.
	hidden := sfOne(t, doc, func(n *html.Node) bool { return n.Data == "label" && sfAttr(n, "for") == "try-f7" })
	if len(sfAll(hidden, func(n *html.Node) bool { return sfAttr(n, "data-testid") == "hidden-char" })) != 1 {
		t.Errorf("label of f7 = %q; want its right-to-left override marked", sfText(hidden))
	}
	// No id, name or data-testid carries a property name.
	for _, n := range sfAll(doc, func(*html.Node) bool { return true }) {
		for _, a := range n.Attr {
			if (a.Key == "id" || a.Key == "name" || a.Key == "for" || a.Key == "data-testid") && !strings.HasPrefix(a.Val, "try-") && !strings.HasPrefix(a.Val, "f") && a.Val != "hidden-char" {
				t.Errorf("<%s %s=%q>; want only opaque names", n.Data, a.Key, a.Val)
			}
		}
	}
}

func TestTryItFieldsNotes(t *testing.T) {
	f := Form(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"http://x/<y>"}}}`))
	doc := sfRender(t, f)
	notes := sfOne(t, doc, func(n *html.Node) bool { return sfAttr(n, "data-testid") == "try-notes" })
	if got, want := sfText(notes), `"a": has a $ref that is not to #/$defs or #/definitions ("http://x/<y>"): edited as JSON`; got != want {
		t.Errorf("notes = %q; want %q", got, want)
	}
	doc = sfRender(t, views.TryForm{})
	if n := len(sfAll(doc, func(n *html.Node) bool { return sfAttr(n, "data-testid") == "try-notes" })); n != 0 {
		t.Errorf("TryItFields(no notes) has %d notes lists; want 0", n)
	}
}

// --- helpers ---

func sfQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func sfOrEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func sfWalk(fields []views.TryField, fn func(views.TryField)) {
	for _, f := range fields {
		fn(f)
		sfWalk(f.Children, fn)
		for _, r := range f.Rows {
			sfWalk(r.Fields, fn)
		}
	}
}

func sfErrors(fields []views.TryField) map[string]string {
	m := map[string]string{}
	sfWalk(fields, func(f views.TryField) {
		if f.Error != "" {
			m[f.Name] = f.Error
		}
	})
	return m
}

func sfValues(fields []views.TryField) map[string]string {
	m := map[string]string{}
	sfWalk(fields, func(f views.TryField) {
		if f.Kind != "object" {
			m[f.Name] = f.Value
		}
	})
	return m
}

// sfShape is the form without values and errors.
func sfShape(f views.TryForm) views.TryForm {
	var strip func([]views.TryField) []views.TryField
	strip = func(fields []views.TryField) []views.TryField {
		if fields == nil {
			return nil
		}
		out := make([]views.TryField, len(fields))
		for i, fl := range fields {
			fl.Value, fl.Error = "", ""
			fl.Children = strip(fl.Children)
			out[i] = fl
		}
		return out
	}
	return views.TryForm{Fields: strip(f.Fields), Notes: f.Notes}
}

// sfCount counts fields and how deep they nest.
func sfCount(fields []views.TryField, depth int) (n, deepest int) {
	for _, f := range fields {
		n++
		deepest = max(deepest, depth)
		if len(f.Children) > 0 {
			cn, cd := sfCount(f.Children, depth+1)
			n += cn
			deepest = max(deepest, cd)
		}
	}
	return n, deepest
}

func sfByLabel(t *testing.T, f views.TryForm, label string) string {
	t.Helper()
	name := ""
	sfWalk(f.Fields, func(fl views.TryField) {
		if fl.Label == label {
			name = fl.Name
		}
	})
	if name == "" {
		t.Fatalf("no field labelled %q", label)
	}
	return name
}

// sfOption is the submitted value of the option with the text.
func sfOption(t *testing.T, f views.TryForm, label, option string) string {
	t.Helper()
	v := ""
	sfWalk(f.Fields, func(fl views.TryField) {
		if fl.Label == label {
			for i, o := range fl.Options {
				if o == option {
					v = fmt.Sprint(i)
				}
			}
		}
	})
	if v == "" {
		t.Fatalf("field %q has no option %q", label, option)
	}
	return v
}

func sfRender(t *testing.T, f views.TryForm) *html.Node {
	t.Helper()
	var buf bytes.Buffer
	if err := views.TryItFields(f).Render(context.Background(), &buf); err != nil {
		t.Fatalf("TryItFields: %v", err)
	}
	return sfRenderHTML(t, buf.String())
}

func sfRenderHTML(t *testing.T, s string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader("<!DOCTYPE html><html><body><form>" + s + "</form></body></html>"))
	if err != nil {
		t.Fatalf("parse HTML: %v", err)
	}
	return doc
}

func sfAll(root *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return out
}

func sfOne(t *testing.T, root *html.Node, match func(*html.Node) bool) *html.Node {
	t.Helper()
	all := sfAll(root, match)
	if len(all) != 1 {
		t.Fatalf("found %d matching elements; want 1", len(all))
	}
	return all[0]
}

func sfFind(t *testing.T, root *html.Node, id string) *html.Node {
	t.Helper()
	return sfOne(t, root, func(n *html.Node) bool { return sfAttr(n, "id") == id })
}

func sfHas(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func sfAttr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// sfText is an element's text with runs of white space made one space.
func sfText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	if n.Data == "textarea" {
		return b.String()
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// sfOptions lists a select's options as value=text.
func sfOptions(sel *html.Node) []string {
	var out []string
	for _, o := range sfAll(sel, func(n *html.Node) bool { return n.Data == "option" }) {
		out = append(out, sfAttr(o, "value")+"="+sfText(o))
	}
	return out
}
