package storetest

import (
	"sync"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

// The first answer to a waiting call wins, however many come at once; the
// others get it back; old answers are forgotten.
func testDecisions(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	var wg sync.WaitGroup
	results := make([]store.Decision, 8)
	wins := make([]bool, 8)
	for i := range results {
		wg.Go(func() {
			d, won, err := db.ClaimDecision(ctx, store.Decision{ID: "ap1", By: string(rune('a' + i)), Answer: "allow_once", At: At(10)}, At(0))
			if err != nil {
				t.Errorf("ClaimDecision %d = %v", i, err)
			}
			results[i], wins[i] = d, won
		})
	}
	wg.Wait()
	winners := 0
	for i := range results {
		if wins[i] {
			winners++
		}
		if results[i].By != results[0].By {
			t.Errorf("claim %d sees %q won; claim 0 sees %q", i, results[i].By, results[0].By)
		}
	}
	if winners != 1 {
		t.Fatalf("%d claims won; want exactly one", winners)
	}
	// Another call's answer, later: ap1's is forgotten.
	if _, won, err := db.ClaimDecision(ctx, store.Decision{ID: "ap2", By: "z", At: At(100)}, At(50)); err != nil || !won {
		t.Fatalf("ClaimDecision(ap2) = %v, %v", won, err)
	}
	if d, won, err := db.ClaimDecision(ctx, store.Decision{ID: "ap1", By: "late", At: At(101)}, At(50)); err != nil || !won || d.By != "late" {
		t.Errorf("ap1 after its answer was forgotten = %+v, %v, %v", d, won, err)
	}
}
