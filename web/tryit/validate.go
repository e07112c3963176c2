package tryit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// maxProblem caps one validation message (it may quote the schema).
const maxProblem = 300

// refuseLoads is the loader of schema validation: a server's schema may
// refer only within itself, never to a file or a URL.
type refuseLoads struct{}

func (refuseLoads) Load(url string) (any, error) {
	return nil, fmt.Errorf("refers to %s, which is not loaded", quoteName(url))
}

// validate checks args against the schema. Each error goes to the node
// locs has for its place in args, or the nearest place above it that has
// one; those about no field are returned as problems. A schema that
// cannot be used leaves args unchecked, with a note saying so.
func validate(schema json.RawMessage, args map[string]any, locs map[string]*tryNode) (problems []string, note string) {
	defer func() {
		// The schema is a server's; a bug of the validator on it is not
		// a reason to fail the page.
		if r := recover(); r != nil {
			problems, note = nil, "the arguments were not checked against the input schema: the validator failed on it"
		}
	}()
	if len(schema) == 0 || len(schema) > tryMaxSchema {
		return nil, ""
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, ""
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoads{})
	if err := c.AddResource("tool-input.json", doc); err != nil {
		return nil, "the arguments were not checked against the input schema: " + cut(err.Error())
	}
	sch, err := c.Compile("tool-input.json")
	if err != nil {
		return nil, "the arguments were not checked against the input schema, which is not valid JSON Schema: " + cut(err.Error())
	}
	// The validator reads values as its own decoder makes them.
	b, err := json.Marshal(args)
	if err != nil {
		return nil, ""
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, ""
	}
	verr, isVE := sch.Validate(inst).(*jsonschema.ValidationError)
	if !isVE {
		return nil, ""
	}
	byNode := map[*tryNode][]string{}
	var order []*tryNode
	for _, e := range leaves(verr, nil) {
		msg := cut(e.ErrorKind.LocalizedString(english))
		loc := ""
		for _, tok := range e.InstanceLocation {
			loc += "/" + pointerToken(tok)
		}
		n := nearest(loc, locs)
		if n == nil {
			where := ""
			if loc != "" {
				where = "at " + quoteName(loc) + ": "
			}
			problems = append(problems, where+msg)
			continue
		}
		if _, seen := byNode[n]; !seen {
			order = append(order, n)
		}
		byNode[n] = append(byNode[n], msg)
	}
	for _, n := range order {
		msgs := byNode[n]
		sort.Strings(msgs)
		n.field.Error = strings.Join(dedupe(msgs), "; ")
	}
	sort.Strings(problems)
	return dedupe(problems), ""
}

var english = message.NewPrinter(language.English)

// leaves appends to out the errors under e that have no causes: what is
// wrong, rather than which keyword it failed under.
func leaves(e *jsonschema.ValidationError, out []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return append(out, e)
	}
	for _, c := range e.Causes {
		out = leaves(c, out)
	}
	return out
}

// nearest is the node at the JSON pointer loc, or at the nearest pointer
// above it that has one.
func nearest(loc string, locs map[string]*tryNode) *tryNode {
	for {
		if n := locs[loc]; n != nil {
			return n
		}
		i := strings.LastIndexByte(loc, '/')
		if i < 0 {
			return nil
		}
		loc = loc[:i]
	}
}

func cut(s string) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) > maxProblem {
		return strings.ToValidUTF8(s[:maxProblem], "") + "…"
	}
	return s
}

func dedupe(list []string) []string {
	var out []string
	for i, s := range list {
		if i == 0 || s != list[i-1] {
			out = append(out, s)
		}
	}
	return out
}
