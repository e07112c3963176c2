package toolsearch

import (
	"errors"
	"sync"
)

// Searcher serves searches from the current Index and replaces it when
// the catalog changes: Replace builds a new Index from a snapshot of the
// tools, off to the side, then swaps it in and closes the old one once the
// searches still using it return. The zero value has no index and finds
// nothing. Its methods are safe for concurrent use.
type Searcher struct {
	build sync.Mutex // one Replace at a time, so the last one called wins
	mu    sync.RWMutex
	cur   *Index
	rev   uint64
}

// Replace indexes tools, the catalog at revision rev, and makes the result
// current. A rev not above the current one is a no-op (a late snapshot
// never replaces a newer one). On error the current index stays.
func (s *Searcher) Replace(rev uint64, tools []Tool) error {
	s.build.Lock()
	defer s.build.Unlock()
	s.mu.RLock()
	stale := s.cur != nil && rev <= s.rev
	s.mu.RUnlock()
	if stale {
		return nil
	}
	x, err := Build(tools)
	if err != nil {
		return err
	}
	s.mu.Lock()
	old := s.cur
	s.cur, s.rev = x, rev
	s.mu.Unlock()
	if old != nil {
		return old.Close() // waits for the searches still on it
	}
	return nil
}

// Current is the current Index (nil before the first Replace) and the
// catalog revision it was built from. The Index may be closed by a later
// Replace at any time: its Search then returns ErrClosed.
func (s *Searcher) Current() (*Index, uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur, s.rev
}

// Search searches the current index (see Index.Search). A search that
// meets the index being swapped out retries on the new one.
func (s *Searcher) Search(q string, limit int) ([]Hit, *Index, error) {
	for {
		x, _ := s.Current()
		if x == nil {
			return nil, nil, nil
		}
		hits, err := x.Search(q, limit)
		if errors.Is(err, ErrClosed) {
			continue // Replace swapped before it closed x: the next Current is newer
		}
		return hits, x, err
	}
}

// Close closes the current index; the Searcher then finds nothing.
func (s *Searcher) Close() error {
	s.build.Lock()
	defer s.build.Unlock()
	s.mu.Lock()
	x := s.cur
	s.cur = nil
	s.mu.Unlock()
	if x != nil {
		return x.Close()
	}
	return nil
}
