package views

import "strings"

// TryField is one generated form field.
type TryField struct {
	Name        string // opaque form field name: "f0", "f1", … in traversal order (NEVER a property name)
	Label       string // the property name as the server sent it (escaped by templ when rendered)
	Kind        string // "string", "number", "integer", "boolean", "enum", "json", "object"
	Required    bool
	Description string
	Options     []string // enum values (as their JSON text for non-strings)
	// Value is the person's input, kept on errors; initially the default
	// from the schema's "default". For "enum" it is the index of the
	// chosen option in Options ("" for none), so that options whose text
	// looks the same stay apart; for "boolean" it is "true", "false" or "".
	Value    string
	Error    string     // per-field error message
	Children []TryField // for Kind "object": a nested fieldset
}

// TryForm is a whole generated form.
type TryForm struct {
	Fields []TryField
	Notes  []string // what was simplified, e.g. "nested deeper than 4 levels: edited as JSON"
}

// tryID is the element id of a field's input (or fieldset), derived from
// the opaque name only.
func tryID(f TryField) string { return "try-" + f.Name }

// tryDescribedBy lists the ids of the field's description and error.
func tryDescribedBy(f TryField) string {
	var ids []string
	if f.Description != "" {
		ids = append(ids, tryID(f)+"-desc")
	}
	if f.Error != "" {
		ids = append(ids, tryID(f)+"-error")
	}
	return strings.Join(ids, " ")
}

// tryPlaceholder is a hint about what a field takes.
func tryPlaceholder(f TryField) string {
	switch f.Kind {
	case "number":
		return "a number"
	case "integer":
		return "a whole number"
	case "json":
		return "JSON"
	}
	return ""
}

// tryClass marks an invalid input, like invalid does on the server form.
func tryClass(f TryField) string {
	if f.Error != "" {
		return "invalid"
	}
	return ""
}
