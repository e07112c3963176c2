package tryit

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/a-h/templ"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/views"
)

// A result is shown piece by piece: text as text, JSON (structured
// content, or text that is a JSON object or array) indented, images and
// sounds as <img> and <audio> with data: URLs, and anything else as JSON.
// The CSP allows data: URLs for images and media only for these, so they
// are built here and nowhere else: only from the types below (never SVG,
// which can hold scripts), from base64 that decodes, of a size within
// limits, and for images only if the bytes are what the type says.
const (
	// maxMedium caps one image or sound, decoded.
	maxMedium = 512 << 10
	// maxMedia caps the images and sounds of one result, decoded.
	maxMedia = 768 << 10
	// maxShownJSON caps the whole result's JSON as shown.
	maxShownJSON = 64 << 10
)

// imageTypes are the image types shown, each as http.DetectContentType
// names it.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// audioTypes are the sound types shown.
var audioTypes = map[string]bool{
	"audio/wav": true, "audio/x-wav": true, "audio/wave": true, "audio/mpeg": true, "audio/mp3": true,
	"audio/ogg": true, "audio/webm": true, "audio/flac": true, "audio/aac": true, "audio/mp4": true,
}

// Result is a tool's result as the page shows it: its pieces, and the
// whole as indented JSON with the media data left out.
func Result(res *mcp.CallToolResult) (parts []views.TryPart, whole string) {
	budget := maxMedia
	for _, c := range res.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			parts = append(parts, textPart(c.Text))
		case mcp.ImageContent:
			parts = append(parts, mediumPart(views.PartImage, c.MIMEType, c.Data, &budget))
		case mcp.AudioContent:
			parts = append(parts, mediumPart(views.PartAudio, c.MIMEType, c.Data, &budget))
		default:
			parts = append(parts, views.TryPart{Kind: views.PartJSON, Label: contentType(c), Text: indented(c, maxShownJSON)})
		}
	}
	if res.StructuredContent != nil {
		parts = append(parts, views.TryPart{Kind: views.PartJSON, Label: "structured content", Text: indented(res.StructuredContent, maxShownJSON)})
	}
	return parts, indented(withoutMedia(res), maxShownJSON)
}

// textPart is a text content: indented JSON if it is a JSON object or
// array, else the text.
func textPart(s string) views.TryPart {
	t := strings.TrimSpace(s)
	if len(t) > 1 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		var buf bytes.Buffer
		if json.Indent(&buf, []byte(t), "", "  ") == nil {
			return views.TryPart{Kind: views.PartJSON, Label: "text (JSON)", Text: buf.String()}
		}
	}
	return views.TryPart{Kind: views.PartText, Text: s}
}

// mediumPart is an image or a sound as a data: URL, or a note saying why
// it is not shown. budget is what is left of maxMedia.
func mediumPart(kind, declared, data string, budget *int) views.TryPart {
	refused := func(label, why string) views.TryPart {
		return views.TryPart{Kind: views.PartRefused, Label: label, Text: why}
	}
	what := kind + " (" + quoteName(declared) + ")"
	mt, _, err := mime.ParseMediaType(declared)
	allowed := imageTypes
	if kind == views.PartAudio {
		allowed = audioTypes
	}
	if err != nil || !allowed[mt] {
		return refused(what, "Switchboard shows only "+typeList(allowed)+" here")
	}
	if base64.StdEncoding.DecodedLen(len(data)) > maxMedium+2 {
		return refused(what, fmt.Sprintf("larger than %d KiB", maxMedium>>10))
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	switch {
	case err != nil:
		return refused(what, "its data is not valid base64")
	case len(raw) == 0:
		return refused(what, "its data is empty")
	case len(raw) > maxMedium:
		return refused(what, fmt.Sprintf("larger than %d KiB", maxMedium>>10))
	case len(raw) > *budget:
		return refused(what, fmt.Sprintf("the result's images and sounds are larger than %d KiB together", maxMedia>>10))
	}
	sniffed := http.DetectContentType(raw)
	if kind == views.PartImage && sniffed != mt {
		return refused(what, "its data is not "+mt+" (it looks like "+sniffed+")")
	}
	if kind == views.PartAudio && (strings.HasPrefix(sniffed, "text/") || strings.HasPrefix(sniffed, "image/")) {
		return refused(what, "its data is not a sound (it looks like "+sniffed+")")
	}
	*budget -= len(raw)
	return views.TryPart{
		Kind:  kind,
		Label: fmt.Sprintf("%s, %s", mt, size(len(raw))),
		// mt is one of the allowed types and the data is base64 encoded
		// here: nothing in the URL came from the server as it was sent.
		Src: templ.SafeURL("data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(raw)),
	}
}

func typeList(types map[string]bool) string {
	var list []string
	for t := range types {
		list = append(list, t)
	}
	slices.Sort(list)
	return strings.Join(list, ", ")
}

func size(n int) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}

// contentType names a content for its label.
func contentType(c mcp.Content) string {
	var head struct {
		Type string `json:"type"`
	}
	if b, err := json.Marshal(c); err == nil && json.Unmarshal(b, &head) == nil && head.Type != "" {
		return quoteName(head.Type)
	}
	return "content"
}

// withoutMedia is res with the data of its images and sounds replaced by
// a note of their length.
func withoutMedia(res *mcp.CallToolResult) *mcp.CallToolResult {
	out := *res
	out.Content = make([]mcp.Content, len(res.Content))
	for i, c := range res.Content {
		switch c := c.(type) {
		case mcp.ImageContent:
			c.Data = fmt.Sprintf("(%d characters of base64)", len(c.Data))
			out.Content[i] = c
		case mcp.AudioContent:
			c.Data = fmt.Sprintf("(%d characters of base64)", len(c.Data))
			out.Content[i] = c
		default:
			out.Content[i] = c
		}
	}
	return &out
}

// indented is v as indented JSON, cut (saying so) past limit bytes.
func indented(v any, limit int) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // shown escaped by the page
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("(cannot be shown as JSON: %v)", err)
	}
	b := bytes.TrimRight(buf.Bytes(), "\n")
	if len(b) > limit {
		return strings.ToValidUTF8(string(b[:limit]), "") + fmt.Sprintf("\n… %d more bytes not shown", len(b)-limit)
	}
	return string(b)
}
