package discovery

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// textSize never says less than the encoding takes: texts of every kind
// of byte (control characters, quotes, HTML, invalid UTF-8, emoji), in
// one item or many; and it declines what holds more than text.
func TestTextSizeBoundsTheEncoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "\x00", "\x1f", `"`, `\`, "<", ">", "&", "\u2028", "é", "😀", "\xff", "\n"}
	for i := range 500 {
		res := &mcp.CallToolResult{}
		for range 1 + rng.IntN(4) {
			var b strings.Builder
			for range rng.IntN(200) {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			res.Content = append(res.Content, mcp.NewTextContent(b.String()))
		}
		res.IsError = i%2 == 0
		if i%3 == 0 {
			res.Meta = &mcp.Meta{AdditionalFields: map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "fixture <&>", "version": "1"}}}
			res.ResultType = mcp.ResultTypeComplete
		}
		n, ok := textSize(res)
		enc, err := json.Marshal(res)
		if !ok || err != nil || len(enc) > n {
			t.Fatalf("textSize = %d, %v for a result encoded in %d bytes (%v): %s", n, ok, len(enc), err, enc)
		}
	}
	for _, res := range []*mcp.CallToolResult{
		{Content: []mcp.Content{mcp.NewImageContent("aGk=", "image/png")}},
		{Content: []mcp.Content{mcp.NewTextContent("x")}, StructuredContent: map[string]any{"a": 1}},
	} {
		if _, ok := textSize(res); ok {
			t.Errorf("textSize(%+v) ok; want it declined (only encoding tells)", res)
		}
	}
}
