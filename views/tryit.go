package views

import (
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
)

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
	// For Kind "array", edited as rows: Item is a new row's fields, with
	// RowMark in their names for app.js to number; Rows the rows shown.
	// Each row has a hidden input named Name whose value is the row's
	// number (so the rows come back in the page's order), and its fields
	// are named after Item's with "-" and that number.
	Item []TryField
	Rows []TryRow
}

// RowMark stands for a row's number in the names of a new row's fields.
const RowMark = "__row__"

// TryRow is one row of an array field.
type TryRow struct {
	Index  string // the row's number, or RowMark
	Fields []TryField
}

// TryForm is a whole generated form.
type TryForm struct {
	Fields []TryField
	Notes  []string // what was simplified, e.g. "nested deeper than 4 levels: edited as JSON"
}

// TryView is the Try it page of one tool.
type TryView struct {
	AgentName   string // opaque and URL-safe: [a-zA-Z0-9_-]
	ServerID    string
	ServerName  string
	Tool        string
	Description string
	Policy      string
	Form        TryForm
	FormError   string
	// Problems are what the input schema found wrong that no field
	// holds (shown with FormError).
	Problems []string
	// CallID names the page's calls for their live progress (see
	// TryEvent): random hex, made by the server.
	CallID string
	Result *TryResult
}

// TryResult is what a Try it call returned.
type TryResult struct {
	OK      bool   // the call went through (the tool may still report an error)
	IsError bool   // the tool said isError
	Text    string // the refusal or failure, when not OK
	// Cancelled is set when the person cancelled the call (Text says so).
	Cancelled bool
	Parts     []TryPart
	// JSON is the whole result as indented JSON, media data left out.
	JSON     string
	Progress *TryProgress // the last progress the server reported
	Duration time.Duration
}

// Kinds of TryPart.
const (
	PartText    = "text"
	PartJSON    = "json"
	PartImage   = "image"
	PartAudio   = "audio"
	PartRefused = "refused" // a medium not shown; Text says why
)

// TryPart is one piece of a result, ready to show.
type TryPart struct {
	Kind  string
	Label string // what it is, e.g. "structured content", "image/png, 2 KiB"
	Text  string // the text, the indented JSON or why a medium is not shown
	// Src is an image's or a sound's data: URL, built by web/tryit only
	// from an allowed type and base64 it decoded and checked.
	Src templ.SafeURL
}

// TryProgress is a call's progress as the server last reported it.
type TryProgress struct {
	Progress, Total float64
	Message         string
	Count           int // notifications received
}

// Percent is the progress out of the total, 0 if there is no total.
func (p TryProgress) Percent() int {
	if p.Total <= 0 {
		return 0
	}
	return int(min(max(p.Progress/p.Total, 0), 1) * 100)
}

// Summary says how far the call is, e.g. "3 of 5".
func (p TryProgress) Summary() string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	if p.Total > 0 {
		return num(p.Progress) + " of " + num(p.Total)
	}
	return num(p.Progress)
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

// tryItemNoun names what an array field's Add button adds.
func tryItemNoun(f TryField) string {
	if len(f.Item) == 1 && f.Item[0].Kind != "object" {
		return "item"
	}
	return "row"
}

// Kinds of TryQuestion: what a server asks during a Try it call.
const (
	QuestionForm     = "form"     // elicitation/create, form mode: Form
	QuestionURL      = "url"      // elicitation/create, URL mode: URL
	QuestionSampling = "sampling" // sampling/createMessage: Messages
	QuestionRoots    = "roots"    // roots/list
)

// TryQuestion is what the server asks, during a Try it call, of the
// person who made it, as an agent's client would be asked.
type TryQuestion struct {
	AgentName, CallID string
	Kind              string
	Message           string  // what the server says (form, URL)
	URL               string  // shown as text, never opened
	Form              TryForm // the form's fields (QuestionForm)
	Messages          []TryMessage
	SystemPrompt      string
	Error             string // an answer that was not right
}

// TryMessage is one message a server asks a model to continue.
type TryMessage struct {
	Role, Text string
}
