package tryit

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/views"
)

var pngHeader = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// Only allowed types with base64 that decodes, of allowed sizes and
// whose bytes are what they claim, become data: URLs; the rest are notes.
func TestResultMedia(t *testing.T) {
	svg := `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`
	tests := []struct {
		name     string
		content  mcp.Content
		wantKind string
		want     string // a prefix of Src, or a part of the note
	}{
		{name: "png", content: mcp.NewImageContent(b64(pngHeader), "image/png"), wantKind: views.PartImage, want: "data:image/png;base64,iVBOR"},
		{name: "type with parameters", content: mcp.NewImageContent(b64(pngHeader), "Image/PNG; x=1"), wantKind: views.PartImage, want: "data:image/png;base64,"},
		{name: "wav", content: mcp.NewAudioContent(b64("RIFF\x24\x00\x00\x00WAVEfmt "), "audio/wav"), wantKind: views.PartAudio, want: "data:audio/wav;base64,UklGR"},
		{name: "svg", content: mcp.NewImageContent(b64(svg), "image/svg+xml"), wantKind: views.PartRefused, want: "shows only image/gif, image/jpeg, image/png, image/webp"},
		{name: "svg claiming png", content: mcp.NewImageContent(b64(svg), "image/png"), wantKind: views.PartRefused, want: "not image/png"},
		{name: "broken base64", content: mcp.NewImageContent("iVBOR*&^", "image/png"), wantKind: views.PartRefused, want: "not valid base64"},
		{name: "empty", content: mcp.NewImageContent("", "image/png"), wantKind: views.PartRefused, want: "empty"},
		{name: "huge", content: mcp.NewImageContent(b64(pngHeader+strings.Repeat("\x00", maxMedium)), "image/png"), wantKind: views.PartRefused, want: "larger than 512 KiB"},
		{name: "html as audio", content: mcp.NewAudioContent(b64("<html><script>x</script>"), "audio/mpeg"), wantKind: views.PartRefused, want: "not a sound"},
		{name: "audio of a type not allowed", content: mcp.NewAudioContent(b64("x"), "text/html"), wantKind: views.PartRefused, want: "shows only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts, _ := Result(&mcp.CallToolResult{Content: []mcp.Content{tt.content}})
			if len(parts) != 1 {
				t.Fatalf("Result = %d parts; want 1", len(parts))
			}
			p := parts[0]
			got := string(p.Src)
			if tt.wantKind == views.PartRefused {
				got = p.Text
			}
			if p.Kind != tt.wantKind || !strings.Contains(got, tt.want) || (tt.wantKind == views.PartRefused) != (p.Src == "") {
				t.Errorf("Result(%s) = %+v; want kind %s with %q", tt.name, p, tt.wantKind, tt.want)
			}
		})
	}
}

// The media of one result share a budget.
func TestResultMediaBudget(t *testing.T) {
	big := b64(pngHeader + strings.Repeat("\x00", maxMedium-len(pngHeader)))
	res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewImageContent(big, "image/png"), mcp.NewImageContent(big, "image/png")}}
	parts, whole := Result(res)
	if parts[0].Kind != views.PartImage || parts[1].Kind != views.PartRefused || !strings.Contains(parts[1].Text, "together") {
		t.Errorf("two images of %d KiB = %s, %s (%s); want the second refused", maxMedium>>10, parts[0].Kind, parts[1].Kind, parts[1].Text)
	}
	if strings.Contains(whole, "AAAA") || !strings.Contains(whole, "characters of base64") {
		t.Errorf("the whole result's JSON holds the media data: %.200s", whole)
	}
}

// Text that is a JSON object or array is indented; other text stays as
// it is; structured content is JSON.
func TestResultText(t *testing.T) {
	parts, _ := Result(&mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(`{"a":[1,2],"b":"<x>"}`), mcp.NewTextContent("plain {not json"), mcp.NewTextContent(`"a string"`)},
		StructuredContent: map[string]any{"k": "v"},
	})
	want := []struct{ kind, text string }{
		{views.PartJSON, "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": \"<x>\"\n}"},
		{views.PartText, "plain {not json"},
		{views.PartText, `"a string"`},
		{views.PartJSON, "{\n  \"k\": \"v\"\n}"},
	}
	if len(parts) != len(want) {
		t.Fatalf("Result = %d parts; want %d", len(parts), len(want))
	}
	for i, w := range want {
		if parts[i].Kind != w.kind || parts[i].Text != w.text {
			t.Errorf("part %d = %s %q; want %s %q", i, parts[i].Kind, parts[i].Text, w.kind, w.text)
		}
	}
}

// A medium becomes a data: URL only of an allowed type, whatever the
// server sends.
func FuzzMediumPart(f *testing.F) {
	f.Add(views.PartImage, "image/png", b64(pngHeader))
	f.Add(views.PartImage, "image/svg+xml", b64("<svg/>"))
	f.Add(views.PartAudio, "audio/wav;codecs=1", b64("RIFF"))
	f.Fuzz(func(t *testing.T, kind, declared, data string) {
		budget := maxMedia
		p := mediumPart(kind, declared, data, &budget)
		if p.Src == "" {
			return
		}
		typ, rest, _ := strings.Cut(strings.TrimPrefix(string(p.Src), "data:"), ";base64,")
		if !imageTypes[typ] && !audioTypes[typ] {
			t.Fatalf("mediumPart(%q, %q) made a data: URL of type %q", kind, declared, typ)
		}
		if raw, err := base64.StdEncoding.DecodeString(rest); err != nil || len(raw) > maxMedium {
			t.Fatalf("mediumPart made a data: URL whose data does not decode or is too large: %v", err)
		}
	})
}
