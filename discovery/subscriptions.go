package discovery

import (
	"context"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// Subscriptions to a server's resources: the server sends
// notifications/resources/updated for a resource subscribed to when it
// changes. A session subscribes once per URI, however many subscribe to
// it, and unsubscribes when the last of them does. Up to MCP 2025-11-25
// that is resources/subscribe and resources/unsubscribe; at 2026-07-28,
// the URIs are the filter of the session's subscriptions/listen stream,
// which is opened again with each change of them (see listenLocked). An
// update the server sends while the stream is opened again is lost.

// subscription is one subscriber to a resource of the session's server.
type subscription struct{ fn func() }

// Subscribe subscribes to the server's resource uri: fn is called each
// time the server says it was updated, until the returned function is
// called (or the session ends). ctx bounds the subscribe request.
func (s *Session) Subscribe(ctx context.Context, uri string, fn func()) (unsubscribe func(), err error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	modern := mcp.IsModernProtocol(s.protocol)
	sub := &subscription{fn: fn}
	if !modern {
		s.subscribing.Lock()
		defer s.subscribing.Unlock()
	}
	s.mu.Lock()
	first := len(s.updated[uri]) == 0
	if s.updated == nil {
		s.updated = map[string][]*subscription{}
	}
	s.updated[uri] = append(s.updated[uri], sub)
	s.mu.Unlock()
	drop := func() (last bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.updated[uri] = slices.DeleteFunc(s.updated[uri], func(x *subscription) bool { return x == sub })
		if len(s.updated[uri]) == 0 {
			delete(s.updated, uri)
			return true
		}
		return false
	}
	switch {
	case first && modern:
		s.mu.Lock()
		s.listenLocked()
		s.mu.Unlock()
	case first:
		defer s.enter()()
		//lint:ignore SA1019 a 2025-era server's subscription, as that revision has it
		if err := s.c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
			drop()
			return nil, s.classify(ctx, err)
		}
	}
	return func() {
		if !modern {
			s.subscribing.Lock()
			defer s.subscribing.Unlock()
		}
		if !drop() || s.Err() != nil {
			return
		}
		if modern {
			s.mu.Lock()
			s.listenLocked()
			s.mu.Unlock()
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskCancelTimeout)
		defer cancel()
		defer s.enter()()
		//lint:ignore SA1019 as Subscribe
		_ = s.c.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}})
	}, nil
}

// resourceUpdated passes a notifications/resources/updated on to the
// subscribers of its URI; one of a URI nobody subscribed to is dropped.
func (s *Session) resourceUpdated(n mcp.JSONRPCNotification) {
	uri, _ := n.Params.AdditionalFields["uri"].(string)
	s.mu.Lock()
	subs := slices.Clone(s.updated[uri])
	s.mu.Unlock()
	for _, sub := range subs {
		sub.fn()
	}
}

// listenLocked (re)opens a 2026-07-28 session's subscriptions/listen
// stream with what it listens for: the list changes it listened for
// from the start, and the resources subscribed to now; a stream of
// nothing is closed. One loop (see listen) runs the stream: mcp-go's
// client ends the stream a Listen before it registered whenever a new one
// starts, so two at once would end each other. s.mu is held.
func (s *Session) listenLocked() {
	filter := s.listenFilter
	for uri := range s.updated {
		filter.ResourceSubscriptions = append(filter.ResourceSubscriptions, uri)
	}
	slices.Sort(filter.ResourceSubscriptions)
	if s.sctx == nil || s.closed {
		return
	}
	if s.listenWant == nil {
		s.listenWant = make(chan mcp.SubscriptionFilter, 1)
	}
	select { // the filter wanted now replaces one not taken yet
	case <-s.listenWant:
	default:
	}
	s.listenWant <- filter
	if s.endListen != nil {
		s.endListen() // the loop takes the new filter
	}
	if !s.listening {
		s.listening = true
		s.wg.Add(1)
		go s.listen()
	}
}

// listen runs the session's subscriptions/listen stream, opened again
// with each filter listenLocked wants, until the session ends. A stream
// that ends by itself ends the session (see Session.lost).
func (s *Session) listen() {
	defer s.wg.Done()
	for {
		var filter mcp.SubscriptionFilter
		select {
		case filter = <-s.listenWant:
		case <-s.sctx.Done():
			return
		}
		if filter.IsEmpty() {
			continue
		}
		lctx, end := context.WithCancel(s.sctx)
		s.mu.Lock()
		if len(s.listenWant) > 0 { // wanted otherwise meanwhile
			s.mu.Unlock()
			end()
			continue
		}
		s.endListen = end
		s.mu.Unlock()
		err := s.c.Listen(lctx, filter)
		restarted := lctx.Err() != nil
		s.mu.Lock()
		s.endListen = nil
		s.mu.Unlock()
		end()
		if s.sctx.Err() != nil {
			return
		}
		if !restarted {
			s.lost(streamLost("the notification stream (subscriptions/listen)", err))
			return
		}
	}
}
