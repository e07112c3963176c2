package toolsearch_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/switchboard-dev/switchboard/internal/toolsearch"
	"github.com/switchboard-dev/switchboard/internal/toolsearch/toolsearchtest"
)

func TestMain(m *testing.M) {
	// Every goroutine an index starts (its analysis workers, scorch's
	// introducer) ends with its Close, and loading the package starts
	// none.
	goleak.VerifyTestMain(m)
}

func build(t *testing.T, tools []toolsearch.Tool) *toolsearch.Index {
	t.Helper()
	x, err := toolsearch.Build(tools)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func names(hits []toolsearch.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.AgentName)
	}
	return out
}

func realIndex(t *testing.T) *toolsearch.Index {
	t.Helper()
	tools, err := toolsearchtest.RealCatalog()
	if err != nil {
		t.Fatal(err)
	}
	return build(t, tools)
}

// TestIdentifiers checks that a name's words are found whatever the
// naming style, and that a query in any style finds them.
func TestIdentifiers(t *testing.T) {
	x := build(t, []toolsearch.Tool{
		{AgentName: "a__read_text_file"},
		{AgentName: "b__readTextFile"},
		{AgentName: "c__read-text-file"},
		{AgentName: "d__HTTPServerStatus"},
		{AgentName: "e__other", InputSchema: json.RawMessage(`{"type":"object","properties":{"dryRun":{"type":"boolean","description":"Preview only."},"edits":{"type":"array","items":{"type":"object","properties":{"oldValue":{"type":"string"}}}}}}`)},
	})
	for _, tc := range []struct {
		name, query string
		want        []string
	}{
		{"snake, camel and kebab names", "text", []string{"a__read_text_file", "b__readTextFile", "c__read-text-file"}},
		{"query in snake case", "read_text", []string{"a__read_text_file", "b__readTextFile", "c__read-text-file"}},
		{"acronym then word", "server status", []string{"d__HTTPServerStatus"}},
		{"acronym alone", "http", []string{"d__HTTPServerStatus"}},
		{"camelCase parameter", "dry run", []string{"e__other"}},
		{"nested parameter", "old", []string{"e__other"}},
		{"parameter description", "preview", []string{"e__other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := x.Search(tc.query, 10)
			if err != nil {
				t.Fatal(err)
			}
			got := names(hits)
			if strings.Join(sorted(got), " ") != strings.Join(sorted(tc.want), " ") {
				t.Errorf("Search(%q) = %v; want %v", tc.query, got, tc.want)
			}
		})
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestNothingMatches: a query of stop words, noise or words no tool has
// finds nothing, and the long tail of a real match is cut.
func TestNothingMatches(t *testing.T) {
	x := realIndex(t)
	for _, q := range []string{"", "   ", "the", "of and to the", "is it a", "xyzzy plugh", "%%% ??? !!!", "book a flight to Lisbon", "\xff\xfe"} {
		hits, err := x.Search(q, 5)
		if err != nil || len(hits) != 0 {
			t.Errorf("Search(%q) = %v, %v; want nothing", q, hits, err)
		}
	}
	// "add two numbers together" matches get-sum, and two other tools
	// by the word "two" in a parameter's description, far weaker.
	hits, err := x.Search("add two numbers together", 5)
	if err != nil || len(hits) != 1 || hits[0].AgentName != "everything__get-sum" {
		t.Errorf("Search(add two numbers together) = %v, %v; want get-sum alone", hits, err)
	}
}

func TestLimits(t *testing.T) {
	x := build(t, toolsearchtest.Synthetic())
	for _, tc := range []struct {
		name  string
		limit int
		want  int
	}{
		{"default", 0, toolsearch.DefaultLimit},
		{"negative", -3, toolsearch.DefaultLimit},
		{"asked", 7, 7},
		{"capped", 1000, toolsearch.MaxLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := x.Search("list the issues of a project", tc.limit)
			if err != nil || len(hits) != tc.want {
				t.Errorf("Search(…, %d) = %d hits, %v; want %d", tc.limit, len(hits), err, tc.want)
			}
		})
	}
	// A long query is cut to MaxQueryBytes: the words after the cut are
	// not searched.
	long := strings.Repeat("zzz ", toolsearch.MaxQueryBytes) + "invoice"
	if hits, err := x.Search(long, 5); err != nil || len(hits) != 0 {
		t.Errorf("Search(%d bytes ending in a match) = %v, %v; want nothing (cut)", len(long), hits, err)
	}
	cut := strings.Repeat("é", toolsearch.MaxQueryBytes) // cut inside a character
	if _, err := x.Search(cut, 5); err != nil {
		t.Errorf("Search(%d bytes of é) = %v", len(cut), err)
	}
}

func TestOrderIsStable(t *testing.T) {
	x := build(t, []toolsearch.Tool{
		{AgentName: "b__send", Description: "Sends a message."},
		{AgentName: "a__send", Description: "Sends a message."},
	})
	hits, err := x.Search("send a message", 5)
	if err != nil || fmt.Sprint(names(hits)) != "[a__send b__send]" {
		t.Errorf("Search = %v, %v; want equal scores ordered by agent name", hits, err)
	}
}

func TestEmptyCatalog(t *testing.T) {
	x := build(t, nil)
	if hits, err := x.Search("read a file", 5); err != nil || len(hits) != 0 || x.Len() != 0 {
		t.Errorf("Search on no tools = %v, %v (Len %d); want nothing", hits, err, x.Len())
	}
}

func TestClosed(t *testing.T) {
	x, err := toolsearch.Build([]toolsearch.Tool{{AgentName: "a__echo"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Search("echo", 5); !errors.Is(err, toolsearch.ErrClosed) {
		t.Errorf("Search after Close = %v; want ErrClosed", err)
	}
	if err := x.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// TestSearcher swaps indexes while searches run: every search answers
// from one whole catalog, a late snapshot never replaces a newer one, and
// every index but the last is closed.
func TestSearcher(t *testing.T) {
	var s toolsearch.Searcher
	if hits, x, err := s.Search("echo", 5); hits != nil || x != nil || err != nil {
		t.Errorf("empty Searcher: %v %v %v", hits, x, err)
	}
	catalog := func(gen int) []toolsearch.Tool {
		return []toolsearch.Tool{{AgentName: fmt.Sprintf("gen%d__echo", gen), Description: "Echoes a message."}}
	}
	if err := s.Replace(1, catalog(1)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() { // ends when stop is closed
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				hits, x, err := s.Search("echo a message", 5)
				if err != nil || len(hits) != 1 {
					errs <- fmt.Errorf("Search = %v, %v", hits, err)
					return
				}
				if _, ok := x.Tool(hits[0].AgentName); !ok {
					errs <- fmt.Errorf("hit %s is not in the index it came from", hits[0].AgentName)
					return
				}
			}
		}()
	}
	for gen := 2; gen <= 30; gen++ {
		if err := s.Replace(uint64(gen), catalog(gen)); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := s.Replace(5, catalog(5)); err != nil {
		t.Fatal(err)
	}
	hits, _, err := s.Search("echo", 5)
	if err != nil || len(hits) != 1 || hits[0].AgentName != "gen30__echo" {
		t.Errorf("after a late Replace(5): %v, %v; want gen30__echo", hits, err)
	}
	if _, rev := s.Current(); rev != 30 {
		t.Errorf("revision %d, want 30", rev)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if hits, _, _ := s.Search("echo", 5); hits != nil {
		t.Errorf("Search after Close = %v", hits)
	}
}

func TestResult(t *testing.T) {
	x := build(t, []toolsearch.Tool{
		{AgentName: "fs__read", Name: "read", Description: "Reads a file.", Definition: json.RawMessage(`{"name":"fs__read","description":"Reads a file.","inputSchema":{"type":"object"}}`)},
		{AgentName: "fs__write", Name: "write", Title: "Write", Description: "Writes a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
		{AgentName: "fs__bare", Name: "bare"},
	})
	res, err := toolsearch.Result(x, []toolsearch.Hit{{AgentName: "fs__write"}, {AgentName: "gone__tool"}, {AgentName: "fs__read"}, {AgentName: "fs__bare"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tools":[{"name":"fs__write","title":"Write","description":"Writes a file.","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}},{"name":"fs__read","description":"Reads a file.","inputSchema":{"type":"object"}},{"name":"fs__bare","inputSchema":{"type":"object"}}]}`
	if len(res.Content) != 1 || res.Content[0].(mcp.TextContent).Text != want {
		t.Errorf("Result text = %v; want %s", res.Content, want)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	if string(structured) != want || res.IsError {
		t.Errorf("Result structured = %s (error %v); want %s", structured, res.IsError, want)
	}
	empty, err := toolsearch.Result(x, nil)
	if err != nil || empty.Content[0].(mcp.TextContent).Text != `{"tools":[]}` {
		t.Errorf("Result(no hits) = %v, %v; want an empty list", empty, err)
	}
}

func TestToolDefinitions(t *testing.T) {
	for _, tc := range []struct {
		tool     mcp.Tool
		name     string
		required []string
		props    []string
	}{
		{toolsearch.SearchTool(), "search_tools", []string{"query"}, []string{"limit", "query"}},
		{toolsearch.CallTool(), "call_tool", []string{"name"}, []string{"arguments", "name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tool.Name != tc.name || tc.tool.Description == "" {
				t.Errorf("tool %q, description %q", tc.tool.Name, tc.tool.Description)
			}
			if fmt.Sprint(tc.tool.InputSchema.Required) != fmt.Sprint(tc.required) {
				t.Errorf("required %v; want %v", tc.tool.InputSchema.Required, tc.required)
			}
			var props []string
			for p := range tc.tool.InputSchema.Properties {
				props = append(props, p)
			}
			if fmt.Sprint(sorted(props)) != fmt.Sprint(tc.props) {
				t.Errorf("properties %v; want %v", sorted(props), tc.props)
			}
			if _, err := json.Marshal(tc.tool); err != nil {
				t.Errorf("json.Marshal: %v", err)
			}
		})
	}
}
