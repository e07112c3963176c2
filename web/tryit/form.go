// Package tryit builds the "Try it" form of a tool from its input
// schema, and turns a submitted form back into the tool's arguments.
package tryit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/views"
)

// The "Try it" form is generated from a tool's input schema, which an
// untrusted server sent. Form and Args share one traversal
// (planForm), so the opaque field names f0, f1, … always mean the same
// property in both.
//
// Traversal: the top-level schema must be an object schema (after
// following a local $ref); its properties become fields in the order the
// schema lists them (for a duplicated key, the last value at the place of
// the first, as encoding/json keeps the last). Fields are named in
// pre-order: an object field gets its name before its children.
//
// Kinds: "enum" (or "const") with at most tryMaxOptions values becomes a
// select whose options are indexes into the values, so that any JSON value
// comes back exactly; type string, number, integer and boolean get their
// own inputs; an object with properties becomes a fieldset; an array
// (type "array" with one items schema) of such scalars, or of objects,
// is edited as rows (see below); everything else (tuples, oneOf/anyOf/
// allOf/not/if, type lists, free-form objects, non-object schemas) is a
// "json" field whose text must parse as JSON. Check then validates the
// arguments against the whole schema (formats, patterns, ranges, …) and
// puts each error on the field it is about.
//
// Rows: the item's fields are planned once, as a template (counted once
// against tryMaxFields); a row's field is named after its template's with
// "-" and the row's number, and each row sends a marker, a hidden input
// named after the array field holding the row's number, so that rows
// come back in the order the page shows them, whatever numbers app.js
// gave them. A row of objects has one field per property; a property that
// is itself an object or an array is a "json" field there. A row with
// nothing filled in is left out; an array with no rows filled in is left
// out, or [] if it is required. At most tryMaxRows rows are read.
//
// Bounds (each deeper or bigger thing becomes a "json" field, and the form
// says so in a note): fields nest at most tryMaxDepth levels; a $ref is
// followed only to #/$defs/NAME or #/definitions/NAME, never to a
// reference already on the current path, and at most tryMaxRefHops times
// in a row; at most tryMaxFields fields are generated, and the remaining
// properties of each object being built then go into one extra "json"
// field, "other arguments", whose JSON object is merged into that object
// (so a form has at most tryMaxFields + tryMaxDepth fields); each value
// is at most tryMaxValue bytes; a schema over tryMaxSchema bytes is not
// looked into at all.
const (
	tryMaxDepth   = 4
	tryMaxFields  = 200
	tryMaxOptions = 500
	tryMaxValue   = 64 << 10
	tryMaxSchema  = 4 << 20
	tryMaxRefHops = 32
	tryMaxRows    = 100

	// tryRestLabel is the label of the field holding the properties
	// beyond the field limit.
	tryRestLabel = "other arguments"
	// tryWholeLabel is the label of the field holding all the arguments
	// when the schema cannot be turned into fields.
	tryWholeLabel = "arguments"
	// tryRestNamesShown is how many of the remaining properties the
	// "other arguments" field names.
	tryRestNamesShown = 20
)

// Field kinds (views.TryField.Kind).
const (
	kindString  = "string"
	kindNumber  = "number"
	kindInteger = "integer"
	kindBoolean = "boolean"
	kindEnum    = "enum"
	kindJSON    = "json"
	kindObject  = "object"
	kindArray   = "array"
)

// Form builds the form for an input schema.
func Form(schema json.RawMessage) views.TryForm {
	p := planForm(schema)
	return views.TryForm{Fields: formFields(p.fields), Notes: p.notes}
}

// Args turns a submitted form back into tool arguments, following the
// same traversal as Form. It returns the form again with the
// person's values and per-field errors, and ok=false if any field is wrong
// (args is nil then). Only the generated field names are read from form.
func Args(schema json.RawMessage, form url.Values) (args map[string]any, f views.TryForm, ok bool) {
	p := planForm(schema)
	args, ok = p.fill(form, nil)
	return args, views.TryForm{Fields: formFields(p.fields), Notes: p.notes}, ok
}

// Check is Args, then a check of the arguments against the schema: each
// error goes to the field it is about, and those about no field are
// returned as problems. ok is false if anything is wrong.
func Check(schema json.RawMessage, form url.Values) (args map[string]any, f views.TryForm, problems []string, ok bool) {
	p := planForm(schema)
	locs := map[string]*tryNode{}
	args, ok = p.fill(form, locs)
	if ok {
		var note string
		problems, note = validate(schema, args, locs)
		if note != "" {
			p.notes = append(p.notes, note)
		}
		ok = len(problems) == 0 && !anyError(p.fields)
		if !ok {
			args = nil
		}
	}
	return args, views.TryForm{Fields: formFields(p.fields), Notes: p.notes}, problems, ok
}

// fill reads the form into the arguments. locs, if not nil, gets the
// node of each JSON pointer a field's value is at.
func (p formPlan) fill(form url.Values, locs map[string]*tryNode) (args map[string]any, ok bool) {
	ok = true
	if len(p.fields) == 1 && p.fields[0].role == roleWhole {
		n := p.fields[0]
		raw := formValue(form, n.field.Name)
		n.field.Value = raw
		args = map[string]any{}
		if locs != nil {
			locs[""] = n
		}
		if strings.TrimSpace(raw) != "" {
			v, msg := parseTryValue(n, raw)
			if m, isObj := v.(map[string]any); msg == "" && isObj {
				args = m
			} else {
				if msg == "" {
					msg = "must be a JSON object"
				}
				n.field.Error = msg
				ok = false
			}
		}
	} else {
		args = map[string]any{}
		ok = fillArgs(p.fields, form, args, "", locs)
	}
	if !ok {
		args = nil
	}
	return args, ok
}

// fieldRole says how a field's value goes into the arguments.
type fieldRole int

const (
	roleProperty fieldRole = iota // the value of one property
	roleRest                      // a JSON object merged into the enclosing object
	roleWhole                     // the JSON object that is all the arguments
)

// tryNode is one planned field: the field as shown, plus what is needed
// to turn its input back into a value.
type tryNode struct {
	field    views.TryField // Children is filled from children by formFields
	prop     string         // the property name, for roleProperty
	role     fieldRole
	enum     []any // for kindEnum: the values, parallel to field.Options
	children []*tryNode
	item     []*tryNode   // for kindArray: the template of a row's fields
	rows     [][]*tryNode // for kindArray: the rows shown
}

type formPlan struct {
	fields []*tryNode
	notes  []string
}

// planForm is the traversal that Form and Args share.
func planForm(schema json.RawMessage) formPlan {
	b := &planner{}
	if len(schema) > tryMaxSchema {
		b.note(fmt.Sprintf("the input schema is too large for a form (%d KiB): arguments edited as JSON", len(schema)>>10))
		return b.whole(nil)
	}
	root, err := parseOrdered(schema)
	if err != nil {
		b.note("the input schema is not valid JSON: arguments edited as JSON")
		return b.whole(nil)
	}
	b.root, _ = root.(*jsonObject)
	chain, path, problem := b.resolve(root, nil)
	if problem != "" {
		b.note("the input schema " + problem + ": arguments edited as JSON")
		return b.whole(chain)
	}
	s := chain[len(chain)-1]
	obj, isObj := s.(*jsonObject)
	if !isObj {
		b.note("the input schema is not an object schema: arguments edited as JSON")
		return b.whole(chain)
	}
	kind, why := schemaKind(obj)
	if kind == kindObject {
		var def *jsonObject
		if d, found := lookup(chain, "default"); found {
			def, _ = d.(*jsonObject)
		}
		fields := b.properties(obj, 1, path, def, "")
		return formPlan{fields: fields, notes: b.notes}
	}
	if why == "" {
		why = topLevelWhy(obj)
	}
	if why == "" {
		// {"type":"object"}, perhaps with empty properties: a tool
		// without arguments.
		return formPlan{}
	}
	b.note("the input schema " + why + ": arguments edited as JSON")
	return b.whole(chain)
}

// topLevelWhy says why a top-level schema that is not an object with
// properties cannot be a form ("" if it takes no arguments).
func topLevelWhy(s *jsonObject) string {
	for _, k := range []string{"oneOf", "anyOf", "allOf", "not", "if"} {
		if hasKey(s, k) {
			return "uses " + k
		}
	}
	switch {
	case hasKey(s, "enum") || hasKey(s, "const"):
		return "is an enum, not an object schema"
	case !isType(s, "object"):
		return "is not an object schema"
	case hasKey(s, "patternProperties"):
		return "has no fixed properties"
	}
	if ap, has := s.get("additionalProperties"); has && ap != false {
		return "has no fixed properties"
	}
	return ""
}

// planner holds the state of one traversal.
type planner struct {
	root    *jsonObject // for $ref lookups; nil if the schema is not an object
	named   int         // fields named so far (f0, f1, …)
	counted int         // fields counted against tryMaxFields
	notes   []string
	inRow   bool // planning a row's fields: no fieldsets or rows inside
}

func (b *planner) note(s string) { b.notes = append(b.notes, s) }

func (b *planner) name() string {
	n := "f" + strconv.Itoa(b.named)
	b.named++
	return n
}

// whole is the plan of a single "json" field for all the arguments.
func (b *planner) whole(chain []any) formPlan {
	n := &tryNode{role: roleWhole, field: views.TryField{
		Name:        b.name(),
		Label:       tryWholeLabel,
		Kind:        kindJSON,
		Description: "All the arguments, as one JSON object.",
	}}
	if d, found := lookup(chain, "description"); found {
		if s, isStr := d.(string); isStr && s != "" {
			n.field.Description = s
		}
	}
	if d, found := lookup(chain, "default"); found {
		if _, isObj := d.(*jsonObject); isObj {
			b.setDefault(n, d, "the input schema")
		}
	}
	return formPlan{fields: []*tryNode{n}, notes: b.notes}
}

// properties plans the fields of an object schema's properties. depth is
// the depth of these fields (1 at the top), path the $refs followed to get
// here, def the enclosing default object (if any) and where the quoted
// names of the enclosing properties, for notes.
func (b *planner) properties(obj *jsonObject, depth int, path []string, def *jsonObject, where string) []*tryNode {
	props, _ := obj.val("properties").(*jsonObject)
	if props == nil {
		return nil
	}
	required := map[string]bool{}
	if list, isList := obj.val("required").([]any); isList {
		for _, r := range list {
			if s, isStr := r.(string); isStr {
				required[s] = true
			}
		}
	}
	var nodes []*tryNode
	for i, key := range props.keys {
		if b.counted >= tryMaxFields {
			nodes = append(nodes, b.rest(props.keys[i:], required, where))
			break
		}
		var parentDef any
		if def != nil {
			parentDef, _ = def.get(key)
		}
		nodes = append(nodes, b.property(key, props.vals[i], required[key], depth, path, parentDef, where))
	}
	return nodes
}

// rest is the "other arguments" field for the properties beyond the field
// limit.
func (b *planner) rest(keys []string, required map[string]bool, where string) *tryNode {
	var req []string
	for _, k := range keys {
		if required[k] {
			req = append(req, k)
		}
	}
	desc := "A JSON object with any of the remaining properties: " + quoteList(keys)
	if len(req) > 0 {
		desc += "; required among them: " + quoteList(req)
	}
	what := "properties"
	if len(keys) == 1 {
		what = "property"
	}
	b.note(fmt.Sprintf("%s%d %s beyond the limit of %d fields: give them in %q as a JSON object", inWhere(where), len(keys), what, tryMaxFields, tryRestLabel))
	return &tryNode{role: roleRest, field: views.TryField{
		Name:        b.name(),
		Label:       tryRestLabel,
		Kind:        kindJSON,
		Required:    len(req) > 0,
		Description: desc + ".",
	}}
}

// property plans the field for one property.
func (b *planner) property(key string, s any, required bool, depth int, path []string, parentDef any, where string) *tryNode {
	n := &tryNode{prop: key, field: views.TryField{
		Name:     b.name(),
		Label:    key,
		Required: required,
		Kind:     kindJSON,
	}}
	b.counted++
	here := where + quoteName(key)

	chain, path, problem := b.resolve(s, path)
	if d, found := lookup(chain, "description"); found {
		n.field.Description, _ = d.(string)
	}
	if n.field.Description == "" {
		if d, found := lookup(chain, "title"); found {
			n.field.Description, _ = d.(string)
		}
	}
	def, hasDef := lookup(chain, "default")
	if !hasDef && parentDef != nil {
		def, hasDef = parentDef, true
	}
	if problem != "" {
		b.note(here + ": " + problem + ": edited as JSON")
		if hasDef {
			b.setDefault(n, def, here)
		}
		return n
	}

	s = chain[len(chain)-1]
	obj, _ := s.(*jsonObject)
	kind, why := kindJSON, ""
	switch s.(type) {
	case *jsonObject:
		kind, why = schemaKind(obj)
	case bool:
		// true allows anything, false nothing: JSON either way.
	default:
		why = "has a schema that is not an object"
	}
	switch {
	case kindObject == kind && b.inRow:
		kind, why = kindJSON, "is an object inside a row"
	case kind == kindObject && depth >= tryMaxDepth:
		kind, why = kindJSON, fmt.Sprintf("nested deeper than %d levels", tryMaxDepth)
	}
	if kind == kindJSON && why == "" && obj != nil && !b.inRow && depth < tryMaxDepth {
		if b.array(n, obj, path, here) {
			if d, ok := def.([]any); hasDef && ok {
				b.defaultRows(n, d, here)
			} else if required {
				n.rows = [][]*tryNode{cloneRow(n.item, "0")}
			}
			return n
		}
	}
	if why != "" {
		b.note(here + ": " + why + ": edited as JSON")
	}
	n.field.Kind = kind
	switch kind {
	case kindEnum:
		n.enum = enumValues(obj)
		n.field.Options = enumOptions(n.enum)
	case kindObject:
		defObj, _ := def.(*jsonObject)
		n.children = b.properties(obj, depth+1, path, defObj, here+" › ")
		return n
	}
	if hasDef {
		b.setDefault(n, def, here)
	}
	return n
}

// array makes n an array edited as rows, if obj is an array of one items
// schema whose items are scalars or objects with properties.
func (b *planner) array(n *tryNode, obj *jsonObject, path []string, here string) bool {
	if !isType(obj, "array") || hasKey(obj, "prefixItems") {
		return false
	}
	for _, k := range []string{"oneOf", "anyOf", "allOf", "not", "if", "enum", "const"} {
		if hasKey(obj, k) {
			return false
		}
	}
	items, has := obj.get("items")
	if !has {
		return false
	}
	chain, _, problem := b.resolve(items, path)
	item, isObj := chain[len(chain)-1].(*jsonObject)
	if problem != "" || !isObj {
		return false
	}
	kind, _ := schemaKind(item)
	switch kind {
	case kindJSON:
		return false
	case kindObject:
		b.inRow = true
		n.item = b.properties(item, tryMaxDepth, path, nil, here+" › ")
		b.inRow = false
		if len(n.item) == 0 {
			return false
		}
	default:
		c := &tryNode{field: views.TryField{Name: b.name(), Label: "item", Kind: kind}}
		b.counted++
		if d, found := lookup(chain, "description"); found {
			c.field.Description, _ = d.(string)
		}
		if kind == kindEnum {
			c.enum = enumValues(item)
			c.field.Options = enumOptions(c.enum)
		}
		n.item = []*tryNode{c}
	}
	n.field.Kind = kindArray
	return true
}

// defaultRows shows an array's default as its rows.
func (b *planner) defaultRows(n *tryNode, def []any, where string) {
	if len(def) > tryMaxRows {
		b.note(fmt.Sprintf("%s: the default has more than %d items: not filled in", where, tryMaxRows))
		return
	}
	for i, d := range def {
		row := cloneRow(n.item, strconv.Itoa(i))
		if len(row) == 1 && row[0].prop == "" {
			b.setDefault(row[0], d, where)
		} else if o, isObj := d.(*jsonObject); isObj {
			for _, c := range row {
				if v, has := o.get(c.prop); has {
					b.setDefault(c, v, where+" › "+quoteName(c.prop))
				}
			}
		}
		n.rows = append(n.rows, row)
	}
}

// cloneRow makes a row's fields from an array's template, named for row
// index.
func cloneRow(item []*tryNode, index string) []*tryNode {
	row := make([]*tryNode, len(item))
	for i, t := range item {
		c := *t
		c.field.Name = t.field.Name + "-" + index
		row[i] = &c
	}
	return row
}

// setDefault shows a schema default as the field's initial value, if it
// suits the field.
func (b *planner) setDefault(n *tryNode, def any, where string) {
	var v string
	switch n.field.Kind {
	case kindString:
		v, _ = def.(string)
	case kindNumber:
		if num, isNum := def.(json.Number); isNum {
			v = num.String()
		}
	case kindInteger:
		if num, isNum := def.(json.Number); isNum {
			if _, msg := parseInteger(num.String()); msg == "" {
				v = num.String()
			}
		}
	case kindBoolean:
		if t, isBool := def.(bool); isBool {
			v = strconv.FormatBool(t)
		}
	case kindEnum:
		want := jsonText(def, false)
		for i, e := range n.enum {
			if jsonText(e, false) == want {
				v = strconv.Itoa(i)
				break
			}
		}
	case kindJSON:
		v = jsonText(def, true)
	}
	if len(v) > tryMaxValue {
		b.note(fmt.Sprintf("%s: the default is longer than %d KiB: not filled in", where, tryMaxValue>>10))
		return
	}
	n.field.Value = v
}

// resolve follows $refs from s. It returns the schemas passed through (s
// first, the schema finally used last; keywords are looked up in this
// order, so a description next to a $ref wins), the refs on the path
// including the new ones, and why it stopped early, if it did.
func (b *planner) resolve(s any, path []string) (chain []any, newPath []string, problem string) {
	chain = []any{s}
	for hops := 0; ; hops++ {
		obj, isObj := s.(*jsonObject)
		if !isObj {
			return chain, path, ""
		}
		r, has := obj.get("$ref")
		if !has {
			return chain, path, ""
		}
		ref, isStr := r.(string)
		if !isStr {
			return chain, path, "has a $ref that is not a string"
		}
		if hops >= tryMaxRefHops {
			return chain, path, fmt.Sprintf("has more than %d $refs in a row", tryMaxRefHops)
		}
		for _, p := range path {
			if p == ref {
				return chain, path, "refers to itself (" + quoteName(ref) + ")"
			}
		}
		section, name, isLocal := localDef(ref)
		if !isLocal {
			return chain, path, "has a $ref that is not to #/$defs or #/definitions (" + quoteName(ref) + ")"
		}
		var target any
		found := false
		if b.root != nil {
			if defs, isObj := b.root.val(section).(*jsonObject); isObj {
				target, found = defs.get(name)
			}
		}
		if !found {
			return chain, path, "refers to a missing definition (" + quoteName(ref) + ")"
		}
		path = append(path[:len(path):len(path)], ref)
		chain = append(chain, target)
		s = target
	}
}

// localDef splits a $ref of the form #/$defs/NAME or #/definitions/NAME
// (a JSON pointer in a URI fragment).
func localDef(ref string) (section, name string, ok bool) {
	rest, isLocal := strings.CutPrefix(ref, "#/")
	if !isLocal {
		return "", "", false
	}
	section, name, found := strings.Cut(rest, "/")
	if !found || (section != "$defs" && section != "definitions") || strings.Contains(name, "/") {
		return "", "", false
	}
	name, err := url.PathUnescape(name)
	if err != nil {
		return "", "", false
	}
	name = strings.ReplaceAll(name, "~1", "/")
	name = strings.ReplaceAll(name, "~0", "~")
	return section, name, true
}

// schemaKind is the kind of field for an object schema, and why it is
// simplified to "json" when that is worth a note.
func schemaKind(s *jsonObject) (kind, why string) {
	for _, k := range []string{"oneOf", "anyOf", "allOf", "not", "if"} {
		if hasKey(s, k) {
			return kindJSON, ""
		}
	}
	if hasKey(s, "const") && !hasKey(s, "enum") {
		return kindEnum, ""
	}
	if e, has := s.get("enum"); has {
		list, isList := e.([]any)
		switch {
		case !isList || len(list) == 0:
			return kindJSON, ""
		case len(list) > tryMaxOptions:
			return kindJSON, fmt.Sprintf("has %d enum values, more than %d", len(list), tryMaxOptions)
		}
		return kindEnum, ""
	}
	t, hasType := s.get("type")
	if !hasType {
		if _, isObj := s.val("properties").(*jsonObject); isObj {
			t = "object"
		}
	}
	switch t {
	case "string":
		return kindString, ""
	case "number":
		return kindNumber, ""
	case "integer":
		return kindInteger, ""
	case "boolean":
		return kindBoolean, ""
	case "object":
		props, isObj := s.val("properties").(*jsonObject)
		if hasKey(s, "properties") && !isObj {
			return kindJSON, "has properties that are not an object"
		}
		if isObj && len(props.keys) > 0 {
			return kindObject, ""
		}
	}
	return kindJSON, ""
}

// enumValues are the values a field of kind enum offers.
func enumValues(s *jsonObject) []any {
	if list, isList := s.val("enum").([]any); isList {
		return list
	}
	return []any{s.val("const")}
}

// enumOptions are the option texts: strings as they are, other values as
// JSON; all as JSON if that is needed to tell them apart.
func enumOptions(values []any) []string {
	opts := make([]string, len(values))
	seen := make(map[string]bool, len(values))
	clash := false
	for i, v := range values {
		if s, isStr := v.(string); isStr {
			opts[i] = s
		} else {
			opts[i] = jsonText(v, false)
		}
		clash = clash || seen[opts[i]]
		seen[opts[i]] = true
	}
	if clash {
		for i, v := range values {
			opts[i] = jsonText(v, false)
		}
	}
	return opts
}

// formFields turns planned nodes into view fields.
func formFields(nodes []*tryNode) []views.TryField {
	if len(nodes) == 0 {
		return nil
	}
	out := make([]views.TryField, len(nodes))
	for i, n := range nodes {
		out[i] = n.field
		out[i].Children = formFields(n.children)
		if n.field.Kind == kindArray {
			out[i].Item = formFields(cloneRow(n.item, views.RowMark))
			out[i].Rows = make([]views.TryRow, len(n.rows))
			for r, row := range n.rows {
				out[i].Rows[r] = views.TryRow{Index: strconv.Itoa(r), Fields: formFields(row)}
			}
		}
	}
	return out
}

// anyError reports whether a field under nodes has an error.
func anyError(nodes []*tryNode) bool {
	for _, n := range nodes {
		if n.field.Error != "" || anyError(n.children) {
			return true
		}
		for _, row := range n.rows {
			if anyError(row) {
				return true
			}
		}
	}
	return false
}

// fillArgs reads the fields of one object, at JSON pointer at, into
// dst, recording the person's input and any error on each node, and in
// locs (if not nil) where each value went. It reports whether all were
// valid.
func fillArgs(nodes []*tryNode, form url.Values, dst map[string]any, at string, locs map[string]*tryNode) bool {
	ok := true
	for _, n := range nodes {
		here := at + "/" + pointerToken(n.prop)
		if locs != nil && n.role == roleProperty {
			locs[here] = n
		}
		switch n.field.Kind {
		case kindObject:
			if !n.field.Required && !anyGiven(n.children, form) {
				continue
			}
			sub := map[string]any{}
			ok = fillArgs(n.children, form, sub, here, locs) && ok
			dst[n.prop] = sub
			continue
		case kindArray:
			ok = fillRows(n, form, dst, here, locs) && ok
			continue
		}
		raw := formValue(form, n.field.Name)
		n.field.Value = raw
		if !given(n, raw) {
			if n.field.Required && n.field.Kind != kindBoolean {
				n.field.Error = "required"
				ok = false
			} else if n.field.Required {
				dst[n.prop] = false // an unticked checkbox
			}
			continue
		}
		v, msg := parseTryValue(n, raw)
		if msg == "" && n.role == roleRest {
			msg = mergeRest(dst, v)
		}
		if msg != "" {
			n.field.Error = msg
			ok = false
			continue
		}
		if n.role == roleProperty {
			dst[n.prop] = v
		} else if m, isObj := v.(map[string]any); isObj && locs != nil {
			for k := range m {
				locs[at+"/"+pointerToken(k)] = n
			}
		}
	}
	return ok
}

// fillRows reads an array's rows (see the package comment) into
// dst[n.prop].
func fillRows(n *tryNode, form url.Values, dst map[string]any, at string, locs map[string]*tryNode) bool {
	marks := form[n.field.Name]
	ok := true
	if len(marks) > tryMaxRows {
		n.field.Error = fmt.Sprintf("at most %d rows", tryMaxRows)
		marks, ok = marks[:tryMaxRows], false
	}
	n.rows = nil
	values := []any{}
	seen := map[string]bool{}
	for _, m := range marks {
		if seen[m] || !rowMark.MatchString(m) {
			continue
		}
		seen[m] = true
		row := cloneRow(n.item, m)
		shown := strconv.Itoa(len(n.rows))
		n.rows = append(n.rows, row)
		given := anyGiven(row, form)
		if given {
			sub := map[string]any{}
			elem := at + "/" + strconv.Itoa(len(values))
			if len(row) == 1 && row[0].prop == "" {
				rowOK := fillArgs(row, form, sub, "", nil)
				if locs != nil {
					locs[elem] = row[0]
				}
				ok = rowOK && ok
				values = append(values, sub[""])
			} else {
				if locs != nil {
					locs[elem] = n
				}
				ok = fillArgs(row, form, sub, elem, locs) && ok
				values = append(values, sub)
			}
		}
		for _, c := range row {
			if !given {
				c.field.Value = formValue(form, c.field.Name)
			}
			c.field.Name = strings.TrimSuffix(c.field.Name, m) + shown
		}
	}
	if len(values) > 0 || n.field.Required {
		dst[n.prop] = values
	}
	return ok
}

// rowMark is the syntax of a row's number.
var rowMark = regexp.MustCompile(`^[0-9]{1,6}$`)

// pointerToken escapes a property name for a JSON pointer.
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// mergeRest merges the "other arguments" object into dst.
func mergeRest(dst map[string]any, v any) string {
	m, isObj := v.(map[string]any)
	if !isObj {
		return "must be a JSON object"
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if _, taken := dst[k]; taken {
			return "sets " + quoteName(k) + ", which has its own field"
		}
	}
	for k, val := range m {
		dst[k] = val
	}
	return ""
}

// given reports whether the person filled in a field: typed anything
// other than spaces into a number, anything into a string, chose an
// option, ticked a box or typed JSON.
func given(n *tryNode, raw string) bool {
	switch n.field.Kind {
	case kindString:
		return raw != ""
	case kindBoolean:
		if n.field.Required {
			return raw != "" && raw != "false"
		}
		return raw != ""
	}
	return strings.TrimSpace(raw) != ""
}

// anyGiven reports whether any field under nodes was filled in, which is
// what makes an optional object part of the arguments.
func anyGiven(nodes []*tryNode, form url.Values) bool {
	for _, n := range nodes {
		switch n.field.Kind {
		case kindObject:
			if anyGiven(n.children, form) {
				return true
			}
			continue
		case kindArray:
			for _, m := range form[n.field.Name] {
				if rowMark.MatchString(m) && anyGiven(cloneRow(n.item, m), form) {
					return true
				}
			}
			continue
		}
		if given(n, formValue(form, n.field.Name)) {
			return true
		}
	}
	return false
}

// formValue is the first value submitted under name.
func formValue(form url.Values, name string) string {
	if vs := form[name]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// parseTryValue converts one field's non-empty input to its JSON value,
// or says what is wrong with it.
func parseTryValue(n *tryNode, raw string) (any, string) {
	if len(raw) > tryMaxValue {
		return nil, fmt.Sprintf("too long: at most %d KiB", tryMaxValue>>10)
	}
	switch n.field.Kind {
	case kindString:
		if !utf8.ValidString(raw) {
			return nil, "not valid text (UTF-8)"
		}
		return raw, ""
	case kindNumber:
		return parseNumber(strings.TrimSpace(raw))
	case kindInteger:
		return parseInteger(strings.TrimSpace(raw))
	case kindBoolean:
		switch raw {
		case "true":
			return true, ""
		case "false":
			return false, ""
		}
		return nil, "choose true or false"
	case kindEnum:
		i, err := strconv.Atoi(raw)
		if err != nil || i < 0 || i >= len(n.enum) {
			return nil, "choose one of the options"
		}
		return plainValue(n.enum[i]), ""
	}
	return parseJSONText(raw)
}

// jsonNumber is the syntax of a JSON number.
var jsonNumber = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`)

func parseNumber(s string) (any, string) {
	if !jsonNumber.MatchString(s) {
		return nil, "must be a number"
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, "must be a number within ±1.8e308"
	}
	return f, ""
}

func parseInteger(s string) (any, string) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, ""
	} else if errors.Is(err, strconv.ErrRange) {
		return nil, "must be a whole number within ±9223372036854775807"
	}
	if !jsonNumber.MatchString(s) {
		return nil, "must be a whole number"
	}
	// 2.0 and 1e3 are whole numbers too, as long as a float64 holds them
	// exactly.
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return nil, "must be a whole number"
	}
	return int64(f), ""
}

// parseJSONText parses the text of a "json" field. Numbers stay
// json.Number, so that they are sent exactly as typed.
func parseJSONText(s string) (any, string) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	if err == nil {
		if _, err2 := dec.Token(); err2 != io.EOF {
			return nil, "must be a single JSON value"
		}
		return v, ""
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return nil, fmt.Sprintf("not valid JSON (at character %d)", syn.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, "not valid JSON (it ends too early)"
	}
	return nil, "not valid JSON"
}

// --- an order-keeping JSON tree for schemas ---

// jsonObject is a JSON object that remembers the order of its keys.
type jsonObject struct {
	keys  []string
	vals  []any          // parallel to keys
	index map[string]int // key → place, for objects of more than jsonObjectIndexed keys
}

// jsonObjectIndexed is the size from which an object keeps an index of
// its keys; smaller ones are searched.
const jsonObjectIndexed = 8

func (o *jsonObject) find(key string) int {
	if o.index != nil {
		if i, ok := o.index[key]; ok {
			return i
		}
		return -1
	}
	for i, k := range o.keys {
		if k == key {
			return i
		}
	}
	return -1
}

func (o *jsonObject) get(key string) (any, bool) {
	if i := o.find(key); i >= 0 {
		return o.vals[i], true
	}
	return nil, false
}

// val is the value of key, nil if there is none.
func (o *jsonObject) val(key string) any {
	v, _ := o.get(key)
	return v
}

// set sets key, keeping the place of a key already there.
func (o *jsonObject) set(key string, v any) {
	if i := o.find(key); i >= 0 {
		o.vals[i] = v
		return
	}
	o.keys = append(o.keys, key)
	o.vals = append(o.vals, v)
	switch {
	case o.index != nil:
		o.index[key] = len(o.keys) - 1
	case len(o.keys) > jsonObjectIndexed:
		o.index = make(map[string]int, 2*len(o.keys))
		for i, k := range o.keys {
			o.index[k] = i
		}
	}
}

func hasKey(o *jsonObject, key string) bool { return o.find(key) >= 0 }

func isType(o *jsonObject, t string) bool {
	v, ok := o.get("type")
	return ok && v == t
}

// lookup finds a keyword in the first schema of chain that has it.
func lookup(chain []any, key string) (any, bool) {
	for _, s := range chain {
		if o, isObj := s.(*jsonObject); isObj {
			if v, ok := o.get(key); ok {
				return v, true
			}
		}
	}
	return nil, false
}

// parseOrdered parses JSON into nil, bool, json.Number, string, []any and
// *jsonObject. json.Valid checks the syntax first and bounds the nesting
// (encoding/json refuses more than 10000 levels), which bounds the
// recursion of the reader, and lets it trust the syntax.
func parseOrdered(data []byte) (any, error) {
	if !json.Valid(data) {
		return nil, errors.New("invalid JSON")
	}
	r := &orderedReader{data: data}
	return r.value()
}

// orderedReader reads JSON that json.Valid accepted. (json.Decoder.Token
// keeps the order too, but is ten times slower.)
type orderedReader struct {
	data []byte
	pos  int
}

func (r *orderedReader) space() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

func (r *orderedReader) value() (any, error) {
	r.space()
	if r.pos >= len(r.data) {
		return nil, io.ErrUnexpectedEOF
	}
	switch c := r.data[r.pos]; c {
	case '{':
		r.pos++
		o := &jsonObject{}
		for {
			r.space()
			if r.data[r.pos] == '}' {
				r.pos++
				return o, nil
			}
			if r.data[r.pos] == ',' {
				r.pos++
				r.space()
			}
			key, err := r.str()
			if err != nil {
				return nil, err
			}
			r.space()
			r.pos++ // ':'
			v, err := r.value()
			if err != nil {
				return nil, err
			}
			o.set(key, v)
		}
	case '[':
		r.pos++
		list := []any{}
		for {
			r.space()
			if r.data[r.pos] == ']' {
				r.pos++
				return list, nil
			}
			if r.data[r.pos] == ',' {
				r.pos++
			}
			v, err := r.value()
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
	case '"':
		return r.str()
	case 't':
		r.pos += len("true")
		return true, nil
	case 'f':
		r.pos += len("false")
		return false, nil
	case 'n':
		r.pos += len("null")
		return nil, nil
	}
	start := r.pos
	for r.pos < len(r.data) && strings.IndexByte("+-.0123456789eE", r.data[r.pos]) >= 0 {
		r.pos++
	}
	return json.Number(r.data[start:r.pos]), nil
}

// str reads a string; plain ones are taken as they are, the rest are
// decoded by encoding/json (escapes, invalid UTF-8).
func (r *orderedReader) str() (string, error) {
	start := r.pos
	r.pos++ // '"'
	plain := true
	for r.data[r.pos] != '"' {
		if r.data[r.pos] == '\\' {
			plain = false
			r.pos++
		} else if r.data[r.pos] >= utf8.RuneSelf {
			plain = false
		}
		r.pos++
	}
	r.pos++
	raw := r.data[start:r.pos]
	if plain {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// plainValue converts a parsed schema value to what encoding/json makes
// of JSON: map[string]any for objects.
func plainValue(v any) any {
	switch v := v.(type) {
	case *jsonObject:
		m := make(map[string]any, len(v.keys))
		for i, k := range v.keys {
			m[k] = plainValue(v.vals[i])
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plainValue(e)
		}
		return out
	}
	return v
}

// jsonText is the JSON text of a parsed schema value, keys in their
// order and without HTML escaping (templ escapes when rendering),
// indented if indent.
func jsonText(v any, indent bool) string {
	var b bytes.Buffer
	writeJSON(&b, v)
	if indent {
		if _, isScalar := v.(string); !isScalar {
			var out bytes.Buffer
			if json.Indent(&out, b.Bytes(), "", "  ") == nil {
				return out.String()
			}
		}
	}
	return b.String()
}

func writeJSON(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		b.WriteString(v.String())
	case string:
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v) // a string always encodes
		b.Truncate(b.Len() - 1)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case *jsonObject:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, k)
			b.WriteByte(':')
			writeJSON(b, v.vals[i])
		}
		b.WriteByte('}')
	}
}

// --- notes ---

// quoteName quotes a name from the schema for a note or message, with
// invisible characters escaped, cut at 80 bytes.
func quoteName(s string) string {
	const max = 80
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}

// quoteList names the first tryRestNamesShown of names.
func quoteList(names []string) string {
	shown := names
	if len(shown) > tryRestNamesShown {
		shown = shown[:tryRestNamesShown]
	}
	q := make([]string, len(shown))
	for i, n := range shown {
		q[i] = quoteName(n)
	}
	s := strings.Join(q, ", ")
	if more := len(names) - len(shown); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// inWhere prefixes a note about an object's properties with the object.
func inWhere(where string) string {
	if where == "" {
		return ""
	}
	return strings.TrimSuffix(where, " › ") + ": "
}
