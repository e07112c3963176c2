// Package toolsearch ranks the tools Switchboard offers agents by how well
// they match a query written in words, for the gateway's search mode: an
// agent that sees only search_tools and call_tool (see tools.go) finds
// the tool it needs by purpose instead of reading every definition.
//
// Ranking is BM25 (bleve v2, an in-memory scorch index) over each tool's
// agent name, title, description, parameter names and parameter
// descriptions, field-boosted, with identifiers split into words (see
// analyzer.go). An Index is immutable once built; a Searcher holds the
// current one and swaps in a new one, built from a fresh snapshot of the
// catalog, when the catalog changes.
//
// bleve is used below its top-level package (scorch, mapping, query and
// collector directly): that package registers every analyzer of every
// language bleve has (+16 MB of binary) and starts analysis workers that
// run for the life of the program. Each Index has its own workers, and
// Close ends them.
package toolsearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/collector"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// Limits of a search.
const (
	// MaxQueryBytes is the longest query searched; a longer one is cut
	// (at a character boundary).
	MaxQueryBytes = 400
	// DefaultLimit is the number of hits when none is asked for, and
	// MaxLimit the most a search returns.
	DefaultLimit = 5
	MaxLimit     = 20
	// maxParams caps the parameters read from one input schema, and
	// maxSchemaDepth how deep into nested objects they are looked for.
	maxParams      = 64
	maxSchemaDepth = 3
)

// Tool is one offered tool as the index sees it.
type Tool struct {
	// AgentName is the name agents call the tool by (server__tool); it
	// identifies the tool in hits.
	AgentName string
	// Name is the tool's own name on its server.
	Name        string
	Title       string
	Description string
	// InputSchema is the tool's JSON Schema; parameter names and
	// descriptions are read from its properties.
	InputSchema json.RawMessage
	// Definition is the tool as agents get it (named with the agent
	// name), returned whole by search_tools; nil if not needed.
	Definition json.RawMessage
}

// Hit is one tool found, best first.
type Hit struct {
	AgentName string  `json:"agent_name"`
	Score     float64 `json:"score"`
}

// field is one indexed field of a tool and its weight in a query.
type field struct {
	name  string
	boost float64
}

// fields are the indexed fields and their weights. They were chosen on
// the labelled query sets of toolsearchtest (the best of a few dozen
// combinations; there is no held-out set): queries written from a
// purpose match a tool's description far more than its name, and
// weighting the name up let a word of the query that names another kind
// of thing ("report a bug" → an analytics report) outrank the tool whose
// description says what the query asks.
var fields = []field{
	{"name", 1},
	{"title", 0.5},
	{"description", 3},
	{"params", 0.5},
	{"param_docs", 0.3},
}

// minRelative is the relevance threshold: a hit scoring under minRelative
// × the best hit's score is dropped, the long tail that matched one
// common word of the query. There is no absolute floor: bleve's scores
// (BM25 times its query norm and coordination factor) have no fixed
// scale. A query none of whose words (stop words dropped, stemmed) any
// tool has finds nothing at all. See TestNothingMatches.
const minRelative = 0.05

// ErrClosed is returned by Search on a closed Index.
var ErrClosed = errors.New("toolsearch: index closed")

// Index is a search index over one snapshot of the offered tools. Searches
// may run concurrently; Close waits for them.
type Index struct {
	mu      sync.RWMutex // held for reading by searches, for writing by Close
	idx     index.Index  // nil once closed
	queue   *index.AnalysisQueue
	mapping mapping.IndexMapping
	tools   map[string]Tool
	names   []string // agent names, in the order given
}

// analysisWorkers is the number of goroutines that analyse the documents
// of one index while it is built; they end with Close.
const analysisWorkers = 2

// sortOrder is the order of hits: best first, equal scores by agent name.
var sortOrder = search.ParseSortOrderStrings([]string{"-_score", "_id"})

// fieldsOf is what bleve indexes for a tool.
type fieldsOf struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Params      string `json:"params"`
	ParamDocs   string `json:"param_docs"`
}

// Build indexes tools. A later tool with an agent name seen before
// replaces the earlier one. The Index must be closed.
func Build(tools []Tool) (*Index, error) {
	m, err := newMapping()
	if err != nil {
		return nil, err
	}
	// An in-memory scorch index (path ""): scorch is the index type that
	// keeps the field lengths BM25 needs.
	queue := index.NewAnalysisQueue(analysisWorkers)
	idx, err := scorch.NewScorch(scorch.Name, map[string]any{"path": ""}, queue)
	if err == nil {
		err = idx.Open()
	}
	if err != nil {
		queue.Close()
		return nil, fmt.Errorf("toolsearch: new index: %w", err)
	}
	x := &Index{idx: idx, queue: queue, mapping: m, tools: make(map[string]Tool, len(tools))}
	batch := index.NewBatch()
	for _, t := range tools {
		if t.AgentName == "" {
			continue
		}
		if _, seen := x.tools[t.AgentName]; !seen {
			x.names = append(x.names, t.AgentName)
		}
		x.tools[t.AgentName] = t
		params, docs := schemaParams(t.InputSchema)
		doc := document.NewDocument(t.AgentName)
		err := m.MapDocument(doc, fieldsOf{
			Name:        t.AgentName,
			Title:       t.Title,
			Description: t.Description,
			Params:      strings.Join(params, " "),
			ParamDocs:   strings.Join(docs, " "),
		})
		if err != nil {
			x.Close()
			return nil, fmt.Errorf("toolsearch: index %s: %w", t.AgentName, err)
		}
		batch.Update(doc)
	}
	if err := idx.Batch(batch); err != nil {
		x.Close()
		return nil, fmt.Errorf("toolsearch: index: %w", err)
	}
	return x, nil
}

// Len is the number of tools indexed.
func (x *Index) Len() int { return len(x.names) }

// Tool returns the indexed tool with the agent name, and whether there is
// one. The Tool is shared: its byte slices must not be modified.
func (x *Index) Tool(agentName string) (Tool, bool) {
	t, ok := x.tools[agentName]
	return t, ok
}

// Search returns up to limit tools that match text, best first (limit
// ≤ 0 means DefaultLimit; more than MaxLimit means MaxLimit). A query of
// nothing but stop words or words no tool has, or one whose best match is
// too weak, finds nothing: an empty result, never a guess. Equal scores
// are ordered by agent name.
func (x *Index) Search(text string, limit int) ([]Hit, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	text = strings.TrimSpace(truncate(text, MaxQueryBytes))
	if text == "" {
		return nil, nil
	}
	disjuncts := make([]query.Query, 0, len(fields))
	for _, f := range fields {
		mq := query.NewMatchQuery(text)
		mq.SetField(f.name)
		mq.SetBoost(f.boost)
		mq.Analyzer = analyzerName
		disjuncts = append(disjuncts, mq)
	}
	q := query.NewDisjunctionQuery(disjuncts)

	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.idx == nil {
		return nil, ErrClosed
	}
	found, err := x.search(q, limit)
	if err != nil {
		return nil, fmt.Errorf("toolsearch: search: %w", err)
	}
	if len(found) == 0 || found[0].Score <= 0 {
		return nil, nil
	}
	floor := found[0].Score * minRelative
	hits := make([]Hit, 0, len(found))
	for _, h := range found {
		if h.Score < floor {
			break
		}
		hits = append(hits, Hit{AgentName: h.ID, Score: h.Score})
	}
	return hits, nil
}

// search runs q on a snapshot of the index, scored by BM25, and returns
// the best limit matches in sortOrder: what bleve's top-level
// Index.Search does for such a query.
func (x *Index) search(q query.Query, limit int) (_ search.DocumentMatchCollection, err error) {
	reader, err := x.idx.Reader()
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := reader.Close(); err == nil {
			err = cerr
		}
	}()
	ctx := context.WithValue(context.Background(), search.GetScoringModelCallbackKey,
		search.GetScoringModelCallbackFn(func() string { return index.BM25Scoring }))
	searcher, err := q.Searcher(ctx, reader, x.mapping, search.SearcherOptions{})
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := searcher.Close(); err == nil {
			err = cerr
		}
	}()
	coll := collector.NewTopNCollector(limit, 0, sortOrder)
	if err := coll.Collect(ctx, searcher, reader); err != nil {
		return nil, err
	}
	return coll.Results(), nil
}

// Close releases the index, once every search under way has returned.
// Searches after Close return ErrClosed.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.idx == nil {
		return nil
	}
	err := x.idx.Close()
	x.queue.Close() // its workers end
	x.idx = nil
	return err
}

// truncate cuts s to at most n bytes, at a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// schemaParams reads parameter names and descriptions from a JSON Schema:
// the properties of the top-level object, and of objects nested in them
// (directly or as array items) up to maxSchemaDepth, at most maxParams.
// A schema that is not an object gives nothing.
func schemaParams(raw json.RawMessage) (names, docs []string) {
	if len(raw) == 0 {
		return nil, nil
	}
	var root any
	if json.Unmarshal(raw, &root) != nil {
		return nil, nil
	}
	var walk func(schema any, depth int)
	walk = func(schema any, depth int) {
		obj, ok := schema.(map[string]any)
		if !ok || depth > maxSchemaDepth {
			return
		}
		if items, ok := obj["items"]; ok {
			walk(items, depth+1)
		}
		props, _ := obj["properties"].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(props)) {
			p := props[name]
			if len(names) >= maxParams {
				return
			}
			names = append(names, name)
			if pm, ok := p.(map[string]any); ok {
				if d, ok := pm["description"].(string); ok {
					docs = append(docs, d)
				}
				walk(pm, depth+1)
			}
		}
	}
	walk(root, 0)
	return names, docs
}
