package tryit

import (
	"bytes"
	"encoding/json"
	"net/url"
	"reflect"
	"regexp"
	"testing"

	"github.com/switchboard-dev/switchboard/views"
)

// FuzzSchemaForm plans the Try it form of any input schema (a hostile
// server writes it) and reads any form back through it. Field names are
// only the opaque f0, f1, …; planning is deterministic; a refused form
// says at which field; accepted arguments are a JSON object.
// Seeds: testdata/fuzz/FuzzSchemaForm.
func FuzzSchemaForm(f *testing.F) {
	opaque := regexp.MustCompile(`^f[0-9]+$`)
	f.Fuzz(func(t *testing.T, schema []byte, body string) {
		form, err := url.ParseQuery(body)
		if err != nil {
			return // the handler refuses such a body before the schema is used
		}
		shown := Form(schema)
		if again := Form(schema); !reflect.DeepEqual(shown, again) {
			t.Fatalf("Form(%q) differs from one call to the next", schema)
		}
		var names func([]views.TryField)
		names = func(fields []views.TryField) {
			for _, fl := range fields {
				if !opaque.MatchString(fl.Name) {
					t.Fatalf("Form(%q) has the field name %q; want only f0, f1, …", schema, fl.Name)
				}
				names(fl.Children)
			}
		}
		names(shown.Fields)

		args, back, ok := Args(schema, form)
		if !ok {
			if args != nil {
				t.Fatalf("Args(%q, %q) refused the form but returned %v", schema, body, args)
			}
			if !hasFieldError(back.Fields) {
				t.Fatalf("Args(%q, %q) refused the form without saying at which field", schema, body)
			}
			return
		}
		if args == nil {
			t.Fatalf("Args(%q, %q) accepted the form with nil arguments", schema, body)
		}
		data, err := json.Marshal(args)
		if err != nil {
			t.Fatalf("Args(%q, %q) = arguments that are not JSON: %v", schema, body, err)
		}
		// A "json" field sends numbers exactly as typed, 1e700 included:
		// valid JSON, beyond float64.
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil || obj == nil {
			t.Fatalf("Args(%q, %q) = %s, not a JSON object", schema, body, data)
		}
	})
}

func hasFieldError(fields []views.TryField) bool {
	for _, fl := range fields {
		if fl.Error != "" || hasFieldError(fl.Children) {
			return true
		}
	}
	return false
}
