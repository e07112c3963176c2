// Package held keeps values that one request hands to a later one on the
// server side (a previewed import, a sign-in awaiting its callback), for
// a while and only a few at a time: each expires after the map's TTL, and
// beyond its bound the oldest goes first, so that no client can grow it.
package held

import (
	"sync"
	"time"
)

// Map holds values by key. It is safe for concurrent use.
type Map[V any] struct {
	ttl  time.Duration
	most int

	mu sync.Mutex
	m  map[string]entry[V]
}

type entry[V any] struct {
	v  V
	at time.Time
}

// New returns a map whose values expire after ttl, holding at most most.
func New[V any](ttl time.Duration, most int) *Map[V] {
	return &Map[V]{ttl: ttl, most: most, m: map[string]entry[V]{}}
}

// Put holds v under key (replacing what it held), dropping the expired
// values and, if the map is full, the oldest.
func (h *Map[V]) Put(key string, v V) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	h.expire(now)
	delete(h.m, key)
	for len(h.m) >= h.most {
		oldest := ""
		for k, e := range h.m {
			if oldest == "" || e.at.Before(h.m[oldest].at) {
				oldest = k
			}
		}
		delete(h.m, oldest)
	}
	h.m[key] = entry[V]{v: v, at: now}
}

// Get returns the value held under key, unless it expired.
func (h *Map[V]) Get(key string) (V, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.m[key]
	if !ok || time.Since(e.at) > h.ttl {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Take is Get that also lets go of the value, whatever comes of it.
func (h *Map[V]) Take(key string) (V, bool) {
	v, ok := h.Get(key)
	h.Delete(key)
	return v, ok
}

// Delete lets go of the value under key.
func (h *Map[V]) Delete(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, key)
}

// DeleteFunc lets go of every value drop reports true for.
func (h *Map[V]) DeleteFunc(drop func(key string, v V) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, e := range h.m {
		if drop(k, e.v) {
			delete(h.m, k)
		}
	}
}

func (h *Map[V]) expire(now time.Time) {
	for k, e := range h.m {
		if now.Sub(e.at) > h.ttl {
			delete(h.m, k)
		}
	}
}
