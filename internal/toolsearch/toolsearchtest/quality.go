package toolsearchtest

import (
	"slices"

	"github.com/switchboard-dev/switchboard/internal/toolsearch"
)

// Floors are the least recall@5 and MRR each query set ("real",
// "synthetic") must reach, set a little under what was measured when they
// were set (real: 0.938 and 0.842; synthetic: 0.688 and 0.454), so that
// a regression fails the test and misses in `make bench`.
var Floors = map[string]struct{ RecallAt5, MRR float64 }{
	"real":      {0.90, 0.80},
	"synthetic": {0.65, 0.42},
}

// Quality is how well an index answered a query set.
type Quality struct {
	Queries int
	// RecallAt is the share of queries with a right tool among the first K
	// hits; MRR the mean of 1/rank of the first right tool (0 when none
	// is in the first MaxLimit).
	K        int
	RecallAt float64
	MRR      float64
	// Misses are the queries without a right tool in the first K hits,
	// and Noisy the must-find-nothing queries that found something.
	Misses []Miss
	Noisy  []string
}

// Miss is a query that missed, and what it found instead.
type Miss struct {
	Query Query
	Got   []string
}

// Measure runs the query set against x.
func Measure(x *toolsearch.Index, qs QuerySet, k int) (Quality, error) {
	q := Quality{Queries: len(qs.Queries), K: k}
	for _, query := range qs.Queries {
		hits, err := x.Search(query.Query, toolsearch.MaxLimit)
		if err != nil {
			return q, err
		}
		var got []string
		rank := 0
		for i, h := range hits {
			got = append(got, h.AgentName)
			if rank == 0 && slices.Contains(query.Want, h.AgentName) {
				rank = i + 1
			}
		}
		if rank > 0 {
			q.MRR += 1 / float64(rank)
		}
		if rank > 0 && rank <= k {
			q.RecallAt++
		} else {
			q.Misses = append(q.Misses, Miss{Query: query, Got: got[:min(len(got), k)]})
		}
	}
	if q.Queries > 0 {
		q.RecallAt /= float64(q.Queries)
		q.MRR /= float64(q.Queries)
	}
	for _, s := range qs.Nothing {
		hits, err := x.Search(s, toolsearch.MaxLimit)
		if err != nil {
			return q, err
		}
		if len(hits) > 0 {
			q.Noisy = append(q.Noisy, s)
		}
	}
	return q, nil
}
