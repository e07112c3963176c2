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
		switch i % 3 {
		case 0:
			res.Meta = &mcp.Meta{AdditionalFields: map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "fixture <&>", "version": "1"}}}
			res.ResultType = mcp.ResultTypeComplete
		case 1: // any _meta a server sends, as decoding makes it
			var meta mcp.Meta
			raw, _ := json.Marshal(map[string]any{"progressToken": randomValue(rng, alphabet, 0), "x<&>": randomValue(rng, alphabet, 0), "y": randomValue(rng, alphabet, 0)})
			if err := json.Unmarshal(raw, &meta); err != nil {
				t.Fatal(err)
			}
			res.Meta = &meta
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

// randomValue is a JSON value of any kind: literals, numbers of every
// magnitude, strings of the alphabet, and nested arrays and objects.
func randomValue(rng *rand.Rand, alphabet []string, depth int) any {
	word := func() string {
		var b strings.Builder
		for range rng.IntN(20) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	kind := rng.IntN(7)
	if depth > 3 {
		kind = rng.IntN(5)
	}
	switch kind {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return []float64{0, -1, 1e21, -1e21 + 1e5, -1.2345678901234567e-308, -1.2345678901234567e-06, 123456789.123456789, 1e-7}[rng.IntN(8)]
	case 3:
		return (rng.Float64() - 0.5) * float64(rng.Int64())
	case 4:
		return word()
	case 5:
		a := []any{}
		for range rng.IntN(4) {
			a = append(a, randomValue(rng, alphabet, depth+1))
		}
		return a
	}
	m := map[string]any{}
	for range rng.IntN(4) {
		m[word()] = randomValue(rng, alphabet, depth+1)
	}
	return m
}

// jsonBound never says less than encoding/json writes, for any value
// decoding makes, and declines other kinds of value.
func TestJSONBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "\x00", `"`, `\`, "<", "&", "\u2028", "😀", "\xff"}
	for range 2000 {
		raw, _ := json.Marshal(randomValue(rng, alphabet, 0))
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		enc, _ := json.Marshal(v)
		if n, ok := jsonBound(v); !ok || len(enc) > n {
			t.Fatalf("jsonBound = %d, %v for a value encoded in %d bytes: %s", n, ok, len(enc), enc)
		}
	}
	for _, v := range []any{3, struct{}{}, []string{"a"}, map[string]string{}} {
		if _, ok := jsonBound(v); ok {
			t.Errorf("jsonBound(%#v) ok; want it declined", v)
		}
	}
}
