package discovery

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// A server's resources, resource templates and prompts: the walks of
// resources/list, resources/templates/list and prompts/list, run when
// the server declares the capability, under the bounds of the tools walk
// (pages, entries, bytes of each entry). Tools are the core: a failed
// walk of these lists is a warning, never a failed verification, and a
// walk that hits a bound keeps what it read with a warning.

// Phases of the walks (after PhaseListing), each timed as its own.
const (
	PhaseResources         = "listing resources"
	PhaseResourceTemplates = "listing resource templates"
	PhasePrompts           = "listing prompts"
)

// Resource is one entry of resources/list: a concrete URI the server can
// read, as it described it.
type Resource struct {
	URI         string
	Name        string
	Title       string
	Description string
	MIMEType    string
	Size        *int64
	Annotations json.RawMessage
	Entry
}

// ResourceTemplate is one entry of resources/templates/list.
type ResourceTemplate struct {
	URITemplate string
	Name        string
	Title       string
	Description string
	MIMEType    string
	Annotations json.RawMessage
	Entry
}

// Prompt is one entry of prompts/list.
type Prompt struct {
	Name        string
	Title       string
	Description string
	Arguments   []PromptArgument
	Entry
}

// PromptArgument is one argument a prompt takes.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Entry is what every listed resource, template and prompt carries
// beside its fields: the object as received, its pin, and why it is
// flagged (a State of ToolOversized or ToolInvalid, with the same
// meaning as a tool's; empty when sound).
type Entry struct {
	Raw      json.RawMessage
	Pin      string
	State    ToolState
	Problems []string
}

// listKind is one of the three lists: its method, the key of its
// entries in a page, and the key that names an entry (and must be set).
type listKind struct {
	method, entries, key, noun string
}

var (
	resourcesList = listKind{"resources/list", "resources", "uri", "resource"}
	templatesList = listKind{"resources/templates/list", "resourceTemplates", "uriTemplate", "resource template"}
	promptsList   = listKind{"prompts/list", "prompts", "name", "prompt"}
)

// listStubs are the results mcp-go gets for the lists the pipeline
// decodes itself (see recorder.tap).
var listStubs = map[string]json.RawMessage{
	"tools/list":         listStub,
	resourcesList.method: json.RawMessage(`{"resources":[]}`),
	templatesList.method: json.RawMessage(`{"resourceTemplates":[]}`),
	promptsList.method:   json.RawMessage(`{"prompts":[]}`),
}

// listExtras walks the resource and prompt lists the server declared in
// caps, all within one ListTimeout. Each walk that fails adds a warning;
// only the end of ctx itself (cancelled, or cut short at the byte budget)
// fails the verification.
func (r *verification) listExtras(ctx context.Context, c *client.Client, caps mcp.ServerCapabilities, res *Result) error {
	if caps.Resources == nil && caps.Prompts == nil {
		return nil
	}
	listCtx, cancel := context.WithTimeout(ctx, r.limits.ListTimeout)
	defer cancel()
	var walks []walk
	if caps.Resources != nil {
		walks = append(walks,
			walkOf(resourcesList, PhaseResources, &res.Resources, decodeResource, func(ctx context.Context, cursor string) error {
				req := mcp.ListResourcesRequest{}
				req.Params.Cursor = mcp.Cursor(cursor)
				_, err := c.ListResourcesByPage(ctx, req)
				return err
			}),
			walkOf(templatesList, PhaseResourceTemplates, &res.ResourceTemplates, decodeResourceTemplate, func(ctx context.Context, cursor string) error {
				req := mcp.ListResourceTemplatesRequest{}
				req.Params.Cursor = mcp.Cursor(cursor)
				_, err := c.ListResourceTemplatesByPage(ctx, req)
				return err
			}))
	}
	if caps.Prompts != nil {
		walks = append(walks, walkOf(promptsList, PhasePrompts, &res.Prompts, decodePrompt, func(ctx context.Context, cursor string) error {
			req := mcp.ListPromptsRequest{}
			req.Params.Cursor = mcp.Cursor(cursor)
			_, err := c.ListPromptsByPage(ctx, req)
			return err
		}))
	}
	for _, w := range walks {
		err := r.walkList(listCtx, w.kind, w.phase, w.send, func(raw json.RawMessage) error { return w.add(raw, r.limits) }, res)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return err
		}
		var e *Error
		msg := err.Error()
		if errors.As(err, &e) {
			msg = e.Message
		} else if e := refusal(err, ""); e != nil {
			msg = e.Message
		}
		if listCtx.Err() != nil {
			msg = fmt.Sprintf("no answer within %s", r.limits.ListTimeout)
		}
		w.drop()
		res.Unlisted = append(res.Unlisted, w.kind.method)
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s failed, so the server's %ss are not listed anew (what was known is kept): %s",
			w.kind.method, w.kind.noun, sample([]byte(msg), r.target.secrets())))
	}
	return nil
}

// walk is one list to walk: send asks for a page (which the recorder
// keeps), add decodes and keeps one entry, drop forgets every entry kept.
type walk struct {
	kind  listKind
	phase string
	send  func(ctx context.Context, cursor string) error
	add   func(raw json.RawMessage, l Limits) error
	drop  func()
}

// walkOf is the walk of one list whose entries decode decodes into dst.
func walkOf[T any](kind listKind, phase string, dst *[]T, decode func(json.RawMessage, Limits) (T, error), send func(context.Context, string) error) walk {
	return walk{kind: kind, phase: phase, send: send, drop: func() { *dst = nil },
		add: func(raw json.RawMessage, l Limits) error {
			v, err := decode(raw, l)
			if err == nil {
				*dst = append(*dst, v)
			}
			return err
		}}
}

// walkList walks one list page by page: it stops at a repeated cursor,
// after MaxPages pages, or at MaxTools entries, keeping what it read with
// a warning. Entries without their key, or with the key of one already
// read, are skipped and counted into one warning.
func (r *verification) walkList(ctx context.Context, kind listKind, phase string,
	send func(context.Context, string) error, add func(json.RawMessage) error, res *Result) error {
	seen := map[string]bool{"": true}
	keys := map[string]bool{}
	var skipped, repeated int
	defer func() {
		if skipped > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("skipped %s of %s that %s not %s objects with a %s",
				count(skipped, "entry", "entries"), kind.method, isAre(skipped), kind.noun, kind.key))
		}
		if repeated > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("skipped %s of %s that repeat a %s already listed",
				count(repeated, "entry", "entries"), kind.method, kind.key))
		}
	}()
	cursor, n := "", 0
	for page := 1; ; page++ {
		if page > r.limits.MaxPages {
			res.Warnings = append(res.Warnings, fmt.Sprintf("stopped after %d pages of %s (page limit); more %ss may exist", r.limits.MaxPages, kind.method, kind.noun))
			return nil
		}
		r.enter(phase, page)
		if err := send(ctx, cursor); err != nil {
			return err
		}
		var raw struct {
			NextCursor string `json:"nextCursor"`
		}
		body := r.rec.take()
		var entries map[string]json.RawMessage
		if err := json.Unmarshal(body, &raw); err != nil || json.Unmarshal(body, &entries) != nil {
			return fmt.Errorf("page %d is not a valid result", page)
		}
		var list []json.RawMessage
		if v, ok := entries[kind.entries]; ok {
			if err := json.Unmarshal(v, &list); err != nil {
				return fmt.Errorf("page %d: its %s is not a list", page, kind.entries)
			}
		}
		for _, e := range list {
			if n >= r.limits.MaxTools {
				res.Warnings = append(res.Warnings, fmt.Sprintf("server lists more than %d %ss; the first %d are kept", r.limits.MaxTools, kind.noun, r.limits.MaxTools))
				return nil
			}
			var probe map[string]json.RawMessage
			var key string
			if json.Unmarshal(e, &probe) != nil || json.Unmarshal(probe[kind.key], &key) != nil || key == "" || len(key) > maxNameBytes {
				skipped++
				continue
			}
			if keys[key] {
				repeated++
				continue
			}
			if err := add(e); err != nil {
				skipped++
				continue
			}
			keys[key] = true
			n++
		}
		if raw.NextCursor == "" {
			return nil
		}
		if seen[raw.NextCursor] {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s repeated cursor %q on page %d; stopped the walk", kind.method, sample([]byte(raw.NextCursor), r.target.secrets()), page))
			return nil
		}
		seen[raw.NextCursor] = true
		cursor = raw.NextCursor
	}
}

// pinOf returns the pin of an entry: the SHA-256 of the RFC 8785
// canonical form of raw, or of the bytes as received when raw has none
// (invalid UTF-8, duplicate keys) or is over max bytes, with why it has
// none (nil when it has one).
func pinOf(raw json.RawMessage, max int) (string, error) {
	var canon []byte
	var err error = errTooLarge{"object over the limit"}
	if len(raw) <= max {
		canon, err = jcs.Transform(raw)
	}
	sum := sha256.Sum256(canon)
	if err != nil {
		sum = sha256.Sum256(raw)
	}
	return hex.EncodeToString(sum[:]), err
}

// newEntry pins raw and flags what an entry of any list shares with a
// tool: invalid UTF-8 (repaired), ambiguity (duplicate keys), and an
// object over Limits.ToolBytes (whose Raw is not kept).
func newEntry(raw json.RawMessage, l Limits) Entry {
	e := Entry{Raw: append(json.RawMessage(nil), raw...)}
	var err error
	e.Pin, err = pinOf(raw, l.ToolBytes)
	switch {
	case len(raw) > l.ToolBytes:
		e.flag(ToolOversized, fmt.Sprintf("the object is %d bytes (limit %d)", len(raw), l.ToolBytes))
		e.Raw = nil
	case !utf8.Valid(raw):
		e.flag(ToolInvalid, "holds invalid UTF-8 (shown as U+FFFD)")
		e.Raw = bytes.ToValidUTF8(e.Raw, []byte("\uFFFD"))
	case err != nil:
		e.flag(ToolInvalid, "is ambiguous: "+err.Error())
	}
	return e
}

func (e *Entry) flag(state ToolState, problem string) {
	if e.State != ToolOversized {
		e.State = state
	}
	e.Problems = append(e.Problems, problem)
}

// text cuts *s to n bytes with a problem naming what, and repairs
// invalid UTF-8.
func (e *Entry) text(what string, s *string, n int) {
	*s = stringsValid(*s)
	if len(*s) > n {
		total := len(*s)
		*s = cutText(*s, n)
		e.flag(ToolOversized, fmt.Sprintf("its %s is %d bytes; the first %d are kept", what, total, len(*s)))
	}
}

// annotations drops *a when over the limit.
func (e *Entry) annotations(a *json.RawMessage, l Limits) {
	if len(*a) > l.AnnotationsBytes {
		e.flag(ToolOversized, fmt.Sprintf("its annotations are %d bytes (limit %d); not kept", len(*a), l.AnnotationsBytes))
		*a = nil
	} else if len(*a) > 0 {
		*a = bytes.ToValidUTF8(append(json.RawMessage(nil), *a...), []byte("\uFFFD"))
	}
}

func stringsValid(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string(bytes.ToValidUTF8([]byte(s), []byte("\uFFFD")))
}

// decodeStrict unmarshals raw into v, saying which field has the wrong
// JSON type.
func decodeStrict(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return fmt.Errorf("its %s is a JSON %s", typeErr.Field, typeErr.Value)
		}
		return err
	}
	return nil
}

// decodeResource reads one resources/list entry; an error means it
// cannot be kept at all (not an object of the right shape).
func decodeResource(raw json.RawMessage, l Limits) (Resource, error) {
	var f struct {
		URI         string          `json:"uri"`
		Name        string          `json:"name"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		MIMEType    string          `json:"mimeType"`
		Size        *int64          `json:"size"`
		Annotations json.RawMessage `json:"annotations"`
	}
	if err := decodeStrict(raw, &f); err != nil {
		return Resource{}, err
	}
	v := Resource{URI: f.URI, Name: f.Name, Title: f.Title, Description: f.Description, MIMEType: f.MIMEType,
		Size: f.Size, Annotations: f.Annotations, Entry: newEntry(raw, l)}
	v.text("URI", &v.URI, maxNameBytes)
	v.text("name", &v.Name, l.TitleBytes)
	v.text("title", &v.Title, l.TitleBytes)
	v.text("description", &v.Description, l.DescriptionBytes)
	v.text("MIME type", &v.MIMEType, l.TitleBytes)
	v.annotations(&v.Annotations, l)
	return v, nil
}

// decodeResourceTemplate reads one resources/templates/list entry.
func decodeResourceTemplate(raw json.RawMessage, l Limits) (ResourceTemplate, error) {
	var f struct {
		URITemplate string          `json:"uriTemplate"`
		Name        string          `json:"name"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		MIMEType    string          `json:"mimeType"`
		Annotations json.RawMessage `json:"annotations"`
	}
	if err := decodeStrict(raw, &f); err != nil {
		return ResourceTemplate{}, err
	}
	v := ResourceTemplate{URITemplate: f.URITemplate, Name: f.Name, Title: f.Title, Description: f.Description,
		MIMEType: f.MIMEType, Annotations: f.Annotations, Entry: newEntry(raw, l)}
	v.text("URI template", &v.URITemplate, maxNameBytes)
	v.text("name", &v.Name, l.TitleBytes)
	v.text("title", &v.Title, l.TitleBytes)
	v.text("description", &v.Description, l.DescriptionBytes)
	v.text("MIME type", &v.MIMEType, l.TitleBytes)
	v.annotations(&v.Annotations, l)
	return v, nil
}

// maxPromptArguments bounds the arguments kept of one prompt.
const maxPromptArguments = 100

// decodePrompt reads one prompts/list entry.
func decodePrompt(raw json.RawMessage, l Limits) (Prompt, error) {
	var f struct {
		Name        string           `json:"name"`
		Title       string           `json:"title"`
		Description string           `json:"description"`
		Arguments   []PromptArgument `json:"arguments"`
	}
	if err := decodeStrict(raw, &f); err != nil {
		return Prompt{}, err
	}
	v := Prompt{Name: f.Name, Title: f.Title, Description: f.Description, Entry: newEntry(raw, l)}
	v.text("name", &v.Name, maxNameBytes)
	v.text("title", &v.Title, l.TitleBytes)
	v.text("description", &v.Description, l.DescriptionBytes)
	if n := len(f.Arguments); n > maxPromptArguments {
		v.flag(ToolOversized, fmt.Sprintf("it takes %d arguments; the first %d are kept", n, maxPromptArguments))
		f.Arguments = f.Arguments[:maxPromptArguments]
	}
	for _, a := range f.Arguments {
		v.text("argument name", &a.Name, l.TitleBytes)
		v.text("argument title", &a.Title, l.TitleBytes)
		v.text("argument description", &a.Description, l.DescriptionBytes)
		v.Arguments = append(v.Arguments, a)
	}
	return v, nil
}
