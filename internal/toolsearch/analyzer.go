package toolsearch

import (
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	unicodetok "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/registry"
)

// identifierFilter is the name of the char filter that splits
// identifiers into words, and analyzerName that of the analyzer every
// field and every query goes through: identifiers split, Unicode words,
// lower case, English stop words dropped, Snowball-stemmed.
const (
	identifierFilter = "switchboard_identifier"
	analyzerName     = "switchboard_tool"
)

// init registers the char filter with bleve, the way bleve's own
// analysis components register themselves; the registry is global and
// refuses a name twice, so this is done once per program.
func init() {
	err := registry.RegisterCharFilter(identifierFilter, func(map[string]any, *registry.Cache) (analysis.CharFilter, error) {
		return identifierSplitter{}, nil
	})
	if err != nil {
		panic(err)
	}
}

// identifierSplitter is a bleve char filter that turns identifiers into
// words before tokenizing: snake_case, kebab-case, dotted.names and
// path/like names at their separators, camelCase and HTTPServer at a
// change of case, so that read_text_file, readTextFile and
// read-text-file all read as "read text file". The Unicode tokenizer
// alone keeps snake_case as one word (UAX #29 joins letters across '_').
type identifierSplitter struct{}

// Filter returns input with a space at each identifier boundary.
func (identifierSplitter) Filter(input []byte) []byte {
	out := make([]byte, 0, len(input)+len(input)/4)
	var prev, cur rune = -1, -1
	for i := 0; i < len(input); {
		r, n := utf8.DecodeRune(input[i:])
		next := rune(-1)
		if i+n < len(input) {
			next, _ = utf8.DecodeRune(input[i+n:])
		}
		cur = r
		switch {
		case r == '_' || r == '.' || r == '/' || r == ':' || r == '-':
			out = append(out, ' ')
			prev = ' '
			i += n
			continue
		case unicode.IsUpper(cur) && prev >= 0 && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			out = append(out, ' ') // camelCase, v2Beta
		case unicode.IsUpper(cur) && prev >= 0 && unicode.IsUpper(prev) && next >= 0 && unicode.IsLower(next):
			out = append(out, ' ') // HTTPServer → HTTP Server
		}
		out = append(out, input[i:i+n]...)
		prev = cur
		i += n
	}
	return out
}

// newMapping is the index mapping: every document field analysed by
// analyzerName, nothing stored (the Index keeps the tools itself),
// scored by BM25.
func newMapping() (*mapping.IndexMappingImpl, error) {
	m := mapping.NewIndexMapping()
	err := m.AddCustomAnalyzer(analyzerName, map[string]any{
		"type":         custom.Name,
		"char_filters": []any{identifierFilter},
		"tokenizer":    unicodetok.Name,
		"token_filters": []any{
			en.PossessiveName,
			lowercase.Name,
			en.StopName,
			en.SnowballStemmerName,
		},
	})
	if err != nil {
		return nil, err
	}
	m.DefaultAnalyzer = analyzerName
	m.ScoringModel = "bm25"
	doc := mapping.NewDocumentStaticMapping()
	for _, f := range fields {
		fm := mapping.NewTextFieldMapping()
		fm.Analyzer = analyzerName
		fm.Store = false
		fm.IncludeInAll = false
		fm.IncludeTermVectors = false
		fm.DocValues = false
		doc.AddFieldMappingsAt(f.name, fm)
	}
	m.DefaultMapping = doc
	m.StoreDynamic = false
	m.IndexDynamic = false
	m.DocValuesDynamic = false
	return m, nil
}
