package toolsearchtest

import (
	"testing"

	"github.com/switchboard-dev/switchboard/internal/toolsearch"
)

func TestSyntheticCatalog(t *testing.T) {
	a, b := Synthetic(), Synthetic()
	if len(a) != 1000 {
		t.Errorf("Synthetic() has %d tools, want 1000", len(a))
	}
	seen := map[string]bool{}
	for i := range a {
		if seen[a[i].AgentName] {
			t.Errorf("agent name %s twice", a[i].AgentName)
		}
		seen[a[i].AgentName] = true
		if a[i].AgentName != b[i].AgentName || string(a[i].Definition) != string(b[i].Definition) {
			t.Fatalf("Synthetic() differs between calls at %d: %s and %s", i, a[i].Definition, b[i].Definition)
		}
	}
}

func TestQuality(t *testing.T) {
	real, err := RealCatalog()
	if err != nil {
		t.Fatal(err)
	}
	catalogs := map[string][]toolsearch.Tool{"real": real, "synthetic": Synthetic()}
	for name, tools := range catalogs {
		t.Run(name, func(t *testing.T) {
			qs, err := Queries(name)
			if err != nil {
				t.Fatal(err)
			}
			known := map[string]bool{}
			for _, tool := range tools {
				known[tool.AgentName] = true
			}
			for _, q := range qs.Queries {
				for _, w := range q.Want {
					if !known[w] {
						t.Errorf("query %q wants %s, which the catalog does not have", q.Query, w)
					}
				}
			}
			x, err := toolsearch.Build(tools)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			q, err := Measure(x, qs, 5)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d tools, %d queries: recall@5 %.3f, MRR %.3f", name, x.Len(), q.Queries, q.RecallAt, q.MRR)
			for _, m := range q.Misses {
				t.Logf("  miss: %q want %v got %v", m.Query.Query, m.Query.Want, m.Got)
			}
			f := Floors[name]
			if q.RecallAt < f.RecallAt5 || q.MRR < f.MRR {
				t.Errorf("%s: recall@5 %.3f, MRR %.3f; want at least %.3f and %.3f", name, q.RecallAt, q.MRR, f.RecallAt5, f.MRR)
			}
			if len(q.Noisy) > 0 {
				t.Errorf("%s: queries that should find nothing found something: %q", name, q.Noisy)
			}
		})
	}
}
