package discovery

import (
	"context"
	"errors"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// Subscriptions to a server's resources (resources/subscribe, MCP
// 2025-11-25 and earlier): the server sends
// notifications/resources/updated for a resource subscribed to when it
// changes. A session subscribes once per URI, however many subscribe to
// it, and unsubscribes when the last of them does.

// subscription is one subscriber to a resource of the session's server.
type subscription struct{ fn func() }

// ErrModernSubscription refuses a subscription on a session of protocol
// 2026-07-28, where resource subscriptions are the filter of a
// subscriptions/listen stream, which Switchboard does not yet open for
// them.
var ErrModernSubscription = errors.New("the server speaks MCP 2026-07-28, whose resource subscriptions Switchboard does not relay yet")

// Subscribe subscribes to the server's resource uri: fn is called each
// time the server says it was updated, until the returned function is
// called (or the session ends). ctx bounds the subscribe request.
func (s *Session) Subscribe(ctx context.Context, uri string, fn func()) (unsubscribe func(), err error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	if mcp.IsModernProtocol(s.protocol) {
		return nil, ErrModernSubscription
	}
	sub := &subscription{fn: fn}
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
	if first {
		defer s.enter()()
		//lint:ignore SA1019 a 2025-era server's subscription, as that revision has it
		if err := s.c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
			drop()
			return nil, s.classify(ctx, err)
		}
	}
	return func() {
		if drop() && s.Err() == nil {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskCancelTimeout)
			defer cancel()
			defer s.enter()()
			//lint:ignore SA1019 as Subscribe
			_ = s.c.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}})
		}
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
