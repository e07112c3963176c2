package web

import (
	"maps"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
)

// A burst of marks costs one publication per server: the marks that come
// while a publication runs are taken together afterwards.
func TestPublisherCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		published := map[string]int{}
		release := make(chan struct{})
		p := newPublisher(func(id string) {
			mu.Lock()
			published[id]++
			first := id == "a" && published[id] == 1
			mu.Unlock()
			if first {
				<-release // the first publication of a is slow
			}
		})
		defer p.close()

		p.mark("a")
		synctest.Wait() // publishing a, held
		for range 1000 {
			p.mark("a")
			p.mark("b")
		}
		close(release)
		synctest.Wait() // everything marked is published

		mu.Lock()
		got := maps.Clone(published)
		mu.Unlock()
		if diff := cmp.Diff(map[string]int{"a": 2, "b": 1}, got); diff != "" {
			t.Errorf("publications (-want +got):\n%s", diff)
		}
	})
}

// After close nothing is published, and closing twice is harmless.
func TestPublisherClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n int
		p := newPublisher(func(string) { n++ })
		p.mark("a")
		synctest.Wait()
		p.close()
		p.mark("a")
		p.close()
		synctest.Wait()
		if n != 1 {
			t.Errorf("%d publications; want 1, none after close", n)
		}
	})
}
