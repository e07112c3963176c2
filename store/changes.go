package store

import (
	"slices"
	"sync"
)

// Subscribers is a backend's list of change subscribers (see Changes): a
// backend embeds one, or holds one and forwards Subscribe to it, and calls
// Notify once a transaction committed. The zero value is ready to use.
type Subscribers struct {
	// mu is held for reading while subscribers are called, so that a
	// cancel returns only once no call of its subscriber is running.
	mu   sync.RWMutex
	subs []*subscriber // in the order they subscribed
}

type subscriber struct{ fn func(Change) }

// Subscribe adds fn; see Changes. Subscribers are called in the order
// they subscribed.
func (s *Subscribers) Subscribe(fn func(Change)) (cancel func()) {
	sub := &subscriber{fn}
	s.mu.Lock()
	s.subs = append(s.subs, sub)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.subs = slices.DeleteFunc(s.subs, func(x *subscriber) bool { return x == sub })
	}
}

// Notify calls every subscriber with each change, in order.
func (s *Subscribers) Notify(changes []Change) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, c := range changes {
		for _, sub := range s.subs {
			sub.fn(c)
		}
	}
}
